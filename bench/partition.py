#!/usr/bin/env python3
"""Partitioning: kmerflow against khmer, step by step, on generated metagenome-like reads.

Usage::

    python3 bench/partition.py [--reads 1000000] [--data DIR] [-k 32] [-N 4] [-x 2e8] [-T 2]
                               [--timeout 3600] [--out FILE] [KMERFLOW]

The benchmark is not part of the test run. Its reads come from the ``gen_reads`` example
(``crates/kmerflow-cli/examples/gen_reads.rs``: 200 genomes of 20 Mbp in all at log-normal,
uneven coverage, 150 bp reads with 1% substitution errors), made once in ``DATA/READS/reads.fq``
(default ``bench-data/partition``; never shipped). Both tools then run, with the same -k, -N, -x
and -T, the steps of khmer's partitioning protocol one after another, and do-partition as a
whole: load-graph (with tagset), partition-graph, merge-partitions, annotate-partitions,
extract-partitions, do-partition. Each command's wall time and CPU time (user + system of the
process and its children) are printed with the ratio khmer / kmerflow and the 1-minute load when
it started; `uptime` is recorded before and after. The partitions of annotate-partitions,
of extract-partitions' group files and of do-partition are compared between the tools as sets of
reads (the tools number partitions differently). A command that runs past ``--timeout`` seconds
is stopped and reported; the steps after it are skipped for that tool. KMERFLOW names the
binary (default: the release build, built on demand); khmer 3.0's scripts run from
/usr/lib/khmer/bin with /usr/bin/python3.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KHMER = "/usr/lib/khmer/bin"
READ_LEN = 150
TOOLS = ("kmerflow", "khmer")


@dataclass
class Timing:
    """One command's outcome: wall and CPU seconds, the load when it started, or why it failed."""

    wall: float = 0.0
    cpu: float = 0.0
    load: float = 0.0
    error: str | None = None


def children_cpu() -> float:
    """User + system seconds of all waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path, timeout: float) -> Timing:
    """Run `argv` in `cwd`, timing it; a failure keeps the last line of its stderr."""
    t = Timing(load=os.getloadavg()[0])
    cpu, start = children_cpu(), time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        t.error = f"stopped after {timeout:.0f} s"
        return t
    t.wall, t.cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        t.error = (lines[-1] if lines else f"exit {proc.returncode}")[:120]
    return t


def kmerflow_exe() -> str:
    """The release build of the CLI, built if missing."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    built = target / "release" / "kmerflow"
    if not built.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "kmerflow-cli"], cwd=REPO, check=True)
    return str(built)


def make_reads(data: Path, n_reads: int) -> Path:
    """DATA/N/reads.fq of `n_reads` generated reads, made on first use."""
    reads = data / str(n_reads) / "reads.fq"
    if not reads.exists():
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        gen = target / "release" / "examples" / "gen_reads"
        if not gen.exists():
            subprocess.run(["cargo", "build", "--release", "-q", "-p", "kmerflow-cli", "--example", "gen_reads"],
                           cwd=REPO, check=True)
        subprocess.run([str(gen), str(reads.parent), str(n_reads * READ_LEN / 1e9)], check=True)
    return reads


def steps(tool: str, kf: str, reads: Path, k: str, n: str, x: str, threads: str) -> list[tuple[str, list[str], str]]:
    """(step, argv, subfolder) for one tool; argv runs in that subfolder of the tool's folder."""
    prog = [kf] if tool == "kmerflow" else None
    quiet = ["-q"] if tool == "kmerflow" else []

    def cmd(name: str) -> list[str]:
        return [*prog, name, *quiet] if prog else ["/usr/bin/python3", f"{KHMER}/{name}.py"]

    table = ["-k", k, "-N", n, "-x", x, "-T", threads]
    part = reads.name + ".part"
    return [
        ("load-graph (with tagset)", [*cmd("load-graph"), *table, "graph", str(reads)], "steps"),
        ("partition-graph", [*cmd("partition-graph"), "-T", threads, "graph"], "steps"),
        ("merge-partitions", [*cmd("merge-partitions"), "-k", k, "graph"], "steps"),
        ("annotate-partitions", [*cmd("annotate-partitions"), "-k", k, "graph", str(reads)], "steps"),
        ("extract-partitions", [*cmd("extract-partitions"), "groups", part], "steps"),
        ("do-partition", [*cmd("do-partition"), *table, "graph", str(reads)], "whole"),
    ]


