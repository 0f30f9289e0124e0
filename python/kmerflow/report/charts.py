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

#: The colour of limits and warnings, which no bar takes unless asked to.
WARNING_RED = "#d62728"

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
    limit: Optional[tuple[float, str]] = None   #: (value, label): a dashed limit on a bar chart

    def svg(self) -> str:
        """The chart as an inline ``<svg>`` element."""
        if self.kind == "lines":
            return lines_svg(self.data, self.xlabel, self.ylabel, self.log_y)  # type: ignore[arg-type]
        return bars_svg(self.data, self.ylabel, self.colours or {}, self.limit)  # type: ignore[arg-type]

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
            for j, (name, colour) in enumerate(zip(names, bar_colours(names, self.colours or {}), strict=True)):
                ax.bar([g + j * width for g in range(len(groups))],
                       [self.data[grp].get(name, 0) for grp in groups],  # type: ignore[union-attr]
                       width, label=name, color=colour)
            ax.set_xticks([g + width * (len(names) - 1) / 2 for g in range(len(groups))], groups)
            if self.limit:
                ax.axhline(self.limit[0], color=WARNING_RED, linestyle="--", label=self.limit[1])
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


def nice_ticks(vmax: float, most: int = 5) -> list[float]:
    """Tick values from 0 to at least ``vmax`` at a round step (1, 2, 2.5 or 5 times a power of
    ten), at most ``most`` intervals: 0, 20, 40, ... rather than 0, 49, 98, ..."""
    vmax = vmax if vmax > 0 else 1
    raw = vmax / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(vmax / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def log_ticks(vmax: float) -> list[float]:
    """Exponents of ten from 0 up to at least log10 ``vmax`` (ticks at 1, 10, 100, ...), at a
    step that keeps them to about five."""
    top = max(math.ceil(math.log10(vmax)), 1) if vmax > 1 else 1
    every = math.ceil(top / 5)
    return [float(e) for e in range(0, top + every, every) if e - every < top]


def axes(x0: int, y0: int, w: int, h: int, xlabel: str, ylabel: str,
         xticks: Optional[list[float]], yticks: list[float], log_y: bool = False) -> list[str]:
    """Axes with labelled ticks: ``yticks`` from 0 to the axis' top (exponents of ten when
    ``log_y``), and ``xticks`` likewise unless None (a bar chart labels its groups itself);
    light grid lines at the y ticks."""
    out = [f"<line x1='{x0}' y1='{y0 + h}' x2='{x0 + w}' y2='{y0 + h}' stroke='black'/>",
           f"<line x1='{x0}' y1='{y0}' x2='{x0}' y2='{y0 + h}' stroke='black'/>",
           f"<text x='{x0 + w / 2}' y='{y0 + h + 32}' text-anchor='middle'>"
           f"{html.escape(xlabel)}</text>",
           f"<text transform='translate({x0 - 48},{y0 + h / 2}) rotate(-90)' "
           f"text-anchor='middle'>{html.escape(ylabel)}</text>"]
    for v in yticks:
        y = y0 + h - h * v / yticks[-1]
        if v:
            out.append(f"<line x1='{x0}' y1='{y:.1f}' x2='{x0 + w}' y2='{y:.1f}' stroke='#e5e5e5'/>")
        out.append(f"<text x='{x0 - 4}' y='{y + 4:.1f}' text-anchor='end'>"
                   f"{number(10 ** v if log_y else v)}</text>")
    for v in xticks or []:
        out.append(f"<text x='{x0 + w * v / xticks[-1]:.1f}' y='{y0 + h + 15}' "  # type: ignore[index]
                   f"text-anchor='middle'>{number(v)}</text>")
    return out


def number(v: float) -> str:
    """A short tick label (``1.5k``, ``2M``, ``0.25``)."""
    if abs(v) >= 1e9:
        return f"{v / 1e9:.3g}G"
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
    """A line chart of named series (log10 of y with ``log_y``), each in its own colour."""
    def fy(v: float) -> float:
        return math.log10(v) if log_y else v

    x0, y0, w, h = 70, 10, 640, 260
    xticks = nice_ticks(max((x for pts in series.values() for x, _ in pts), default=1))
    ymax = max((y for pts in series.values() for _, y in pts), default=1)
    yticks = log_ticks(ymax) if log_y else nice_ticks(ymax)
    body = axes(x0, y0, w, h, xlabel, ylabel, xticks, yticks, log_y)
    colours = [LINE_COLOURS[i % len(LINE_COLOURS)] for i in range(len(series))]
    for (name, pts), colour in zip(series.items(), colours, strict=True):
        coords = " ".join(f"{x0 + w * x / xticks[-1]:.1f},{y0 + h - h * fy(y) / yticks[-1]:.1f}"
                          for x, y in sorted(pts) if y > 0 or not log_y)
        body.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' "
                    f"points='{coords}'><title>{html.escape(name)}</title></polyline>")
        if len(pts) == 1:  # a line of one point draws nothing: mark the point
            cx, cy = coords.split(",")
            body.append(f"<circle cx='{cx}' cy='{cy}' r='3' fill='{colour}'>"
                        f"<title>{html.escape(name)}</title></circle>")
    body += legend(list(series), x0 + w + 20, y0, colours)
    return svg(x0 + w + 220, y0 + h + 45 + max(0, 14 * len(series) - h), body)


