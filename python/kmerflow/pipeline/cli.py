"""``kmerflow pipeline``: the command line of :func:`kmerflow.pipeline.run`."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Optional, Sequence

from kmerflow.errors import CommandError
from kmerflow.pipeline.config import DEFAULT_STEPS, STEP_ORDER

_EPILOG = f"""\
steps (in order; default {','.join(DEFAULT_STEPS)}): {', '.join(STEP_ORDER)}.
  protocol is kmerflow normalize (khmer's protocol in one run: --target 5, tables sized from
  the data, R1/R2 in and out, the histogram of its output); the khmer steps interleave ...
  histogram run the protocol as khmer's separate commands instead (not with protocol).
  interleave and extract apply to samples with r2 only.

sample sheet (TSV or CSV with a header): sample, r1, optional r2, and optional per-sample
  parameter columns: cutoff (the first normalization's -C: normalize's -C, protocol's
  --first-target), ksize (k of every step), single_strand (true: every step hashes k-mers as
  read, --single-strand), or STEP.PARAM.

steps.toml (khmer's separate steps, their reads between steps kept in OUTDIR):
  steps = ["interleave", "normalize", "filter", "extract", "renormalize", "histogram",
           "readstats"]
  chunks = 4
  keep_intermediates = true
  [normalize]
  cutoff = 20
  max_memory_usage = "1G"

examples:
  kmerflow pipeline samples.tsv -o results --local-cluster 4
  kmerflow pipeline samples.tsv -o results --scheduler tcp://head:8786 --scratch /local/tmp
  kmerflow pipeline samples.csv -o results --config steps.toml --keep-going
  kmerflow pipeline samples.tsv -o results --param protocol.max_memory_usage=2G

One run at a time per OUTDIR (a lock file, OUTDIR/.kmerflow.lock, names the holder's pid).

Everything is checked before a folder is created or a cluster started: the sample sheet (names,
files, R1 and R2 not the same file), every step's parameters (by the commands' own parser),
OUTDIR and --scratch, and that no output would replace an input.

A rerun resumes: a step's outputs get their final names only once the sample's manifest
records the step complete, and a rerun redoes what is not; a rerun with nothing to do keeps
the last run's reports.

exit status: 0 all samples done, 1 a sample failed, OUTDIR is in use by another run, or
  OUTDIR/--scratch cannot be used, 2 bad sample sheet, configuration or options.
"""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive(text: str) -> int:
    """An integer of at least 1 (``--chunks``, ``--local-cluster``, ``--max-active``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``kmerflow pipeline``."""
    p = _Parser(
        prog="kmerflow pipeline", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the normalization protocol on every sample of a sample sheet, "
                    "several samples at once on a Dask cluster, with a manifest (reruns skip "
                    "completed work) and reports (JSON, MultiQC, HTML) in OUTDIR.",
        epilog=_EPILOG)
    p.add_argument("samplesheet", help="TSV/CSV: sample, r1[, r2][, parameter columns]")
    p.add_argument("-o", "--outdir", required=True, help="output folder")
    p.add_argument("--steps", help=f"comma-separated steps to run (default: "
                                    f"{','.join(DEFAULT_STEPS)})")
    p.add_argument("--config", metavar="TOML", help="steps and parameters from a TOML file")
    p.add_argument("--param", action="append", default=[], metavar="STEP.PARAM=VALUE",
                   help="set a step parameter, e.g. normalize.max_memory_usage=2G (repeatable)")
    p.add_argument("--chunks", type=_positive,
                   help="the most chunk tasks of a per-chunk step (default 4; it gets one per idle "
                        "worker thread when it is ready, one task when other samples hold them)")
    cluster = p.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS",
                         help="a running Dask scheduler (e.g. tcp://host:8786)")
    cluster.add_argument("--local-cluster", type=_positive, metavar="N",
                         help="start a LocalCluster of N single-thread workers, at most one "
                              "per CPU this process may use (default: one per CPU)")
    p.add_argument("--scratch", metavar="DIR",
                   help="intermediate files (default OUTDIR/.scratch), removed when their sample "
                        "completes; every worker must see it")
    p.add_argument("--keep-intermediates", action="store_true", default=None,
                   help="keep the khmer steps' reads that a later step reads (normalize, filter, "
                        "extract) in OUTDIR instead of --scratch")
    p.add_argument("--max-active", type=_positive, metavar="N",
                   help="samples running at once (default: worker threads + 1; 1 = one after "
                        "another)")
    p.add_argument("--keep-going", action="store_true",
                   help="go on with the other samples when one fails (exit 1 at the end)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``kmerflow pipeline ARGS``; returns the exit status."""
    args = parser().parse_args(argv)
    from kmerflow.distributed.cluster import exit_status, stopped_by_signals
    from kmerflow.pipeline import ConfigError, FolderError, OutdirBusy, SampleSheetError, run

    steps = args.steps.split(",") if args.steps is not None else None
    try:
        with stopped_by_signals("pipeline"):
            result = run(args.samplesheet, args.outdir, steps=steps, config=args.config,
                         params=args.param, chunks=args.chunks, scheduler=args.scheduler,
                         local_cluster=args.local_cluster, scratch=args.scratch,
                         keep_going=args.keep_going, max_active=args.max_active,
                         keep_intermediates=args.keep_intermediates,
                         log=(lambda m: None) if args.quiet else None)
    except (SampleSheetError, ConfigError, ImportError) as e:  # ImportError: no Dask
        print(f"kmerflow pipeline: error: {e}", file=sys.stderr)
        return 2
    except (OutdirBusy, FolderError, OSError) as e:
        print(f"kmerflow pipeline: error: {e}", file=sys.stderr)
        return 1
    except CommandError as e:  # the cluster (kmerflow.distributed.cluster.connect)
        print(str(e), file=sys.stderr)
        return e.code
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM
        print("kmerflow pipeline: interrupted (a rerun resumes from the manifest)", file=sys.stderr)
        return exit_status(e)
    for name, error in result.errors.items():
        print(f"kmerflow pipeline: error: sample {name}: {error}", file=sys.stderr)
    if not args.quiet and result.status and all(v == "skipped" for v in result.status.values()):
        print(f"kmerflow pipeline: nothing to run: all {len(result.status)} sample(s) complete; "
              f"report of the last run: {result.report}", file=sys.stderr)
    elif not args.quiet:
        s = result.stats
        print(f"kmerflow pipeline: {s['samples_done']} sample(s) done in {s['wall_seconds']:.1f} s, "
              f"utilisation {100 * s['utilisation']:.1f} %, {s['samples_per_hour']:.1f} samples/hour; "
              f"report: {result.report}", file=sys.stderr)
    return 0 if result.ok else 1
