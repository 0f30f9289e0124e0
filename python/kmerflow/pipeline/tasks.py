"""The functions Dask workers run: one command, one chunk of a per-chunk step, a concatenation,
the count of a chunk, the sum of two tables, a command over a summed table.

Every function takes and returns plain data (paths, dicts), so any worker with kmerflow
installed can run it; files are exchanged through the output and scratch folders, which all
workers must see.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import kmerflow
from kmerflow import commands
from kmerflow.pipeline import chunks
from kmerflow.pipeline.config import OWN_CLUSTER


class StepFailed(Exception):
    """A command of a step failed; the message is the command's error line (a plain exception
    so that it travels back from a worker unchanged)."""


@dataclass(frozen=True)
class Failed:
    """What :func:`guarded` returns for a step that failed: its error line. A failure is
    returned rather than raised so that the worker does not log it as a crash, with a
    traceback, on the run's terminal."""

    message: str


def guarded(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, a failed command or file operation returned as :class:`Failed`."""
    try:
        return function(*args)
    except (StepFailed, OSError) as e:
        return Failed(str(e))


def call_command(function: str, *args: Any, **options: Any) -> dict[str, Any]:
    """Run a :mod:`kmerflow.commands` function quietly and return its summary as a dict (the
    :class:`kmerflow.commands.RunResult`'s ``summary``; readstats' list of per-file statistics
    as ``{"files": [...]}``; abundance-dist's ``histogram`` and normalize's ``histograms``, a
    count for every abundance up to 65,535, as their non-zero ``[abundance, count]`` pairs,
    which the manifest and the sample's summary keep)."""
    try:
        result = getattr(commands, function)(*args, quiet=True, **options)
    except Exception as e:
        raise StepFailed(str(e)) from None
    summary = result.summary
    if not isinstance(summary, dict):
        return {"files": summary}
    if "histogram" in summary:
        summary["histogram"] = _non_zero(summary["histogram"])
    if isinstance(summary.get("histograms"), dict):
        summary["histograms"] = {k: _non_zero(v) for k, v in summary["histograms"].items()}
    return summary


def _non_zero(histogram: Any) -> Any:
    """A histogram given as a count per abundance as its ``[abundance, count]`` pairs of
    non-zero counts (anything else unchanged)."""
    if isinstance(histogram, list) and all(isinstance(n, int) for n in histogram):
        return [[abundance, n] for abundance, n in enumerate(histogram) if n]
    return histogram


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


@contextlib.contextmanager
def _on_own_cluster(options: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``options`` of a step whose table is sharded over the pipeline's own cluster with its
    ``scheduler`` the task's client, the task seceded from its worker's threads meanwhile (the
    shards' actors may be placed on that worker too); other options unchanged."""
    if options.get("scheduler") != OWN_CLUSTER:
        yield options
        return
    from distributed import worker_client

    with worker_client() as client:
        yield {**options, "scheduler": client}


def run_step(function: str, positional: list[Any], options: dict[str, Any],
             outputs: dict[str, str]) -> dict[str, Any]:
    """Run one command over whole files; returns the records of ``outputs`` (role → path) and
    the command's summary."""
    options = {k: v for k, v in options.items()
               if not (k in OPTIONAL_FILES and os.path.getsize(v) == 0)}
    with _on_own_cluster(options) as options:
        summary = call_command(function, *positional, **options)
    return {"outputs": {role: file_record(p) for role, p in outputs.items()},
            "summary": summary}


@contextlib.contextmanager
def chunk_file(source: str, n_chunks: int, index: int, scratch: str) -> Iterator[Optional[Path]]:
    """Chunk ``index`` of ``n_chunks`` of ``source`` (records between two safe boundaries)
    copied to ``scratch`` for the duration of the block; None for an empty chunk."""
    cuts = chunks.cut_points(source, n_chunks)
    start, end = cuts[index], cuts[index + 1]
    if start == end:
        yield None
        return
    chunk = Path(scratch)
    chunks.copy_range(source, start, end, chunk)
    try:
        yield chunk
    finally:
        chunk.unlink(missing_ok=True)


def run_chunk(function: str, source: str, n_chunks: int, index: int, before: list[Any],
              options: dict[str, Any], parts: dict[str, str]) -> dict[str, str]:
    """Run the command on chunk ``index`` of ``n_chunks`` of ``source`` (see
    :func:`chunk_file`); ``before`` are positional arguments ahead of the chunk (the table of
    filter-abund), ``parts`` maps an output keyword to its part file. Returns ``parts``. An
    empty chunk gives empty parts without running the command."""
    with chunk_file(source, n_chunks, index, str(Path(next(iter(parts.values()))).with_suffix(".in"))) as chunk:
        if chunk is None:
            for part in parts.values():
                Path(part).write_bytes(b"")
        else:
            call_command(function, *before, chunk, **options, **parts)
    return parts


def count_chunk(source: str, n_chunks: int, index: int, options: dict[str, Any],
                table: str) -> Optional[str]:
    """Count chunk ``index`` of ``n_chunks`` of ``source`` into the saved table ``table``
    (``load-into-counting`` with ``options``); returns ``table``, None for an empty chunk.
    The chunk's table is forced past load-into-counting's false-positive-rate limit: it is a
    part of the whole file's count, which abundance-dist-single does not limit."""
    with chunk_file(source, n_chunks, index, f"{table}.in") as chunk:
        if chunk is None:
            return None
        call_command("load_into_counting", table, [chunk], **{**options, "force": True})
    return table


def add_tables(first: str, second: str, output: str) -> str:
    """Save the sum of two saved tables as ``output`` and delete them; returns ``output``."""
    try:
        kmerflow.add_tables([first, second], output)
    except Exception as e:
        raise StepFailed(str(e)) from None
    Path(first).unlink()
    Path(second).unlink()
    return output


def run_counted(table: Optional[str], function: str, options: dict[str, Any],
                whole_function: str, whole_options: dict[str, Any], positional: list[Any],
                outputs: dict[str, str]) -> dict[str, Any]:
    """Run ``function`` with the summed ``table`` before ``positional`` (abundance-dist), or the
    whole-file command ``whole_function`` (abundance-dist-single) when there is no table (every
    chunk was empty) or the sum may differ from counting the whole file: with 8-bit counters
    and bigcount, a k-mer whose count passes 255 only in the sum reads 255 (its counter is then
    255). Deletes ``table``; returns what :func:`run_step` returns."""
    try:
        if table is None or _may_pass_255(table, whole_options):
            return run_step(whole_function, positional, whole_options, outputs)
        return run_step(function, [table, *positional], options, outputs)
    finally:
        if table is not None:
            Path(table).unlink(missing_ok=True)


def _may_pass_255(table: str, options: dict[str, Any]) -> bool:
    """Whether a saved 8-bit bigcount table has a counter at 255."""
    if options.get("no_bigcount") or options.get("small_count"):
        return False
    graph = kmerflow.Countgraph.load(table)
    return any(bool((counters == 255).any()) for counters in graph.get_raw_tables())


def join_parts(parts: dict[str, list[str]], outputs: dict[str, str]) -> dict[str, Any]:
    """Concatenate each output's parts (role → part files in chunk order) into its output file
    (role → path), then delete the parts; returns the output records like :func:`run_step`."""
    for role, dest in outputs.items():
        chunks.concatenate([Path(p) for p in parts[role]], Path(dest))
    for files in parts.values():
        for p in files:
            Path(p).unlink(missing_ok=True)
    return {"outputs": {role: file_record(p) for role, p in outputs.items()}, "summary": {}}