def bar_colours(names: Iterable[str], colours: Mapping[str, str]) -> list[str]:
    """A colour for each bar name: its own in ``colours``, else the next line colour that no
    other name has, so that no two names share a swatch."""
    names = list(names)
    taken = {colours[n] for n in names if n in colours} | {WARNING_RED}
    spare = (c for c in LINE_COLOURS * (1 + len(names) // len(LINE_COLOURS)) if c not in taken)
    return [colours[n] if n in colours else next(spare) for n in names]


def bars_svg(groups: Mapping[str, Mapping[str, float]], ylabel: str,
             colours: Mapping[str, str], line_at: Optional[tuple[float, str]] = None) -> str:
    """Grouped bars: for each group, one bar per name, each name in its own colour (from
    ``colours``, else a distinct one); ``line_at`` = (value, label) draws a dashed red limit."""
    names = list(dict.fromkeys(s for counts in groups.values() for s in counts))
    fills = dict(zip(names, bar_colours(names, colours), strict=True))
    x0, y0, h = 70, 10, 240
    bar = 12 if len(groups) > 1 else 40
    group_w = max(bar * len(names) + 24, 7 * max((len(g) for g in groups), default=0) + 16)
    w = max(group_w * len(groups), 200)
    ymax = max((v for counts in groups.values() for v in counts.values()), default=1)
    yticks = nice_ticks(max(ymax, line_at[0] if line_at else 0))
    body = axes(x0, y0, w, h, "", ylabel, None, yticks)
    for g, (group, counts) in enumerate(groups.items()):
        gx = x0 + 12 + g * group_w
        for j, name in enumerate(names):
            v = counts.get(name, 0)
            bh = h * v / yticks[-1]
            body.append(f"<rect x='{gx + j * bar}' y='{y0 + h - bh:.1f}' width='{bar - 1}' "
                        f"height='{bh:.1f}' fill='{fills[name]}'>"
                        f"<title>{html.escape(group)} {html.escape(name)}: {number(v)}</title></rect>")
        body.append(f"<text x='{gx + (group_w - 24) / 2}' y='{y0 + h + 14}' "
                    f"text-anchor='middle'>{html.escape(group)}</text>")
    if line_at:
        y = y0 + h - h * line_at[0] / yticks[-1]
        body.append(f"<line x1='{x0}' y1='{y:.1f}' x2='{x0 + w}' y2='{y:.1f}' stroke='{WARNING_RED}' "
                    f"stroke-dasharray='5,3'/><text x='{x0 + w + 4}' y='{y + 4:.1f}' "
                    f"fill='{WARNING_RED}'>{html.escape(line_at[1])}</text>")
    body += legend(names, x0 + w + 20, y0 + (24 if line_at else 0), [fills[n] for n in names])
    return svg(x0 + w + 180, y0 + h + 30, body)
