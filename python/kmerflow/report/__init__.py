"""Rendering a command's run report (the ``--report-json`` document, docs/report-schema.md):
``--html FILE`` (one self-contained page with inline SVG plots), ``--plots DIR`` (the same
plots as PNG, through matplotlib) and ``--multiqc DIR`` (MultiQC custom-content files).

:func:`render` is called by the ``kmerflow`` command and by the Python command functions after
a successful run given any of those flags.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Mapping, Optional

from kmerflow import _core
from kmerflow.report import charts, multiqc
from kmerflow.report.multiqc import write_atomic

#: The idents of the charts, which name the ``--plots`` files (the native list, which the
#: command declares as its outputs before the run).
HISTOGRAM, STEPS, KEEP_CURVE, TABLE = _core.REPORT_CHARTS

#: Colours of the bars of the reads-per-step and table charts.
BAR_COLOURS = {"input": "#444444", "occupancy": "#1f77b4", "false-positive rate": "#ff7f0e"}
#: Above this estimated false-positive rate a table is too full: the report warns.
FP_WARNING = 0.2
#: The largest abundance plotted in the histograms (the tail is a few repeats).
MAX_ABUNDANCE = 200
_EXTENSIONS = re.compile(r"(\.(fq|fastq|fa|fasta|fna|seq|txt|keep|abundfilt|abundtrim))?"
                         r"(\.(gz|bz2|xz|zst))?$")
_MATE = re.compile(r"[._]R?[12](_001)?$")


def sample_name(report: Mapping[str, Any]) -> str:
    """The sample a run is about: its first input's file name without read-file extensions and
    without a mate marker (``_R1``, ``_R2``, ``_1``, ``_2``, ``.1``, ``.2``, with Illumina's
    ``_001``), so that R1/R2 runs are named after the sample (the command's name when it read
    no file)."""
    inputs = [i["path"] for i in report["inputs"] if i["path"] != "-"]
    if not inputs:
        return str(report["command"])
    name = Path(inputs[0]).name
    stem = _EXTENSIONS.sub("", name) or name
    return _EXTENSIONS.sub("", _MATE.sub("", stem)) or stem


def table_list(report: Mapping[str, Any]) -> list[tuple[str, float, Optional[float]]]:
    """Each k-mer table of the run: (name, estimated false-positive rate, fraction of counters
    in use or None where the report does not give it). A run with several tables (normalize's
    two passes) reports each in its summary; the plotted table's occupancy goes with the table
    of the same rate."""
    found: list[tuple[str, float]] = []

    def walk(value: Any, path: list[str]) -> None:
        if not isinstance(value, Mapping):
            return
        if path and "fp_rate" in value and ("n_tables" in value or "bytes" in value):
            found.append((" ".join(p.replace("_", " ") for p in path if p != "table") or "table",
                          float(value["fp_rate"])))
            return
        for key, inner in value.items():
            walk(inner, [*path, key])

    summary = report.get("summary") or {}
    walk(summary, [])
    plotted = report["plots"].get("table")
    if not found and isinstance(summary.get("fp_rate"), (int, float)):
        found.append(("table", float(summary["fp_rate"])))
    if not found and plotted:
        found.append(("table", float(plotted["fp_rate"])))
    return [(name, fp, plotted["occupancy"] if plotted and plotted["fp_rate"] == fp else None)
            for name, fp in found]


def chart_list(report: Mapping[str, Any]) -> list[charts.Chart]:
    """The report's charts: k-mer abundance histograms, reads kept per step, the keep curve,
    table occupancy and false-positive rate (those the command has data for)."""
    plots = report["plots"]
    found = []
    hists = {name: [(a, c) for a, c in points if 0 < a <= MAX_ABUNDANCE]
             for name, points in plots["histograms"].items()}
    if any(hists.values()):
        found.append(charts.Chart(HISTOGRAM, "k-mer abundance histogram", "lines",
                                  "k-mer abundance", "distinct k-mers (log10)", hists, log_y=True))
    steps = {s["name"]: s["reads"] for s in plots["steps"] if s.get("reads") is not None}
    if steps:
        found.append(charts.Chart(STEPS, "Reads after each step", "bars", "", "reads",
                                  {sample_name(report): steps}, colours=BAR_COLOURS))
    if plots["keep_curve"]:
        found.append(charts.Chart(KEEP_CURVE, "Normalization keep curve", "lines",
                                  "reads examined", "reads kept",
                                  {"kept": [(0, 0), *((t, k) for t, k in plots["keep_curve"])]}))
    tables = table_list(report)
    if tables:
        found.append(charts.Chart(TABLE, "False-positive rate (and occupancy) of each table", "bars", "",
                                  "fraction", {name: {"false-positive rate": fp,
                                                      **({} if occ is None else {"occupancy": occ})}
                                               for name, fp, occ in tables},
                                  colours=BAR_COLOURS, limit=(FP_WARNING, f"{FP_WARNING} (too full)")))
    return found


def render(report: Mapping[str, Any], html_path: Optional[str] = None,
           plots_dir: Optional[str] = None, multiqc_dir: Optional[str] = None) -> list[Path]:
    """Writes the renderings the report's own parameters ask for (``html``, ``plots``,
    ``multiqc``), or those given here; returns the files written."""
    params = report["parameters"]
    html_path = html_path or params.get("html")
    plots_dir = plots_dir or params.get("plots")
    multiqc_dir = multiqc_dir or params.get("multiqc")
    written = []
    found = chart_list(report)
    if html_path:
        write_atomic(Path(html_path), page(report, found))
        written.append(Path(html_path))
    if plots_dir:
        Path(plots_dir).mkdir(parents=True, exist_ok=True)
        for chart in found:
            path = Path(plots_dir) / f"{report['command']}_{chart.ident}.png"
            chart.png(path)
            written.append(path)
    if multiqc_dir:
        Path(multiqc_dir).mkdir(parents=True, exist_ok=True)
        written += write_multiqc(report, Path(multiqc_dir))
    return written


def write_multiqc(report: Mapping[str, Any], directory: Path) -> list[Path]:
    """The run's MultiQC files, named and identified by sample and command so that runs over
    several samples into one directory merge into one section per command: General Statistics
    (reads and pairs in and out, % kept, the highest false-positive rate), the counters, the
    reads after each step, the k-mer histograms and the keep curve."""
    sample, command = sample_name(report), report["command"]
    prefix = f"kmerflow_{command.replace('-', '_')}"
    plots, summary = report["plots"], report.get("summary", {})
    steps = [s for s in plots["steps"] if s.get("reads") is not None]
    reads_in, reads_out = (steps[0]["reads"], steps[-1]["reads"]) if len(steps) >= 2 else (None, None)
    fp_rate = multiqc.highest_fp_rate(summary)
    if fp_rate is None and plots.get("table"):
        fp_rate = plots["table"]["fp_rate"]
    stats = multiqc.kept_stats(reads_in, reads_out, summary.get("pairs_in"), summary.get("pairs_out"),
                               fp_rate)
    docs = []
    if stats:
        docs.append((f"{prefix}_stats", multiqc.general_stats(f"{prefix}_stats", f"kmerflow {command}",
                                                              {sample: stats})))
    docs.append((f"{prefix}_counters", multiqc.section(
        f"{prefix}_counters", f"kmerflow {command}: counts", "table",
        {sample: report["counters"]},
        description=f"The counters of kmerflow {command} (kmerflow {report['tool']['version']}).")))
    if steps:
        docs.append((f"{prefix}_steps", multiqc.bargraph(
            f"{prefix}_steps", f"kmerflow {command}: reads after each step", "reads",
            {sample: {s["name"]: s["reads"] for s in steps}},
            description="Reads left after each step of the run (each bar counts all the reads "
                        "at that point; they are not parts of a whole).")))
    for name, points in plots["histograms"].items():
        label = sample if len(plots["histograms"]) == 1 else f"{sample} {name}"
        docs.append((f"{prefix}_histogram", multiqc.linegraph(
            f"{prefix}_histogram", f"kmerflow {command}: k-mer abundance histogram",
            "k-mer abundance", "distinct k-mers",
            {label: [(a, c) for a, c in points if 0 < a <= MAX_ABUNDANCE]})))
    if plots["keep_curve"]:
        docs.append((f"{prefix}_keep_curve", multiqc.linegraph(
            f"{prefix}_keep_curve", f"kmerflow {command}: keep curve", "reads examined",
            "reads kept", {sample: [(t, k) for t, k in plots["keep_curve"]]})))
    # Several histograms of one run share a section: merge them into one document.
    merged: dict[str, dict[str, Any]] = {}
    for ident, doc in docs:
        if ident in merged:
            merged[ident]["data"].update(doc["data"])
        else:
            merged[ident] = doc
    return [multiqc.write_section(directory, f"{sample}.{ident}", doc)
            for ident, doc in merged.items()]


def _label(key: str) -> str:
    """A counter's or parameter's name for people: ``first_pass.table.fp_rate`` is
    ``first pass › table › fp rate``."""
    return key.replace("_", " ").replace(".", " › ")


def _size(n: Optional[float]) -> str:
    """Bytes as kB, MB or GB."""
    if n is None:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} B"


def display(key: str, value: Any) -> str:
    """A value as the report shows it: thousands separators, times in seconds, sizes in
    bytes units, rates to three decimals, other fractions to four significant digits."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: ""}[value]
    if not isinstance(value, (int, float)):
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    if key.endswith("seconds") or key.endswith("_s"):
        return f"{value:,.2f} s"
    if key.endswith("bytes"):
        return _size(value)
    if key.endswith("rate"):
        return f"{value:.3f}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"


