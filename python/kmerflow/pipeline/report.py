"""Reports in OUTDIR: a JSON summary per sample, MultiQC custom-content files and one
self-contained HTML report.

The plots are the hand-written SVG charts of :mod:`kmerflow.report.charts` (and a Gantt chart),
so the report needs no plotting package and stays a small text file that any browser shows;
the MultiQC files are written by :mod:`kmerflow.report.multiqc`, as the commands' are.
"""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Any, Optional

from kmerflow.report import FP_WARNING, charts, multiqc
from kmerflow.report.multiqc import write_atomic

#: One colour per step (the timeline, the bars).
COLOURS = {"protocol": "#d62728", "interleave": "#8c564b", "normalize": "#1f77b4", "filter": "#2ca02c",
           "extract": "#bcbd22", "renormalize": "#17becf", "histogram": "#9467bd",
           "readstats": "#7f7f7f", "input": "#444444"}
_READSTATS_LINE = re.compile(r"^(\d+) bp / (\d+) seqs; ([0-9.]+) average length -- (.*)$")


# --- per-sample summary ----------------------------------------------------------------------

def sample_summary(name: str, status: str, error: Optional[str], inputs: list[Path],
                   overrides: dict[str, Any], manifest: dict[str, Any],
                   outdir: Path) -> dict[str, Any]:
    """The sample's summary: its steps' outputs and times, reads per file (readstats), the
    k-mer abundance histogram and the normalization keep curves."""
    steps = manifest.get("steps", {})
    produced = {rec["path"]: step for step, s in steps.items()
                for role, rec in s["outputs"].items()}
    summary: dict[str, Any] = {
        "sample": name, "status": status, "error": error,
        "inputs": [str(p) for p in inputs], "overrides": overrides,
        "steps": {step: {"seconds": round(s.get("seconds", 0.0), 3),
                         "outputs": {role: {**rec, "path": _relative(rec["path"], outdir)}
                                     for role, rec in s["outputs"].items()
                                     if Path(rec["path"]).is_relative_to(outdir)
                                     and Path(rec["path"]).is_file()},  # not removed ones
                         "summary": s.get("summary", {})}
                  for step, s in steps.items()},
        "reads": [], "histogram": [], "keep_curves": {},
    }
    readstats = steps.get("readstats", {}).get("outputs", {}).get("readstats")
    if readstats and Path(readstats["path"]).is_file():
        for line in Path(readstats["path"]).read_text().splitlines():
            m = _READSTATS_LINE.match(line)
            if m and m.group(4) != "total":
                summary["reads"].append({"file": _relative(m.group(4), outdir),
                                         "step": produced.get(m.group(4), "input"),
                                         "bp": int(m.group(1)), "reads": int(m.group(2))})
    histogram = next((s["outputs"]["histogram"] for s in steps.values()
                      if "histogram" in s["outputs"]), None)  # histogram's, or protocol's
    if histogram and Path(histogram["path"]).is_file():
        with open(histogram["path"], newline="") as f:
            summary["histogram"] = [[int(r["abundance"]), int(r["count"])]
                                    for r in csv.DictReader(f)]
    for step in ("normalize", "renormalize"):
        curve = steps.get(step, {}).get("outputs", {}).get("keep_curve")
        if curve and Path(curve["path"]).is_file():
            with open(curve["path"], newline="") as f:
                rows = [r for r in csv.reader(f) if r and r[0].isdigit()]
            summary["keep_curves"][step] = [[int(r[0]), int(r[1])] for r in rows]
    if steps.get("protocol", {}).get("summary", {}).get("keep_curve"):  # its first pass's
        summary["keep_curves"]["protocol"] = steps["protocol"]["summary"]["keep_curve"]
    return summary


def _relative(path: str, outdir: Path) -> str:
    p = Path(path)
    return str(p.relative_to(outdir)) if p.is_relative_to(outdir) else path


def reads_per_step(summary: dict[str, Any]) -> dict[str, int]:
    """Reads in the sample's input and after each step (paired outputs summed)."""
    out: dict[str, int] = {}
    for row in summary["reads"]:
        out[row["step"]] = out.get(row["step"], 0) + row["reads"]
    return out


# --- MultiQC ---------------------------------------------------------------------------------

