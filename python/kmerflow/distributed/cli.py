"""The counting commands on a table sharded over Dask workers: ``kmerflow COMMAND ...
--scheduler ADDRESS | --local-cluster N [--shards N]`` (dispatched here by ``kmerflow``).

``load-into-counting`` and ``normalize-by-median`` run on the shards throughout;
``abundance-dist-single`` and ``filter-abund-single`` count on the shards, then gather the table
into this process and finish with the one-process ``abundance-dist`` / ``filter-abund``. Outputs
are written under temporary names and renamed at the end, so a failed run (a lost worker)
leaves none. Exit status 0, 1 on an error (one line), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from typing import IO, Any, Iterator, List

from kmerflow import _core
from kmerflow.distributed import BATCH_KMERS, ShardedCountgraph
from kmerflow.errors import KmerflowError
from kmerflow.reads import open_reads

#: Commands that take ``--scheduler``/``--local-cluster``/``--shards``.
COMMANDS = ("load-into-counting", "abundance-dist-single", "normalize-by-median",
            "filter-abund-single")
#: The flags that send a command here.
FLAGS = ("--scheduler", "--local-cluster", "--shards")


def wants_shards(argv: List[str]) -> bool:
    """Whether ``kmerflow`` arguments ``argv`` (command first) ask for a sharded run."""
    return bool(argv) and argv[0] in COMMANDS and any(
        a.split("=", 1)[0] in FLAGS for a in argv[1:])


class UsageError(Exception):
    """A command line this path cannot run (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(message)


def _parser(command: str) -> _Parser:
    p = _Parser(prog=f"kmerflow {command}", description=__doc__.splitlines()[0])
    cluster = p.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS",
                         help="a running Dask scheduler: tcp://HOST:PORT or a scheduler file")
    cluster.add_argument("--local-cluster", type=int, metavar="N",
                         help="start a LocalCluster of N single-thread workers")
    p.add_argument("--shards", type=int, default=None, metavar="N",
                   help="shards of the table (default: one per worker)")
    p.add_argument("--local-shards", type=int, default=0, metavar="N",
                   help="shards held in this process (the first N)")
    p.add_argument("--batch-kmers", type=int, default=BATCH_KMERS, metavar="N",
                   help=f"k-mers per message to every shard (default {BATCH_KMERS})")
    p.add_argument("-k", "--ksize", type=int, default=20)
    p.add_argument("-N", "--n_tables", "--n-tables", type=int, default=4)
    size = p.add_mutually_exclusive_group()
    size.add_argument("-x", "--max-tablesize", type=float, default=1e6)
    size.add_argument("-M", "--max-memory-usage", type=_bytes, default=None)
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("-T", "--threads", type=int, default=1, help="accepted; the shards use one each")
    p.add_argument("-b", "--no-bigcount", action="store_true")
    p.add_argument("-f", "--force", action="store_true",
                   help="go on when the table is too small (a warning)")
    if command == "load-into-counting":
        p.add_argument("output")
        p.add_argument("inputs", nargs="+")
    elif command == "normalize-by-median":
        p.add_argument("inputs", nargs="+")
        p.add_argument("-C", "--cutoff", type=int, default=20)
        pairs = p.add_mutually_exclusive_group()
        pairs.add_argument("-p", "--paired", action="store_true")
        pairs.add_argument("--force_single", "--force-single", action="store_true")
        p.add_argument("-o", "--output")
        p.add_argument("-s", "--savegraph")
    elif command == "abundance-dist-single":
        p.add_argument("input")
        p.add_argument("output")
        p.add_argument("-z", "--no-zero", action="store_true")
        p.add_argument("-s", "--squash", action="store_true")
        p.add_argument("--savegraph")
    else:  # filter-abund-single
        p.add_argument("input")
        p.add_argument("-C", "--cutoff", type=int, default=2)
        p.add_argument("-o", "--outfile")
        p.add_argument("--savegraph")
    return p


def _bytes(text: str) -> float:
    units = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
    text = text.strip()
    scale = units.get(text[-1:].lower(), 1.0)
    return float(text[:-1] if scale != 1.0 else text) * scale


def _connect(args: argparse.Namespace) -> Any:
    """A Dask client for the flags, and what to close after the run."""
    from distributed import Client, LocalCluster

    if args.local_cluster is not None:
        if args.local_cluster < 1:
            raise UsageError("--local-cluster must be at least 1")
        cluster = LocalCluster(n_workers=args.local_cluster, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        return Client(cluster), cluster
    address = args.scheduler
    try:
        if address.startswith(("tcp://", "tls://", "inproc://", "ws://", "wss://")):
            return Client(address, timeout="5s"), None
        if not os.path.isfile(address):
            raise KmerflowError(f"{address}: no such scheduler file (give tcp://HOST:PORT or a file)")
        return Client(scheduler_file=address, timeout="5s"), None
    except (OSError, TimeoutError) as e:
        raise KmerflowError(f"cannot reach the Dask scheduler at {address}: {e}") from e


@contextlib.contextmanager
def _staged(path: str, mode: str = "w") -> Iterator[IO[Any]]:
    """A file written under a temporary name beside ``path``, renamed over it on success."""
    if path == "-":
        yield sys.stdout
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=directory)
    try:
        with os.fdopen(fd, mode) as out:
            yield out
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _record_text(r: Any) -> str:
    if r.quality is None:
        return f">{r.name}\n{r.sequence}\n"
    return f"@{r.name}\n{r.sequence}\n+\n{r.quality}\n"