def _rows(pairs: list[tuple[str, Any]]) -> str:
    return "".join(f"<tr><th>{html.escape(_label(k))}</th><td>{html.escape(display(k, v))}</td></tr>"
                   for k, v in pairs)


def counter_groups(counters: Mapping[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """The counters in groups by their first dotted part (``first_pass.kept`` is ``kept`` of
    ``first pass``); those without one are the ``run`` group, first."""
    groups: dict[str, list[tuple[str, Any]]] = {"run": []}
    for key, value in counters.items():
        group, _, rest = key.partition(".")
        if rest:
            groups.setdefault(group.replace("_", " "), []).append((rest, value))
        else:
            groups["run"].append((key, value))
    return {g: rows for g, rows in groups.items() if rows}


def headline(report: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """The numbers a reader wants first, as (label, value) cards: reads and pairs in and out,
    % kept, each table's false-positive rate, time and memory; and the warnings about tables
    above :data:`FP_WARNING`."""
    summary = report.get("summary") or {}
    steps = [s for s in report["plots"]["steps"] if s.get("reads") is not None]
    cards: list[tuple[str, str]] = []
    if len(steps) >= 2:
        reads_in, reads_out = steps[0]["reads"], steps[-1]["reads"]
        cards += [("reads in", f"{reads_in:,}"), ("reads out", f"{reads_out:,}")]
        if reads_in:
            cards.append(("kept", f"{100 * reads_out / reads_in:.1f} %"))
    for key in ("pairs_in", "pairs_out"):
        if isinstance(summary.get(key), int):
            cards.append((key.replace("_", " "), f"{summary[key]:,}"))
    warnings = []
    for name, fp, _ in table_list(report):
        label = "false-positive rate" if name == "table" else f"{name}: false-positive rate"
        cards.append((label, f"{fp:.3f}"))
        if fp > FP_WARNING:
            which = "The table's" if name == "table" else f"The {name} table's"
            warnings.append(f"{which} estimated false-positive rate is {fp:.3f}, above {FP_WARNING}: "
                            "its counts are inflated. Give it more memory (-M).")
    t = report["timings"]
    cards += [("wall time", f"{t['wall_s']:,.2f} s"),
              ("peak memory", _size(report["memory"]["peak_rss_bytes"]))]
    return cards, warnings


#: The page's style: cards for the headline numbers, compact tables, red warnings.
STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}"
         "h1{margin-bottom:.2em}.sub{color:#666;margin-top:0}"
         ".cards{display:flex;flex-wrap:wrap;gap:10px;margin:1em 0}"
         ".card{border:1px solid #ccc;border-radius:6px;padding:8px 14px;min-width:110px}"
         ".card .v{font-size:1.5em;font-weight:bold}.card .l{color:#555;font-size:.85em}"
         ".card.bad{border-color:#b00;background:#fff0f0}.groups{align-items:flex-start}"
         ".left td{text-align:left}"
         "table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;"
         "padding:3px 8px;text-align:left}td{text-align:right}th{background:#f2f2f2;"
         "font-weight:normal}.warn{color:#b00;font-weight:bold}")


def page(report: Mapping[str, Any], found: list[charts.Chart]) -> str:
    """The self-contained HTML page of a run report: the headline numbers and warnings first,
    then the charts, the counts, the files, the table sizing, the run and its parameters."""
    title = f"kmerflow {report['command']}: {sample_name(report)}"
    cards, fp_warnings = headline(report)
    bad = {label for label, value in cards if "false-positive" in label and float(value) > FP_WARNING}
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
             f"<p class='sub'>kmerflow {html.escape(report['tool']['version'])}</p>",
             "<div class='cards'>",
             *(f"<div class='card{' bad' if label in bad else ''}'><div class='v'>{html.escape(value)}</div>"
               f"<div class='l'>{html.escape(label)}</div></div>" for label, value in cards),
             "</div>"]
    for warning in [*fp_warnings, *report["warnings"]]:
        parts.append(f"<p class='warn'>{html.escape(warning)}</p>")
    for chart in found:
        parts += [f"<h2>{html.escape(chart.title)}</h2>", chart.svg()]
    if report["counters"]:
        parts += ["<h2>Counts</h2><div class='cards groups'>",
                  *(f"<table><tr><th colspan='2'>{html.escape(group)}</th></tr>{_rows(rows)}</table>"
                    for group, rows in counter_groups(report["counters"]).items()), "</div>"]
    parts += ["<h2>Files</h2><table><tr><th>input</th><th>size</th><th>compression</th></tr>",
              "".join(f"<tr><td style='text-align:left'>{html.escape(i['path'])}</td>"
                      f"<td>{_size(i['bytes'])}</td><td>{i['compression']}</td></tr>"
                      for i in report["inputs"]),
              "<tr><th>output</th><th>size</th><th></th></tr>",
              "".join(f"<tr><td style='text-align:left'>{html.escape(o['path'])}</td>"
                      f"<td>{_size(o['bytes'])}</td><td></td></tr>" for o in report["outputs"]),
              "</table>"]
    sizing = report.get("table_sizing")
    if sizing:
        rows = [("distinct k-mers", f"{sizing['distinct_kmers']:,} ("
                 + ("estimated" if sizing["estimated"] else "given with -U") + ")"),
                ("memory (-M)", _size(sizing["memory_bytes"])),
                ("tables", f"{sizing['n_tables']} of {sizing['tablesize']:,} counters"),
                ("expected false-positive rate", f"{sizing['expected_fp_rate']:.4f} "
                 f"(target {sizing['target_fp_rate']})")]
        parts += ["<h2>Table sized automatically</h2>", f"<table>{_rows(rows)}</table>"]
    t = report["timings"]
    run = [("command line", " ".join(report["command_line"])),
           ("wall time", f"{t['wall_s']:,.2f} s"), ("CPU time", f"{t['cpu_s']:,.2f} s"),
           ("peak memory", _size(report["memory"]["peak_rss_bytes"])), ("threads", report["threads"])]
    run += [(f"pass: {p['name']}", f"{p['wall_s']:,.2f} s") for p in t["passes"]]
    parts += ["<h2>Run</h2>", f"<table class='left'>{_rows(run)}</table>",
              "<h2>Parameters</h2><details><summary>all parameters</summary>",
              f"<table class='left'>{_rows(list(report['parameters'].items()))}</table></details>",
              "</body></html>"]
    return "\n".join(parts)
