#!/usr/bin/env python3
"""Benchmark of ``kmerflow pipeline``: 8 samples, concurrent vs one after another.

Usage::

    python3 bench/pipeline.py [--data /tmp/bench-data] [--work DIR] [--out bench/results] [--tables fixed|auto]

Builds 8 paired samples of different sizes (40k to 180k pairs) from disjoint slices of the bench
reads (``ecoli50_1.fq`` / ``ecoli50_2.fq.gz``, made by ``bench/make_data.sh``), then
runs the default protocol on a LocalCluster of 2 single-thread workers twice: samples
concurrently (the default scheduling) and one after another (``max_active=1``, the same task
graph per sample). Reports utilisation (busy worker-thread seconds / available worker-thread
seconds), samples/hour and their ratio, the CPU seconds of the workers and of this process
(client and scheduler) and ``uptime``'s load before and after each run; writes a Markdown table
and both runs' HTML reports (with the per-worker timeline) to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import itertools
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAKE_DATA = REPO / "bench" / "make_data.sh"
#: Pairs per sample.
SIZES = [180_000, 40_000, 140_000, 60_000, 160_000, 80_000, 120_000, 100_000]
#: The steps' table sizes: ``fixed``, 4 x 2e7 bytes for every sample (as khmer's protocol is
#: usually run); ``auto``, each table sized for its sample's k-mers (``-M auto``).
TABLES = {
    "fixed": "max_tablesize = 2e7\nn_tables = 4\n",
    "auto": "max_memory_usage = \"auto\"\nn_tables = 4\n",
}


def steps_config(tables: str) -> str:
    """The steps file: khmer's protocol as its separate steps in 4 chunks, the tables of
    normalize, renormalize and histogram sized as ``TABLES[tables]`` says."""
    sized = TABLES[tables]
    steps = ("steps = [\"interleave\", \"normalize\", \"filter\", \"extract\", \"renormalize\", "
             "\"histogram\", \"readstats\"]\n")
    return steps + "chunks = 4\n" + "".join(f"[{step}]\n{sized}" for step in ("normalize", "renormalize", "histogram"))


def build_samples(data: Path, work: Path) -> Path:
    """Write the 8 samples (disjoint slices of the pairs) and their sample sheet."""
    sheet = work / "samples.tsv"
    if sheet.exists():
        return sheet
    if not (data / "ecoli50_1.fq").exists():
        subprocess.run(["bash", str(MAKE_DATA), str(data)], check=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = ["sample\tr1\tr2"]
    with open(data / "ecoli50_1.fq") as f1, gzip.open(data / "ecoli50_2.fq.gz", "rt") as f2:
        for i, n in enumerate(SIZES):
            name = f"s{i + 1}_{n // 1000}k"
            for f, mate in ((f1, 1), (f2, 2)):
                (work / f"{name}_{mate}.fq").write_text("".join(itertools.islice(f, 4 * n)))
            rows.append(f"{name}\t{name}_1.fq\t{name}_2.fq")
    sheet.write_text("\n".join(rows) + "\n")
    return sheet


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_once(sheet: Path, steps: Path, out: Path, max_active: int | None) -> dict:
    """One pipeline run on a fresh LocalCluster of 2 single-thread workers; its stats plus the
    CPU seconds the workers and this process (the client and, in a LocalCluster, the scheduler)
    spent during the run."""
    import distributed

    from kmerflow.pipeline import run
    from kmerflow.pipeline.runner import local_cluster

    shutil.rmtree(out, ignore_errors=True)
    cluster = local_cluster(2)
    try:
        with distributed.Client(cluster) as client:
            before = (client.run(_cpu_seconds), _cpu_seconds())
            result = run(sheet, out, config=steps, client=client,
                         max_active=max_active, log=lambda m: print(f"  {m}", flush=True))
            after = (client.run(_cpu_seconds), _cpu_seconds())
    finally:
        cluster.close()
    assert result.ok, result.errors
    stats = dict(result.stats)
    stats["worker_cpu_seconds"] = sum(after[0].values()) - sum(before[0].values())
    stats["client_cpu_seconds"] = after[1] - before[1]
    return stats


def load_average() -> str:
    """``uptime``'s load averages (1, 5, 15 minutes)."""
    text = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    return text.rsplit("load average:", 1)[-1].strip()


def write_results(stats: dict[str, dict], loads: dict[str, tuple[str, str]], work: Path,
                  out: Path, name: str) -> str:
    """The Markdown table of both runs and the copies of their HTML reports in ``out``."""
    day = datetime.date.today().isoformat()
    out.mkdir(parents=True, exist_ok=True)
    for label in stats:
        shutil.copy(work / label.replace(" ", "-") / "kmerflow_report.html",
                    out / f"{name}-{label.replace(' ', '-')}.html")
    conc, seq = stats["concurrent"], stats["one after another"]
    lines = [f"# kmerflow pipeline, 8 samples ({min(SIZES) // 1000}k-{max(SIZES) // 1000}k "
             f"pairs), LocalCluster 2 x 1 thread, {day}", "",
             "| run | wall s | busy thread-s | utilisation | samples/hour | worker CPU-s | "
             "client+scheduler CPU-s | load before | load after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, s in stats.items():
        lines.append(f"| {label} | {s['wall_seconds']:.1f} | {s['busy_thread_seconds']:.1f} | "
                     f"{100 * s['utilisation']:.1f} % | {s['samples_per_hour']:.1f} | "
                     f"{s['worker_cpu_seconds']:.1f} | {s['client_cpu_seconds']:.1f} | "
                     f"{loads[label][0]} | {loads[label][1]} |")
    lines += ["",
              f"Throughput ratio concurrent / one after another: measured "
              f"{conc['samples_per_hour'] / seq['samples_per_hour']:.2f}x; at equal task "
              f"durations (the utilisation ratio) "
              f"{conc['utilisation'] / seq['utilisation']:.2f}x.", ""]
    text = "\n".join(lines)
    (out / f"{name}.md").write_text(text)
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("/tmp/bench-data"))
    p.add_argument("--work", type=Path, default=Path("/tmp/kmerflow-pipeline-bench"))
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    p.add_argument("--tables", choices=sorted(TABLES), default="fixed",
                   help="table sizes of the steps (default fixed: 4 x 2e7 bytes)")
    p.add_argument("--name", help="results file name without .md "
                   "(default DATE-pipeline; the HTML reports get -concurrent/-one-after-another)")
    args = p.parse_args()
    sheet = build_samples(args.data, args.work)
    steps = args.work / f"steps-{args.tables}.toml"
    steps.write_text(steps_config(args.tables))
    stats, loads = {}, {}
    for label, max_active in (("concurrent", None), ("one after another", 1)):
        print(f"{label}:", flush=True)
        out = args.work / label.replace(" ", "-")
        before = load_average()
        stats[label] = run_once(sheet, steps, out, max_active)
        loads[label] = (before, load_average())
        print(f"  {stats[label]} load {loads[label]}", flush=True)
    name = args.name or f"{datetime.date.today().isoformat()}-pipeline"
    print(write_results(stats, loads, args.work, args.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
