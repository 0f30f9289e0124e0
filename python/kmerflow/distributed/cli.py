"""The counting commands on a table sharded over Dask workers: ``kmerflow COMMAND ...
--scheduler ADDRESS | --local-cluster N [--shards N]`` (dispatched here by ``kmerflow``, and by
the command functions given ``scheduler=`` or ``local_cluster=``).

The native command definitions parse the command line and size the table
(``_core.shard_plan``, read through :mod:`kmerflow.distributed.plan`): flags, defaults, usage
errors and messages are the one-process command's, and a flag the sharded run does not have is
a usage error naming it. This module is the transport: it connects to the cluster, places the
table (zeroed, or a saved one each shard reads its range of), hands it to the native run
(:func:`_on_cluster`), saves it shard by shard and has the native code write the side files and
the run report (``_core.shard_finish``). Outputs stay staged until the table is saved, so a
failed run (a lost worker, a save that fails) leaves none. Exit status 0, 1 on an error (one
line), 2 on a usage error.
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
            summary, outputs = _on_cluster(plan, dask_client, terminal, say)
        report = _core.shard_finish(full, summary, json.dumps(plan["table_sizing"]), outputs,
                                    time.monotonic() - started)
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
    return json.loads(summary), json.loads(report)


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
    """A zeroed table placed as ``where`` says (:func:`_where`), of ``layout`` and ``shape`` as
    the native sizing gives them (``kmerflow_cli::sharded::sized``): the blocked layout's
    ``[memory_bytes, bits, probes]``, or khmer's hash table sizes."""
    if layout == "blocked":
        memory_bytes, bits, probes = shape
        return ShardedBlockedTable(ksize, 0, probes, small_count=bits == 4, memory_bytes=memory_bytes, **where)
    return ShardedCountgraph(ksize, 1, len(shape), primes=shape, use_bigcount=bigcount, **where)


def _table(plan: Run, client: Any) -> _Sharded:
    """The run's table: a :class:`ShardedCountgraph`, or a :class:`ShardedBlockedTable` for
    ``--layout blocked``; with ``-l``, the saved table loaded into the shards (its layout is
    the file's)."""
    table, where = plan["table"], _where(plan["cluster"], client)
    if table.get("loadgraph"):
        kind = ShardedBlockedTable if table["layout"] == "blocked" else ShardedCountgraph
        return kind.load(table["loadgraph"], **where)
    return _made(table["layout"], table["ksize"], table["shape"], plan["bigcount"], where)


def _on_cluster(plan: Run, client: Any, terminal: Any, say: OnMessage) -> Tuple[str, List[str]]:
    """The run on ``client``'s cluster; its summary (JSON text) and the outputs written. For
    ``normalize``, the native protocol (``_core.run_sharded_normalize``), each pass's table made
    on the cluster as the run asks for it (of the layout and shape it gives, as :func:`_made`
    takes them), the first saved shard by shard with ``--save-table``. For the others, the
    command's native run on the shards (``_core.run_sharded_command``): the table never passes
    through this process, which only carries the messages; the run's outputs stay staged until
    the table is saved shard by shard (the plan's ``save``), so that a failed save leaves none."""
    if plan["command"] == "normalize":
        def tables(layout: str, shape: List[int]) -> Tuple[Any, ...]:
            graph = _made(layout, plan["table"]["ksize"], shape, False, _where(plan["cluster"], client))
            return (*graph.native_run(), graph)

        return _core.run_sharded_normalize(plan["argv"], say, tables, plan["cluster"]["batch_kmers"], terminal)
    graph = _table(plan, client)
    summary, outputs, staged = _core.run_sharded_command(plan["argv"], say, *graph.native_run(), terminal)
    try:
        if plan["save"]:
            graph.save(plan["save"])
    except BaseException:
        staged.discard()
        raise
    staged.commit()
    return summary, outputs
