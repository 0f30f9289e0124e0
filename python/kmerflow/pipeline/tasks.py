"""The functions Dask workers run: one command, one chunk of a per-chunk step, a concatenation.

Every function takes and returns plain data (paths, dicts), so any worker with kmerflow
installed can run it; files are exchanged through the output and scratch folders, which all
workers must see.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from kmerflow import commands
from kmerflow.pipeline import chunks


class StepFailed(Exception):
    """A command of a step failed; the message is the command's error line (a plain exception
    so that it travels back from a worker unchanged)."""


def call_command(function: str, *args: Any, **options: Any) -> dict[str, Any]:
    """Run a :mod:`kmerflow.commands` function quietly and return its summary as a dict (the
    :class:`kmerflow.commands.RunResult`'s ``summary``; readstats' list of per-file statistics
    as ``{"files": [...]}``)."""
    try:
        result = getattr(commands, function)(*args, quiet=True, **options)
    except Exception as e:
        raise StepFailed(str(e)) from None
    summary = result.summary
    return summary if isinstance(summary, dict) else {"files": summary}


def file_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Path, size and SHA-256 of a file (what the manifest stores)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"path": os.fspath(path), "size": os.path.getsize(path), "sha256": digest.hexdigest()}


#: File options left out when their file is empty (normalize-by-median refuses an empty
#: ``-u`` file, and an empty one adds nothing: extract-paired-reads found no orphans).
OPTIONAL_FILES = ("unpaired_reads",)


def run_step(function: str, positional: list[Any], options: dict[str, Any],
             outputs: dict[str, str], skip_empty_inputs: bool = False) -> dict[str, Any]:
    """Run one command over whole files; returns the records of ``outputs`` (role → path) and
    the command's summary. ``skip_empty_inputs`` leaves empty files out of list arguments
    (readstats refuses an empty file)."""
    options = {k: v for k, v in options.items()
               if not (k in OPTIONAL_FILES and os.path.getsize(v) == 0)}
    if skip_empty_inputs:
        positional = [[p for p in arg if os.path.getsize(p) > 0] if isinstance(arg, list)
                      else arg for arg in positional]
    summary = call_command(function, *positional, **options)
    return {"outputs": {role: file_record(p) for role, p in outputs.items()},
            "summary": summary}


def run_chunk(function: str, source: str, n_chunks: int, index: int, before: list[Any],
              options: dict[str, Any], parts: dict[str, str]) -> dict[str, str]:
    """Cut chunk ``index`` of ``n_chunks`` out of ``source`` (records between two safe
    boundaries) and run the command on it; ``before`` are positional arguments ahead of the
    chunk (the table of filter-abund), ``parts`` maps an output keyword to its part file.
    Returns ``parts``. An empty chunk gives empty parts without running the command."""
    cuts = chunks.cut_points(source, n_chunks)
    start, end = cuts[index], cuts[index + 1]
    if start == end:
        for part in parts.values():
            Path(part).write_bytes(b"")
        return parts
    chunk = Path(next(iter(parts.values()))).with_suffix(".in")
    chunks.copy_range(source, start, end, chunk)
    try:
        call_command(function, *before, chunk, **options, **parts)
    finally:
        chunk.unlink(missing_ok=True)
    return parts


def join_parts(parts: dict[str, list[str]], outputs: dict[str, str]) -> dict[str, Any]:
    """Concatenate each output's parts (role → part files in chunk order) into its output file
    (role → path), then delete the parts; returns the output records like :func:`run_step`."""
    for role, dest in outputs.items():
        chunks.concatenate([Path(p) for p in parts[role]], Path(dest))
    for files in parts.values():
        for p in files:
            Path(p).unlink(missing_ok=True)
    return {"outputs": {role: file_record(p) for role, p in outputs.items()}, "summary": {}}
