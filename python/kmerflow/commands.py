"""One Python function per ``kmerflow`` command (khmer only had scripts, issue #1901).

Each function runs its command in-process with the GIL released and returns a
:class:`RunResult` (the command's summary). Its keyword arguments are the command's flags, read
from the command definitions of the native module (:func:`definitions`): ``--max-tablesize`` is
``max_tablesize``, ``--n_tables`` is ``n_tables``, ``--layout`` is ``layout``; khmer's own
keyword spellings that differ (:data:`ALIASES`, e.g. ``num_samples`` for ``--samples``) are
accepted too. ``True`` gives a bare flag, ``False``/``None`` omit it, a list repeats a flag that
may repeat. Parameters left out take the command's default (see ``kmerflow COMMAND --help`` or
``help(kmerflow.normalize_by_median)``). A keyword the command does not have raises
:class:`TypeError`; a command that fails on a named file (a missing input) raises the
:class:`OSError` subclass of that error (:class:`FileNotFoundError`, ...; also a
:class:`kmerflow.KmerflowIOError`), any other failing command :class:`kmerflow.CommandError`
carrying the command's error message and exit status. Messages reach the ``kmerflow`` logger
and :func:`warnings.warn` while the command runs.

Counting options shared by the k-mer commands: ``ksize`` (k), ``n_tables`` (number of tables),
``max_tablesize`` (bins per table), ``max_memory_usage`` (total table memory, e.g. ``"1G"``),
``small_count`` (4-bit counters), ``threads``.

A table sharded over Dask workers (``pip install kmerflow[dask]``): ``load_into_counting``,
``normalize_by_median``, ``abundance_dist_single``, ``filter_abund_single``,
``trim_low_abund`` and ``filter_abund`` (its saved table loaded into the shards) given
``scheduler=`` (an address ``"tcp://HOST:PORT"``, a scheduler file, ``"local"`` for a
LocalCluster of one worker per core, or a ``distributed.Client``) or ``local_cluster=N``, and
optionally ``shards=N``, run on the shards and return the same :class:`RunResult` (the same
summary fields) as the one-process run::

    kmerflow.normalize_by_median(["reads.fq"], cutoff=20, max_memory_usage="8G",
                                 output="kept.fq", scheduler="tcp://head:8786", shards=8)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import os
import sys
import warnings
from types import FrameType
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from kmerflow import _core
from kmerflow.errors import KmerflowWarning

_LOG = logging.getLogger("kmerflow")

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]

#: khmer's keyword spellings that differ from the flag they set: alias → flag-derived keyword.
ALIASES: dict[str, str] = {"num_samples": "samples"}


@dataclasses.dataclass(frozen=True)
class Flag:
    """One option of a command, as the command line defines it."""

    keyword: str       #: the Python keyword (the long flag with ``-`` → ``_``)
    flag: str          #: the long flag, ``--`` included
    takes_value: bool  #: False for a switch (``--force``)
    repeatable: bool   #: may be given several times (pass a list)
    help: str          #: the one-line help
    default: Optional[str] = None  #: the value the command takes when the flag is left out


@dataclasses.dataclass(frozen=True)
class CommandDef:
    """A command's definition: its positional arguments and its flags by keyword."""

    name: str                          #: as typed on the command line
    about: str                         #: one-line description
    positional: tuple[str, ...]        #: clap's names of the positional arguments, in order
    repeatable: tuple[bool, ...]       #: for each positional argument, whether it takes a list
    flags: Mapping[str, Flag]          #: keyword → flag (aliases of :data:`ALIASES` included)


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What a command function returns.

    ``summary`` holds the command's counts as the core returns them (reads kept and examined,
    k-mers, false-positive rate, ... depending on the command); ``report`` is the run report,
    the document ``--report-json`` writes (docs/report-schema.md): parameters, inputs and
    outputs with sizes, counters, timings, peak memory, warnings and the plotted data.
    """

    command: str                #: the command's name
    argv: tuple[str, ...]       #: the equivalent command line, without the program name
    summary: Any                #: the run's summary (a dict; for readstats a list, one per file)
    report: Any = None          #: the run report (a dict; None for a run ended by a closed pipe)

    def to_dict(self) -> dict[str, Any]:
        """The result as plain data (for JSON)."""
        return {"command": self.command, "argv": list(self.argv), "summary": self.summary,
                "report": self.report}


def _keyword(long: str) -> str:
    return long.replace("-", "_")


@functools.lru_cache(maxsize=None)
def definitions() -> Mapping[str, CommandDef]:
    """Every command's definition by name, from the command line's own declarations."""
    result: dict[str, CommandDef] = {}
    for spec in _core.command_specs():
        flags: dict[str, Flag] = {}
        positional: list[tuple[str, bool]] = []
        for arg in spec["args"]:
            if arg["positional"]:
                positional.append((arg["id"], arg["repeatable"]))
            elif arg["long"] is not None:
                flag = Flag(_keyword(arg["long"]), "--" + arg["long"], arg["takes_value"],
                            arg["repeatable"], arg["help"], arg["default"])
                flags[flag.keyword] = flag
        for alias, keyword in ALIASES.items():
            if keyword in flags:
                flags[alias] = flags[keyword]
        result[spec["name"]] = CommandDef(spec["name"], spec["about"],
                                          tuple(p for p, _ in positional),
                                          tuple(r for _, r in positional), flags)
    return result


def _definition(command: str) -> CommandDef:
    try:
        return definitions()[command]
    except KeyError:
        raise ValueError(f"no kmerflow command {command!r}") from None


def command_argv(command: str, positional: Iterable[Any] = (), **options: Any) -> list[str]:
    """The argv (without program name) of ``kmerflow COMMAND`` for the given arguments; the
    positional arguments follow ``--`` when one begins with ``-`` (other than ``-``, stdin)."""
    flags = _definition(command).flags
    unknown = sorted(set(options) - set(flags))
    if unknown:
        raise TypeError(f"{command}: unknown option(s) {', '.join(map(repr, unknown))} "
                        f"(known: {', '.join(sorted(flags))})")
    argv = [command]
    for name, value in options.items():
        flag = flags[name]
        if value is None or value is False:
            continue
        if value is True and not flag.takes_value:
            argv.append(flag.flag)
        elif not flag.takes_value:
            raise TypeError(f"{command}: {name} is a switch ({flag.flag}): pass True or False")
        elif isinstance(value, (list, tuple)):
            if not flag.repeatable and len(value) != 1:
                raise TypeError(f"{command}: {name} ({flag.flag}) takes one value, not a list")
            for item in value:
                argv += [flag.flag, _text(item)]
        else:
            argv += [flag.flag, _text(value)]
    positional = [_text(p) for p in positional]
    if any(p.startswith("-") and p != "-" for p in positional):
        argv.append("--")  # a path like "--help" is a file name, not an option
    return argv + positional


def _text(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _paths(value: Paths) -> list[PathLike]:
    return [value] if isinstance(value, (str, os.PathLike)) else list(value)


def _forward(level: str, text: str) -> None:
    """Hands one message of a running command to Python: warnings to :func:`warnings.warn`
    (pointing at the caller of the command function, however deep below :func:`run` the
    message comes from: a sharded run's are a few calls further down), the rest to the
    ``kmerflow`` logger."""
    if level == "warning":
        frame: Optional[FrameType] = sys._getframe()
        depth = 1
        while frame is not None and frame.f_code is not run.__code__:
            frame, depth = frame.f_back, depth + 1
        # ... <- run <- the command function <- its caller (this function's caller otherwise).
        warnings.warn(text, KmerflowWarning, stacklevel=depth + 2 if frame is not None else 2)
    else:
        _LOG.log(logging.ERROR if level == "error" else logging.INFO, "%s", text)


def run(command: str, positional: Iterable[Any] = (), **options: Any) -> RunResult:
    """Run ``kmerflow COMMAND`` in-process. Raises :class:`FileNotFoundError` (and the other
    :class:`OSError` subclasses, as :class:`kmerflow.KmerflowIOError`) when it fails on a named
    file, :class:`kmerflow.CommandError` on any other failure and :class:`KeyboardInterrupt`
    when Ctrl-C stops it. The run's messages reach Python while it runs: informational ones go
    to the ``kmerflow`` logger (level INFO; errors a run went past with ``force``: ERROR), its
    warnings to :func:`warnings.warn` (:class:`kmerflow.KmerflowWarning`); an exception from
    either (a warning filter set to ``"error"``) stops the run. ``html``, ``plots`` and
    ``multiqc`` render the run report (:func:`kmerflow.report.render`).

    ``scheduler`` (a Dask scheduler's address, a scheduler file, ``"local"``, or a
    ``distributed.Client``) or ``local_cluster=N``, with ``shards``, run ``load-into-counting``,
    ``normalize-by-median``, ``abundance-dist-single``, ``filter-abund-single``,
    ``trim-low-abund``, ``filter-abund`` (its saved table loaded into the shards) and ``normalize``
    (one table a pass, either layout) on tables
    sharded over Dask workers (:mod:`kmerflow.distributed.cli`); the result has the same
    summary fields as the one-process run."""
    client = options.get("scheduler")
    if client is not None and not isinstance(client, (str, os.PathLike)):
        options["scheduler"] = client.scheduler.address  # a distributed.Client: run on it
    else:
        client = None
    argv = command_argv(command, positional, **options)
    from kmerflow.distributed.cli import wants_shards

    if wants_shards(argv):
        from kmerflow.distributed.cli import run as run_sharded

        summary, report = run_sharded(argv, _forward, client=client) or (None, None)
    else:
        summary_text, report_text = _core.run_command(argv, _forward)
        summary, report = json.loads(summary_text), json.loads(report_text)
    if report and any(report["parameters"].get(k) for k in ("html", "plots", "multiqc")):
        from kmerflow.report import render

        render(report)
    return RunResult(command, tuple(argv[1:]), summary, report)


def _command(name: str) -> Callable[[Callable[..., None]], Callable[..., RunResult]]:
    """Makes the function of command ``name`` from a stub giving its positional parameters (in
    the command's order; a ``Paths`` parameter for an argument that takes several files) and its
    documentation; every flag of the command becomes a keyword-only parameter."""
    definition = _definition(name)

    def make(stub: Callable[..., None]) -> Callable[..., RunResult]:
        positional = list(inspect.signature(stub).parameters.values())
        if len(positional) != len(definition.positional):
            raise TypeError(f"{stub.__name__}: {len(positional)} positional parameters for "
                            f"{name}'s {definition.positional}")
        keywords = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY,
                                      default=False if not f.takes_value else None)
                    for k, f in definition.flags.items()]
        signature = inspect.Signature([*positional, *keywords], return_annotation=RunResult)

        @functools.wraps(stub)
        def call(*args: Any, **kwargs: Any) -> RunResult:
            bound = signature.bind(*args, **kwargs)
            values: list[Any] = []
            for param, many in zip(positional, definition.repeatable, strict=True):
                value = bound.arguments.get(param.name, param.default)
                if value is None or value is inspect.Parameter.empty:
                    continue
                values += _paths(value) if many else [value]
            options = {k: v for k, v in bound.arguments.items()
                       if k not in {p.name for p in positional}}
            return run(name, values, **options)

        call.__signature__ = signature  # type: ignore[attr-defined]
        call.__doc__ = inspect.cleandoc(stub.__doc__ or "") + "\n\n" + _parameter_docs(definition)
        return call

    return make


def _parameter_docs(definition: CommandDef) -> str:
    """The ``Parameters`` section of a command function's docstring: every keyword with its
    flag, what it does and the value the command takes when it is left out (a keyword left at
    ``None`` or ``False`` is not passed, so the command's own default applies)."""
    lines = ["Parameters (keyword-only; left out, ``None`` or ``False``: the command's default)",
             "-" * 80]
    for keyword, flag in definition.flags.items():
        if keyword in ALIASES:
            continue
        kind = "switch" if not flag.takes_value else ("list" if flag.repeatable else "value")
        default = f"; default {flag.default}" if flag.default is not None else ""
        lines.append(f"{keyword} ({flag.flag}, {kind}{default})")
        lines.append(f"    {flag.help}")
    return "\n".join(lines)


# --- read handling -----------------------------------------------------------------------------

@_command("fastq-to-fasta")
def fastq_to_fasta(input: PathLike) -> None:
    """Convert FASTQ to FASTA; reads containing ``N`` are dropped unless ``n_keep``."""


@_command("interleave-reads")
def interleave_reads(left: PathLike, right: PathLike) -> None:
    """Interleave two files of mates (R1, R2) into one; names get ``/1`` ``/2`` unless
    ``no_reformat``."""


@_command("split-paired-reads")
def split_paired_reads(input: PathLike) -> None:
    """Split an interleaved file into ``.1`` and ``.2`` files (orphans to ``output_orphaned``,
    an error without it)."""


@_command("extract-paired-reads")
def extract_paired_reads(input: PathLike) -> None:
    """Separate pairs (``.pe``) from orphans (``.se``)."""


@_command("extract-long-sequences")
def extract_long_sequences(inputs: Paths) -> None:
    """Keep sequences at least ``length`` (default 200) bases long."""


@_command("sample-reads-randomly")
def sample_reads_randomly(inputs: Paths) -> None:
    """Reservoir-sample ``num_reads`` reads (pairs kept together unless ``force_single``)."""


@_command("readstats")
def readstats(inputs: Paths) -> None:
    """Base pairs, sequence counts and average length per file (text or ``csv``)."""


# --- k-mer counting ----------------------------------------------------------------------------

@_command("load-into-counting")
def load_into_counting(output_graph: PathLike, inputs: Paths) -> None:
    """Count the k-mers of ``inputs`` and save the countgraph to ``output_graph``."""


@_command("abundance-dist")
def abundance_dist(graph: PathLike, input: PathLike, output: PathLike) -> None:
    """Write the k-mer abundance histogram (CSV) of ``input`` against a saved countgraph."""


@_command("abundance-dist-single")
def abundance_dist_single(input: PathLike, output: PathLike) -> None:
    """Count the k-mers of ``input`` and write their abundance histogram (CSV) in one run."""


@_command("normalize-by-median")
def normalize_by_median(inputs: Paths) -> None:
    """Digital normalization: keep a read (or pair) only while its median k-mer count is below
    ``cutoff`` (default 20). Outputs ``<input>.keep`` per input, or ``output``."""


@_command("normalize")
def normalize(inputs: Paths) -> None:
    """The normalization protocol in one run: ``inputs`` is R1 and R2, or one interleaved or
    single-end file; normalize to ``first_target`` (default 4 × ``target``), trim reads at k-mers
    counted fewer than ``min_depth`` times, normalize to ``target`` (default 20) with a new table
    (``passes=1``: without this last step). Writes ``output`` (and ``mate_output`` for R2, ``orphans``
    for reads left without their mate); tables sized automatically unless ``max_memory_usage``,
    of the blocked layout unless ``layout="khmer"`` (then the outputs equal khmer's commands');
    ``hist``/``hist_out`` histograms. Khmer's protocol is ``target=5, layout="khmer"``."""


@_command("filter-abund")
def filter_abund(graph: PathLike, inputs: Paths) -> None:
    """Trim reads at the first k-mer whose count (in a saved countgraph) is below ``cutoff``
    (default 2). Outputs ``<input>.abundfilt`` or ``output``."""


@_command("filter-abund-single")
def filter_abund_single(input: PathLike) -> None:
    """Count ``input`` then trim its reads at low-abundance k-mers, in one run."""


@_command("trim-low-abund")
def trim_low_abund(inputs: Paths) -> None:
    """Streaming two-pass trimming of low-abundance k-mers (``<input>.abundtrim`` or ``output``);
    ``tempdir`` holds the second-pass reads. R1/R2 files: ``mate=[r2]`` beside each input,
    ``mate_output`` (and ``orphans``) beside ``output``."""


@_command("count-median")
def count_median(graph: PathLike, input: PathLike, output: PathLike) -> None:
    """Write ``name,median,average,stddev,seqlen`` (CSV) per read, counts from a saved graph."""


@_command("unique-kmers")
def unique_kmers(inputs: Paths) -> None:
    """Estimate the number of distinct k-mers (HyperLogLog) per file and in total."""


@_command("load-graph")
def load_graph(output_graph: PathLike, inputs: Paths) -> None:
    """Load the k-mers of ``inputs`` into a nodegraph (Bloom filter) saved to ``output_graph``."""


@_command("partition-graph")
def partition_graph(basename: PathLike) -> None:
    """Partition the tags of the nodegraph ``basename`` (and ``basename.tagset``) into subset
    maps ``basename.subset.N.pmap``."""


@_command("merge-partitions")
def merge_partitions(graphbase: PathLike) -> None:
    """Merge ``graphbase.subset.*.pmap`` into ``graphbase.pmap.merged``."""


@_command("annotate-partitions")
def annotate_partitions(graphbase: PathLike, inputs: Paths) -> None:
    """Write each input's reads with their partition (``graphbase.pmap.merged``) to
    ``<basename>.part`` in the current directory."""


@_command("extract-partitions")
def extract_partitions(prefix: PathLike, inputs: Paths) -> None:
    """Write the partition size distribution ``prefix.dist`` and the reads grouped by partition
    into ``prefix.groupNNNN.fa|fq``."""


@_command("filter-stoptags")
def filter_stoptags(stoptags: PathLike, inputs: Paths) -> None:
    """Trim each input's reads at the first k-mer that is a stop tag into ``<basename>.stopfilt``
    in the current directory."""


@_command("make-initial-stoptags")
def make_initial_stoptags(graphbase: PathLike) -> None:
    """Write the highly connected k-mers of the largest partition among the first ``subset_size``
    tags of ``graphbase`` (and ``graphbase.tagset``) as stop tags to ``graphbase.stoptags``."""


@_command("find-knots")
def find_knots(graphbase: PathLike) -> None:
    """Add the highly connected k-mers of the largest partitions of each
    ``graphbase.subset.N.pmap`` to ``graphbase.stoptags`` (each map renamed ``.processed``)."""


@_command("do-partition")
def do_partition(graphbase: PathLike, inputs: Paths) -> None:
    """Build the graph of ``inputs``, partition it and write each input's ``<basename>.part``."""


__all__ = [
    "ALIASES", "CommandDef", "Flag", "RunResult", "command_argv", "definitions", "run",
    "fastq_to_fasta", "interleave_reads", "split_paired_reads", "extract_paired_reads",
    "extract_long_sequences", "sample_reads_randomly", "readstats",
    "load_into_counting", "abundance_dist", "abundance_dist_single", "normalize_by_median",
    "normalize", "filter_abund", "filter_abund_single", "trim_low_abund", "count_median",
    "unique_kmers", "load_graph", "partition_graph", "merge_partitions", "annotate_partitions",
    "extract_partitions", "do_partition", "filter_stoptags", "make_initial_stoptags", "find_knots",
]
