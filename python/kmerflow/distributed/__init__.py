"""Counting tables split over Dask workers (``pip install kmerflow[dask]``).

A :class:`ShardedCountgraph` is a Countgraph (khmer's layout, 8-bit counters with bigcount)
whose counters are cut into shards, contiguous ranges of counters each held by one Dask worker
as an actor (:class:`ShardActor`), or in this process. The client hashes reads, turns hashes into
counter indices (it needs only the table sizes), splits them by shard with one counting sort and
sends each shard one message per batch of k-mers (numpy arrays). It keeps the bigcount map and the
statistics and makes every decision, with the rules of the one-process table, so counts, saved
tables, kept reads and histograms equal a one-process run with the same table sizes. A
:class:`ShardedBlockedTable` (:mod:`kmerflow.distributed.blocked`) is the blocked layout cut
the same way; both are one class here, the layout being the native client's
(``_core.ShardClient``) and shards' (``_core.Shard``).

>>> from distributed import Client, LocalCluster                     # doctest: +SKIP
>>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, \
...         Client(cluster, direct_to_workers=True) as client:
...     graph = ShardedCountgraph(20, 1e7, 4, client=client, shards=4)
...     graph.consume_seqfile("reads.fq.gz")
...     graph.save("reads.ct")                                         # khmer's format
"""

from __future__ import annotations

import collections
import json
import os
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from kmerflow import _core
from kmerflow.errors import ParameterError, ShardError

#: k-mers per message to every shard (the batch of the three phases).
BATCH_KMERS = 131_072


#: Seconds between two checks, while a remote shard's answer is awaited, that its worker is
#: still in the cluster: a worker killed (out of memory) is an error within this time, not a
#: wait (the scheduler would hold a task pinned to it forever).
LIVENESS_EVERY = 1.0


#: Seconds a run waits for a worker to join a Dask cluster that has none yet (one just
#: starting) before it fails (:func:`running_workers`).
WORKERS_TIMEOUT = 30.0

#: Seconds between two questions to the scheduler while no worker has joined.
WORKERS_POLL = 0.1


def _array(values: Any, dtype: Any) -> np.ndarray:
    """``values`` as an aligned, contiguous array of ``dtype`` (arrays arriving from other
    processes may lie unaligned in a message's buffer)."""
    return np.require(values, dtype=dtype, requirements=["C", "A"])


_U64, _U8 = np.uint64, np.uint8


class ShardActor:
    """One shard of either layout in a Dask worker's memory (submitted with ``actor=True``):
    ``_core.Shard.zeroed(shape, *bounds)``. Each method takes and returns numpy arrays (keys:
    counters, or k-mer hashes for the blocked layout); the native calls release the GIL. Besides
    :meth:`handle` and :meth:`sees`, its methods are ``_core.Shard``'s (:func:`_forwarded`):
    ``add``, ``counts``, ``cells``, ``histogram``, ``write_to``, ``read_from``, ``set_cells``."""

    def __init__(self, shape: Any, bounds: Tuple[int, int], remote: bool = True) -> None:
        """``remote``: held by a Dask worker, whose allocator then keeps freed message buffers
        (``_core.keep_message_memory``); not in the client, whose memory stays as it was."""
        if remote:
            _core.keep_message_memory()
        self.shard = _core.Shard.zeroed(shape, *bounds)

    def handle(self, message: np.ndarray) -> Any:
        """Answers one message of a native run (uint8, ``_core.Shard.handle``): a step's
        values, or an add's answer."""
        return self.shard.handle(_array(message, _U8))

    def sees(self, path: str, identity: Tuple[int, int]) -> bool:
        """Whether ``path`` here is the client's file (:func:`_identity`: the same inode and
        size): on another machine without a shared file system it is not."""
        return _identity(path) == identity


def _forwarded(name: str) -> Callable[..., Any]:
    """The :class:`ShardActor` method calling ``_core.Shard``'s ``name``, its numpy arguments
    made aligned (:func:`_array`)."""

    def method(self: ShardActor, *args: Any) -> Any:
        return getattr(self.shard, name)(*(_array(a, a.dtype) if isinstance(a, np.ndarray) else a for a in args))

    method.__name__ = method.__qualname__ = name
    return method


for _name in ("add", "counts", "cells", "histogram", "write_to", "read_from", "set_cells"):
    setattr(ShardActor, _name, _forwarded(_name))


