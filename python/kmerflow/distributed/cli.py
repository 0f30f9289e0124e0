"""The counting commands on a table sharded over Dask workers: ``kmerflow COMMAND ...
--scheduler ADDRESS | --local-cluster N [--shards N]`` (dispatched here by ``kmerflow``, and by
the command functions given ``scheduler=`` or ``local_cluster=``).

The command line is parsed by the native command definitions (``_core.shard_plan``, read
through :mod:`kmerflow.distributed.plan`): flags, defaults, range checks, usage errors and the
table's sizing are the one-process command's, and a flag the sharded run does not have is a
usage error naming it. ``load-into-counting`` and
``normalize-by-median`` run on the shards throughout; ``abundance-dist-single`` and
``filter-abund-single`` count on the shards, then run the native histogram / filtering whose
look-ups go to the shards. ``trim-low-abund`` is the native command with its first pass
deciding on the shards and its second looking its reads up there. ``normalize-by-median -l``,
``trim-low-abund -l`` and ``filter-abund`` (a saved table, then the filtering looked up on the
shards) load the saved table into the shards (each shard reads its range of the file); saved
tables are written shard by shard. The summary has the native
command's fields; ``load-into-counting``'s ``OUT.info`` (and ``-s`` file) and ``--report-json``
are written by the native code (``_core.shard_finish``). Outputs are written under temporary
names and renamed at the end, so a failed run (a lost worker) leaves none. Exit status 0, 1 on
an error (one line), 2 on a usage error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, cast

import numpy as np

from kmerflow import _core
from kmerflow.distributed import ShardedBlockedTable, ShardedCountgraph
from kmerflow.distributed import plan as shard_plan
from kmerflow.distributed.cluster import connect, exit_status, local_cluster_refusal, stopped_by_signals
from kmerflow.distributed.plan import Cluster, Run
from kmerflow.errors import CommandError, KmerflowError

#: A receiver of the run's messages: ``(level, text)``, level ``info``, ``warning`` or ``error``.
OnMessage = Callable[[str, str], None]
#: The run's summary (the native command's fields) and the paths it wrote.
Outcome = Tuple[Dict[str, Any], List[str]]


def wants_shards(argv: Sequence[str]) -> bool:
    """Whether ``kmerflow`` arguments ``argv`` (command first) ask for a sharded run, as the
    command line parser reads them (any spelling it accepts: ``--local-clus 2``)."""
    return _core.shard_requested(["kmerflow", *argv])


def run(argv: Sequence[str], on_message: Optional[OnMessage] = None,
        client: Any = None) -> Optional[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """Runs the sharded command line ``argv`` (command first) on ``client`` (a
    ``distributed.Client``; else the cluster its flags name) and returns the command's summary
    and run report; ``None`` for a help or version request (printed). Messages go to
    ``on_message``; without it the run is printed as the one-process command line prints it
    (``_core.ShardTerminal``: the messages, informational ones not under ``-q``, the progress
    line on a terminal, the resource line at the end). Raises :class:`kmerflow.CommandError`
    (exit status 2 for a usage error, a ``--local-cluster`` above the CPUs this process may use
    included, else 1)."""
    full = ["kmerflow", *argv]
    text = _core.shard_plan(full)
    if text is None:
        return None
    plan = shard_plan.parse(text, full)
    name = plan["command"]
    local = plan["cluster"]["local_cluster"]
    refusal = local_cluster_refusal(local) if local is not None and client is None else None
    if refusal is not None:
        raise CommandError(f"kmerflow {name}: error: {refusal}", 2)
    terminal = _core.ShardTerminal(full) if on_message is None else None
    say: OnMessage = terminal.say if terminal is not None else on_message  # type: ignore[assignment]
    for m in plan["messages"]:
        say(m["level"], m["text"])
    started = time.monotonic()
    try:
        with _connected(plan["cluster"], client, name) as dask_client:
            graph = _graph(plan, dask_client)
            graph.terminal = terminal
            summary, outputs = _RUNS[name](plan, graph, say)
        unpaired = plan.get("unpaired")
        inputs = [*plan["inputs"], *([unpaired] if unpaired else [])]
        report = _core.shard_finish(full, json.dumps(summary), json.dumps(plan["table_sizing"]), inputs,
                                    outputs, time.monotonic() - started)
        for warning in json.loads(report).get("warnings", []):  # the final checks' (full tables)
            say("warning", warning)
    except CommandError:
        raise
    except (KmerflowError, OSError, ValueError) as e:
        raise CommandError(f"kmerflow {name}: error: {e}", 1) from e
    finally:
        if terminal is not None:
            terminal.stop()
    if terminal is not None:
        terminal.finish()
    return summary, json.loads(report)


def main(argv: List[str]) -> int:
    """Runs ``argv`` (command first) as the ``kmerflow`` command line; returns the exit status."""
    command = argv[0]
    try:
        with stopped_by_signals(command):
            result = run(argv)
        if result is not None and any(result[1]["parameters"].get(k)
                                      for k in ("html", "plots", "multiqc")):
            from kmerflow.report import render

            render(result[1])
    except CommandError as e:
        print(str(e).rstrip(), file=sys.stderr)
        return e.code
    except (OSError, RuntimeError) as e:  # rendering the report
        print(f"kmerflow {command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM
        print(f"kmerflow {command}: interrupted", file=sys.stderr)
        return exit_status(e)
    return 0


# --- the cluster and the table -------------------------------------------------------------------

@contextlib.contextmanager
def _connected(cluster: Cluster, client: Any, command: str) -> Iterator[Any]:
    """The Dask client of the run: ``client``, or the cluster's (:func:`connect`)."""
    if client is not None:
        yield client
        return
    with connect(cluster["scheduler"], cluster["local_cluster"], command=command) as own:
        yield own


