"""Charts as data (:class:`Chart`), drawn as inline SVG for the HTML reports (hand-written: no
plotting package, a few kB of text any browser shows) or as PNG through matplotlib (only for
``--plots``; the ``report`` extra).

The pipeline's report and the per-command reports use the same charts.
"""

from __future__ import annotations

import dataclasses
import html
import math
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

#: Line colours, in order.
LINE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf"]

Points = list[tuple[float, float]]


@dataclasses.dataclass
class Chart:
    """One chart: ``lines`` (``data``: series name → points) or ``bars`` (``data``: group →
    bar name → value, bars coloured by name through ``colours``)."""

    ident: str                                  #: a short name (file names, ids)
    title: str
    kind: str                                   #: "lines" or "bars"
    xlabel: str
    ylabel: str
    data: Mapping[str, Union[Points, Mapping[str, float]]]
    log_y: bool = False
    colours: Optional[Mapping[str, str]] = None

    def svg(self) -> str:
        """The chart as an inline ``<svg>`` element."""
        if self.kind == "lines":
            return lines_svg(self.data, self.xlabel, self.ylabel, self.log_y)  # type: ignore[arg-type]
        return bars_svg(self.data, self.ylabel, self.colours or {})  # type: ignore[arg-type]

    def png(self, path: Path) -> None:
        """Writes the chart as a PNG file (needs matplotlib)."""
        try:
            import matplotlib
        except ImportError:
            raise RuntimeError("--plots needs matplotlib: pip install 'kmerflow[report]'") from None
        matplotlib.use("Agg")
        from matplotlib import pyplot

        fig, ax = pyplot.subplots(figsize=(8, 4.5), dpi=100)
        if self.kind == "lines":
            for name, pts in self.data.items():
                xs, ys = zip(*sorted(pts), strict=True) if pts else ((), ())  # type: ignore[arg-type]
                ax.plot(xs, ys, label=name)
            if self.log_y:
                ax.set_yscale("log")
        else:
            groups = list(self.data)
            names = list(dict.fromkeys(n for bars in self.data.values() for n in bars))  # type: ignore[union-attr]
            width = 0.8 / max(len(names), 1)
            for j, name in enumerate(names):
                ax.bar([g + j * width for g in range(len(groups))],
                       [self.data[grp].get(name, 0) for grp in groups],  # type: ignore[union-attr]
                       width, label=name, color=(self.colours or {}).get(name))
            ax.set_xticks([g + width * (len(names) - 1) / 2 for g in range(len(groups))], groups)
        ax.set_title(self.title)
        ax.set_xlabel(self.xlabel)
        ax.set_ylabel(self.ylabel)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path)
        pyplot.close(fig)


def svg(width: int, height: int, body: Iterable[str]) -> str:
    """An ``<svg>`` element of the given size holding ``body``."""
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"font-size='11' font-family='sans-serif'>{''.join(body)}</svg>")


def axes(x0: int, y0: int, w: int, h: int, xlabel: str, ylabel: str,
         xmax: Optional[float], ymax: float) -> list[str]:
    """Axes with five ticks on y, and on x unless ``xmax`` is None (a bar chart labels its
    groups itself)."""
    out = [f"<line x1='{x0}' y1='{y0 + h}' x2='{x0 + w}' y2='{y0 + h}' stroke='black'/>",
           f"<line x1='{x0}' y1='{y0}' x2='{x0}' y2='{y0 + h}' stroke='black'/>",
           f"<text x='{x0 + w / 2}' y='{y0 + h + 32}' text-anchor='middle'>"
           f"{html.escape(xlabel)}</text>",
           f"<text transform='translate({x0 - 48},{y0 + h / 2}) rotate(-90)' "
           f"text-anchor='middle'>{html.escape(ylabel)}</text>"]
    for i in range(5):
        if xmax is not None:
            out.append(f"<text x='{x0 + w * i / 4}' y='{y0 + h + 15}' text-anchor='middle'>"
                       f"{number(xmax * i / 4)}</text>")
        out.append(f"<text x='{x0 - 4}' y='{y0 + h - h * i / 4 + 4}' text-anchor='end'>"
                   f"{number(ymax * i / 4)}</text>")
    return out


def number(v: float) -> str:
    """A short tick label (``1.5k``, ``2M``)."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def legend(names: list[str], x: int, y: int, colours: list[str]) -> list[str]:
    """A column of coloured squares with their names."""
    return [f"<rect x='{x}' y='{y + 14 * i}' width='10' height='10' fill='{c}'/>"
            f"<text x='{x + 14}' y='{y + 14 * i + 9}'>{html.escape(n)}</text>"
            for i, (n, c) in enumerate(zip(names, colours, strict=True))]


def lines_svg(series: Mapping[str, Points], xlabel: str, ylabel: str, log_y: bool = False) -> str:
    """A line chart of named series (log10 of y with ``log_y``)."""
    def fy(v: float) -> float:
        return math.log10(v) if log_y else v

    x0, y0, w, h = 70, 10, 640, 260
    xmax = max((x for pts in series.values() for x, _ in pts), default=1) or 1
    ymax = max((fy(y) for pts in series.values() for _, y in pts), default=1) or 1
    body = axes(x0, y0, w, h, xlabel, ylabel, xmax, ymax)
    colours = [LINE_COLOURS[i % len(LINE_COLOURS)] for i in range(len(series))]
    for (name, pts), colour in zip(series.items(), colours, strict=True):
        coords = " ".join(f"{x0 + w * x / xmax:.1f},{y0 + h - h * fy(y) / ymax:.1f}"
                          for x, y in sorted(pts))
        body.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' "
                    f"points='{coords}'><title>{html.escape(name)}</title></polyline>")
    body += legend(list(series), x0 + w + 20, y0, colours)
    return svg(x0 + w + 220, y0 + h + 45 + max(0, 14 * len(series) - h), body)


def bars_svg(groups: Mapping[str, Mapping[str, float]], ylabel: str,
             colours: Mapping[str, str]) -> str:
    """Grouped bars: for each group, one bar per name (coloured by ``colours``, else grey)."""
    names = list(dict.fromkeys(s for counts in groups.values() for s in counts))
    x0, y0, h = 70, 10, 240
    bar = 10 if len(groups) > 1 else 40
    group_w = bar * len(names) + 14
    w = max(group_w * len(groups), 200)
    ymax = max((v for counts in groups.values() for v in counts.values()), default=1) or 1
    body = axes(x0, y0, w, h, "", ylabel, None, ymax)
    for g, (group, counts) in enumerate(groups.items()):
        gx = x0 + 7 + g * group_w
        for j, name in enumerate(names):
            v = counts.get(name, 0)
            bh = h * v / ymax
            body.append(f"<rect x='{gx + j * bar}' y='{y0 + h - bh:.1f}' width='{bar - 1}' "
                        f"height='{bh:.1f}' fill='{colours.get(name, '#999')}'>"
                        f"<title>{html.escape(group)} {html.escape(name)}: {v}</title></rect>")
        body.append(f"<text x='{gx + group_w / 2 - 7}' y='{y0 + h + 14}' "
                    f"text-anchor='middle'>{html.escape(group)}</text>")
    body += legend(names, x0 + w + 20, y0, [colours.get(n, "#999") for n in names])
    return svg(x0 + w + 160, y0 + h + 30, body)