class _Sharded:
    """A table of either layout cut into shards held by the workers of ``client`` as actors
    or in this process, and the calls that reach them (a failure names the shard).
    ``self._table`` is the client's part (``_core.ShardClient``), which answers what differs
    between the layouts; :class:`ShardedCountgraph` and :class:`ShardedBlockedTable` make it."""

    def __init__(self, table: Any, client: Any, local: Optional[int], batch_kmers: int) -> None:
        """Starts a zeroed shard for each of the ranges of ``table``: shards ``0 .. local-1``
        in this process (all without a client), the others on the workers of ``client``
        (:func:`_place`)."""
        if batch_kmers < 1:
            raise ParameterError("batch_kmers must be at least 1")
        self._table, self._client, self.batch_kmers = table, client, batch_kmers
        #: What the table is (``_core.TableDescription``).
        self._info = table.description
        #: Reads shorter than k: counted by :meth:`consume_seqfile` (they contribute no k-mers)
        #: and dropped by :meth:`normalize_file`.
        self.short_reads = 0
        bounds = self._info.bounds
        args = [(self._info.shape, (bounds[s], bounds[s + 1])) for s in range(len(bounds) - 1)]
        n_local = len(args) if client is None else (local or 0)
        if not 0 <= n_local <= len(args):
            raise ParameterError(f"local must be 0..{len(args)} shards, not {n_local}")
        placement = _place(client, table.shard_bytes(batch_kmers)[n_local:], n_local)
        self._where, self._local = ["this process"] * n_local + placement, n_local
        #: The shards: ``ShardActor`` objects here (``0 .. local-1``), then the workers' actors.
        self._shards: List[Any] = [ShardActor(*a, remote=False) for a in args[:n_local]]
        for s in range(n_local, len(args)):
            future = client.submit(ShardActor, *args[s], actor=True, workers=[self._where[s]],
                                   allow_other_workers=False, pure=False)
            self._shards.append(self._answer(s, future))

    @classmethod
    def _loaded(cls, path: Union[str, os.PathLike], blocked: bool, client: Any, shards: int,
                local: Optional[int], batch_kmers: int) -> Any:
        """The table saved at ``path``, its header read here (``_core.ShardClient.load``), its
        shards placed as the constructor places them and filled by :meth:`_read_in_place`."""
        table = cls.__new__(cls)
        _Sharded.__init__(table, _core.ShardClient.load(os.fspath(path), shards, blocked), client, local,
                          batch_kmers)
        table._read_in_place(os.fspath(path))
        return table

    def _describe(self, s: int) -> str:
        bounds = self._info.bounds
        return f"shard {s} ({self._info.unit} {bounds[s]}..{bounds[s + 1]}) on {self._where[s]}"

    def _answer(self, s: int, future: Any) -> Any:
        """The answer of shard ``s`` to ``future``, its worker checked every
        :data:`LIVENESS_EVERY` seconds while it is awaited (a worker gone is a
        :class:`ShardError` naming the shard and the worker); a shard held here answers at once,
        ``future`` being its answer."""
        if s < self._local:
            return future

        def waited() -> Any:
            while True:
                try:
                    return future.result(timeout=LIVENESS_EVERY)
                except TimeoutError:
                    if self._where[s] not in self._client.nthreads():
                        raise ShardError(f"{self._describe(s)} failed: its worker left the cluster "
                                         "(killed, or out of memory)") from None

        return self._named(s, waited)

    def _named(self, s: int, call: Callable[[], Any]) -> Any:
        """``call()`` on behalf of shard ``s``: a failure raises :class:`ShardError` naming the
        shard (Dask reports a lost worker when a method is looked up, called or answered)."""
        try:
            return call()
        except ShardError:
            raise
        except Exception as e:  # the worker's error or its loss, whichever Dask reports
            raise ShardError(f"{self._describe(s)} failed: {type(e).__name__}: {e}") from e

    def _on(self, s: int, method: str, *args: Any) -> Any:
        """Calls ``method`` on shard ``s`` with ``args`` without waiting (:meth:`_named`): its
        future."""
        return self._named(s, lambda: getattr(self._shards[s], method)(*args))

    def _start_some(self, method: str, args: Dict[int, Sequence[Any]]) -> Dict[int, Any]:
        """Calls ``method`` on the shards ``args`` names, with their arguments, without waiting
        (remote shards first, so that local work overlaps theirs): each shard's future."""
        order = sorted(args, key=lambda s: s < self._local)
        return {s: self._on(s, method, *args[s]) for s in order}

    def _finish_some(self, futures: Dict[int, Any]) -> Dict[int, Any]:
        """The answers of :meth:`_start_some`'s futures."""
        return {s: self._answer(s, f) for s, f in sorted(futures.items())}

    def _call(self, method: str, args: Optional[Sequence[Sequence[Any]]] = None) -> List[Any]:
        """Calls ``method`` on every shard with its arguments (none by default) and returns
        the answers in shard order."""
        args = [()] * len(self._shards) if args is None else args
        return list(self._finish_some(self._start_some(method, dict(enumerate(args)))).values())

    def native_run(self) -> Tuple[Any, List[Any], "_RemoteCalls"]:
        """What a native run on this table takes (``_core.run_sharded_command`` and the
        like): the client's part, the shards held here (``None`` for a remote one) and the
        remote shards' calls."""
        held_here = [s.shard for s in self._shards[:self._local]] + [None] * (len(self._shards) - self._local)
        return self._table, held_here, _RemoteCalls(self)

    def consume_seqfile(self, path: Union[str, os.PathLike]) -> Tuple[int, int]:
        """Counts every k-mer of a sequence file (khmer's C++ cleaning); returns (reads, k-mers).
        The run is native (``_core.count_file_sharded``): the file is read, hashed and routed
        there, the shards held here count at once and the others get one message per batch."""
        reads, kmers, short = _core.count_file_sharded(*self.native_run(), os.fspath(path), self.batch_kmers)
        self.short_reads += short
        return reads, kmers

    def normalize_file(self, path: Union[str, os.PathLike], out: Any, cutoff: int, pairs: Any = True,
                       on_batch: Optional[Callable[[np.ndarray, np.ndarray], None]] = None) -> Tuple[int, int]:
        """normalize-by-median of a sequence file to ``cutoff``: the kept bundles' records are
        written to ``out`` (a binary or text file object) as khmer writes them; ``pairs`` as for
        :func:`kmerflow.open_reads` (reads shorter than k are dropped and counted in
        :attr:`short_reads`). The run is native (``_core.normalize_file_sharded``): the file is
        read, hashed and decided there, each remote shard getting one message per batch (the
        updates not sent yet and this batch's look-ups) sent before the previous batch is
        decided. After each batch is written, ``on_batch(bundle_ends, keep)`` is given where
        each bundle's reads end in the batch (uint64) and whether each was kept (bool).
        Returns (reads, reads kept)."""
        write = _binary_writer(out)

        def decided(text: bytes, bundle_ends: np.ndarray, keep: np.ndarray) -> None:
            write(text)
            if on_batch is not None:
                on_batch(bundle_ends, keep)

        reads, kept, short = _core.normalize_file_sharded(*self.native_run(), os.fspath(path), pairs, cutoff,
                                                          self.batch_kmers, decided)
        self.short_reads += short
        return reads, kept

    def file_histogram(self, *paths: Union[str, os.PathLike]) -> np.ndarray:
        """khmer's ``abundance_distribution`` of the files ``paths`` (read in order) with a fresh
        tracking filter (the one-process table's for this shape, held here): how many distinct k-mers
        have each count 0 .. 65534 (uint64). The reads are read and hashed natively and only the
        k-mers new to the tracking filter are looked up on the shards (one message per shard
        and batch); the table is not gathered."""
        return _core.abundance_distribution_sharded(*self.native_run(), [os.fspath(p) for p in paths],
                                                    self.batch_kmers)

    def filter_file(self, paths: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
                    output: Union[str, os.PathLike], cutoff: int = 2,
                    normalize_to: Optional[int] = None) -> Dict[str, Any]:
        """filter-abund's filtering of ``paths`` (one file or several, read in order) into
        ``output`` (FASTA/FASTQ as read, compressed by the name's extension): each read is cut
        before its first k-mer whose count is below ``cutoff`` and dropped when fewer than k
        bases remain; with ``normalize_to`` (``-V -Z``) only reads whose median count reaches it
        are trimmed. The reads are looked up on the shards a batch at a time; the table is not
        gathered. Returns filter-abund's summary (``reads``, ``written``, ``truncated``,
        ``removed``, ``short_dropped``, ``fp_rate``)."""
        paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        summary = _core.filter_reads_sharded(*self.native_run(), [os.fspath(p) for p in paths],
                                             os.fspath(output), cutoff, normalize_to, self.batch_kmers)
        return json.loads(summary)

    # --- the table's file, written and read shard by shard ---------------------------------------

    def _seeing(self, path: str) -> List[bool]:
        """Whether each shard's process sees the file ``path`` that this process sees (the
        same inode and size): a worker on another machine without a shared file system does
        not."""
        identity = _identity(path)
        return [bool(a) for a in self._call("sees", [(path, identity)] * len(self._shards))]

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Saves the table in its layout's format (khmer's, or kmerflow's for the blocked
        layout), shard by shard without gathering it (see :meth:`_save_in_place`); a khmer
        table compressed by its ``.gz`` name, and a FIFO or device, are written from the table
        gathered into this process."""
        path = os.fspath(path)
        if not self._save_in_place(path):
            self._table.save(self._call("cells"), path)

    def _save_in_place(self, path: str) -> bool:
        """Saves the table to ``path`` without gathering it: the file is made at its full
        length under a temporary name beside ``path`` with all but the counters written
        (``_core.ShardClient.staged_file``), each shard writes its counters at their place from
        the process holding it (a shard whose worker does not see the file sends its counters
        here, one shard at a time), and the file is renamed over ``path``. On a failure the
        temporary is removed and the error names the shard. False (nothing done) where the save
        is gathered (a FIFO, a device, a khmer table compressed by its ``.gz`` name)."""
        made = self._table.staged_file(path)
        if made is None:
            return False
        staged, temp = made
        try:
            temp = os.path.abspath(temp)

            def through_here(s: int, places: Any) -> None:
                _core.write_places(temp, places, _array(self._answer(s, self._on(s, "cells")), _U8))

            self._shard_by_shard(temp, "write_to", through_here)
            self._table.seal(temp)
            staged.commit()
        except BaseException:
            staged.discard()
            raise
        return True

    def _read_in_place(self, path: str) -> None:
        """Fills the shards from the table file ``path``: each shard reads its counters from
        the process holding it; a shard whose worker does not see the file gets them from this
        process, one shard at a time."""
        path = os.path.abspath(path)
        self._shard_by_shard(path, "read_from", lambda s, places: self._answer(
            s, self._on(s, "set_cells", _core.read_places(path, places))))

    def _shard_by_shard(self, path: str, method: str, through_here: Callable[[int, Any], None]) -> None:
        """Calls ``method(path, places)`` with its places in the table file ``path`` on each
        shard whose process sees the file (:meth:`_seeing`), and ``through_here(s, places)`` for
        each other shard ``s``, one at a time, while they run."""
        places = self._info.places
        seeing = self._seeing(path)
        futures = self._start_some(method, {s: (path, places[s]) for s in range(len(places)) if seeing[s]})
        for s in (s for s in range(len(places)) if not seeing[s]):
            through_here(s, places[s])
        self._finish_some(futures)

    # --- khmer's table interface -----------------------------------------------------------------

    def ksize(self) -> int:
        return self._info.ksize

    def n_tables(self) -> int:
        """Counters per k-mer."""
        return self._info.n_tables

    @property
    def memory_bytes(self) -> int:
        """Bytes of counters of the whole table."""
        return self._info.memory_bytes

    def n_occupied(self) -> int:
        return self._table.stats()[0]

    def n_unique_kmers(self) -> int:
        return self._table.stats()[1]

    def expected_fp_rate(self) -> float:
        """The one-process table's estimate: khmer's (n_occupied / smallest table) ^ tables, or
        for the blocked layout (non-zero fraction) ^ counters per k-mer."""
        return self._table.stats()[2]

    @property
    def shard_bounds(self) -> List[int]:
        """Shard ``s`` holds counters (lines, for the blocked layout) ``shard_bounds[s] ..
        shard_bounds[s + 1]``."""
        return list(self._info.bounds)

    def hash_reads(self, sequences: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """k-mer hashes of ``sequences`` end to end (khmer's C++ cleaning, the layout's hash),
        and where each sequence's end."""
        return self._table.hash_reads(list(sequences))

    def _hash(self, kmer: Union[str, int]) -> int:
        return kmer if isinstance(kmer, int) else self._table.hash_kmer(kmer)

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Counts k-mer hashes in order (one message per shard per batch)."""
        hashes = np.ascontiguousarray(hashes, dtype=_U64)
        for start in range(0, len(hashes), self.batch_kmers):
            batch = hashes[start:start + self.batch_kmers]
            parts, order = self._table.route(batch)
            self._table.record_adds(batch, order, self._call("add", [(p,) for p in parts]))

    def get_hash_counts(self, hashes: np.ndarray) -> np.ndarray:
        """The count of each k-mer hash (uint32)."""
        hashes = np.ascontiguousarray(hashes, dtype=_U64)
        parts, order = self._table.route(hashes)
        return self._table.kmer_counts(hashes, order, self._call("counts", [(p,) for p in parts]))

    def add(self, kmer: Union[str, int]) -> None:
        self.add_hashes(np.array([self._hash(kmer)], dtype=_U64))

    def get(self, kmer: Union[str, int]) -> int:
        return int(self.get_hash_counts(np.array([self._hash(kmer)], dtype=_U64))[0])

    def consume(self, sequence: str) -> int:
        """Counts the k-mers of ``sequence`` (as given); returns how many."""
        hashes, _ = self._table.hash_reads([sequence])
        self.add_hashes(hashes)
        return len(hashes)

    def get_kmer_counts(self, sequence: str) -> List[int]:
        hashes, _ = self._table.hash_reads([sequence])
        return [int(c) for c in self.get_hash_counts(hashes)]

    def get_median_count(self, sequence: str) -> Tuple[int, float, float]:
        """khmer's (median, mean, population standard deviation) of the k-mer counts."""
        counts = sorted(self.get_kmer_counts(sequence))
        if not counts:
            return 0, 0.0, 0.0
        mean = sum(counts) / len(counts)
        sd = (sum((c - mean) ** 2 for c in counts) / len(counts)) ** 0.5
        return counts[len(counts) // 2], mean, sd


class ShardedCountgraph(_Sharded):
    """A Countgraph cut into ``shards`` shards held by the workers of ``client``.

    ``ShardedCountgraph(ksize, starting_size, n_tables, client=..., shards=N, local=L,
    primes=None, batch_kmers=131072)``: the table sizes are khmer's (``primes`` overrides them);
    shards ``0 .. L-1`` are held in this process and the others by the workers, assigned in
    turn. Without a client every shard is local. Before anything is allocated, each worker's
    shards are checked against its memory limit (what the worker holds already included):
    a table that does not fit raises :class:`ParameterError` naming the shard and the worker.
    A shard whose worker is lost raises :class:`ShardError` naming it (Dask cannot rebuild an
    actor's state). Give a client made with ``direct_to_workers=True`` (as the commands do):
    otherwise every message goes through the scheduler.
    """

    def __init__(self, ksize: int, starting_size: float, n_tables: int, *,
                 client: Any = None, shards: int = 1, local: Optional[int] = None,
                 primes: Optional[Sequence[int]] = None, batch_kmers: int = BATCH_KMERS,
                 use_bigcount: bool = True) -> None:
        sizes = [int(p) for p in primes] if primes is not None else \
            list(_core.get_n_primes_near_x(n_tables, starting_size))
        super().__init__(_core.ShardClient(ksize, sizes, shards, use_bigcount), client, local, batch_kmers)

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, client: Any = None, shards: int = 1,
             local: Optional[int] = None, batch_kmers: int = BATCH_KMERS) -> "ShardedCountgraph":
        """The table saved in khmer's format at ``path`` (uncompressed, 8-bit counters: as
        ``load-into-counting`` saves it) cut into ``shards`` shards as the constructor places
        them (the memory check included). This process reads the header and the bigcount
        entries; each shard reads its own counters from the process holding it (through this
        process where a worker does not see the file). ``n_unique_kmers`` starts at zero, as
        for a table loaded in one process."""
        return cls._loaded(path, False, client, shards, local, batch_kmers)

    # --- what khmer's layout alone answers -------------------------------------------------------

    def hashsizes(self) -> List[int]:
        return list(self._info.sizes)

    def histogram(self) -> np.ndarray:
        """How many counters of the whole table hold each value 0..255."""
        return np.sum(self._call("histogram"), axis=0)

    def to_countgraph(self) -> Any:
        """The whole table as a :class:`kmerflow.Countgraph` in this process."""
        return self._table.gather(self._call("cells"))

    def abundance_distribution(self, path: Union[str, os.PathLike], tracking: Any) -> List[int]:
        """khmer's ``abundance_distribution`` of a file, on the gathered table (``tracking``, a
        Nodegraph, is filled as khmer fills it; :meth:`file_histogram` leaves the table on the
        shards)."""
        return self.to_countgraph().abundance_distribution(os.fspath(path), tracking)