def _graph(plan: Run, client: Any) -> Any:
    """The run's table: a :class:`ShardedCountgraph`, or a :class:`ShardedBlockedTable` for
    ``--layout blocked``; with ``-l``, the saved table loaded into the shards (its layout is
    the file's)."""
    cluster, table = plan["cluster"], plan["table"]
    local = cluster["local_shards"]
    shards = cluster["shards"] or max(1, len(client.scheduler_info()["workers"])) + local
    if table.get("loadgraph"):
        kind = ShardedBlockedTable if table["layout"] == "blocked" else ShardedCountgraph
        return kind.load(table["loadgraph"], client=client, shards=shards, local=local,
                         batch_kmers=cluster["batch_kmers"])
    if table["layout"] == "blocked":
        return ShardedBlockedTable(table["ksize"], 0, table["probes"], small_count=table["bits"] == 4,
                                   client=client, shards=shards, local=local,
                                   memory_bytes=table["memory_bytes"], batch_kmers=cluster["batch_kmers"])
    return ShardedCountgraph(table["ksize"], 1, len(table["sizes"]), client=client, shards=shards,
                             local=local, primes=table["sizes"], batch_kmers=cluster["batch_kmers"],
                             use_bigcount=plan["bigcount"])


def _check_fp(plan: Run, graph: Any, say: OnMessage) -> float:
    """The table's estimated false-positive rate, checked (where the command checks it) as the
    one-process command checks it: an error (a warning with ``-f``) with the same line, before
    any output is renamed into place."""
    table = plan["table"]
    check = table["fp_check"]
    if check is None:
        return graph.expected_fp_rate()
    return graph.check_fp_rate(check["max"], check["target"], table["force"], say)


@contextlib.contextmanager
def _staged(path: str) -> Iterator[IO[str]]:
    """A text file written under a temporary name beside ``path``, renamed over it on success."""
    if path == "-":
        yield sys.stdout
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w") as out:
            yield out
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


# --- the commands -------------------------------------------------------------------------------

def _load_into_counting(plan: Run, graph: Any, say: OnMessage) -> Outcome:
    tally = {"reads": 0, "short_reads": 0, "kmers": 0}
    for path in plan["inputs"]:
        short = graph.short_reads
        reads, kmers = graph.consume_seqfile(path)
        tally["reads"] += reads
        tally["kmers"] += kmers
        tally["short_reads"] += graph.short_reads - short
    fp = _check_fp(plan, graph, say)
    output = cast(str, plan["output"])  # load-into-counting's plan always names it
    graph.save(output)
    summary = {"tally": tally, "unique_kmers": graph.n_unique_kmers(), "fp_rate": fp}
    say("info", f"Total number of unique k-mers: {summary['unique_kmers']}")
    say("info", f"fp rate estimated to be {fp:.3f}")
    say("info", f"wrote to: {output}.info")
    say("info", f"{tally['reads']} reads, {tally['kmers']} k-mers; {tally['short_reads']} reads "
        "shorter than k contributed no k-mers")
    return summary, [output]


