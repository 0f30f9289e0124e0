"""Counting tables split over Dask workers (``pip install kmerflow[dask]``).

A :class:`ShardedCountgraph` is a Countgraph (khmer's layout, 8-bit counters with bigcount)
whose counters are cut into shards, contiguous ranges of counters each held by one Dask worker
as an actor (:class:`ShardActor`), or in this process. The client hashes reads, turns hashes into
counter indices (it needs only the table sizes), splits them by shard with one counting sort and
sends each shard one message per batch of k-mers (numpy arrays). It keeps the bigcount map and the
statistics and makes every decision, with the rules of the one-process table, so counts, saved
tables, kept reads and histograms equal a one-process run with the same table sizes.

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
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from kmerflow import _core
from kmerflow.errors import ParameterError, ShardError

#: k-mers per message to every shard (the batch of the three phases).
BATCH_KMERS = 262_144


#: Seconds between two checks, while a remote shard's answer is awaited, that its worker is
#: still in the cluster: a worker killed (out of memory) is an error within this time, not a
#: wait (the scheduler would hold a task pinned to it forever).
LIVENESS_EVERY = 1.0


def _array(values: Any, dtype: Any) -> np.ndarray:
    """``values`` as an aligned, contiguous array of ``dtype`` (arrays arriving from other
    processes may lie unaligned in a message's buffer)."""
    return np.require(values, dtype=dtype, requirements=["C", "A"])


class _SeesFiles:
    """What every shard actor answers about files."""

    def sees(self, path: str, identity: Tuple[int, int]) -> bool:
        """Whether ``path`` here is the client's file (:func:`_identity`: the same inode and
        size): on another machine without a shared file system it is not."""
        return _identity(path) == identity


class ShardActor(_SeesFiles):
    """One shard in a Dask worker's memory (submitted with ``actor=True``).

    Each method takes and returns numpy arrays; the native calls release the GIL.
    """

    def __init__(self, start: int, size: int) -> None:
        self.shard = _core.Shard(start, size)

    def step(self, apply_counters: np.ndarray, apply_deltas: np.ndarray,
             counters: np.ndarray) -> np.ndarray:
        """Applies the deltas of the previous batch, then returns the values of ``counters``."""
        if len(apply_counters):
            self.shard.apply(_array(apply_counters, np.uint64), _array(apply_deltas, np.uint8))
        return self.shard.counts(_array(counters, np.uint64))

    def add(self, counters: np.ndarray) -> np.ndarray:
        """Counts ``counters`` in order; returns each one's value before its add."""
        return self.shard.add(_array(counters, np.uint64))

    def cells(self) -> np.ndarray:
        """A copy of the counters."""
        return self.shard.cells()

    def histogram(self) -> np.ndarray:
        """How many counters hold each value 0..255."""
        return self.shard.histogram()

    def write_to(self, path: str, places: Sequence[Tuple[int, int]]) -> None:
        """Writes the counters at ``places`` (offset, length) of the table file ``path``."""
        _core.khmer_shard_write(self.shard, path, list(places))

    def read_from(self, path: str, places: Sequence[Tuple[int, int]]) -> None:
        """Replaces the counters with those at ``places`` of the table file ``path``."""
        _core.khmer_shard_read(self.shard, path, list(places))

    def set_cells(self, cells: np.ndarray) -> None:
        """Replaces the counters with ``cells`` (uint8)."""
        self.shard = _core.Shard.from_cells(self.shard.start, _array(cells, np.uint8))


class _Done:
    """The answer of a shard held in this process (computed at once)."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _Local:
    """A shard held in this process (``actor(*args)``), with the actor's interface."""

    def __init__(self, actor: Callable[..., Any], *args: Any) -> None:
        self.actor = actor(*args)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.actor, name)
        return lambda *args: _Done(method(*args))


def _default_sizes(n_tables: int, starting_size: float,
                   primes: Optional[Sequence[int]]) -> List[int]:
    if primes is not None:
        return [int(p) for p in primes]
    return list(_core.get_n_primes_near_x(n_tables, starting_size))


