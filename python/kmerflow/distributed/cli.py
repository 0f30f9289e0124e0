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
deciding on the shards and its second looking its reads up there. ``normalize`` is the native
protocol, each pass's table (of its layout) made on the cluster when the run asks for it
(:class:`_PassTables`), its look-ups and counts there. ``normalize-by-median -l``,
``trim-low-abund -l`` and ``filter-abund`` (a saved table, then the filtering looked up on the
shards) load the saved table into the shards (each shard reads its range of the file); saved
tables are written shard by shard. The summary has the native
command's fields; ``load-into-counting``'s ``OUT.info`` (and ``-s`` file) and ``--report-json``
are written by the native code (``_core.shard_finish``). Outputs are written under temporary
names and renamed at the end, once the table is saved, so a failed run (a lost worker, a save
that fails) leaves none. Exit status 0, 1 on an error (one line), 2 on a usage error.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from kmerflow import _core
from kmerflow.distributed import ShardedBlockedTable, ShardedCountgraph, _Sharded, running_workers
from kmerflow.distributed import plan as shard_plan
from kmerflow.distributed.cluster import connect, exit_status, local_cluster_refusal, stopped_by_signals
from kmerflow.distributed.plan import Cluster, Run
from kmerflow.errors import CommandError, KmerflowError, KmerflowIOError

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
    started = time.monotonic()  # the plan's -M auto sizing pass is part of the run
    text = _core.shard_plan(full)
    if text is None:
        return None
    plan = shard_plan.parse(text, full)
    name, cluster = plan["command"], plan["cluster"]
    local = cluster["local_cluster"]
    refusal = local_cluster_refusal(local) if local is not None and client is None else None
    if refusal is not None:
        raise CommandError(f"kmerflow {name}: error: {refusal}", 2)
    terminal = _core.ShardTerminal(full, time.monotonic() - started) if on_message is None else None
    say: OnMessage = terminal.say if terminal is not None else on_message  # type: ignore[assignment]
    for m in plan["messages"]:
        say(m["level"], m["text"])
    try:
        # The Dask client of the run: ``client``, none when every shard is held here, or the
        # cluster's (:func:`connect`).
        connected = connect(cluster["scheduler"], local, command=name) \
            if client is None and not _all_held_here(cluster, name) else contextlib.nullcontext(client)
        with connected as dask_client:
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
    except OSError as e:
        # A native error names its file: a command's is its whole line already, a table save's
        # (a file error of the core) the file and the reason, as the one-process line has them.
        line = str(e.strerror if isinstance(e, KmerflowIOError) and e.strerror else e)
        raise CommandError(line if line.startswith(f"kmerflow {name}: ") else f"kmerflow {name}: error: {line}",
                           1) from e
    except (KmerflowError, ValueError) as e:
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

def _all_held_here(cluster: Cluster, command: str) -> bool:
    """Whether every shard of the run is held in this process (``--local-shards`` equal to
    ``--shards``): such a run places nothing on workers, so it imports no Dask and reaches or
    starts no cluster (a third of a second of CPU). A ``--scheduler`` address is checked as
    :func:`connect` checks it (:func:`scheduler_address`: a malformed one is a usage error, a
    missing scheduler file an error) but not contacted."""
    if cluster["shards"] is None or cluster["local_shards"] < cluster["shards"]:
        return False
    if cluster["scheduler"] not in (None, "local"):
        from kmerflow.distributed.cluster import scheduler_address

        scheduler_address(cluster["scheduler"], f"kmerflow {command}: error:")
    return True


def _where(cluster: Cluster, client: Any) -> Dict[str, Any]:
    """Where a table's shards go (the sharded classes' keywords): on ``client``'s workers and
    ``--local-shards`` here, ``--shards`` of them (else one per worker plus the local ones)."""
    shards = cluster["shards"] or len(running_workers(client)) + cluster["local_shards"]
    return dict(client=client, shards=shards, local=cluster["local_shards"], batch_kmers=cluster["batch_kmers"])


def _made(layout: str, ksize: int, shape: Sequence[int], bigcount: bool, where: Dict[str, Any]) -> _Sharded:
    """A zeroed table placed as ``where`` says (:func:`_where`): of the blocked layout for
    ``layout`` ``blocked``, of ``shape`` ``[memory_bytes, bits, probes]``, else of khmer's,
    ``shape`` its hash table sizes."""
    if layout == "blocked":
        memory_bytes, bits, probes = shape
        return ShardedBlockedTable(ksize, 0, probes, small_count=bits == 4, memory_bytes=memory_bytes, **where)
    return ShardedCountgraph(ksize, 1, len(shape), primes=shape, use_bigcount=bigcount, **where)