#: Reads examined between two points of the keep curve (the native command's).
KEEP_CURVE_EVERY = 10_000


class _KeepCounts:
    """normalize-by-median's counts as reads are decided: the keep curve, the ``-R`` report
    lines every ``--report-frequency`` reads and at the end of each file, and the progress
    messages, as the native command makes them."""

    def __init__(self, report: Optional[IO[str]], frequency: int, say: OnMessage) -> None:
        self.report, self.frequency, self.say = report, frequency, say
        self.total = self.kept = 0
        self.keep_curve: List[List[int]] = []
        self.next_curve_at = KEEP_CURVE_EVERY
        self.next_report_at = self.last_report_at = frequency
        if report is not None:
            report.write("total,kept,f_kept\n")

    def batch(self, bundle_ends: np.ndarray, keep: np.ndarray, path: str) -> None:
        """Counts a batch of bundles (``normalize_file``'s ``on_batch``: where each bundle's
        reads end in the batch, whether each was kept), stopping at each bundle after which a
        curve point or a report line is due."""
        sizes = np.diff(bundle_ends.astype(np.int64), prepend=0)
        totals = self.total + np.cumsum(sizes)
        kepts = self.kept + np.cumsum(np.where(keep, sizes, 0))
        b = int(np.searchsorted(totals, self.due_at()))
        while b < len(totals):
            self.total, self.kept = int(totals[b]), int(kepts[b])
            self.due(path)
            b += 1 + int(np.searchsorted(totals[b + 1:], self.due_at()))
        if len(totals):
            self.total, self.kept = int(totals[-1]), int(kepts[-1])

    def due_at(self) -> int:
        """The total of reads at which the next curve point or report line is due."""
        return min(self.next_curve_at, self.next_report_at)

    def due(self, path: str) -> None:
        """The curve point and the report line due after the bundle counted last, if any."""
        if self.total >= self.next_curve_at:
            self.next_curve_at = self.total + KEEP_CURVE_EVERY
            self.curve_point()
        if self.total >= self.next_report_at:
            self.next_report_at += self.frequency
            self.last_report_at = self.total
            self.say("info", f"... kept {self.kept} of {self.total} or "
                     f"{self.kept / self.total * 100:.1f}% sofar")
            self.say("info", f"... in file {path}")
            self.report_line()

    def file_done(self, path: str, start: int, short: int) -> None:
        if self.total == start:
            self.say("info", f"SKIPPED empty file {path}")
        else:
            self.say("info", f"DONE with {path}; kept {self.kept} of {self.total} or "
                     f"{self.kept / self.total * 100:.1f}%")
        if short:
            self.say("info", f"{path}: dropped {short} reads shorter than k")
        if self.total != self.last_report_at and self.total > 0:
            self.report_line()

    def curve_point(self) -> None:
        point = [self.total, self.kept]
        if self.keep_curve[-1:] != [point]:
            self.keep_curve.append(point)

    def report_line(self) -> None:
        self.curve_point()
        if self.report is not None:
            fraction = format(self.kept / self.total if self.total else 0.0, ".4g")
            point = "" if "." in fraction or "e" in fraction else ".0"
            self.report.write(f"{self.total},{self.kept},{fraction}{point}\n")
            self.report.flush()


