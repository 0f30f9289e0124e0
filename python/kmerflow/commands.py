"""One Python function per ``kmerflow`` command (khmer only had scripts, issue #1901).

Each function turns its arguments into the command's argv and runs the command in-process with
the GIL released. Keywords map to the command's flags through :data:`FLAGS` (khmer's own
spellings, e.g. ``n_tables`` → ``--n_tables``, ``max_tablesize`` → ``--max-tablesize``,
``num_samples`` → ``--samples``); ``True`` gives a bare flag, ``False``/``None`` omit it, a list
repeats it. Parameters left at ``None`` take the command's default (see ``kmerflow COMMAND
--help``); less common options can be given as extra keyword arguments named as in
:data:`FLAGS`. An unknown keyword raises :class:`TypeError`; a failing command raises
:class:`kmerflow.CommandError` carrying the command's error message and exit status.

Counting options shared by the k-mer commands: ``ksize`` (k), ``n_tables`` (number of tables),
``max_tablesize`` (bins per table), ``max_memory_usage`` (total table memory, e.g. ``"1G"``),
``small_count`` (4-bit counters), ``threads``.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Sequence, Union

from kmerflow import _core

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]

#: Python keyword → the command-line flag it sets, spelled as the command line (and khmer) do.
FLAGS: dict[str, str] = {
    # shared by most commands
    "output": "--output", "force": "--force", "quiet": "--quiet", "threads": "--threads",
    "gzip": "--gzip", "bzip": "--bzip", "report_json": "--report-json",
    # read handling
    "n_keep": "--n_keep", "no_reformat": "--no-reformat", "mate": "--mate",
    "output_dir": "--output-dir", "output_first": "--output-first",
    "output_second": "--output-second", "output_orphaned": "--output-orphaned",
    "output_paired": "--output-paired", "output_single": "--output-single", "length": "--length",
    "num_reads": "--num_reads", "max_reads": "--max_reads", "num_samples": "--samples",
    "random_seed": "--random-seed", "force_single": "--force_single", "csv": "--csv",
    # table sizing
    "ksize": "--ksize", "n_tables": "--n_tables", "max_tablesize": "--max-tablesize",
    "max_memory_usage": "--max-memory-usage", "unique_kmers": "--unique-kmers",
    "fp_rate": "--fp-rate", "small_count": "--small-count", "no_bigcount": "--no-bigcount",
    "summary_info": "--summary-info",
    # k-mer counting and filtering
    "no_zero": "--no-zero", "squash": "--squash", "savegraph": "--savegraph",
    "loadgraph": "--loadgraph", "cutoff": "--cutoff", "paired": "--paired",
    "unpaired_reads": "--unpaired-reads", "report": "--report",
    "report_frequency": "--report-frequency", "variable_coverage": "--variable-coverage",
    "normalize_to": "--normalize-to", "trim_at_coverage": "--trim-at-coverage",
    "ignore_pairs": "--ignore-pairs", "tempdir": "--tempdir", "diginorm": "--diginorm",
    "diginorm_coverage": "--diginorm-coverage", "single_pass": "--single-pass",
    "error_rate": "--error-rate", "stream_records": "--stream-records",
    "diagnostics": "--diagnostics", "no_build_tagset": "--no-build-tagset",
}


def command_argv(command: str, positional: Iterable[Any] = (), **options: Any) -> list[str]:
    """The argv (without program name) of ``kmerflow COMMAND`` for the given arguments."""
    unknown = sorted(set(options) - set(FLAGS))
    if unknown:
        raise TypeError(f"{command}: unknown option(s) {', '.join(map(repr, unknown))} "
                        f"(see kmerflow.commands.FLAGS)")
    argv = [command]
    for name, value in options.items():
        flag = FLAGS[name]
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv += [flag, _text(item)]
        else:
            argv += [flag, _text(value)]
    argv += [_text(p) for p in positional]
    return argv


def _text(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _paths(value: Paths) -> list[PathLike]:
    return [value] if isinstance(value, (str, os.PathLike)) else list(value)


def run(command: str, positional: Iterable[Any] = (), **options: Any) -> None:
    """Run ``kmerflow COMMAND`` in-process; raises :class:`kmerflow.CommandError` on failure."""
    _core.run_command(command_argv(command, positional, **options))


# --- read handling -----------------------------------------------------------------------------

def fastq_to_fasta(input: PathLike, *, output: Optional[PathLike] = None,
                   n_keep: bool = False, **options: Any) -> None:
    """Convert FASTQ to FASTA; reads containing ``N`` are dropped unless ``n_keep``."""
    run("fastq-to-fasta", [input], output=output, n_keep=n_keep, **options)


def interleave_reads(left: PathLike, right: PathLike, *, output: Optional[PathLike] = None,
                     no_reformat: bool = False, **options: Any) -> None:
    """Interleave two files of mates (R1, R2) into one; names get ``/1`` ``/2`` unless
    ``no_reformat``."""
    run("interleave-reads", [left, right], output=output, no_reformat=no_reformat, **options)


def split_paired_reads(input: PathLike, *, output_dir: Optional[PathLike] = None,
                       output_first: Optional[PathLike] = None,
                       output_second: Optional[PathLike] = None,
                       output_orphaned: Optional[PathLike] = None, **options: Any) -> None:
    """Split an interleaved file into ``.1`` and ``.2`` files (orphans to ``output_orphaned``,
    an error without it)."""
    run("split-paired-reads", [input], output_dir=output_dir, output_first=output_first,
        output_second=output_second, output_orphaned=output_orphaned, **options)


def extract_paired_reads(input: PathLike, *, output_dir: Optional[PathLike] = None,
                         output_paired: Optional[PathLike] = None,
                         output_single: Optional[PathLike] = None, **options: Any) -> None:
    """Separate pairs (``.pe``) from orphans (``.se``)."""
    run("extract-paired-reads", [input], output_dir=output_dir, output_paired=output_paired,
        output_single=output_single, **options)


def extract_long_sequences(inputs: Paths, *, output: Optional[PathLike] = None,
                           length: Optional[int] = None, **options: Any) -> None:
    """Keep sequences at least ``length`` (default 200) bases long."""
    run("extract-long-sequences", _paths(inputs), output=output, length=length, **options)


def sample_reads_randomly(inputs: Paths, *, output: Optional[PathLike] = None,
                          num_reads: Optional[int] = None, num_samples: Optional[int] = None,
                          random_seed: Optional[int] = None, force_single: bool = False,
                          **options: Any) -> None:
    """Reservoir-sample ``num_reads`` reads (pairs kept together unless ``force_single``)."""
    run("sample-reads-randomly", _paths(inputs), output=output, num_reads=num_reads,
        num_samples=num_samples, random_seed=random_seed, force_single=force_single, **options)


def readstats(inputs: Paths, *, output: Optional[PathLike] = None, csv: bool = False,
              **options: Any) -> None:
    """Base pairs, sequence counts and average length per file (text or ``csv``)."""
    run("readstats", _paths(inputs), output=output, csv=csv, **options)


# --- k-mer counting ----------------------------------------------------------------------------

def load_into_counting(output_graph: PathLike, inputs: Paths, *, ksize: Optional[int] = None,
                       n_tables: Optional[int] = None, max_tablesize: Optional[float] = None,
                       max_memory_usage: Optional[Union[str, float]] = None,
                       small_count: bool = False, threads: Optional[int] = None,
                       no_bigcount: bool = False, **options: Any) -> None:
    """Count the k-mers of ``inputs`` and save the countgraph to ``output_graph``."""
    run("load-into-counting", [output_graph, *_paths(inputs)], ksize=ksize, n_tables=n_tables,
        max_tablesize=max_tablesize, max_memory_usage=max_memory_usage,
        small_count=small_count, threads=threads, no_bigcount=no_bigcount, **options)


def abundance_dist(graph: PathLike, input: PathLike, output: PathLike, *, no_zero: bool = False,
                   squash: bool = False, no_bigcount: bool = False, **options: Any) -> None:
    """Write the k-mer abundance histogram (CSV) of ``input`` against a saved countgraph."""
    run("abundance-dist", [graph, input, output], no_zero=no_zero, squash=squash,
        no_bigcount=no_bigcount, **options)


def abundance_dist_single(input: PathLike, output: PathLike, *, ksize: Optional[int] = None,
                          n_tables: Optional[int] = None, max_tablesize: Optional[float] = None,
                          max_memory_usage: Optional[Union[str, float]] = None,
                          small_count: bool = False, threads: Optional[int] = None,
                          no_zero: bool = False, squash: bool = False, no_bigcount: bool = False,
                          savegraph: Optional[PathLike] = None, **options: Any) -> None:
    """Count the k-mers of ``input`` and write their abundance histogram (CSV) in one run."""
    run("abundance-dist-single", [input, output], ksize=ksize, n_tables=n_tables,
        max_tablesize=max_tablesize, max_memory_usage=max_memory_usage,
        small_count=small_count, threads=threads, no_zero=no_zero, squash=squash,
        no_bigcount=no_bigcount, savegraph=savegraph, **options)


def normalize_by_median(inputs: Paths, *, output: Optional[PathLike] = None,
                        cutoff: Optional[int] = None, ksize: Optional[int] = None,
                        n_tables: Optional[int] = None, max_tablesize: Optional[float] = None,
                        max_memory_usage: Optional[Union[str, float]] = None,
                        small_count: bool = False, paired: bool = False,
                        force_single: bool = False, unpaired_reads: Optional[PathLike] = None,
                        savegraph: Optional[PathLike] = None, loadgraph: Optional[PathLike] = None,
                        report: Optional[PathLike] = None, threads: Optional[int] = None,
                        **options: Any) -> None:
    """Digital normalization: keep a read (or pair) only while its median k-mer count is below
    ``cutoff`` (default 20). Outputs ``<input>.keep`` per input, or ``output``."""
    run("normalize-by-median", _paths(inputs), output=output, cutoff=cutoff, ksize=ksize,
        n_tables=n_tables, max_tablesize=max_tablesize, max_memory_usage=max_memory_usage,
        small_count=small_count, paired=paired, force_single=force_single,
        unpaired_reads=unpaired_reads, savegraph=savegraph, loadgraph=loadgraph, report=report,
        threads=threads, **options)


def filter_abund(graph: PathLike, inputs: Paths, *, output: Optional[PathLike] = None,
                 cutoff: Optional[int] = None, variable_coverage: bool = False,
                 normalize_to: Optional[int] = None, threads: Optional[int] = None,
                 **options: Any) -> None:
    """Trim reads at the first k-mer whose count (in a saved countgraph) is below ``cutoff``
    (default 2). Outputs ``<input>.abundfilt`` or ``output``."""
    run("filter-abund", [graph, *_paths(inputs)], output=output, cutoff=cutoff,
        variable_coverage=variable_coverage, normalize_to=normalize_to, threads=threads,
        **options)


def filter_abund_single(input: PathLike, *, output: Optional[PathLike] = None,
                        cutoff: Optional[int] = None, ksize: Optional[int] = None,
                        n_tables: Optional[int] = None, max_tablesize: Optional[float] = None,
                        max_memory_usage: Optional[Union[str, float]] = None,
                        small_count: bool = False, variable_coverage: bool = False,
                        normalize_to: Optional[int] = None, savegraph: Optional[PathLike] = None,
                        threads: Optional[int] = None, **options: Any) -> None:
    """Count ``input`` then trim its reads at low-abundance k-mers, in one run."""
    run("filter-abund-single", [input], output=output, cutoff=cutoff, ksize=ksize,
        n_tables=n_tables, max_tablesize=max_tablesize, max_memory_usage=max_memory_usage,
        small_count=small_count, variable_coverage=variable_coverage,
        normalize_to=normalize_to, savegraph=savegraph, threads=threads, **options)


def trim_low_abund(inputs: Paths, *, output: Optional[PathLike] = None,
                   cutoff: Optional[int] = None, trim_at_coverage: Optional[int] = None,
                   variable_coverage: bool = False, ksize: Optional[int] = None,
                   n_tables: Optional[int] = None, max_tablesize: Optional[float] = None,
                   max_memory_usage: Optional[Union[str, float]] = None,
                   small_count: bool = False, loadgraph: Optional[PathLike] = None,
                   savegraph: Optional[PathLike] = None, ignore_pairs: bool = False,
                   tempdir: Optional[PathLike] = None, diginorm: bool = False,
                   diginorm_coverage: Optional[int] = None, single_pass: bool = False,
                   threads: Optional[int] = None, **options: Any) -> None:
    """Streaming two-pass trimming of low-abundance k-mers (``<input>.abundtrim`` or ``output``);
    ``tempdir`` holds the second-pass reads."""
    run("trim-low-abund", _paths(inputs), output=output, cutoff=cutoff,
        trim_at_coverage=trim_at_coverage, variable_coverage=variable_coverage, ksize=ksize,
        n_tables=n_tables, max_tablesize=max_tablesize, max_memory_usage=max_memory_usage,
        small_count=small_count, loadgraph=loadgraph, savegraph=savegraph,
        ignore_pairs=ignore_pairs, tempdir=tempdir, diginorm=diginorm,
        diginorm_coverage=diginorm_coverage, single_pass=single_pass, threads=threads,
        **options)


def count_median(graph: PathLike, input: PathLike, output: PathLike, **options: Any) -> None:
    """Write ``name,median,average,stddev,seqlen`` (CSV) per read, counts from a saved graph."""
    run("count-median", [graph, input, output], **options)


def unique_kmers(inputs: Paths, *, ksize: Optional[int] = None,
                 error_rate: Optional[float] = None, report: Optional[PathLike] = None,
                 stream_records: bool = False, **options: Any) -> None:
    """Estimate the number of distinct k-mers (HyperLogLog) per file and in total."""
    run("unique-kmers", _paths(inputs), ksize=ksize, error_rate=error_rate, report=report,
        stream_records=stream_records, **options)


def load_graph(output_graph: PathLike, inputs: Paths, *, ksize: Optional[int] = None,
               n_tables: Optional[int] = None, max_tablesize: Optional[float] = None,
               max_memory_usage: Optional[Union[str, float]] = None,
               threads: Optional[int] = None, no_build_tagset: bool = False,
               **options: Any) -> None:
    """Load the k-mers of ``inputs`` into a nodegraph (Bloom filter) saved to ``output_graph``."""
    run("load-graph", [output_graph, *_paths(inputs)], ksize=ksize, n_tables=n_tables,
        max_tablesize=max_tablesize, max_memory_usage=max_memory_usage, threads=threads,
        no_build_tagset=no_build_tagset, **options)


__all__ = [
    "command_argv", "run",
    "fastq_to_fasta", "interleave_reads", "split_paired_reads", "extract_paired_reads",
    "extract_long_sequences", "sample_reads_randomly", "readstats",
    "load_into_counting", "abundance_dist", "abundance_dist_single", "normalize_by_median",
    "filter_abund", "filter_abund_single", "trim_low_abund", "count_median", "unique_kmers",
    "load_graph",
]