class _RemoteCalls:
    """The remote shards of a sharded table as a native run calls them (the transport only):
    ``send(messages)`` calls ``handle`` on every remote shard's actor, one message (uint8, as
    the native run encoded it) each, in shard order; ``answers()`` gives the answers to the
    oldest messages not answered yet (a run may send the next batch before it takes the
    answers of the previous one). A lost shard raises :class:`ShardError` naming it."""

    def __init__(self, graph: _Sharded) -> None:
        self.graph = graph
        self.futures: Deque[Dict[int, Any]] = collections.deque()

    def send(self, messages: Sequence[np.ndarray]) -> None:
        remote = range(self.graph._local, len(self.graph._shards))
        self.futures.append(self.graph._start_some("handle", {s: (m,) for s, m in zip(remote, messages, strict=True)}))

    def answers(self) -> List[Any]:
        return list(self.graph._finish_some(self.futures.popleft()).values())


def _binary_writer(out: Any) -> Any:
    """A function writing bytes to ``out``, a binary file or a text file over one."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        return out.write
    out.flush()
    return buffer.write


def _identity(path: str) -> Optional[Tuple[int, int]]:
    """What tells a file apart: its inode and size (``None`` where there is no file)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size


def _place(client: Any, needs: Sequence[Tuple[int, int]], first: int) -> List[str]:
    """A worker for each shard of ``needs`` (the bytes its worker holds: the shard's, and a
    batch's messages'), in turn over the workers (sorted by address), refusing before anything
    is allocated a worker whose shards, what it holds already and their messages would pass
    the fraction of its memory limit at which Dask restarts it (shards are numbered from
    ``first``)."""
    if not needs:
        return []
    import dask

    terminate = dask.config.get("distributed.worker.memory.terminate") or 1.0
    workers = running_workers(client)
    addresses = sorted(workers)
    placement = [addresses[s % len(addresses)] for s in range(len(needs))]
    for address in addresses:
        info = workers[address]
        limit = int(info.get("memory_limit") or 0)
        held = int(info.get("metrics", {}).get("memory", 0))
        mine = [s for s, w in enumerate(placement) if w == address]
        need = sum(needs[s][0] for s in mine)
        sent = sum(needs[s][1] for s in mine)
        if mine and limit and held + need + sent > limit * terminate:
            raise ParameterError(
                f"shards {', '.join(str(first + s) for s in mine)} ({need / 1e6:.1f} MB) do not fit in worker "
                f"{address}: memory limit {limit / 1e6:.1f} MB ({terminate:.0%} before Dask restarts it), "
                f"{held / 1e6:.1f} MB in use, {sent / 1e6:.1f} MB for messages; use more workers "
                "or shards held locally")
    return placement


