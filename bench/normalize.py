#!/usr/bin/env python3
"""Benchmark of ``kmerflow normalize`` against BBNorm and khmer's protocol run by hand.

Usage::

    python3 bench/normalize.py --data DIR [--runs 3] [--slow-runs 1] [--threads 2] [--out FILE]

DIR holds ``ecoli50_1.fq.gz`` and ``ecoli50_2.fq.gz`` (1.17 M simulated E. coli read pairs, made
by ``bench/make_data.sh``; not part of the repository or the test run). The inputs are
decompressed once into a scratch folder, so that every tool reads the same plain FASTQ files.
Each case runs ``--runs`` times, the cases alternating, except BBNorm and the khmer chain (minutes
a run), which run in the first ``--slow-runs`` rounds only; wall time and peak memory come from
``/usr/bin/time -v`` (for a chain of commands, the sum of the wall times of the chain and the
largest peak of its commands). Every timed command runs in a session of its own whose autogroup
is raised to nice -15 where that is allowed (root), so that other sessions' builds on a shared
machine take less of its time. The 1-minute load average before each run is recorded: the
machine is shared, so the medians are reported with every run's numbers.

Cases:

* ``kmerflow normalize R1 R2 -o -O --target 20 --min-depth 2 --passes 2 --hist --hist-out``, in
  the default blocked layout and with ``--layout khmer``, against ``bbnorm.sh in1 in2 out1 out2
  target=20 min=2 passes=2 hist histout``;
* ``kmerflow normalize R1 R2 -o -O --target 5 --layout khmer`` (khmer's protocol: -C 20,
  filter-abund -V, -C 5) against khmer 3.0's commands: interleave-reads, normalize-by-median -p
  -k 20 -C 20 --savegraph, filter-abund -V, extract-paired-reads, normalize-by-median -p -C 5 -u,
  split-paired-reads, both with the same tables (-N 4 -x 4e7) so that the outputs compare.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KHMER = "/usr/lib/khmer/bin"
#: Table size (-x, with -N 4) of both normalizations in the khmer-protocol case, for kmerflow and
#: khmer alike, so that their outputs can be compared byte for byte (an automatically sized
#: kmerflow table has primes that no khmer -M reproduces). 160 MB, the size -M auto picks here.
KHMER_X = "4e7"


def kmerflow_exe() -> str:
    """This checkout's release build, else the installed kmerflow."""
    built = REPO / "target" / "release" / "kmerflow"
    exe = str(built) if built.exists() else shutil.which("kmerflow")
    if not exe:
        sys.exit("build kmerflow first: cargo build --release -p kmerflow-cli")
    return exe


def load() -> float:
    return os.getloadavg()[0]


#: Runs its arguments in the session `setsid` made, its autogroup at nice -15 where allowed.
SESSION = ["setsid", "-w", "bash", "-c", '{ echo -15 > /proc/$$/autogroup; } 2>/dev/null; exec "$@"', "session"]


