#!/usr/bin/env python3
"""Benchmark of saving and loading a sharded table's file (``kmerflow.distributed``).

Usage::

    python3 bench/shard_files.py [--reads /tmp/bench-data/ecoli50_1.fq] [--memory 400M]
                                 [--workers 2] [--shards 4] [--out bench/results]

The reads are counted into a ``ShardedCountgraph`` of ``-k 20 -N 4 -M MEMORY`` (khmer's sizes)
with every shard on the workers of a LocalCluster of ``--workers`` single-thread workers. Then
the table is saved twice into a temporary directory beside ``--out``: shard by shard
(``graph.save``: each worker writes its shards into the file) and gathered into the client
(``graph.to_countgraph().save``, what every sharded save did before); the files are compared
byte for byte. Finally the saved file is loaded into shards again (``ShardedCountgraph.load``).
For each step: wall seconds and the client process's peak resident memory during the step
(sampled every 5 ms from ``/proc/self/status``) and before it. The machine's load (1-minute load
average) is recorded with each step. A Markdown table goes to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict

REPO = Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    """This process's resident memory (MB)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class PeakRss:
    """This process's peak resident memory (MB) while the block runs, sampled every 5 ms;
    :meth:`restart` starts the peak again from the current memory."""

    def __enter__(self) -> "PeakRss":
        self.peak = rss_mb()
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.peak = max(self.peak, rss_mb())

    def restart(self) -> float:
        """Starts the peak from now; returns the current memory."""
        self.peak = rss_mb()
        return self.peak

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._sampler.join()
        self.peak = max(self.peak, rss_mb())


def measured(step: Callable[[], object]) -> Dict[str, float]:
    """Runs ``step``: wall seconds, resident memory before and at its peak, and the load."""
    with PeakRss() as rss:
        before = rss.peak
        start = time.perf_counter()
        step()
        seconds = time.perf_counter() - start
    return {"s": seconds, "before_mb": before, "peak_mb": rss.peak, "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", default="/tmp/bench-data/ecoli50_1.fq")
    parser.add_argument("--memory", default="400M")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = parser.parse_args()

    import distributed

    from kmerflow import _core
    from kmerflow.distributed import ShardedCountgraph
    from kmerflow.distributed.cluster import local_cluster

    memory = float(args.memory.rstrip("MG")) * (1e9 if args.memory.endswith("G") else 1e6)
    sizes = list(_core.get_n_primes_near_x(4, memory / 4))
    rows = []
    with local_cluster(args.workers) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client, \
            tempfile.TemporaryDirectory(prefix=".shard-files-", dir=args.out) as tmp:
        graph = ShardedCountgraph(20, 1, 4, primes=sizes, client=client, shards=args.shards, local=0)
        rows.append(("count (consume_seqfile)", measured(lambda: graph.consume_seqfile(args.reads))))
        parallel, gathered = os.path.join(tmp, "parallel.ct"), os.path.join(tmp, "gathered.ct")
        rows.append(("save shard by shard", measured(lambda: graph.save(parallel))))
        rows.append(("save gathered", measured(lambda: graph.to_countgraph().save(gathered))))
        identical = filecmp.cmp(parallel, gathered, shallow=False)
        size = os.path.getsize(parallel)
        graph = None  # the shards are freed before the table is loaded again
        loaded = {}
        rows.append(("load shard by shard", measured(
            lambda: loaded.setdefault("g", ShardedCountgraph.load(parallel, client=client, shards=args.shards,
                                                                  local=0)))))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [f"# Sharded table files ({stamp})", "",
             f"`python3 bench/shard_files.py --reads {args.reads} --memory {args.memory} --workers {args.workers} "
             f"--shards {args.shards}`: -k 20, {len(sizes)} tables of {sizes[0]:,} counters, a {size / 1e6:.0f} MB "
             f"file, {args.shards} shards on a LocalCluster of {args.workers} single-thread workers; files identical: "
             f"{'yes' if identical else 'NO'}.", "",
             "| step | wall s | client RSS before MB | client peak RSS MB | peak - before MB | load average |",
             "|---|---|---|---|---|---|"]
    for name, m in rows:
        lines.append(f"| {name} | {m['s']:.2f} | {m['before_mb']:.0f} | {m['peak_mb']:.0f} | "
                     f"{m['peak_mb'] - m['before_mb']:.0f} | {m['load']:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out, f"{stamp}-shard-files.md").write_text(text)


if __name__ == "__main__":
    main()
