#!/usr/bin/env python3
"""Benchmarks: kmerflow against khmer, seqkit, KMC, Jellyfish and BBNorm in one run.

Usage::

    python3 bench/run.py [--data DIR] [--runs 3] [--only parse,count,diginorm] [--out FILE]

The benchmarks are not part of the test run. Their data (E. coli reads simulated with dwgsim) is
built on first use by ``bench/make_data.sh`` (it installs dwgsim and the genome from Debian when
they are missing), in ``--data``.
Each command runs ``--runs`` times; the table reports the median wall time, the spread, the
throughput in Mbp/s of input sequence and the ratio to kmerflow's time for the same task. Tools
that are not installed are installed from Debian (``apt-get``) when running as root, otherwise
reported as missing. The machine load (1-minute load average) before each task is recorded,
because a shared machine makes single runs noisy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAKE_DATA = REPO / "bench" / "make_data.sh"
KHMER = "/usr/lib/khmer/bin"
#: Debian packages providing the comparison tools.
PACKAGES = {"khmer": "khmer", "seqkit": "seqkit", "kmc": "kmc", "jellyfish": "jellyfish",
            "bbnorm.sh": "bbmap"}
#: Input sequence of ecoli50_1.fq: 1.17 M reads x 100 bp.
ECOLI_BP = 117_000_000


@dataclass
class Case:
    """One command to time, part of a task."""

    task: str
    tool: str
    argv: list[str]
    shell: bool = False
    times: list[float] = field(default_factory=list)
    error: str | None = None


def kmerflow_exe() -> str:
    """The kmerflow command to benchmark: the installed one, else the release build."""
    exe = shutil.which("kmerflow")
    if exe:
        return exe
    built = REPO / "target" / "release" / "kmerflow"
    if not built.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "kmerflow-cli"], cwd=REPO, check=True)
    return str(built)


def ensure_tools(names: set[str]) -> None:
    """Install missing comparison tools from Debian when possible."""
    missing = [PACKAGES[n] for n in names
               if n in PACKAGES and not (shutil.which(n) or (n == "khmer" and Path(KHMER).is_dir()))]
    if missing and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing],
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, check=False)


def cases(data: Path, kf: str, tmp: Path) -> list[Case]:
    """All benchmark cases; each task's first case is kmerflow, the reference of the ratios."""
    fq, fqgz = data / "ecoli50_1.fq", data / "ecoli50_1.fq.gz"
    khmer = lambda script: ["/usr/bin/python3", f"{KHMER}/{script}.py"]  # noqa: E731

    def kf_count(threads: int, table: str, *flags: str) -> list[str]:
        """kmerflow's load-into-counting k = 21 (4 x 1e8) with `threads` into `table`."""
        return [kf, "load-into-counting", "-q", "-T", str(threads), "-k", "21", "-N", "4", "-x", "1e8", *flags,
                str(tmp / table), str(fq)]

    def kf_normalize(threads: int, *flags: str) -> list[str]:
        """kmerflow's normalize-by-median k = 20, C = 20 (4 x 1e8) with `threads`."""
        return [kf, "normalize-by-median", "-q", "-T", str(threads), "-k", "20", "-C", "20", "-N", "4", "-x", "1e8",
                *flags, "-o", str(tmp / "kf.keep"), str(fq)]

    khmer_normalize = [*khmer("normalize-by-median"), "-q", "-k", "20", "-C", "20", "-N", "4", "-x", "1e8",
                       "-o", str(tmp / "kh.keep"), str(fq)]
    return [
        # Parsing: plain and gzip input, one thread.
        Case("parse FASTQ (plain)", "kmerflow", [kf, "readstats", "-T", "1", "-q", str(fq)]),
        Case("parse FASTQ (plain)", "seqkit", ["seqkit", "stats", "-j", "1", str(fq)]),
        Case("parse FASTQ (plain)", "khmer", [*khmer("readstats"), str(fq)]),
        Case("parse FASTQ (gzip)", "kmerflow", [kf, "readstats", "-T", "1", "-q", str(fqgz)]),
        Case("parse FASTQ (gzip)", "zcat > /dev/null", [f"zcat {fqgz} > /dev/null"], shell=True),
        Case("parse FASTQ (gzip)", "seqkit", ["seqkit", "stats", "-j", "1", str(fqgz)]),
        Case("parse FASTQ (gzip)", "khmer", [*khmer("readstats"), str(fqgz)]),
        # Counting k = 21 into a khmer-layout countgraph (4 x 1e8).
        Case("count k=21, 1 thread", "kmerflow", kf_count(1, "kf.ct")),
        Case("count k=21, 1 thread", "kmerflow --layout blocked", kf_count(1, "kf.kmerflow", "--layout", "blocked")),
        Case("count k=21, 1 thread", "khmer", [*khmer("load-into-counting"), "-q", "-T", "1", "-k", "21",
                                               "-N", "4", "-x", "1e8", str(tmp / "kh.ct"), str(fq)]),
        Case("count k=21, 2 threads", "kmerflow", kf_count(2, "kf.ct")),
        Case("count k=21, 2 threads", "kmerflow --layout blocked", kf_count(2, "kf.kmerflow", "--layout", "blocked")),
        Case("count k=21, 2 threads", "KMC", ["kmc", "-k21", "-t2", "-ci1", str(fq), str(tmp / "kmc"),
                                              str(tmp)]),
        Case("count k=21, 2 threads", "Jellyfish", ["jellyfish", "count", "-m", "21", "-t", "2", "-C",
                                                    "-s", "200M", "-o", str(tmp / "jf"), str(fq)]),
        # k-mer abundance histogram k = 20 (count, then histogram of the reads' distinct k-mers).
        Case("abundance histogram k=20, 2 threads", "kmerflow",
             [kf, "abundance-dist-single", "-q", "-s", "-T", "2", "-k", "20", "-N", "4", "-x", "1e8",
              str(fq), str(tmp / "kf.hist")]),
        Case("abundance histogram k=20, 2 threads", "khmer",
             [*khmer("abundance-dist-single"), "-q", "-s", "-T", "2", "-k", "20", "-N", "4", "-x", "1e8",
              str(fq), str(tmp / "kh.hist")]),
        # Nodegraph and tagset k = 21 (partitioning's first step).
        Case("load-graph k=21 with tagset, 2 threads", "kmerflow",
             [kf, "load-graph", "-q", "-T", "2", "-k", "21", "-N", "4", "-x", "1e8", str(tmp / "kf.pt"), str(fq)]),
        Case("load-graph k=21 with tagset, 2 threads", "khmer",
             [*khmer("load-graph"), "-T", "2", "-k", "21", "-N", "4", "-x", "1e8", str(tmp / "kh.pt"),
              str(fq)]),
        # Digital normalization k = 20, C = 20.
        Case("normalize-by-median, 1 thread", "kmerflow", kf_normalize(1)),
        Case("normalize-by-median, 1 thread", "kmerflow --layout blocked", kf_normalize(1, "--layout", "blocked")),
        Case("normalize-by-median, 1 thread", "khmer", khmer_normalize),
        Case("normalize-by-median, 2 threads", "kmerflow", kf_normalize(2)),
        Case("normalize-by-median, 2 threads", "kmerflow --layout blocked", kf_normalize(2, "--layout", "blocked")),
        Case("normalize-by-median, 2 threads", "BBNorm (passes=1)",
             ["bbnorm.sh", f"in={fq}", f"out={tmp / 'bb.fq'}", "passes=1", "target=20", "k=21",
              "threads=2", "overwrite=t", "-Xmx4g"]),
        Case("normalize-by-median, 2 threads", "khmer", khmer_normalize),
        # Streaming trimming k = 20 (pass 1 decides read by read; 2 threads: batched decisions).
        *(Case(f"trim-low-abund, {t} thread{'s' if t > 1 else ''}", "kmerflow",
               [kf, "trim-low-abund", "-q", "--threads", str(t), "-k", "20", "-C", "2", "-N", "4", "-x", "1e8",
                "-T", str(tmp), "-o", str(tmp / "kf.abundtrim"), str(fq)]) for t in (1, 2)),
        Case("trim-low-abund, 1 thread", "khmer",
             [*khmer("trim-low-abund"), "-q", "-k", "20", "-C", "2", "-N", "4", "-x", "1e8", "-T", str(tmp),
              "-o", str(tmp / "kh.abundtrim"), str(fq)]),
    ]