def partitions(files: list[Path]) -> set[frozenset[str]]:
    """The partitions in annotated FASTA/FASTQ files (headers `name<TAB>partition`) as sets of names."""
    parts: dict[str, list[str]] = defaultdict(list)
    for path in files:
        with open(path) as f:
            fastq = f.read(1) == "@"
            f.seek(0)
            for i, line in enumerate(f):
                if (fastq and i % 4 == 0) or (not fastq and line.startswith(">")):
                    name, _, pid = line[1:].rstrip("\n").rpartition("\t")
                    parts[pid].append(name)
    return {frozenset(names) for names in parts.values()}


def outputs(folder: Path, step: str, reads: Path) -> list[Path]:
    """The annotated files a step leaves in a tool's folder."""
    part = reads.name + ".part"
    if step == "annotate-partitions":
        return [folder / "steps" / part]
    if step == "extract-partitions":
        return sorted((folder / "steps").glob("groups.group*.f[aq]"))
    return [folder / "whole" / part]


def cells(t: Timing) -> list[str]:
    """A timing's wall and CPU cells of the table (the error in place of both)."""
    return [t.error, ""] if t.error else [f"{t.wall:.2f}", f"{t.cpu:.2f}"]


def main() -> int:
    """Generate the reads, run both tools' steps, compare partitions and print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kmerflow", nargs="?")
    ap.add_argument("--reads", type=int, default=1_000_000)
    ap.add_argument("--data", type=Path, default=REPO / "bench-data" / "partition")
    ap.add_argument("-k", default="32")
    ap.add_argument("-N", default="4")
    ap.add_argument("-x", default="2e8")
    ap.add_argument("-T", default="2")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "latest-partition.md")
    args = ap.parse_args()

    kf = args.kmerflow or kmerflow_exe()
    reads = make_reads(args.data, args.reads).resolve()
    uptime = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    results: dict[str, dict[str, Timing]] = {t: {} for t in TOOLS}
    same: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kmerflow-partbench-", dir=args.data) as tmp:
        plan = {t: steps(t, kf, reads, args.k, args.N, args.x, args.T) for t in TOOLS}
        for tool in TOOLS:
            for sub in ("steps", "whole"):
                (Path(tmp) / tool / sub).mkdir(parents=True)
            for step, argv, sub in plan[tool]:
                if sub == "steps" and any(r.error for r in results[tool].values()):
                    results[tool][step] = Timing(error="skipped (an earlier step failed)")
                    continue
                print(f"{step}: {tool} ... ", end="", file=sys.stderr, flush=True)
                r = results[tool][step] = timed(argv, Path(tmp) / tool / sub, args.timeout)
                print(r.error or f"{r.wall:.2f} s wall, {r.cpu:.2f} s CPU", file=sys.stderr, flush=True)
        for step, _, _ in plan["kmerflow"]:
            if step in ("load-graph (with tagset)", "partition-graph", "merge-partitions"):
                continue
            if any(results[t][step].error for t in TOOLS):
                same[step] = "not compared"
                continue
            kf_parts, kh_parts = (partitions(outputs(Path(tmp) / t, step, reads)) for t in TOOLS)
            same[step] = (f"same ({len(kf_parts)} partitions)" if kf_parts == kh_parts else
                          f"DIFFERENT ({len(kf_parts)} against {len(kh_parts)} partitions, "
                          f"{len(kf_parts & kh_parts)} shared)")
    uptime.append(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())

    lines = ["| step | kmerflow wall s | kmerflow CPU s | khmer wall s | khmer CPU s | khmer / kmerflow wall | "
             "khmer / kmerflow CPU | load (kmerflow, khmer) | partitions |", "|---|---|---|---|---|---|---|---|---|"]
    for step, _, _ in plan["kmerflow"]:
        a, b = results["kmerflow"][step], results["khmer"][step]
        ratio = ["", ""] if a.error or b.error else [f"{b.wall / a.wall:.1f}×", f"{b.cpu / a.cpu:.1f}×"]
        row = [step, *cells(a), *cells(b), *ratio, f"{a.load:.2f}, {b.load:.2f}", same.get(step, "")]
        lines.append("| " + " | ".join(row) + " |")
    report = "\n".join(lines)
    header = (f"Reads: {args.reads} x {READ_LEN} bp ({reads}); -k {args.k} -N {args.N} -x {args.x} -T {args.T}; "
              f"kmerflow: {kf}\n\nuptime before: {uptime[0]}\n\nuptime after: {uptime[1]}\n\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + report + "\n")
    print(header + report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