class _PassTables:
    """The tables of a sharded ``normalize``, made on the cluster as the native run asks for
    them (``_core.run_sharded_normalize``): called with a table's layout and shape (as
    :func:`_made` takes them), returns what a native run takes of it
    (:meth:`ShardedCountgraph.native_run`) and the table itself, whose ``save`` the run calls
    for ``--save-table``."""

    def __init__(self, plan: Run, client: Any) -> None:
        self.plan, self.client = plan, client
        self.terminal: Any = None

    def __call__(self, layout: str, shape: List[int]) -> Tuple[Any, List[Any], Any, Any]:
        plan = self.plan
        graph = _made(layout, plan["table"]["ksize"], shape, False, _where(plan["cluster"], self.client))
        return (*graph.native_run(), graph)


def _graph(plan: Run, client: Any) -> Any:
    """The run's table: a :class:`ShardedCountgraph`, or a :class:`ShardedBlockedTable` for
    ``--layout blocked``; with ``-l``, the saved table loaded into the shards (its layout is
    the file's); for ``normalize``, its tables made as the run goes (:class:`_PassTables`)."""
    if plan["command"] == "normalize":
        return _PassTables(plan, client)
    table, where = plan["table"], _where(plan["cluster"], client)
    blocked = table["layout"] == "blocked"
    if table.get("loadgraph"):
        return (ShardedBlockedTable if blocked else ShardedCountgraph).load(table["loadgraph"], **where)
    shape = [table["memory_bytes"], table["bits"], table["probes"]] if blocked else table["sizes"]
    return _made(table["layout"], table["ksize"], shape, plan["bigcount"], where)


# --- the commands -------------------------------------------------------------------------------

def _native(plan: Run, graph: _Sharded, say: OnMessage) -> Outcome:
    """The command's native run on the shards (``_core.run_sharded_command``): normalize-by-median
    and load-into-counting's counting (either layout), trim-low-abund's two passes, or the
    look-up pass of filter-abund(-single) and abundance-dist-single over a table that holds the
    counts; the table never passes through this process, which only carries the messages. The
    run's outputs stay staged until its table is saved (:func:`_save_table`): a failed save
    leaves none of them."""
    summary_text, outputs, staged = _core.run_sharded_command(plan["command"], plan["argv"], say,
                                                              *graph.native_run(), graph.terminal)
    try:
        saved = _save_table(plan, graph, say)
    except BaseException:
        staged.discard()
        raise
    staged.commit()
    return json.loads(summary_text), [*outputs, *saved]


#: The one-process command's line before it saves ``--savegraph`` (and the path), where the
#: native run does not say it.
_SAVING = {
    "abundance-dist-single": "Saving k-mer countgraph filename",
    "filter-abund-single": "Saving k-mer countgraph filename",
    "trim-low-abund": "Saving k-mer countgraph to",
}


def _save_table(plan: Run, graph: _Sharded, say: OnMessage) -> List[str]:
    """Saves the table shard by shard once the native run has let go of the shards held here:
    load-into-counting's output, or ``--savegraph`` when given, announced as the one-process
    command announces it (:data:`_SAVING`); the path saved, if any."""
    path = plan["output"] if plan["command"] == "load-into-counting" else plan.get("savegraph")
    if not path:
        return []
    if plan["command"] in _SAVING:
        say("info", f"{_SAVING[plan['command']]} {path}")
    graph.save(path)
    return [path]


def _normalize_protocol(plan: Run, tables: _PassTables, say: OnMessage) -> Outcome:
    """The native ``normalize``, its passes' tables made on the cluster by ``tables`` (the first
    saved shard by shard with ``--save-table``)."""
    summary_text, outputs = _core.run_sharded_normalize(plan["argv"], say, tables, plan["cluster"]["batch_kmers"],
                                                        tables.terminal)
    return json.loads(summary_text), outputs


_RUNS: Dict[str, Callable[[Run, Any, OnMessage], Outcome]] = {
    **{name: _native for name in ("load-into-counting", "normalize-by-median", "abundance-dist-single",
                                  "filter-abund-single", "trim-low-abund", "filter-abund")},
    "normalize": _normalize_protocol,
}
