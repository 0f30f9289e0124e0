#!/usr/bin/env python3
"""Benchmark of tables sharded over Dask workers (``kmerflow.distributed``).

Usage::

    python3 bench/shards.py [--data /tmp/bench-data] [--out bench/results] [--reads N]
                            [--only a|b|c] [--python PATH] [--tag TEXT]

(a) ``ecoli50_1.fq`` counted (load-into-counting) and normalized (normalize-by-median -k 20
    -C 20) with a 400 MB table (-N 4 -M 400M), one process vs sharded over a LocalCluster of 2
    single-thread workers with a 256 MB memory limit each: outputs compared byte for byte, time
    ratio.
(c) The look-up commands: ``filter-abund-single`` and ``abundance-dist-single`` on
    ``ecoli50_1.fq`` (-k 20 -M 400M), one process vs a LocalCluster of 2 single-thread workers
    holding all 4 shards: wall time, the client's peak RSS (its own, not its workers') and
    outputs compared byte for byte. ``--python`` runs the commands with another interpreter (an
    older build, for before/after figures).
(b) DLM's experiment: normalize-by-median (first ``--reads`` reads, -N 4 -x 2.5e7, 10 shards)
    with 100/50/30/10 % of the shards (10, 5, 3, 1 of 10) held in the client process and the
    rest on the workers,
    at 64k k-mers per message; then 1k/64k/1M k-mers per message at 50 % local. A Markdown
    table and a PNG plot go to ``--out``.

Every row records the machine load (1-minute load average from ``uptime``) when it ran. The
bench data is made by ``../shared/bench/make-data.sh DIR`` when DIR lacks it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kmerflow.distributed.cluster import local_cluster

REPO = Path(__file__).resolve().parent.parent
MAKE_DATA = REPO.parent / "shared" / "bench" / "make-data.sh"
KMERFLOW = [sys.executable, "-m", "kmerflow"]


def load() -> float:
    return os.getloadavg()[0]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list) -> tuple[float, float, float]:
    """Wall seconds of a command, the load average when it ended and the command's own CPU
    seconds (not its workers'; on a loaded machine the wall time mostly measures the share of
    the cores the processes got)."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run([*KMERFLOW, *map(str, argv)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, load(), children_cpu() - cpu


#: Runs ``kmerflow`` (arguments after ``-c CODE``) and writes its own peak RSS in KiB to the
#: file named by ``$KMERFLOW_BENCH_RSS``.
RSS_WRAPPER = """
import os, resource, runpy, sys
sys.argv = ["kmerflow", *sys.argv[1:]]
try:
    runpy.run_module("kmerflow", run_name="__main__", alter_sys=True)
finally:
    with open(os.environ["KMERFLOW_BENCH_RSS"], "w") as out:
        out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def timed_rss(python: str, argv: list, work: Path) -> tuple[float, float, float]:
    """Wall seconds of a command run by ``python``, the load average when it ended and the
    command process's own peak RSS in MB."""
    rss = work / "rss"
    start = time.perf_counter()
    subprocess.run([python, "-c", RSS_WRAPPER, *map(str, argv)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "KMERFLOW_BENCH_RSS": str(rss)})
    return time.perf_counter() - start, load(), int(rss.read_text()) / 1024


def part_c(reads: Path, work: Path, python: str, rows: list) -> None:
    table = ["-k", "20", "-M", "400M"]
    with local_cluster(2, memory_limit="700MB") as cluster:
        sharding = ["--scheduler", cluster.scheduler_address, "--shards", "4"]
        for name, command in (
            ("filter-abund-single", ["filter-abund-single", *table, "-o", "{out}", reads]),
            ("abundance-dist-single", ["abundance-dist-single", "-s", *table, reads, "{out}"]),
        ):
            runs = {}
            for tag, extra in (("one", []), ("sharded", sharding)):
                argv = [str(a).format(out=work / tag) for a in command] + extra
                runs[tag] = timed_rss(python, argv, work)
            identical = same(work / "one", work / "sharded")
            rows.append(("c", name, f"{runs['one'][0]:.1f}", f"{runs['sharded'][0]:.1f}", identical,
                         f"{runs['one'][2]:.0f} / {runs['sharded'][2]:.0f}",
                         f"{runs['one'][1]:.1f} / {runs['sharded'][1]:.1f}"))
            print(rows[-1], flush=True)


def same(a: Path, b: Path) -> bool:
    return subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0


def part_a(reads: Path, work: Path, rows: list, local_shards: int = 6) -> None:
    table = ["-k", "20", "-N", "4", "-M", "400M"]
    with local_cluster(2, memory_limit="256MB") as cluster:
        # 8 shards of 50 MB: 6 in the client, 1 on each 256 MB worker (2 per worker, 100 MB,
        # passed Dask's 95 % restart threshold with the worker's own 110 MB and the messages);
        # the whole table (400 MB) fits in no worker.
        sharding = ["--scheduler", cluster.scheduler_address, "--shards", "8", "--local-shards",
                    str(local_shards)]
        for name, command, outputs in (
            ("load-into-counting", ["load-into-counting", *table, "{out}.ct", reads], [".ct"]),
            ("normalize-by-median", ["normalize-by-median", *table, "-C", "20", "-o", "{out}.keep",
                                     reads], [".keep"]),
        ):
            times = {}
            for tag, extra in (("one", []), ("sharded", sharding)):
                argv = [str(a).format(out=work / tag) for a in command] + extra
                times[tag] = timed(argv)
            identical = all(same(work / f"one{o}", work / f"sharded{o}") for o in outputs)
            rows.append(("a", name, f"{times['one'][0]:.1f}", f"{times['sharded'][0]:.1f}",
                         f"{times['sharded'][0] / times['one'][0]:.2f}x", identical,
                         f"{times['one'][2]:.1f} / {times['sharded'][2]:.1f}",
                         f"{times['one'][1]:.1f} / {times['sharded'][1]:.1f}"))
            print(rows[-1], flush=True)