def sample_stats(summary: dict[str, Any]) -> dict[str, float]:
    """A sample's General Statistics values: reads in (its inputs) and out (the last step's
    reads), pairs where a step reports them (a paired sample's pairs in are its R1 reads), %
    kept and the highest false-positive rate of its steps' tables."""
    counts = reads_per_step(summary)
    steps = [s for s in counts if s != "input"]
    summaries = [s.get("summary", {}) for s in summary["steps"].values()]
    pairs_in = pairs_out = None
    if len(summary["inputs"]) == 2:  # a single-end sample has no pairs (protocol counts 0)
        pairs_in = next((s["pairs_in"] for s in summaries if "pairs_in" in s), None)
        if pairs_in is None and summary["reads"]:
            pairs_in = summary["reads"][0]["reads"]
        pairs_out = next((s["pairs_out"] for s in reversed(summaries) if "pairs_out" in s), None)
    return multiqc.kept_stats(counts.get("input"), counts[steps[-1]] if steps else None, pairs_in,
                              pairs_out, multiqc.highest_fp_rate(summaries))


def write_multiqc(outdir: Path, summaries: list[dict[str, Any]]) -> list[Path]:
    """MultiQC custom-content files: General Statistics (reads and pairs in and out, % kept,
    false-positive rate), reads per step (a table), the k-mer abundance histogram and the keep
    curve of every normalization pass (line graphs)."""
    written = []
    stats = {s["sample"]: sample_stats(s) for s in summaries}
    stats = {sample: values for sample, values in stats.items() if values}
    if stats:
        written.append(multiqc.write_section(outdir, "kmerflow_pipeline_stats", multiqc.general_stats(
            "kmerflow_pipeline_stats", "kmerflow pipeline", stats)))
    steps = list(dict.fromkeys(s for summary in summaries for s in reads_per_step(summary)))
    if steps:
        lines = ["# id: 'kmerflow_reads'", "# section_name: 'kmerflow: reads after each step'",
                 "# description: 'Reads in the input and in the output of each step "
                 "(readstats).'", "# plot_type: 'table'",
                 "\t".join(["Sample", *steps])]
        for summary in summaries:
            counts = reads_per_step(summary)
            if counts:
                lines.append("\t".join([summary["sample"],
                                        *(str(counts.get(s, "")) for s in steps)]))
        path = outdir / "kmerflow_reads_mqc.tsv"
        write_atomic(path, "\n".join(lines) + "\n")
        written.append(path)
    graphs = [
        ("kmerflow_histogram", "kmerflow: k-mer abundance histogram", "k-mer abundance",
         "distinct k-mers", {s["sample"]: [(a, c) for a, c in s["histogram"] if a > 0]
                             for s in summaries if s["histogram"]}),
        ("kmerflow_keep_curve", "kmerflow: digital normalization keep curves", "reads seen",
         "reads kept", {f"{s['sample']} {step}": curve for s in summaries
                        for step, curve in s["keep_curves"].items() if curve}),
    ]
    for ident, title, xlab, ylab, data in graphs:
        if data:
            written.append(multiqc.write_section(outdir, ident,
                                                 multiqc.linegraph(ident, title, xlab, ylab, data)))
    return written


# --- run statistics -------------------------------------------------------------------------

def run_stats(timeline: list[dict[str, Any]], workers: dict[str, int], started: float,
              finished: float, n_done: int) -> dict[str, Any]:
    """Utilisation (busy worker-thread seconds / available worker-thread seconds over the run's
    wall time) and samples per hour."""
    wall = max(finished - started, 1e-9)
    busy = sum(r["stop"] - r["start"] for r in timeline)
    threads = sum(workers.values()) or 1
    return {"wall_seconds": round(wall, 3), "worker_threads": threads,
            "busy_thread_seconds": round(busy, 3),
            "utilisation": round(busy / (threads * wall), 4),
            "samples_done": n_done, "samples_per_hour": round(n_done * 3600 / wall, 2),
            "tasks": len(timeline)}


# --- HTML --------------------------------------------------------------------------------------

