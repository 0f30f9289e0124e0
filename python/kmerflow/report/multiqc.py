"""MultiQC custom-content files (``*_mqc.json``, ``*_mqc.tsv``), which ``multiqc DIR`` shows
without a kmerflow module: general statistics, tables, bar and line graphs. Sections with the
same id in several files (one per sample) are merged by MultiQC into one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

#: The General Statistics columns a kmerflow section may have, in the order shown: MultiQC's
#: header settings for each (title, description, number format, colour scale).
GENERAL_COLUMNS: dict[str, dict[str, Any]] = {
    "reads_in": {"title": "Reads in", "description": "Reads read", "format": "{:,.0f}",
                 "scale": "Blues"},
    "reads_out": {"title": "Reads out", "description": "Reads written", "format": "{:,.0f}",
                  "scale": "Greens"},
    "pairs_in": {"title": "Pairs in", "description": "Read pairs read", "format": "{:,.0f}",
                 "scale": "Blues"},
    "pairs_out": {"title": "Pairs out", "description": "Read pairs written (both reads kept)",
                  "format": "{:,.0f}", "scale": "Greens"},
    "percent_kept": {"title": "% kept", "description": "Reads out / reads in", "suffix": "%",
                     "min": 0, "max": 100, "format": "{:,.1f}", "scale": "RdYlGn"},
    "fp_rate": {"title": "FP rate", "description": "The highest estimated false-positive rate of "
                "the run's k-mer tables (above 0.2 the counts are inflated: give the tables "
                "more memory, -M)", "min": 0, "max": 1, "format": "{:,.3f}",
                "scale": "RdYlGn-rev", "cond_formatting_rules": {"fail": [{"gt": 0.2}]},
                "cond_formatting_colours": [{"fail": "#d9534f"}]},
}


def write_atomic(path: Path, text: str) -> None:
    """Write a report file under a temporary name and rename it into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def section(ident: str, title: str, plot_type: str, data: Mapping[str, Any],
            description: str = "", pconfig: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """One custom-content section: ``plot_type`` is ``generalstats``, ``table``, ``bargraph``
    or ``linegraph``; ``data`` maps sample → values (→ {x: y} for a line graph)."""
    doc: dict[str, Any] = {"id": ident, "section_name": title, "plot_type": plot_type,
                           "data": data}
    if description:
        doc["description"] = description
    if pconfig is not None or plot_type in ("linegraph", "bargraph"):
        doc["pconfig"] = {"id": f"{ident}_plot", "title": title, **(pconfig or {})}
    return doc


def linegraph(ident: str, title: str, xlab: str, ylab: str,
              data: Mapping[str, Iterable[tuple[float, float]]]) -> dict[str, Any]:
    """A line-graph section (with MultiQC's log-scale switch); ``data`` maps each line to its
    (x, y) points. They are written as lists of pairs, not as {x: y} objects, whose keys JSON
    makes strings: MultiQC would then sort the x values as text (1, 10, 100, 2, ...)."""
    return section(ident, title, "linegraph", {name: [[x, y] for x, y in points]
                                               for name, points in data.items()},
                   pconfig={"xlab": xlab, "ylab": ylab, "logswitch": True})


def bargraph(ident: str, title: str, ylab: str, data: Mapping[str, Mapping[str, float]],
             description: str = "") -> dict[str, Any]:
    """A bar-graph section whose categories (the keys of each sample's values) are side by
    side, not stacked: each bar is a count of its own (reads after each step), not a part of a
    whole."""
    return section(ident, title, "bargraph", data, description=description,
                   pconfig={"ylab": ylab, "stacking": "group", "cpswitch": False})


def general_stats(ident: str, namespace: str, data: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """A General Statistics section: ``data`` maps sample → {column: value}, the columns being
    keys of :data:`GENERAL_COLUMNS`; the column ids are prefixed with ``ident`` so that the
    columns of several commands do not merge."""
    columns = [c for c in GENERAL_COLUMNS if any(c in values for values in data.values())]
    doc = section(ident, namespace, "generalstats",
                  {sample: {f"{ident}_{c}": values[c] for c in columns if c in values}
                   for sample, values in data.items()})
    doc["headers"] = {f"{ident}_{c}": {**GENERAL_COLUMNS[c], "namespace": namespace} for c in columns}
    return doc


def kept_stats(reads_in: Optional[int], reads_out: Optional[int], pairs_in: Optional[int] = None,
               pairs_out: Optional[int] = None, fp_rate: Optional[float] = None) -> dict[str, float]:
    """The General Statistics values of a run that read ``reads_in`` reads and wrote
    ``reads_out`` (each ``None`` when not known): those known, and the percentage kept."""
    stats: dict[str, float] = {k: v for k, v in (("reads_in", reads_in), ("reads_out", reads_out),
                                                 ("pairs_in", pairs_in), ("pairs_out", pairs_out),
                                                 ("fp_rate", fp_rate)) if v is not None}
    if reads_in and reads_out is not None:
        stats["percent_kept"] = round(100 * reads_out / reads_in, 2)
    return stats


def highest_fp_rate(summary: Any) -> Optional[float]:
    """The highest ``fp_rate`` anywhere in a summary (nested objects included: each table of a
    run reports its own), or None."""
    found: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if key == "fp_rate" and isinstance(inner, (int, float)):
                    found.append(float(inner))
                else:
                    walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(summary)
    return max(found) if found else None


def write_section(directory: Path, name: str, doc: Mapping[str, Any]) -> Path:
    """Writes ``doc`` to ``DIRECTORY/NAME_mqc.json``; returns the path."""
    path = directory / f"{name}_mqc.json"
    write_atomic(path, json.dumps(doc, indent=1))
    return path
