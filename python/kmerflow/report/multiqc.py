"""MultiQC custom-content files (``*_mqc.json``, ``*_mqc.tsv``), which ``multiqc DIR`` shows
without a kmerflow module: general statistics, tables, bar and line graphs. Sections with the
same id in several files (one per sample) are merged by MultiQC into one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional


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
              data: Mapping[str, Mapping[float, float]]) -> dict[str, Any]:
    """A line-graph section (with MultiQC's log-scale switch)."""
    return section(ident, title, "linegraph", data,
                   pconfig={"xlab": xlab, "ylab": ylab, "logswitch": True})


def write_section(directory: Path, name: str, doc: Mapping[str, Any]) -> Path:
    """Writes ``doc`` to ``DIRECTORY/NAME_mqc.json``; returns the path."""
    path = directory / f"{name}_mqc.json"
    write_atomic(path, json.dumps(doc, indent=1))
    return path
