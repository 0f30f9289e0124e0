"""The sample sheet: a TSV or CSV file with a header ``sample``, ``r1``, optional ``r2`` and
optional per-sample parameter columns (``cutoff``, ``ksize`` or ``STEP.PARAM``).

Everything is checked before anything runs; the first problem raises :class:`SampleSheetError`
naming the file and line. Relative read paths are relative to the sheet's folder.
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmerflow.pipeline.config import ConfigError, PipelineConfig, parse_value

#: A sample name becomes a folder and file-name prefix: letters, digits, ``.``, ``_``, ``-``.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")

#: The longest sample name: its longest file name (``.NAME.renormalize.keep.csv`` and the
#: temporary names derived from it) must fit the 255 bytes of a file name.
MAX_NAME_LENGTH = 100

#: Names of OUTDIR's own files start with this (``kmerflow_report.html``, ``kmerflow_run.json``,
#: the MultiQC files); a sample, whose folder is ``OUTDIR/NAME``, may not.
RESERVED_PREFIX = "kmerflow_"


class SampleSheetError(ValueError):
    """A sample sheet that cannot be run (exit status 2, nothing started)."""


@dataclass
class Sample:
    """One row of the sample sheet with its effective configuration."""

    name: str
    r1: Path
    r2: Path | None
    config: PipelineConfig
    #: The per-sample overrides as given (column → value), for the summary.
    overrides: dict[str, Any] = field(default_factory=dict)
    #: Its line in the sample sheet (for messages).
    line: int = 0

    @property
    def paired(self) -> bool:
        """Whether the sample has two read files."""
        return self.r2 is not None

    @property
    def steps(self) -> list[str]:
        """The configured steps that apply to this sample (pair steps only when paired)."""
        pair_steps = {"interleave", "extract"}
        return [s for s in self.config.steps if self.paired or s not in pair_steps]

    def input_bytes(self) -> int:
        """Total size of the read files (used to start large samples first)."""
        return sum(p.stat().st_size for p in (self.r1, self.r2) if p is not None)


def read_samplesheet(path: str | os.PathLike[str], config: PipelineConfig) -> list[Sample]:
    """Parse and check a sample sheet; the delimiter is a tab if the header has one, else a
    comma. Empty lines and lines starting with ``#`` are ignored."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark
    except (OSError, UnicodeDecodeError) as e:
        raise SampleSheetError(f"{path}: cannot read the sample sheet: {e}") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise SampleSheetError(f"{path}: empty sample sheet (expected a header: sample, r1, r2)")
    delimiter = "\t" if "\t" in lines[0][1] else ","
    rows = [_fields(line, delimiter, f"{path} line {n}") for n, line in lines]
    header = [h.strip() for h in rows[0]]
    where = f"{path} line {lines[0][0]}"
    for required in ("sample", "r1"):
        if required not in header:
            raise SampleSheetError(f"{where}: the header has no {required!r} column "
                                   f"(found: {', '.join(header)})")
    if len(set(header)) != len(header):
        raise SampleSheetError(f"{where}: duplicate column names in the header")
    base = path.parent
    samples: list[Sample] = []
    seen: dict[str, int] = {}  # by the name in lower case: one folder on any file system
    for (lineno, _), row in zip(lines[1:], rows[1:], strict=True):
        where = f"{path} line {lineno}"
        if len(row) != len(header):
            raise SampleSheetError(f"{where}: {len(row)} fields, the header has {len(header)}")
        values = {h: v.strip() for h, v in zip(header, row, strict=True)}
        name = values.pop("sample")
        _check_name(name, where)
        if name.lower() in seen:
            raise SampleSheetError(f"{where}: sample {name!r} already on line "
                                   f"{seen[name.lower()]} (names differing only in case "
                                   f"name the same folder on some file systems)")
        seen[name.lower()] = lineno
        r1_text = values.pop("r1")
        r1 = _read_file(base, r1_text, where, "r1")
        r2_text = values.pop("r2", "")
        r2 = _read_file(base, r2_text, where, "r2") if r2_text else None
        if r2 is not None and os.path.samefile(r1, r2):
            raise SampleSheetError(f"{where}: r1 {r1_text!r} and r2 {r2_text!r} are the same "
                                   f"file ({r1})")
        overrides = {k: parse_value(v) for k, v in values.items() if v != ""}
        try:
            sample_config = config.with_overrides(overrides)
        except ConfigError as e:
            raise SampleSheetError(f"{where}: {e}") from None
        samples.append(Sample(name, r1, r2, sample_config, overrides, lineno))
    if not samples:
        raise SampleSheetError(f"{path}: no samples below the header")
    return samples


def _fields(line: str, delimiter: str, where: str) -> list[str]:
    """The fields of one line of the sheet (a quoted field may not span lines)."""
    try:
        return next(csv.reader([line], delimiter=delimiter, strict=True))
    except csv.Error as e:
        raise SampleSheetError(f"{where}: {e} (an unclosed quote? a field cannot span "
                               f"lines)") from None


def _check_name(name: str, where: str) -> None:
    """Refuse a sample name that cannot name its files and folder (see :data:`_NAME`,
    :data:`MAX_NAME_LENGTH` and :data:`RESERVED_PREFIX`)."""
    if not _NAME.match(name):
        raise SampleSheetError(f"{where}: sample name {name!r} must be letters, digits, "
                               f"'.', '_' or '-' (it names files)")
    if len(name) > MAX_NAME_LENGTH:
        raise SampleSheetError(f"{where}: sample name of {len(name)} characters: at most "
                               f"{MAX_NAME_LENGTH} (it names files)")
    if name.lower().startswith(RESERVED_PREFIX):
        raise SampleSheetError(f"{where}: sample name {name!r}: names starting with "
                               f"{RESERVED_PREFIX!r} are the run's own files in OUTDIR")


def _read_file(base: Path, text: str, where: str, column: str) -> Path:
    if not text:
        raise SampleSheetError(f"{where}: empty {column}")
    p = Path(text)
    p = (p if p.is_absolute() else base / p).resolve()
    if not p.exists():
        raise SampleSheetError(f"{where}: {column} {text!r}: no such file ({p})")
    if not p.is_file():
        raise SampleSheetError(f"{where}: {column} {text!r}: not a regular file ({p})")
    if not os.access(p, os.R_OK):
        raise SampleSheetError(f"{where}: {column} {text!r}: not readable")
    return p
