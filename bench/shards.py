#!/usr/bin/env python3
"""Benchmark of tables sharded over Dask workers (``kmerflow.distributed``).

How to run (DIR holds ``ecoli50_1.fq``, made by ``bench/make_data.sh DIR``
when missing; medians of ``--runs``, one process and sharded runs interleaved)::

    # the targets of the sharded tables, each with its command line:
    python3 bench/shards.py --data DIR --only a --runs 3   # all shards in the client <= 1.2x;
                                                           # 400 MB over 2 workers of 256 MB <= 2x,
                                                           # client peak RSS <= one process + 25 %
    python3 bench/shards.py --data DIR --only b            # DLM's local-fraction curve + PNG
    python3 bench/shards.py --data DIR --only c            # the look-up commands
    # a smoke check of every part (small input and tables, a minute or two):
    python3 bench/shards.py --data DIR --smoke --out /tmp/shards-smoke

(a) ``ecoli50_1.fq`` counted (load-into-counting) and normalized (normalize-by-median -C 20)
    with a 400 MB table (-k 20 -N 4 -M 400M): one process; all 8 shards held in the client
    (``--local-shards 8``, no remote shard); and 8 shards of 50 MB with 6 in the client and one
    on each of 2 single-thread workers of a LocalCluster with a 256 MB memory limit (the whole
    table fits in no worker). Outputs compared byte for byte.
(b) DLM's experiment: normalize-by-median (first ``--reads`` reads, -N 4 -x 2.5e7, 20 shards)
    with 100/50/25/10 % of the shards (20, 10, 5, 2 of 20) held in the client and the rest on
    2 workers, at 64k k-mers per message; then 1k/64k/1M k-mers per message at 50 % local. A
    Markdown table and a PNG plot go to ``--out``.
(c) The look-up commands: ``filter-abund-single`` and ``abundance-dist-single`` (-k 20 -M
    400M), one process vs 4 shards on 2 workers. ``--python`` runs the commands with another
    interpreter (an older build, for before/after figures).

Every row gives wall seconds, the CPU seconds (user + sys) of the command's process and of the
workers during the run, the command's peak RSS and the 1-minute load average when it ended: on
a shared machine the wall time mostly measures the share of the cores the processes got, the
CPU seconds and the RSS do not.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import psutil

from kmerflow.distributed.cluster import local_cluster

REPO = Path(__file__).resolve().parent.parent
MAKE_DATA = REPO / "bench" / "make_data.sh"


@dataclass
class Run:
    """One command's measurements."""

    wall: float
    #: CPU seconds (user + sys) of the command's process (its client, with the local shards).
    cpu: float
    #: CPU seconds of the cluster's workers while it ran.
    workers_cpu: float
    #: Peak RSS of the command's process, MiB.
    rss: float
    #: 1-minute load average when it ended.
    load: float