def timed(script: str, log: Path) -> tuple[float, float, float]:
    """Runs the shell `script` under /usr/bin/time -v in a session of its own; returns (wall
    seconds, peak RSS in GB, CPU seconds: user + system)."""
    with log.open("w") as err:
        proc = subprocess.run([*SESSION, "/usr/bin/time", "-v", "bash", "-euo", "pipefail", "-c", script],
                              stdout=subprocess.DEVNULL, stderr=err)
    text = log.read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{script}\nfailed, see {log}:\n{text[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
    seconds = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): (\S+)", text).group(1)) for kind in ("User", "System"))
    return seconds, rss_kb / 1e6 * 1.024, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--slow-runs", type=int, default=1, help="rounds that run BBNorm and the khmer chain")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="bbnorm,khmer", help="bbnorm, khmer or both")
    ap.add_argument("--out", type=Path,
                    default=REPO / "bench" / "results" / f"{datetime.date.today()}-normalize.md")
    args = ap.parse_args()
    kf, t = kmerflow_exe(), args.threads
    scratch = Path(tempfile.mkdtemp(prefix="kmerflow-normalize-bench-"))
    r1, r2 = scratch / "r1.fq", scratch / "r2.fq"
    for gz, plain in ((args.data / "ecoli50_1.fq.gz", r1), (args.data / "ecoli50_2.fq.gz", r2)):
        with plain.open("wb") as out:
            subprocess.run(["zcat", str(gz)], stdout=out, check=True)
    q = shlex.quote
    o = scratch / "out"
    o.mkdir()
    kf_bb = (f"{q(kf)} normalize -T {t} {r1} {r2} -o {o}/kf1.fq -O {o}/kf2.fq --target 20 --min-depth 2 "
             f"--passes 2 --hist {o}/kf.hist --hist-out {o}/kf.histout --report-json {o}/kf20.json")
    kf_bb_khmer = (f"{q(kf)} normalize -T {t} {r1} {r2} -o {o}/kk1.fq -O {o}/kk2.fq --target 20 --min-depth 2 "
                   f"--passes 2 --hist {o}/kk.hist --hist-out {o}/kk.histout --layout khmer "
                   f"--report-json {o}/kf20-khmer.json")
    bb = (f"bbnorm.sh in1={r1} in2={r2} out1={o}/bb1.fq out2={o}/bb2.fq target=20 min=2 passes=2 "
          f"hist={o}/bb.hist histout={o}/bb.histout threads={t} overwrite=t")
    kf_protocol = (f"{q(kf)} normalize -T {t} {r1} {r2} -o {o}/kp1.fq -O {o}/kp2.fq --orphans {o}/kp0.fq "
                   f"--target 5 -N 4 -x {KHMER_X} --layout khmer --report-json {o}/kf5.json")
    cases: dict[str, str] = {}
    bb_name = "BBNorm target=20 min=2 passes=2 (hist, histout)"
    if "bbnorm" in args.only:
        cases["kmerflow normalize --target 20 (hist, hist-out), blocked"] = kf_bb
        cases["kmerflow normalize --target 20 (hist, hist-out), --layout khmer"] = kf_bb_khmer
        cases[bb_name] = bb
    if "khmer" in args.only:
        cases["kmerflow normalize --target 5 --layout khmer (khmer's protocol)"] = kf_protocol
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in cases}
    khmer_name = "khmer chain (interleave, -C 20, filter-abund -V, extract, -C 5, split)"
    if "khmer" in args.only:
        results[khmer_name] = []
    for run in range(args.runs):
        for name, script in cases.items():
            if name == bb_name and run >= args.slow_runs:
                continue
            before = load()
            wall, rss, cpu = timed(script, scratch / "time.log")
            results[name].append((wall, rss, cpu, before))
            print(f"run {run + 1}: {name}: {wall:.1f} s, {rss:.2f} GB, CPU {cpu:.1f} s (load {before:.1f})", flush=True)
            write_report(args, results, o)
        if "khmer" in args.only and run < args.slow_runs:
            kh = f"/usr/bin/python3 {KHMER}"
            chain = [
                f"{kh}/interleave-reads.py {r1} {r2} -o {o}/il.fq",
                f"{kh}/normalize-by-median.py -p -k 20 -C 20 -N 4 -x {KHMER_X} -s {o}/t.ct -o {o}/n.fq {o}/il.fq",
                f"{kh}/filter-abund.py -V -T {t} -o {o}/f.fq {o}/t.ct {o}/n.fq",
                f"{kh}/extract-paired-reads.py -p {o}/f.pe -s {o}/f.se {o}/f.fq",
                f"{kh}/normalize-by-median.py -p -k 20 -C 5 -N 4 -x {KHMER_X} -u {o}/f.se -o {o}/kh.fq {o}/f.pe",
                f"{kh}/split-paired-reads.py -0 {o}/kh0.fq -1 {o}/kh1.fq -2 {o}/kh2.fq {o}/kh.fq",
            ]
            before = load()
            steps = [timed(step, scratch / "time.log") for step in chain]
            wall, rss, cpu = sum(s[0] for s in steps), max(s[1] for s in steps), sum(s[2] for s in steps)
            results[khmer_name].append((wall, rss, cpu, before))
            print(f"run {run + 1}: khmer chain: {wall:.1f} s, {rss:.2f} GB, CPU {cpu:.1f} s (load {before:.1f})",
                  flush=True)
            same = all((o / f"kp{i}.fq").read_bytes() == (o / f"kh{i}.fq").read_bytes() for i in range(3))
            identical.append(same)
            write_report(args, results, o)
    print(write_report(args, results, o))
    shutil.rmtree(scratch)
    return 0


#: Whether kmerflow's --target 5 outputs equalled the khmer chain's, per run.
identical: list[bool] = []


def write_report(args: argparse.Namespace, results: dict, o: Path) -> str:
    """Writes the results so far to ``args.out``; returns the text."""
    t = args.threads
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [f"# kmerflow normalize vs BBNorm and khmer's protocol ({datetime.date.today()})", "",
             f"Inputs: ecoli50_1/2 (1.17 M pairs of 100 bp, plain FASTQ), `-T {t}` / `threads={t}`; "
             f"{args.runs} runs alternating (BBNorm and the khmer chain: {args.slow_runs}); "
             f"machine: {os.cpu_count()} cores; uptime at the end: `{uptime}`.",
             "", "| case | median wall s | median CPU s | median peak GB | runs (wall s / CPU s @ load) |",
             "|---|---|---|---|---|"]
    for name, rs in results.items():
        if not rs:
            continue
        per_run = ", ".join(f"{w:.1f} / {c:.1f} @ {ld:.1f}" for w, _, c, ld in rs)
        lines.append(f"| {name} | {statistics.median(r[0] for r in rs):.1f} | "
                     f"{statistics.median(r[2] for r in rs):.1f} | {statistics.median(r[1] for r in rs):.2f} | "
                     f"{per_run} |")
    if identical:
        lines.append(f"\nkmerflow `--target 5` outputs (R1, R2, orphans) byte-identical to the khmer chain's: "
                     f"{identical}")
    for report in ("kf20.json", "kf20-khmer.json", "kf5.json"):
        if (o / report).exists():
            s = json.loads((o / report).read_text())["summary"]
            for p in ("first_pass", "second_pass"):
                tb = s[p]["table"]
                sized = f" for ~{tb['sized_for_kmers']:.0f} k-mers" if tb["sized_for_kmers"] else " (given)"
                lines.append(f"- {report} {p}: cutoff {s[p]['cutoff']}, kept {s[p]['kept']} of {s[p]['reads']}, "
                             f"{tb['layout']} table {tb['bytes'] / 1e6:.1f} MB{sized}, fp rate {tb['fp_rate']:.3f}")
            lines.append(f"- {report}: reads out {s['reads_out']}, pairs out {s['pairs_out']}, "
                         f"pre-pass {s['prepass_seconds'] or 0:.2f} s, total {s['seconds']:.1f} s")
    if (o / "bb1.fq").exists():
        n = sum(1 for _ in (o / "bb1.fq").open()) // 4
        lines.append(f"- BBNorm: {n} pairs out")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