def _graph(command: str, args: argparse.Namespace, client: Any) -> ShardedCountgraph:
    size = args.max_tablesize
    if args.max_memory_usage is not None:
        size = args.max_memory_usage / args.n_tables
    workers = len(client.scheduler_info()["workers"])
    shards = args.shards if args.shards is not None else max(1, workers) + args.local_shards
    return ShardedCountgraph(args.ksize, size, args.n_tables, client=client, shards=shards,
                             local=args.local_shards, batch_kmers=args.batch_kmers,
                             use_bigcount=not args.no_bigcount and command != "normalize-by-median")


#: The false-positive ceilings of the commands that check it (khmer's).
FP_CEILING = {"load-into-counting": 0.2, "normalize-by-median": 0.8, "filter-abund-single": 0.2}


def _check_fp(command: str, args: argparse.Namespace, graph: ShardedCountgraph) -> None:
    """khmer's estimate (n_occupied / smallest table) ^ tables against the command's ceiling:
    an error (a warning with ``-f``) before any output is renamed into place."""
    fp = (graph.n_occupied() / min(graph.hashsizes())) ** graph.n_tables()
    _info(args, f"fp rate estimated to be {fp:.3f}")
    ceiling = FP_CEILING.get(command)
    if ceiling is None or fp <= ceiling:
        return
    text = (f"the graph structure is too small for this data set (estimated false positive rate "
            f"of {fp:.3f}; max recommended {ceiling:.3f}); increase -M or -x")
    if not args.force:
        raise KmerflowError(text + ", or use --force")
    print(f"WARNING: {text}", file=sys.stderr)


def _info(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(text, file=sys.stderr)


def _normalize(args: argparse.Namespace, graph: ShardedCountgraph) -> None:
    mode: Any = "require" if args.paired else ("single" if args.force_single else True)
    outputs = [args.output] if args.output else [os.path.basename(i) + ".keep" for i in args.inputs]
    total = kept = 0
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(_staged(o)) for o in outputs]
        for n, path in enumerate(args.inputs):
            out = files[0] if args.output else files[n]
            reads = open_reads(path, pairs=mode, min_length=args.ksize)
            bundles = (tuple(r for r in item if r is not None) for item in reads)
            counted = _Counted(bundles)
            for bundle in graph.normalize_reads(counted, args.cutoff):
                out.write("".join(_record_text(r) for r in bundle))
                kept += len(bundle)
            total += counted.reads
        _check_fp("normalize-by-median", args, graph)
        if args.savegraph:
            graph.save(args.savegraph)
    _info(args, f"Total number of unique k-mers: {graph.n_unique_kmers()}")
    _info(args, f"kept {kept} of {total} reads")


class _Counted:
    """Bundles passed through, their reads counted."""

    def __init__(self, bundles: Iterator[tuple]) -> None:
        self.bundles, self.reads = bundles, 0

    def __iter__(self) -> Iterator[tuple]:
        for bundle in self.bundles:
            self.reads += len(bundle)
            yield bundle


def _count_then(args: argparse.Namespace, graph: ShardedCountgraph, finish: List[str]) -> int:
    """Counts the input on the shards, then runs the one-process ``finish`` command on the
    gathered table (saved in a temporary directory beside the output)."""
    graph.consume_seqfile(args.input)
    _check_fp(finish[0] + "-single", args, graph)
    with tempfile.TemporaryDirectory(prefix=".kmerflow-shards-", dir=".") as tmp:
        table = args.savegraph or os.path.join(tmp, "table.ct")
        graph.save(table)
        argv = ["kmerflow", finish[0], table, *finish[1:]] + (["-q"] if args.quiet else [])
        code, _ = _core.cli_main(argv)
        return int(code)


def _run(command: str, args: argparse.Namespace, graph: ShardedCountgraph) -> int:
    if command == "load-into-counting":
        for path in args.inputs:
            graph.consume_seqfile(path)
        _check_fp("load-into-counting", args, graph)
        graph.save(args.output)
        _info(args, f"Total number of unique k-mers: {graph.n_unique_kmers()}")
        return 0
    if command == "normalize-by-median":
        _normalize(args, graph)
        return 0
    if command == "abundance-dist-single":
        flags = ["-z"] * args.no_zero + ["-s"] * args.squash + ["-b"] * args.no_bigcount
        return _count_then(args, graph, ["abundance-dist", args.input, args.output, *flags])
    outfile = args.outfile or os.path.basename(args.input) + ".abundfilt"
    return _count_then(args, graph, ["filter-abund", args.input, "-C", str(args.cutoff), "-o", outfile])


def main(argv: List[str]) -> int:
    """Runs ``argv`` (command first); returns the exit status."""
    command = argv[0]
    try:
        args = _parser(command).parse_args(argv[1:])
        if args.shards is not None and args.shards < 1:
            raise UsageError("--shards must be at least 1")
        if args.scheduler is None and args.local_cluster is None:
            raise UsageError("--shards needs --scheduler ADDRESS or --local-cluster N")
    except UsageError as e:
        print(f"kmerflow {command}: error: {e}", file=sys.stderr)
        return 2
    client = cluster = None
    try:
        client, cluster = _connect(args)
        return _run(command, args, _graph(command, args, client))
    except UsageError as e:
        print(f"kmerflow {command}: error: {e}", file=sys.stderr)
        return 2
    except (KmerflowError, OSError, ValueError) as e:
        print(f"kmerflow {command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"kmerflow {command}: interrupted", file=sys.stderr)
        return 130
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