def _normalize(plan: Run, graph: ShardedCountgraph, say: OnMessage) -> Outcome:
    k, single = plan["table"]["ksize"], plan["force_single"]
    main_mode: Any = "require" if plan["paired"] else ("single" if single else True)
    files = [(path, main_mode) for path in plan["inputs"]]
    if plan["unpaired"]:
        files.append((plan["unpaired"], "single" if single else True))
    output = plan["output"]
    if output is None and any(path == "-" for path, _ in files):
        raise KmerflowError("Accepting input from stdin; output filename must be provided with -o.")
    outputs = [output] if output else [os.path.basename(path) + ".keep" for path, _ in files]
    side = [p for p in (plan["report"], plan["savegraph"]) if p]
    short_dropped = 0
    with contextlib.ExitStack() as stack:
        staged = [stack.enter_context(_staged(o)) for o in outputs]
        report = stack.enter_context(_staged(plan["report"])) if plan["report"] else None
        counts = _KeepCounts(report, plan["report_frequency"], say)
        for n, (path, mode) in enumerate(files):
            out = staged[0] if output else staged[n]
            start, short = counts.total, graph.short_reads
            graph.normalize_file(path, out, plan["cutoff"], pairs=mode,
                                 on_batch=functools.partial(counts.batch, path=path))
            short = graph.short_reads - short
            short_dropped += short
            counts.file_done(path, start, short)
            if not output:
                say("info", f"output in {outputs[n]}")
        unique = graph.n_unique_kmers()
        say("info", f"Total number of unique k-mers: {unique}")
        fp = _check_fp(plan, graph, say)
        if plan["savegraph"]:
            say("info", f"...saving to {plan['savegraph']}")
            graph.save(plan["savegraph"])
    say("info", f"fp rate estimated to be {fp:.3f}")
    if short_dropped:
        say("info", f"dropped {short_dropped} reads shorter than k={k}")
    summary = {"total": counts.total, "kept": counts.kept, "short_dropped": short_dropped,
               "unique_kmers": unique, "fp_rate": fp, "skipped_files": [],
               "keep_curve": counts.keep_curve}
    return summary, [o for o in outputs if o != "-"] + side


def _native(plan: Run, graph: ShardedCountgraph, say: OnMessage) -> Outcome:
    """The command's native run on the shards (``_core.run_sharded_command``): trim-low-abund's
    two passes, or the look-up pass of filter-abund(-single) and abundance-dist-single over a
    table that holds the counts; the table never passes through this process."""
    summary_text, outputs = _core.run_sharded_command(plan["command"], plan["argv"], say,
                                                      *graph.native_run(), graph.terminal)
    return json.loads(summary_text), outputs


def _table_saved(plan: Run, graph: ShardedCountgraph, say: OnMessage,
                 outcome: Outcome, saying: str) -> Outcome:
    """``outcome`` with the table saved shard by shard to ``--savegraph`` (when given) once the
    native run has let go of the shards held here, announced as ``saying`` and the path (the
    one-process command's line)."""
    summary, outputs = outcome
    if plan["savegraph"]:
        say("info", f"{saying} {plan['savegraph']}")
        graph.save(plan["savegraph"])
        outputs.append(plan["savegraph"])
    return summary, outputs


def _counted_on_shards(plan: Run, graph: ShardedCountgraph, say: OnMessage) -> Outcome:
    """filter-abund-single and abundance-dist-single: the input counted on the shards, then
    the native look-up pass; the table stays on the shards unless ``--savegraph`` saves it."""
    (path,) = plan["inputs"]
    graph.consume_seqfile(path)
    if plan["command"] == "filter-abund-single":
        say("info", f"Total number of unique k-mers: {graph.n_unique_kmers()}")
        say("info", f"fp rate estimated to be {graph.expected_fp_rate():1.3f}")
    _check_fp(plan, graph, say)
    return _table_saved(plan, graph, say, _native(plan, graph, say),
                        "Saving k-mer countgraph filename")


def _trim_low_abund(plan: Run, graph: ShardedCountgraph, say: OnMessage) -> Outcome:
    """The native trim-low-abund, pass 1 deciding on the shards, pass 2 looking up there; its
    ``-s`` table is saved after the outputs and ``--summary-info`` file (which the native run
    writes)."""
    return _table_saved(plan, graph, say, _native(plan, graph, say), "Saving k-mer countgraph to")


_RUNS: Dict[str, Callable[[Run, Any, OnMessage], Outcome]] = {
    "load-into-counting": _load_into_counting,
    "normalize-by-median": _normalize,
    "abundance-dist-single": _counted_on_shards,
    "filter-abund-single": _counted_on_shards,
    "trim-low-abund": _trim_low_abund,
    "filter-abund": _native,
}