def running_workers(client: Any, timeout: Optional[float] = None) -> Dict[str, Dict[str, Any]]:
    """The running workers of ``client``'s cluster by address, each with what the scheduler
    knows of it (``memory_limit``, ``metrics``, ``nthreads``...), asked of the scheduler now. A
    cluster with none (one just starting) is asked again until one joins, for at most
    ``timeout`` seconds (:data:`WORKERS_TIMEOUT` by default); then :class:`ParameterError`.

    Not ``client.scheduler_info()``: that returns the client's copy of the answer, which the
    client's own refresh every 2 s (an answer without the workers) may replace between the
    call's fetch and its return."""
    timeout = WORKERS_TIMEOUT if timeout is None else timeout
    every_worker = {"n_workers": -1} if _takes_n_workers(client) else {}
    deadline = time.monotonic() + timeout
    while True:
        workers = client.sync(client.scheduler.identity, **every_worker)["workers"]
        running = {address: info for address, info in workers.items() if info.get("status", "running") == "running"}
        if running:
            return running
        if time.monotonic() >= deadline:
            raise ParameterError(f"the Dask cluster at {client.scheduler.address} has no running workers "
                                 f"(none joined within {timeout:g} s)")
        time.sleep(WORKERS_POLL)


def _takes_n_workers(client: Any) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


# The blocked layout's shards use the classes above.
from kmerflow.distributed.blocked import ShardedBlockedTable  # noqa: E402

__all__ = ["ShardedCountgraph", "ShardedBlockedTable", "ShardActor", "ShardError", "BATCH_KMERS", "running_workers"]
