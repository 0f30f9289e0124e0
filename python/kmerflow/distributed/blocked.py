"""Blocked tables (``--layout blocked``) split over Dask workers.

A :class:`ShardedBlockedTable` is the blocked layout's table (all the counters of a k-mer in one
64-byte line) whose lines are cut into shards, contiguous ranges of lines each held by one Dask
worker as an actor (:class:`BlockedShardActor`), or in this process. A k-mer's counters are all
in its line, so each k-mer belongs to exactly one shard, which adds it and answers its count
alone: the client hashes the reads, splits the hashes by shard with one counting sort and sends
each shard one message per batch of k-mers (numpy arrays); each shard's answer to an add is what
the add did to the table's statistics, which the client sums. normalize-by-median looks each
batch's counters up on the shards, decides it on the client (the batch rules of the one-process
table: in-batch deltas of the kept reads, saturation at the counters' maximum) and sends each
shard its updates with a later batch's look-ups, the next batch sent before the one answered
is decided. The saved table and the kept reads are the one-process run's, byte for byte.

>>> from distributed import Client, LocalCluster                     # doctest: +SKIP
>>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, \\
...         Client(cluster, direct_to_workers=True) as client:
...     table = ShardedBlockedTable(20, 1e8, 4, client=client, shards=8)
...     table.consume_seqfile("reads.fq.gz")
...     table.save("reads.kf")                      # kmerflow's format, shard by shard
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from kmerflow import _core
from kmerflow.distributed import BATCH_KMERS, _array, _n_local, _SeesFiles, _Sharded
from kmerflow.errors import ParameterError

#: Bytes of one line.
LINE_BYTES = 64


class BlockedShardActor(_SeesFiles):
    """One shard of a blocked table in a Dask worker's memory (submitted with ``actor=True``):
    lines ``start .. end`` of the table of that shape. Each method takes and returns numpy
    arrays; the native calls release the GIL."""

    def __init__(self, ksize: int, memory_bytes: int, bits: int, probes: int, start: int, end: int) -> None:
        self.shard = _core.BlockedShard(ksize, memory_bytes, bits, probes, start, end)

    def add(self, hashes: np.ndarray) -> Tuple[int, int, int]:
        """Counts the k-mer hashes in order; returns what they added to the statistics
        (non-zero counters, adds that found a zero counter, adds)."""
        return self.shard.add(_array(hashes, np.uint64))

    def step(self, apply_counters: np.ndarray, apply_deltas: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """Applies the deltas of the previous batch, then returns the values of the counters of
        ``hashes`` (probe-major)."""
        return self.shard.step(_array(apply_counters, np.uint64), _array(apply_deltas, np.uint8),
                               _array(hashes, np.uint64))

    def counts(self, hashes: np.ndarray) -> np.ndarray:
        """The count of each k-mer hash (uint8)."""
        return self.shard.counts(_array(hashes, np.uint64))

    def cells(self) -> np.ndarray:
        """A copy of the counter bytes."""
        return self.shard.cells()

    def write_to(self, path: str, places: Sequence[Tuple[int, int]]) -> None:
        """Writes the lines at ``places`` (their place) of the table file ``path``."""
        _core.blocked_shard_write(self.shard, path, list(places))

    def read_from(self, path: str, places: Sequence[Tuple[int, int]]) -> None:
        """Replaces the lines with those at ``places`` (their place) of the table file ``path``."""
        _core.blocked_shard_read(self.shard, path, list(places))

    def set_cells(self, cells: np.ndarray) -> None:
        """Replaces the lines with ``cells`` (uint8)."""
        _core.blocked_shard_set(self.shard, _array(cells, np.uint8))


class ShardedBlockedTable(_Sharded):
    """A blocked table cut into ``shards`` shards of lines held by the workers of ``client``.

    ``ShardedBlockedTable(ksize, starting_size, n_tables, small_count=False, client=...,
    shards=N, local=L, memory_bytes=None, batch_kmers=262144)``: as the one-process blocked
    table, ``starting_size`` × ``n_tables`` bytes of 8-bit counters (half as many bytes of 4-bit
    counters with ``small_count``) in whole lines, or ``memory_bytes``; ``n_tables`` counters per
    k-mer. It counts (``consume_seqfile``, ``add``, ...), answers counts and normalizes a file
    (``normalize_file``, as :class:`kmerflow.distributed.ShardedCountgraph`'s). Shards
    ``0 .. L-1`` are held in this process and the others by the workers, assigned in turn;
    without a client every shard is local. The memory check before anything is allocated and
    the errors naming a lost shard are those of :class:`kmerflow.distributed.ShardedCountgraph`.
    """

    _unit = "lines"

    def __init__(self, ksize: int, starting_size: float, n_tables: int, *, small_count: bool = False,
                 client: Any = None, shards: int = 1, local: Optional[int] = None,
                 memory_bytes: Optional[int] = None, batch_kmers: int = BATCH_KMERS) -> None:
        if batch_kmers < 1:
            raise ParameterError("batch_kmers must be at least 1")
        bits = 4 if small_count else 8
        if memory_bytes is None:
            memory_bytes = int(starting_size * n_tables * bits / 8)
        self._start_shards(_core.BlockedShardClient(ksize, memory_bytes, bits, n_tables, shards), client, local,
                           batch_kmers)

    def _start_shards(self, table: Any, client: Any, local: Optional[int], batch_kmers: int) -> None:
        """Starts a zeroed shard for each of the ranges of lines of ``table`` (the client's part)."""
        self._table = table
        self.batch_kmers = batch_kmers
        bounds = table.bounds
        shards = len(bounds) - 1
        shape = (table.ksize, table.memory_bytes, table.bits, table.probes)
        n_local = _n_local(client, shards, local)
        remote = range(max(n_local, 0), shards)
        self._start(client, BlockedShardActor, [(*shape, bounds[s], bounds[s + 1]) for s in range(shards)],
                    n_local, [(bounds[s + 1] - bounds[s]) * LINE_BYTES for s in remote],
                    # At most a batch of hashes (in, and as lines), their counters' values and
                    # updates (8 + 1 bytes each), twice while (de)serialized.
                    [2 * batch_kmers * (16 + 10 * table.probes) for _ in remote])
        #: Reads shorter than k: counted by :meth:`consume_seqfile` (they contribute no k-mers)
        #: and dropped by :meth:`normalize_file`.
        self.short_reads = 0

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, client: Any = None, shards: int = 1,
             local: Optional[int] = None, batch_kmers: int = BATCH_KMERS) -> "ShardedBlockedTable":
        """The table saved in kmerflow's format at ``path`` cut into ``shards`` shards as the
        constructor places them (the memory check included). This process checks the header
        and the counters' checksum (reading the file in chunks); each shard reads its own lines
        from the process holding it (through this process where a worker does not see the
        file)."""
        return cls._loaded(_core.blocked_client_from_file, path, client, shards, local, batch_kmers)

    def ksize(self) -> int:
        return self._table.ksize

    def n_tables(self) -> int:
        """Counters per k-mer."""
        return self._table.probes

    @property
    def memory_bytes(self) -> int:
        """Bytes of counters of the whole table."""
        return self._table.memory_bytes

    def n_occupied(self) -> int:
        return self._table.n_occupied()

    def n_unique_kmers(self) -> int:
        return self._table.n_unique_kmers()

    def expected_fp_rate(self) -> float:
        """The one-process blocked table's estimate: (non-zero fraction) ^ counters per k-mer."""
        return self._table.expected_fp_rate()

    @property
    def shard_bounds(self) -> list[int]:
        """Shard ``s`` holds lines ``shard_bounds[s] .. shard_bounds[s + 1]``."""
        return list(self._table.bounds)

    def hash_reads(self, sequences: Any) -> Tuple[np.ndarray, np.ndarray]:
        """k-mer hashes of ``sequences`` end to end (khmer's C++ cleaning, the blocked layout's
        hash), and where each sequence's end."""
        return self._table.hash_reads(list(sequences))

    def _hash(self, kmer: Union[str, int]) -> int:
        if isinstance(kmer, int):
            return kmer
        hashes, _ = self._table.hash_reads([kmer])
        if len(kmer) != self.ksize() or len(hashes) != 1:
            raise ParameterError(f"a k-mer of {self.ksize()} bases is needed, not {kmer!r}")
        return int(hashes[0])

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Counts k-mer hashes in order (one message per shard per batch)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        self.flush()
        for start in range(0, len(hashes), self.batch_kmers):
            parts, _ = self._table.route(hashes[start:start + self.batch_kmers])
            for done in self._call("add", [(p,) for p in parts]):
                self._table.record(done)

    def get_hash_counts(self, hashes: np.ndarray) -> np.ndarray:
        """The count of each k-mer hash (uint32)."""
        self.flush()
        parts, order = self._table.route(np.ascontiguousarray(hashes, dtype=np.uint64))
        counts = _core.ShardClient.unroute(order, self._call("counts", [(p,) for p in parts]))
        return counts.astype(np.uint32)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Saves the table in kmerflow's format, shard by shard without gathering it (see
        :meth:`kmerflow.distributed._Sharded._save_in_place`); a FIFO or device is written from
        the table gathered into this process."""
        if not self._save_in_place(os.fspath(path)):
            self._table.save(self._call("cells", [() for _ in self._shards]), os.fspath(path))

    def _places(self) -> List[List[Tuple[int, int]]]:
        return _core.blocked_places(self._table)

    def _frame(self) -> Tuple[int, List[Tuple[int, bytes]]]:
        # The header is written by _seal, once the checksum of the lines can be computed.
        places = self._places()
        return places[-1][0][0] + places[-1][0][1], []

    def _seal(self, path: str) -> None:
        _core.blocked_seal(self._table, path)


__all__ = ["ShardedBlockedTable", "BlockedShardActor"]