def part_b(reads: Path, work: Path, n_reads: int, rows: list, points: list) -> None:
    subset = work / "subset.fq"
    with open(reads) as src, open(subset, "w") as dst:
        for i, line in enumerate(src):
            if i >= 4 * n_reads:
                break
            dst.write(line)
    table = ["-k", "20", "-N", "4", "-x", "2.5e7", "-C", "20"]
    base = work / "b-one.keep"
    t_one, l_one, _ = timed(["normalize-by-median", *table, "-o", base, subset])
    rows.append(("b", "one process", "100 %", "-", f"{t_one:.1f}", True, f"{l_one:.1f}"))
    print(rows[-1], flush=True)
    with local_cluster(2) as cluster:
        for local, batch in ((10, 65536), (5, 65536), (3, 65536), (1, 65536),
                             (5, 1024), (5, 1 << 20)):
            out = work / f"b-{local}-{batch}.keep"
            t, ld, _ = timed(["normalize-by-median", *table, "-o", out, subset,
                           "--scheduler", cluster.scheduler_address, "--shards", "10",
                           "--local-shards", local, "--batch-kmers", batch])
            rows.append(("b", "sharded", f"{local * 10} %", batch, f"{t:.1f}", same(out, base),
                         f"{ld:.1f}"))
            points.append((local * 10, batch, t))
            print(rows[-1], flush=True)


def plot(points: list, t_one: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    local = sorted((p, t) for p, b, t in points if b == 65536)
    left.plot([p for p, _ in local], [t for _, t in local], "o-", label="sharded, 64k k-mers/message")
    left.axhline(t_one, color="grey", ls="--", label="one process")
    left.set_xlabel("shards held in the client process (%)")
    left.set_ylabel("normalize-by-median wall time (s)")
    left.invert_xaxis()
    left.legend()
    sizes = sorted((b, t) for p, b, t in points if p == 50)
    right.plot([b for b, _ in sizes], [t for _, t in sizes], "o-")
    right.set_xscale("log")
    right.set_xlabel("k-mers per message (50 % local)")
    right.set_ylabel("wall time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/bench-data"))
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--reads", type=int, default=200_000)
    parser.add_argument("--only", choices=["a", "b", "c"])
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for the commands' outputs (default: a temporary folder in /tmp)")
    parser.add_argument("--tag", default="", help="appended to the result file's name")
    parser.add_argument("--python", default=sys.executable,
                        help="(c) the interpreter that runs kmerflow (default: this one)")
    parser.add_argument("--local-shards", type=int, default=6,
                        help="(a) shards of 8 held in the client (the rest split over the workers)")
    args = parser.parse_args()
    reads = args.data / "ecoli50_1.fq"
    if not reads.exists():
        subprocess.run(["bash", str(MAKE_DATA), str(args.data)], check=True)
    rows: list = []
    points: list = []
    with tempfile.TemporaryDirectory(prefix="kmerflow-shards-bench-", dir=args.work) as tmp:
        work = Path(tmp)
        if args.only in (None, "a"):
            part_a(reads, work, rows, args.local_shards)
        if args.only in (None, "b"):
            part_b(reads, work, args.reads, rows, points)
        if args.only in (None, "c"):
            part_c(reads, work, args.python, rows)
    stamp = datetime.date.today().isoformat()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = [f"# Sharded tables, {stamp} (`python3 bench/shards.py`)", ""]
    a_rows = [r for r in rows if r[0] == "a"]
    if a_rows:
        lines += ["(a) ecoli50_1.fq, -k 20 -N 4 -M 400M; sharded = 8 shards, 6 in the client, "
                  "1 on each of 2 workers (256 MB limit)", "",
                  "| command | one process s | sharded s | ratio | identical | client CPU s (one / sharded) "
                  "| load (one / sharded) |",
                  "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(map(str, r[1:])) + " |" for r in a_rows]
        lines.append("")
    c_rows = [r for r in rows if r[0] == "c"]
    if c_rows:
        lines += [f"(c) ecoli50_1.fq, -k 20 -M 400M; sharded = 4 shards on 2 workers ({args.python})", "",
                  "| command | one process s | sharded s | identical | client peak RSS MB (one / sharded) "
                  "| load (one / sharded) |",
                  "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(map(str, r[1:])) + " |" for r in c_rows]
        lines.append("")
    b_rows = [r for r in rows if r[0] == "b"]
    if b_rows:
        lines += [f"(b) normalize-by-median, first {args.reads} reads of ecoli50_1.fq, -k 20 -C 20 "
                  "-N 4 -x 2.5e7, 10 shards, 2 workers", "",
                  "| run | shards local | k-mers/message | wall s | identical | load |",
                  "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(map(str, r[1:])) + " |" for r in b_rows]
        plot(points, float(b_rows[0][4]), args.out / f"{stamp}-shards.png")
        lines += ["", f"![plot]({stamp}-shards.png)"]
    (args.out / f"{stamp}-shards{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
