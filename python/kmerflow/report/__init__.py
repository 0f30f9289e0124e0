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
BAR_COLOURS = {"input": "#444444", "occupancy": "#1f77b4", "false-positive rate": "#d62728"}
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
    table = plots.get("table")
    if table:
        found.append(charts.Chart(TABLE, "Table occupancy and false-positive rate", "bars", "",
                                  "fraction", {f"{table['n_tables']} table(s)": {
                                      "occupancy": table["occupancy"],
                                      "false-positive rate": table["fp_rate"]}},
                                  colours=BAR_COLOURS))
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


def _rows(pairs: list[tuple[str, Any]]) -> str:
    return "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in pairs)


def _size(n: Optional[int]) -> str:
    return "" if n is None else f"{n / 1e6:.2f} MB"


def page(report: Mapping[str, Any], found: list[charts.Chart]) -> str:
    """The self-contained HTML page of a run report."""
    title = f"kmerflow {report['command']}: {sample_name(report)}"
    t = report["timings"]
    overview = [("command line", " ".join(report["command_line"])),
                ("kmerflow", report["tool"]["version"]),
                ("wall time", f"{t['wall_s']:.2f} s"), ("CPU time", f"{t['cpu_s']:.2f} s"),
                ("peak memory", _size(report["memory"]["peak_rss_bytes"])),
                ("threads", report["threads"])]
    overview += [(f"pass: {p['name']}", f"{p['wall_s']:.2f} s") for p in t["passes"]]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             "</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
             "table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;"
             "padding:3px 8px;text-align:left}th{background:#eee}.warn{color:#b00}</style>"
             "</head><body>", f"<h1>{html.escape(title)}</h1>",
             f"<table>{_rows(overview)}</table>"]
    for warning in report["warnings"]:
        parts.append(f"<p class='warn'>{html.escape(warning)}</p>")
    parts += ["<h2>Files</h2><table><tr><th>input</th><th>size</th><th>compression</th></tr>",
              "".join(f"<tr><td>{html.escape(i['path'])}</td><td>{_size(i['bytes'])}</td>"
                      f"<td>{i['compression']}</td></tr>" for i in report["inputs"]),
              "<tr><th>output</th><th>size</th><th></th></tr>",
              "".join(f"<tr><td>{html.escape(o['path'])}</td><td>{_size(o['bytes'])}</td>"
                      "<td></td></tr>" for o in report["outputs"]), "</table>"]
    sizing = report.get("table_sizing")
    if sizing:
        rows = [("distinct k-mers", f"{sizing['distinct_kmers']} ("
                 + ("estimated" if sizing["estimated"] else "given with -U") + ")"),
                ("memory (-M)", f"{sizing['memory_bytes']} bytes"),
                ("tables", f"{sizing['n_tables']} of {sizing['tablesize']} counters"),
                ("expected false-positive rate", f"{sizing['expected_fp_rate']:.4f} "
                 f"(target {sizing['target_fp_rate']})")]
        parts += ["<h2>Table sized automatically</h2>", f"<table>{_rows(rows)}</table>"]
    if report["counters"]:
        parts += ["<h2>Counts</h2>", f"<table>{_rows(list(report['counters'].items()))}</table>"]
    for chart in found:
        parts += [f"<h2>{html.escape(chart.title)}</h2>", chart.svg()]
    parts += ["<h2>Parameters</h2><details><summary>all parameters</summary>",
              f"<table>{_rows(list(report['parameters'].items()))}</table></details>",
              "</body></html>"]
    return "\n".join(parts)
