#!/usr/bin/env python3
"""Benchmark of sharded trim-low-abund's ``-s`` table: the client's memory and the save's time.

Usage::

    python3 bench/trim_save.py [--reads /tmp/bench-data/ecoli50_1.fq] [--n-reads 400000]
                               [--memory 400M] [--workers 2] [--shards 4] [--out bench/results]

The first ``--n-reads`` reads are trimmed (``-k 20 -N 4 -M MEMORY -C 3``) with the table's
``--shards`` shards on kmerflow's LocalCluster of ``--workers`` single-thread workers (none in
the client), and the table saved with ``-s`` into a temporary directory beside ``--out``; then
the same command runs in one process and the two tables are compared byte for byte. The save
is timed from the command's "Saving k-mer countgraph" message to its end; the client's resident
memory (sampled every 5 ms, as ``bench/shard_files.py`` does) is given before the save and at
its peak during the save. A Markdown table goes to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shard_files import REPO, PeakRss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", default="/tmp/bench-data/ecoli50_1.fq")
    parser.add_argument("--n-reads", type=int, default=400_000)
    parser.add_argument("--memory", default="400M")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = parser.parse_args()

    import distributed

    from kmerflow.distributed import cli
    from kmerflow.distributed.cluster import local_cluster

    with tempfile.TemporaryDirectory(prefix=".trim-save-", dir=args.out) as tmp, \
            local_cluster(args.workers) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        reads = os.path.join(tmp, "reads.fq")
        with open(args.reads) as src, open(reads, "w") as dst:
            dst.writelines(itertools.islice(src, 4 * args.n_reads))
        table = ["-k", "20", "-N", "4", "-M", args.memory, "-C", "3", "-T", tmp]
        marks: dict = {}
        with PeakRss() as rss:

            def on_message(_level: str, text: str) -> None:
                if text.startswith("Saving k-mer countgraph"):
                    marks["save"], marks["before_mb"] = time.perf_counter(), rss.restart()

            start = time.perf_counter()
            cli.run(["trim-low-abund", *table, "-o", os.path.join(tmp, "s.fq"), "-s", os.path.join(tmp, "s.ct"),
                     reads, "--scheduler", cluster.scheduler_address, "--shards", str(args.shards)],
                    on_message, client=client)
            end = time.perf_counter()
        peak = rss.peak
        load = os.getloadavg()[0]
        subprocess.run([sys.executable, "-m", "kmerflow", "trim-low-abund", *table, "-o", os.path.join(tmp, "o.fq"),
                        "-s", os.path.join(tmp, "o.ct"), reads], check=True, capture_output=True)
        identical = all(filecmp.cmp(os.path.join(tmp, f"s.{x}"), os.path.join(tmp, f"o.{x}"), shallow=False)
                        for x in ("ct", "fq"))
        size = os.path.getsize(os.path.join(tmp, "s.ct"))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    text = "\n".join([
        f"# Sharded trim-low-abund -s ({stamp})", "",
        f"`python3 bench/trim_save.py --reads {args.reads} --n-reads {args.n_reads} --memory {args.memory} "
        f"--workers {args.workers} --shards {args.shards}`: a {size / 1e6:.0f} MB table, {args.shards} shards on a "
        f"LocalCluster of {args.workers} single-thread workers; outputs and table identical to the one-process "
        f"run: {'yes' if identical else 'NO'}.", "",
        "| run wall s | save wall s | client RSS before the save MB | client peak RSS during the save MB "
        "| peak - before MB | load average |",
        "|---|---|---|---|---|---|",
        f"| {end - start:.2f} | {end - marks['save']:.2f} | {marks['before_mb']:.0f} | {peak:.0f} | "
        f"{peak - marks['before_mb']:.0f} | {load:.1f} |",
    ]) + "\n"
    print(text)
    Path(args.out, f"{stamp}-trim-save.md").write_text(text)


if __name__ == "__main__":
    main()