class _Sharded:
    """The shards of a table, held by Dask workers as actors or in this process, and the calls
    that reach them (a failure names the shard). ``self._table`` is the client's part, whose
    ``bounds`` are the shards' ranges of :attr:`_unit`."""

    #: What the shards' ranges count (named in errors).
    _unit = "counters"
    _table: Any
    batch_kmers: int
    short_reads: int
    #: The terminal of the command line running on this table (``_core.ShardTerminal``), whose
    #: progress line the files read here advance; ``None`` outside the command line.
    terminal: Any = None

    def _start(self, client: Any, actor: Callable[..., Any], args: Sequence[Sequence[Any]],
               n_local: int, nbytes: Sequence[int], messages: Sequence[int]) -> None:
        """Makes shard ``s`` as ``actor(*args[s])``: shards ``0 .. n_local-1`` in this process,
        the others on the workers of ``client`` (:func:`_place`, with their ``nbytes`` and
        ``messages`` bytes, given for the remote shards only)."""
        shards = len(args)
        if not 0 <= n_local <= shards:
            raise ParameterError(f"local must be 0..{shards} shards, not {n_local}")
        placement = _place(client, nbytes, n_local, messages)
        self._client = client
        #: Each shard's updates not sent yet (counters, deltas): they go with its next message.
        self._pending: List[Tuple[np.ndarray, np.ndarray]] = [_no_update() for _ in range(shards)]
        self._where: List[str] = []
        self._shards: List[Any] = []
        for s in range(shards):
            if s < n_local:
                self._shards.append(_Local(actor, *args[s]))
                self._where.append("this process")
            else:
                worker = placement[s - n_local]
                future = client.submit(actor, *args[s], actor=True, workers=[worker],
                                       allow_other_workers=False, pure=False)
                self._where.append(worker)
                self._shards.append(self._answer(s, future))

    def _describe(self, s: int) -> str:
        bounds = self._table.bounds
        return f"shard {s} ({self._unit} {bounds[s]}..{bounds[s + 1]}) on {self._where[s]}"

    def _answer(self, s: int, future: Any) -> Any:
        """The answer of shard ``s`` to ``future``, its worker checked every
        :data:`LIVENESS_EVERY` seconds while it is awaited (a worker gone is a
        :class:`ShardError` naming the shard and the worker)."""
        if isinstance(future, _Done):
            return future.value

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

    def _call(self, method: str, args: Sequence[Sequence[Any]]) -> List[Any]:
        """Calls ``method`` on every shard with its arguments (remote shards first, so that
        local work overlaps theirs) and returns the answers in shard order."""
        order = sorted(range(len(self._shards)), key=lambda s: isinstance(self._shards[s], _Local))
        futures = {s: self._named(s, lambda s=s: getattr(self._shards[s], method)(*args[s])) for s in order}
        return [self._answer(s, futures[s]) for s in range(len(self._shards))]

    def _held_here(self) -> List[Any]:
        """The shards held in this process (``None`` for a remote one), in shard order."""
        return [s.actor.shard if isinstance(s, _Local) else None for s in self._shards]

    def _send_remote(self, method: str, args: Sequence[Sequence[Any]]) -> List[Tuple[int, Any]]:
        """Calls ``method`` on every remote shard (``args`` in shard order) without waiting:
        each shard and its future."""
        remote = [s for s, shard in enumerate(self._shards) if not isinstance(shard, _Local)]
        return [(s, self._named(s, lambda s=s, a=a: getattr(self._shards[s], method)(*a)))
                for s, a in zip(remote, args, strict=True)]

    def _answers(self, futures: List[Tuple[int, Any]]) -> List[Any]:
        """The answers of :meth:`_send_remote`'s futures, in shard order."""
        return [self._answer(s, f) for s, f in futures]

    def native_run(self) -> Tuple[Any, List[Any], "_RemoteCalls"]:
        """What a native run on this table (either layout) takes (``_core.run_sharded_command``
        and the like): the client's part, the shards held here (``None`` for a remote one) and
        the remote shards' calls."""
        self.flush()
        return self._table, self._held_here(), _RemoteCalls(self)

    def consume_seqfile(self, path: Union[str, os.PathLike]) -> Tuple[int, int]:
        """Counts every k-mer of a sequence file (khmer's C++ cleaning); returns (reads, k-mers).
        The run is native (``_core.count_file_sharded``): the file is read, hashed and routed
        there, the shards held here count at once and the others get one message per batch."""
        reads, kmers, short = _core.count_file_sharded(*self.native_run(), os.fspath(path), self.batch_kmers,
                                                       self.terminal)
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
                                                          self.batch_kmers, decided, self.terminal)
        self.short_reads += short
        return reads, kept

    def flush(self) -> None:
        """Sends the updates still held by the client (done by every reading method)."""
        if any(len(c) for c, _ in self._pending):
            self._call("step", [(*p, np.zeros(0, dtype=np.uint64)) for p in self._pending])
            self._pending = [_no_update() for _ in self._pending]

    def check_fp_rate(self, ceiling: float, target: float, force: bool,
                      on_message: Callable[[str, str], object]) -> float:
        """The estimated false-positive rate, checked against ``ceiling`` as the one-process
        commands check it (``_core.check_sharded_fp_rate``): above it, a
        :class:`kmerflow.ParameterError` naming the ``-M`` that would bring the table to
        ``target``; with ``force``, that warning passed to ``on_message(level, text)``."""
        self.flush()
        return _core.check_sharded_fp_rate(self._table, ceiling, target, force, on_message)

    # --- the table's file, written and read shard by shard ---------------------------------------

    def _places(self) -> List[List[Tuple[int, int]]]:
        """Where each shard's counters are in the table's file: (offset, length) pieces."""
        raise NotImplementedError

    def _frame(self) -> Tuple[int, List[Tuple[int, bytes]]]:
        """The file's length and what the client writes before the shards' counters are in
        place: (offset, bytes) pieces."""
        raise NotImplementedError

    def _seal(self, path: str) -> None:
        """What the client writes once every shard's counters are in place (nothing by default)."""

    def _start_some(self, method: str, args: Dict[int, Sequence[Any]]) -> Dict[int, Any]:
        """Calls ``method`` on the shards ``args`` names, with their arguments, without waiting
        (remote shards first, so that local work overlaps theirs): each shard's future."""
        order = sorted(args, key=lambda s: isinstance(self._shards[s], _Local))
        return {s: self._named(s, lambda s=s: getattr(self._shards[s], method)(*args[s])) for s in order}

    def _finish_some(self, futures: Dict[int, Any]) -> Dict[int, Any]:
        """The answers of :meth:`_start_some`'s futures."""
        return {s: self._answer(s, f) for s, f in sorted(futures.items())}

    def _seeing(self, path: str) -> List[bool]:
        """Whether each shard's process sees the file ``path`` that this process sees (the
        same inode and size): a worker on another machine without a shared file system does
        not."""
        identity = _identity(path)
        answers = self._finish_some(self._start_some("sees", {s: (path, identity) for s in range(len(self._shards))}))
        return [bool(answers[s]) for s in range(len(self._shards))]

    def _save_in_place(self, path: str) -> bool:
        """Saves the table to ``path`` without gathering it: the file is made at its full
        length under a temporary name beside ``path``, each shard writes its counters at their
        place from the process holding it (a shard whose worker does not see the file sends
        its counters here, one shard at a time), this process writes the rest, and the file is
        renamed over ``path``. On a failure the temporary is removed and the error names the
        shard. False (nothing done) where ``path`` is written in place (a FIFO, a device)."""
        self.flush()
        length, frame = self._frame()
        staged = _core.StagedFile.create(path, length)
        if staged is None:
            return False
        try:
            temp = os.path.abspath(staged.temp_path)
            staged.write(frame)
            places = self._places()
            seeing = self._seeing(temp)
            futures = self._start_some("write_to", {s: (temp, places[s]) for s in range(len(places)) if seeing[s]})
            for s in (s for s in range(len(places)) if not seeing[s]):
                cells = self._answer(s, self._named(s, lambda s=s: self._shards[s].cells()))
                _core.write_places(temp, places[s], _array(cells, np.uint8))
                del cells
            self._finish_some(futures)
            self._seal(temp)
            staged.commit()
        except BaseException:
            staged.discard()
            raise
        return True

    @classmethod
    def _loaded(cls, client_from_file: Callable[[str, int], Any], path: Union[str, os.PathLike],
                client: Any, shards: int, local: Optional[int], batch_kmers: int) -> Any:
        """The table saved at ``path``, its header read here by ``client_from_file`` (the
        native client of ``shards`` shards), its shards placed as the constructor places them
        and filled by :meth:`_read_in_place`."""
        if batch_kmers < 1:
            raise ParameterError("batch_kmers must be at least 1")
        table = cls.__new__(cls)
        table._start_shards(client_from_file(os.fspath(path), shards), client, local, batch_kmers)
        table._read_in_place(os.fspath(path))
        return table

    def _read_in_place(self, path: str) -> None:
        """Fills the shards from the table file ``path``: each shard reads its counters from
        the process holding it; a shard whose worker does not see the file gets them from this
        process, one shard at a time."""
        path = os.path.abspath(path)
        places = self._places()
        seeing = self._seeing(path)
        futures = self._start_some("read_from", {s: (path, places[s]) for s in range(len(places)) if seeing[s]})
        for s in (s for s in range(len(places)) if not seeing[s]):
            cells = _core.read_places(path, places[s])
            self._answer(s, self._named(s, lambda s=s, cells=cells: self._shards[s].set_cells(cells)))
            del cells
        self._finish_some(futures)

    # --- khmer's k-mer and read queries, from the table's add_hashes, get_hash_counts,
    # hash_reads and _hash -------------------------------------------------------------------

    def add(self, kmer: Union[str, int]) -> None:
        self.add_hashes(np.array([self._hash(kmer)], dtype=np.uint64))

    def get(self, kmer: Union[str, int]) -> int:
        return int(self.get_hash_counts(np.array([self._hash(kmer)], dtype=np.uint64))[0])

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
    primes=None, batch_kmers=262144)``: the table sizes are khmer's (``primes`` overrides them);
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
        sizes = _default_sizes(n_tables, starting_size, primes)
        if batch_kmers < 1:
            raise ParameterError("batch_kmers must be at least 1")
        self._start_shards(_core.ShardClient(ksize, sizes, shards, use_bigcount), client, local, batch_kmers)

    def _start_shards(self, table: Any, client: Any, local: Optional[int], batch_kmers: int) -> None:
        """Starts a zeroed shard for each of the ranges of ``table`` (the client's part)."""
        self._table = table
        self.batch_kmers = batch_kmers
        bounds, sizes = table.bounds, table.sizes
        shards = len(bounds) - 1
        n_local = _n_local(client, shards, local)
        remote = range(max(n_local, 0), shards)
        self._start(client, ShardActor, [(bounds[s], bounds[s + 1] - bounds[s]) for s in range(shards)],
                    n_local, [bounds[s + 1] - bounds[s] for s in remote],
                    [_message_bytes(batch_kmers, sizes, bounds[s], bounds[s + 1]) for s in remote])
        #: Reads shorter than k: counted by :meth:`consume_seqfile` (they contribute no k-mers)
        #: and dropped by :meth:`normalize_file`.
        self.short_reads = 0

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, client: Any = None, shards: int = 1,
             local: Optional[int] = None, batch_kmers: int = BATCH_KMERS) -> "ShardedCountgraph":
        """The table saved in khmer's format at ``path`` (uncompressed, 8-bit counters: as
        ``load-into-counting`` saves it) cut into ``shards`` shards as the constructor places
        them (the memory check included). This process reads the header and the bigcount
        entries; each shard reads its own counters from the process holding it (through this
        process where a worker does not see the file). ``n_unique_kmers`` starts at zero, as
        for a table loaded in one process."""
        return cls._loaded(_core.khmer_client_from_file, path, client, shards, local, batch_kmers)

    # --- messages -----------------------------------------------------------------------------

    def _values(self, counters: np.ndarray) -> np.ndarray:
        """The values of ``counters`` (after the pending updates), in input order."""
        parts, order = self._table.route(counters)
        answers = self._call("step", [(*self._pending[s], parts[s]) for s in range(len(parts))])
        self._pending = [_no_update() for _ in parts]
        return _core.ShardClient.unroute(order, answers)

    # --- khmer's Countgraph interface ------------------------------------------------------------

    def ksize(self) -> int:
        return self._table.ksize

    def hashsizes(self) -> List[int]:
        return list(self._table.sizes)

    def n_tables(self) -> int:
        return len(self._table.sizes)

    def n_occupied(self) -> int:
        return self._table.n_occupied()

    def n_unique_kmers(self) -> int:
        return self._table.n_unique_kmers()

    def expected_fp_rate(self) -> float:
        """khmer's estimate (n_occupied / smallest table) ^ tables."""
        return float((self.n_occupied() / min(self.hashsizes())) ** self.n_tables())

    @property
    def shard_bounds(self) -> List[int]:
        """Shard ``s`` holds counters ``shard_bounds[s] .. shard_bounds[s + 1]``."""
        return list(self._table.bounds)

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Counts k-mer hashes in order (one message per shard per batch)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        self.flush()
        for start in range(0, len(hashes), self.batch_kmers):
            batch = hashes[start:start + self.batch_kmers]
            parts, order = self._table.route(self._table.counters(batch))
            previous = _core.ShardClient.unroute(order, self._call("add", [(p,) for p in parts]))
            self._table.record_adds(batch, previous)

    def get_hash_counts(self, hashes: np.ndarray) -> np.ndarray:
        """The count of each k-mer hash (uint32)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        return self._table.kmer_counts(hashes, self._values(self._table.counters(hashes)))

    def hash_reads(self, sequences: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """k-mer hashes of ``sequences`` end to end (khmer's C++ cleaning), and where each
        sequence's end."""
        return self._table.hash_reads(list(sequences))

    def _hash(self, kmer: Union[str, int]) -> int:
        return kmer if isinstance(kmer, int) else _core.forward_hash(kmer, self.ksize())

    def histogram(self) -> np.ndarray:
        """How many counters of the whole table hold each value 0..255."""
        self.flush()
        return np.sum(self._call("histogram", [() for _ in self._shards]), axis=0)

    def to_countgraph(self) -> Any:
        """The whole table as a :class:`kmerflow.Countgraph` in this process."""
        self.flush()
        return self._table.gather(self._call("cells", [() for _ in self._shards]))

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Saves the table in khmer's format, shard by shard without gathering it (see
        :meth:`_save_in_place`); a gzip-compressed file (a ``.gz`` name), and a FIFO or device,
        are written from the table gathered into this process."""
        path = os.fspath(path)
        if path.endswith(".gz") or not self._save_in_place(path):
            self.to_countgraph().save(path)

    def _places(self) -> List[List[Tuple[int, int]]]:
        return _core.khmer_places(self._table)

    def _frame(self) -> Tuple[int, List[Tuple[int, bytes]]]:
        return _core.khmer_frame(self._table)

    def abundance_distribution(self, path: Union[str, os.PathLike], tracking: Any) -> List[int]:
        """khmer's ``abundance_distribution`` of a file, on the gathered table (``tracking``, a
        Nodegraph, is filled as khmer fills it; :meth:`file_histogram` leaves the table on the
        shards)."""
        return self.to_countgraph().abundance_distribution(os.fspath(path), tracking)

    def file_histogram(self, *paths: Union[str, os.PathLike]) -> np.ndarray:
        """khmer's ``abundance_distribution`` of the files ``paths`` (read in order) with a fresh
        tracking filter (one bit per counter of the table, held here): how many distinct k-mers
        have each count 0 .. 65534 (uint64). The reads are read and hashed natively and only the
        k-mers new to the tracking filter are looked up on the shards (one message per shard
        and batch); the table is not gathered."""
        table, local, remote = self.native_run()
        return _core.abundance_distribution_sharded(table, local, remote, [os.fspath(p) for p in paths],
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
        table, local, remote = self.native_run()
        summary = _core.filter_reads_sharded(table, local, remote, [os.fspath(p) for p in paths],
                                             os.fspath(output), cutoff, normalize_to, self.batch_kmers)
        return json.loads(summary)


class _RemoteCalls:
    """The remote shards of a sharded table as a native run calls them (the transport only):
    ``send(method, messages)`` calls the actors' ``method`` (``step`` or ``add``) on every
    remote shard, one message (its arguments) each, in shard order; ``answers()`` gives the
    answers to the oldest messages not answered yet (a run may send the next batch before it
    takes the answers of the previous one). A lost shard raises :class:`ShardError` naming it."""

    def __init__(self, graph: _Sharded) -> None:
        self.graph = graph
        self.futures: Deque[List[Tuple[int, Any]]] = collections.deque()

    def send(self, method: str, messages: Sequence[Tuple[np.ndarray, ...]]) -> None:
        self.futures.append(self.graph._send_remote(method, messages))

    def answers(self) -> List[np.ndarray]:
        return self.graph._answers(self.futures.popleft())


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


def _n_local(client: Any, shards: int, local: Optional[int]) -> int:
    """The shards held in this process: all without a client, else ``local`` (default none)."""
    return shards if client is None else (0 if local is None else local)


def _no_update() -> Tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint8)


def _message_bytes(batch_kmers: int, sizes: Sequence[int], start: int, end: int) -> int:
    """What one batch's messages hold at once in the worker of the shard of counters
    ``start .. end``: at most ``batch_kmers`` counters of each table the shard overlaps, each
    with 8 bytes in, 1 out and 9 of updates, twice (their copies while (de)serialized)."""
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    overlapped = int(np.sum((offsets[:-1] < end) & (offsets[1:] > start)))
    return 2 * batch_kmers * overlapped * (8 + 1 + 9)


def _place(client: Any, sizes: Sequence[int], first: int, messages: Sequence[int]) -> List[str]:
    """A worker for each shard of ``sizes`` bytes, in turn over the workers (sorted by address),
    refusing before anything is allocated a worker whose shards, what it holds already and
    their ``messages`` (bytes per shard) would pass the fraction of its memory limit at which
    Dask restarts it (shards are numbered from ``first``)."""
    if not sizes:
        return []
    import dask

    terminate = dask.config.get("distributed.worker.memory.terminate") or 1.0
    workers = client.scheduler_info(n_workers=-1)["workers"] if _takes_n_workers(client) \
        else client.scheduler_info()["workers"]
    if not workers:
        raise ParameterError("the Dask cluster has no workers")
    addresses = sorted(workers)
    placement = [addresses[s % len(addresses)] for s in range(len(sizes))]
    for address in addresses:
        info = workers[address]
        limit = int(info.get("memory_limit") or 0)
        held = int(info.get("metrics", {}).get("memory", 0))
        mine = [s for s, w in enumerate(placement) if w == address]
        need = sum(sizes[s] for s in mine)
        sent = sum(messages[s] for s in mine)
        if mine and limit and held + need + sent > limit * terminate:
            raise ParameterError(
                f"shards {', '.join(str(first + s) for s in mine)} ({need / 1e6:.1f} MB) do not fit in worker "
                f"{address}: memory limit {limit / 1e6:.1f} MB ({terminate:.0%} before Dask restarts it), "
                f"{held / 1e6:.1f} MB in use, {sent / 1e6:.1f} MB for messages; use more workers "
                "or shards held locally")
    return placement


def _takes_n_workers(client: Any) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


# The blocked layout's shards use the classes above.
from kmerflow.distributed.blocked import ShardedBlockedTable  # noqa: E402

__all__ = ["ShardedCountgraph", "ShardedBlockedTable", "ShardActor", "ShardError", "BATCH_KMERS"]