def workers_cpu() -> float:
    """CPU seconds so far of this process's descendants (the LocalCluster's processes)."""
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def run(python: str, argv: list) -> Run:
    """Runs ``kmerflow ARGV`` with ``python`` and measures it (its own CPU and peak RSS through
    ``wait4``, so that nothing else's is counted)."""
    # A LocalCluster's nannies set MALLOC_TRIM_THRESHOLD_ in this process's environment; a command
    # started from a shell has glibc's adaptive thresholds, so the measured one must too.
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    before, start = workers_cpu(), time.perf_counter()
    process = subprocess.Popen([python, "-m", "kmerflow", *map(str, argv)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"kmerflow {' '.join(map(str, argv))}: exit {process.returncode}\n{stderr}")
    return Run(wall, usage.ru_utime + usage.ru_stime, workers_cpu() - before, usage.ru_maxrss / 1024,
               os.getloadavg()[0])


def median_run(runs: list[Run]) -> Run:
    """The median of each measurement over ``runs``."""
    return Run(*(statistics.median(getattr(r, f) for r in runs) for f in Run.__dataclass_fields__))


def same(a: Path, b: Path) -> bool:
    return subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0


def compare(python: str, command: list, outputs: list[str], configs: dict[str, list], work: Path,
            runs: int) -> tuple[dict[str, Run], bool]:
    """Runs ``command`` (``{out}`` standing for an output prefix) once per configuration
    (extra arguments) and round, interleaved; returns the median of each configuration and
    whether every configuration's outputs equal the first's."""
    measured: dict[str, list[Run]] = {tag: [] for tag in configs}
    identical = True
    for _ in range(runs):
        for tag, extra in configs.items():
            argv = [str(a).format(out=work / tag) for a in command] + extra
            measured[tag].append(run(python, argv))
        first = next(iter(configs))
        identical &= all(same(work / f"{first}{o}", work / f"{tag}{o}") for tag in configs for o in outputs)
    return {tag: median_run(r) for tag, r in measured.items()}, identical


def row(name: str, runs: dict[str, Run], identical: bool) -> list[str]:
    """A table row: per configuration the wall time (and its ratio to the first), then the
    client's CPU, the workers' CPU, the client's peak RSS and the load."""
    base = next(iter(runs.values()))
    walls = [f"{r.wall:.1f}" if r is base else f"{r.wall:.1f} ({r.wall / base.wall:.2f}x)" for r in runs.values()]
    per = [" / ".join(fmt.format(getattr(r, f)) for r in runs.values())
           for f, fmt in (("cpu", "{:.1f}"), ("workers_cpu", "{:.1f}"), ("rss", "{:.0f}"), ("load", "{:.1f}"))]
    return [name, *walls, "yes" if identical else "NO", *per]


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def part_a(reads: Path, work: Path, size: str, python: str, runs: int) -> list[str]:
    table = ["-k", "20", "-N", "4", "-M", size]
    rows = []
    with local_cluster(2, memory_limit="256MB") as cluster:
        scheduler = ["--scheduler", cluster.scheduler_address, "--shards", "8"]
        # 8 shards of 50 MB: 6 in the client, 1 on each 256 MB worker (2 per worker, 100 MB,
        # passed Dask's 95 % restart threshold with the worker's own 110 MB and the messages).
        configs = {"one": [], "local": [*scheduler, "--local-shards", "8"],
                   "sharded": [*scheduler, "--local-shards", "6"]}
        for name, command, outputs in (
            ("load-into-counting", ["load-into-counting", *table, "{out}.ct", reads], [".ct"]),
            ("normalize-by-median", ["normalize-by-median", *table, "-C", "20", "-o", "{out}.keep", reads],
             [".keep"]),
        ):
            measured, identical = compare(python, command, outputs, configs, work, runs)
            rows.append(row(name, measured, identical))
            print(rows[-1], flush=True)
    header = ["command", "one process s", "all 8 shards in the client s", "6 in the client, 2 on workers s",
              "identical", "client CPU s", "workers CPU s", "client peak RSS MiB", "load"]
    return [f"(a) {reads.name}, -k 20 -N 4 -M {size}; medians of {runs}; sharded = 8 shards, all in the "
            "client, or 6 in the client and 1 on each of 2 workers (256 MB limit); the last four columns "
            "are one / all local / 6 local", "", *table_lines(header, rows)]


def part_b(reads: Path, work: Path, x: str, python: str, runs: int, png: Path) -> list[str]:
    table = ["-k", "20", "-N", "4", "-x", x, "-C", "20"]
    command = ["normalize-by-median", *table, "-o", "{out}.keep", reads]
    points = []
    rows = []
    with local_cluster(2) as cluster:
        configs = {"one": []}
        for local, batch in ((20, 65536), (10, 65536), (5, 65536), (2, 65536), (10, 1024), (10, 1 << 20)):
            configs[f"{local}-{batch}"] = ["--scheduler", cluster.scheduler_address, "--shards", "20",
                                           "--local-shards", local, "--batch-kmers", batch]
        measured, identical = compare(python, command, [".keep"], configs, work, runs)
    base = measured.pop("one")
    rows.append(["one process", "-", "-", f"{base.wall:.1f}", f"{base.cpu:.1f}", "-", f"{base.rss:.0f}",
                 f"{base.load:.1f}"])
    for tag, r in measured.items():
        local, batch = map(int, tag.split("-"))
        points.append((local * 5, batch, r.wall))
        rows.append(["sharded", f"{local * 5} %", str(batch), f"{r.wall:.1f} ({r.wall / base.wall:.2f}x)",
                     f"{r.cpu:.1f}", f"{r.workers_cpu:.1f}", f"{r.rss:.0f}", f"{r.load:.1f}"])
    for r in rows:
        print(r, flush=True)
    plot(points, base.wall, png)
    header = ["run", "shards in the client", "k-mers/message", "wall s", "client CPU s", "workers CPU s",
              "client peak RSS MiB", "load"]
    return [f"(b) normalize-by-median of {reads.name}, -k 20 -C 20 -N 4 -x {x}, 20 shards, 2 workers; "
            f"medians of {runs}; outputs identical to the one-process run: {'yes' if identical else 'NO'}", "",
            *table_lines(header, rows), "", f"![plot]({png.name})"]


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
    right.axhline(t_one, color="grey", ls="--")
    right.set_xscale("log")
    right.set_xlabel("k-mers per message (50 % local)")
    right.set_ylabel("wall time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def part_c(reads: Path, work: Path, size: str, python: str, runs: int) -> list[str]:
    table = ["-k", "20", "-M", size]
    rows = []
    with local_cluster(2, memory_limit="700MB") as cluster:
        configs = {"one": [], "sharded": ["--scheduler", cluster.scheduler_address, "--shards", "4"]}
        for name, command in (
            ("filter-abund-single", ["filter-abund-single", *table, "-o", "{out}", reads]),
            ("abundance-dist-single", ["abundance-dist-single", "-s", *table, reads, "{out}"]),
        ):
            measured, identical = compare(python, command, [""], configs, work, runs)
            rows.append(row(name, measured, identical))
            print(rows[-1], flush=True)
    header = ["command", "one process s", "sharded s", "identical", "client CPU s", "workers CPU s",
              "client peak RSS MiB", "load"]
    return [f"(c) {reads.name}, -k 20 -M {size}; medians of {runs}; sharded = 4 shards on 2 workers ({python}); "
            "the last four columns are one / sharded", "", *table_lines(header, rows)]


def subset(reads: Path, n_reads: Optional[int], work: Path) -> Path:
    """The first ``n_reads`` reads of ``reads`` (all of them when None)."""
    if n_reads is None:
        return reads
    out = work / f"first{n_reads}.fq"
    with open(reads) as src, open(out, "w") as dst:
        for i, line in enumerate(src):
            if i >= 4 * n_reads:
                break
            dst.write(line)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/bench-data"))
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--only", choices=["a", "b", "c"])
    parser.add_argument("--runs", type=int, default=1, help="rounds of every comparison (medians)")
    parser.add_argument("--reads", type=int, default=None,
                        help="the first N reads only (default: all in (a) and (c), 100000 in (b))")
    parser.add_argument("--smoke", action="store_true",
                        help="every part on small input and tables (20000 reads, -M 40M, -x 2.5e6)")
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for the commands' outputs (default: a temporary folder in /tmp)")
    parser.add_argument("--tag", default="", help="appended to the result file's name")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs kmerflow")
    args = parser.parse_args()
    reads = args.data / "ecoli50_1.fq"
    if not reads.exists():
        subprocess.run(["bash", str(MAKE_DATA), str(args.data)], check=True)
    n_reads = 20_000 if args.smoke and args.reads is None else args.reads
    size, x = ("40M", "2.5e6") if args.smoke else ("400M", "2.5e7")
    stamp = datetime.date.today().isoformat()
    args.out.mkdir(parents=True, exist_ok=True)
    lines: list[Any] = [f"# Sharded tables, {stamp} (`python3 bench/shards.py {' '.join(sys.argv[1:])}`)", ""]
    with tempfile.TemporaryDirectory(prefix="kmerflow-shards-bench-", dir=args.work) as tmp:
        work = Path(tmp)
        if args.only in (None, "a"):
            lines += [*part_a(subset(reads, n_reads, work), work, size, args.python, args.runs), ""]
        if args.only in (None, "b"):
            b_reads = subset(reads, n_reads or 100_000, work)
            png = args.out / f"{stamp}-shards{args.tag}.png"
            lines += [*part_b(b_reads, work, x, args.python, args.runs, png), ""]
        if args.only in (None, "c"):
            lines += [*part_c(subset(reads, n_reads, work), work, size, args.python, args.runs), ""]
    lines.append(f"Machine: {os.cpu_count()} CPUs; load average when each run ended in the last column.")
    (args.out / f"{stamp}-shards{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