def time_case(case: Case, runs: int) -> None:
    """Run a case `runs` times, recording wall times (or the first error)."""
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(case.argv[0] if case.shell else case.argv, shell=case.shell,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            case.error = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
            case.error = case.error[0][:120]
            return
        case.times.append(elapsed)


def table(all_cases: list[Case], loads: dict[str, float]) -> str:
    """The Markdown results table."""
    lines = ["| task | tool | median wall s | min–max s | Mbp/s | time / kmerflow | load |",
             "|---|---|---|---|---|---|---|"]
    ref: dict[str, float] = {}
    for c in all_cases:
        if c.error or not c.times:
            lines.append(f"| {c.task} | {c.tool} | failed: {c.error} | | | | |")
            continue
        med = statistics.median(c.times)
        ref.setdefault(c.task, med)
        lines.append(f"| {c.task} | {c.tool} | {med:.2f} | {min(c.times):.2f}–{max(c.times):.2f} | "
                     f"{ECOLI_BP / med / 1e6:.1f} | {med / ref[c.task]:.2f}× | {loads[c.task]:.2f} |")
    return "\n".join(lines)


def main() -> int:
    """Run the selected benchmarks and write the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO / "bench-data")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated substrings of task names")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "latest.md")
    args = ap.parse_args()

    subprocess.run(["bash", str(MAKE_DATA), str(args.data)], check=True)
    kf = kmerflow_exe()
    with tempfile.TemporaryDirectory(prefix="kmerflow-bench-") as tmpdir:
        selected = [c for c in cases(args.data, kf, Path(tmpdir))
                    if not args.only or any(s in c.task for s in args.only.split(","))]
        ensure_tools({c.argv[0] if not c.shell else "" for c in selected} | {"khmer"})
        loads: dict[str, float] = {}
        for c in selected:
            loads.setdefault(c.task, os.getloadavg()[0])
            print(f"{c.task}: {c.tool} ...", file=sys.stderr, flush=True)
            time_case(c, args.runs)
        report = table(selected, loads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"Machine: {os.cpu_count()} cores; runs per case: {args.runs}; "
              f"date: {time.strftime('%Y-%m-%d')}\n\n")
    args.out.write_text(header + report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