def write_html(path: Path, summaries: list[dict[str, Any]], stats: dict[str, Any],
               timeline: list[dict[str, Any]], started: float, title: str) -> None:
    """The self-contained HTML report (inline SVG plots, no external files)."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             "</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
             "text-align:right}th{background:#eee}.fail{color:#b00}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p>{stats['samples_done']} sample(s) completed in {stats['wall_seconds']:.1f} s "
             f"on {stats['worker_threads']} worker thread(s): "
             f"<b>utilisation {100 * stats['utilisation']:.1f} %</b> (busy worker-thread seconds "
             f"/ available worker-thread seconds), <b>{stats['samples_per_hour']:.1f} "
             f"samples/hour</b>.</p>"]
    parts.append(_samples_table(summaries))
    if timeline:
        parts += ["<h2>Timeline (per worker thread)</h2>", _gantt(timeline, started)]
    reads = {s["sample"]: reads_per_step(s) for s in summaries if s["reads"]}
    if reads:
        parts += ["<h2>Reads after each step</h2>", charts.bars_svg(reads, "reads", COLOURS)]
    hists = {s["sample"]: [(a, c) for a, c in s["histogram"] if 0 < a <= 200 and c > 0]
             for s in summaries if s["histogram"]}
    if hists:
        parts += ["<h2>k-mer abundance histogram</h2>",
                  charts.lines_svg(hists, "k-mer abundance", "distinct k-mers (log10)", log_y=True)]
    curves = {f"{s['sample']} {step}": [(0, 0), *((t, k) for t, k in rows)]
              for s in summaries for step, rows in s["keep_curves"].items() if rows}
    if curves:
        parts += ["<h2>Normalization keep curve</h2>",
                  charts.lines_svg(curves, "reads seen", "reads kept")]
    parts.append("</body></html>")
    write_atomic(path, "\n".join(parts))


def _highest_fp_rate(summary: dict[str, Any]) -> Optional[float]:
    """The highest estimated false-positive rate of the tables of a sample's steps."""
    return multiqc.highest_fp_rate([step.get("summary", {}) for step in summary["steps"].values()])


def _samples_table(summaries: list[dict[str, Any]]) -> str:
    """One row a sample (its highest false-positive rate in red above :data:`FP_WARNING`), then
    a warning naming the samples whose tables are above it."""
    rows = ["<table><tr><th>sample</th><th>status</th><th>input reads</th>"
            "<th>final reads</th><th>FP rate</th><th>step seconds</th></tr>"]
    full = []
    for s in summaries:
        counts = reads_per_step(s)
        final = list(counts.values())[-1] if counts else ""
        seconds = sum(step["seconds"] for step in s["steps"].values())
        status = html.escape(s["status"])
        if s.get("error"):
            status = f"<span class='fail'>{status}: {html.escape(s['error'])}</span>"
        fp = _highest_fp_rate(s)
        fp_cell = "" if fp is None else f"{fp:.3f}"
        if fp is not None and fp > FP_WARNING:
            fp_cell = f"<span class='fail'>{fp_cell}</span>"
            full.append(f"{s['sample']} ({fp:.3f})")
        rows.append(f"<tr><td>{html.escape(s['sample'])}</td><td>{status}</td>"
                    f"<td>{counts.get('input', '')}</td><td>{final}</td><td>{fp_cell}</td>"
                    f"<td>{seconds:.1f}</td></tr>")
    rows.append("</table>")
    if full:
        rows.append(f"<p class='fail'>Estimated false-positive rate above {FP_WARNING} (the counts are "
                    f"inflated; give the tables more memory): {html.escape(', '.join(full))}.</p>")
    return "".join(rows)


def _gantt(timeline: list[dict[str, Any]], started: float) -> str:
    lanes = sorted({(r["worker"], r["thread"]) for r in timeline}, key=str)
    ticks = charts.nice_ticks(max(r["stop"] for r in timeline) - started)
    end = ticks[-1]
    x0, y0, lane_h = 150, 10, 22
    w = 800
    body = []
    for i, (worker, _thread) in enumerate(lanes):
        y = y0 + i * lane_h
        body.append(f"<text x='{x0 - 6}' y='{y + 15}' text-anchor='end'>"
                    f"{html.escape(str(worker))}</text>")
    for r in timeline:
        i = lanes.index((r["worker"], r["thread"]))
        x = x0 + w * (r["start"] - started) / end
        bw = max(w * (r["stop"] - r["start"]) / end, 0.5)
        label = f"{r['sample']} {r['step']}" + ("" if r["chunk"] is None else f" #{r['chunk']}")
        body.append(f"<rect x='{x:.1f}' y='{y0 + i * lane_h + 2}' width='{bw:.1f}' "
                    f"height='{lane_h - 4}' fill='{COLOURS.get(r['step'], '#999')}' "
                    f"stroke='white' stroke-width='0.5'><title>{html.escape(label)} "
                    f"{r['stop'] - r['start']:.2f} s</title></rect>")
    axis_y = y0 + len(lanes) * lane_h
    body.append(f"<line x1='{x0}' y1='{axis_y}' x2='{x0 + w}' y2='{axis_y}' stroke='black'/>")
    for tick in ticks:
        body.append(f"<text x='{x0 + w * tick / end:.1f}' y='{axis_y + 14}' text-anchor='middle'>"
                    f"{charts.number(tick)} s</text>")
    steps = list(dict.fromkeys(r["step"] for r in timeline))
    body += charts.legend(steps, x0 + w + 15, y0, [COLOURS.get(s, "#999") for s in steps])
    return charts.svg(x0 + w + 120, max(axis_y + 24, y0 + 14 * len(steps) + 10), body)
