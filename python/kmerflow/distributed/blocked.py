"""Blocked tables (``--layout blocked``) split over Dask workers.

A :class:`ShardedBlockedTable` is the blocked layout's table (all the counters of a k-mer in one
64-byte line) whose lines are cut into shards, contiguous ranges of lines each held by one Dask
worker as an actor (:class:`kmerflow.distributed.ShardActor`), or in this process. A k-mer's
counters are all in its line, so each k-mer belongs to exactly one shard, which adds it and
answers its count alone: the client hashes the reads, splits the hashes by shard with one
counting sort and sends each shard one message per batch of k-mers (numpy arrays); each shard's
answer to an add is what the add did to the table's statistics, which the client sums.
normalize-by-median looks each batch's counters up on the shards, decides it on the client (the
batch rules of the one-process table: in-batch deltas of the kept reads, saturation at the
counters' maximum) and sends each shard its updates with a later batch's look-ups, the next
batch sent before the one answered is decided. The saved table and the kept reads are the
one-process run's, byte for byte.

>>> from distributed import Client, LocalCluster                     # doctest: +SKIP
>>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, \\
...         Client(cluster, direct_to_workers=True) as client:
...     table = ShardedBlockedTable(20, 1e8, 4, client=client, shards=8)
...     table.consume_seqfile("reads.fq.gz")
...     table.save("reads.kf")                      # kmerflow's format, shard by shard
"""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from kmerflow import _core
from kmerflow.distributed import BATCH_KMERS, _Sharded


class ShardedBlockedTable(_Sharded):
    """A blocked table cut into ``shards`` shards of lines held by the workers of ``client``.

    ``ShardedBlockedTable(ksize, starting_size, n_tables, small_count=False, client=...,
    shards=N, local=L, memory_bytes=None, batch_kmers=131072)``: as the one-process blocked
    table, ``starting_size`` × ``n_tables`` bytes of 8-bit counters (half as many bytes of 4-bit
    counters with ``small_count``) in whole lines, or ``memory_bytes``; ``n_tables`` counters per
    k-mer. It counts (``consume_seqfile``, ``add``, ...), answers counts, normalizes, filters
    and histograms a file (``normalize_file``, ``filter_file``, ``file_histogram``, as
    :class:`kmerflow.distributed.ShardedCountgraph`'s). Shards
    ``0 .. L-1`` are held in this process and the others by the workers, assigned in turn;
    without a client every shard is local. The memory check before anything is allocated and
    the errors naming a lost shard are those of :class:`kmerflow.distributed.ShardedCountgraph`.
    """

    def __init__(self, ksize: int, starting_size: float, n_tables: int, *, small_count: bool = False,
                 client: Any = None, shards: int = 1, local: Optional[int] = None,
                 memory_bytes: Optional[int] = None, batch_kmers: int = BATCH_KMERS) -> None:
        bits = 4 if small_count else 8
        if memory_bytes is None:
            memory_bytes = int(starting_size * n_tables * bits / 8)
        super().__init__(_core.ShardClient.blocked(ksize, memory_bytes, bits, n_tables, shards), client, local,
                         batch_kmers)

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, client: Any = None, shards: int = 1,
             local: Optional[int] = None, batch_kmers: int = BATCH_KMERS) -> "ShardedBlockedTable":
        """The table saved in kmerflow's format at ``path`` cut into ``shards`` shards as the
        constructor places them (the memory check included). This process checks the header
        and the counters' checksum (reading the file in chunks); each shard reads its own lines
        from the process holding it (through this process where a worker does not see the
        file)."""
        return cls._loaded(path, True, client, shards, local, batch_kmers)


__all__ = ["ShardedBlockedTable"]
