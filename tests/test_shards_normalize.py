"""``kmerflow normalize`` on tables sharded over Dask workers (``--scheduler``, ``--local-cluster``,
``--shards``): the one-process run's outputs, saved table, histograms, messages and report, with
shards held in the client and on a real LocalCluster's workers. One LocalCluster (2 workers)
serves the module."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO, genome_reads, kmerflow

pytest.importorskip("distributed")

EXAMPLES = REPO / "examples"


def _run(tmp_path: Path, tag: str, inputs: list, extra: list, sharding: list) -> tuple[dict, list, str]:
    """Runs normalize (``extra`` naming its layout) into ``tmp_path/tag``: the bytes of every
    file it wrote, the report's summary without its timings, and its stderr without the
    resource line and timings."""
    out = tmp_path / tag
    out.mkdir()
    paired = len(inputs) == 2
    outputs = ["-o", out / "o1.fq", *(["-O", out / "o2.fq", "--orphans", out / "o0.fq"] if paired else [])]
    proc = kmerflow("normalize", *inputs, *outputs, "--save-table", out / "t.ct",
                    "--hist", out / "in.csv", "--hist-out", out / "out.csv", "--report-json", out / "r.json",
                    *extra, *sharding)
    summary = json.loads((out / "r.json").read_text())["summary"]
    for timed in (summary, summary["first_pass"], summary.get("second_pass") or {}):
        for key in ("seconds", "prepass_seconds"):
            timed.pop(key, None)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "r.json"}
    said = [line for line in proc.stderr.decode().splitlines() if not line.startswith("[kmerflow]")]
    return files, summary, re.sub(r"in [0-9.]+ s\b", "in S s", "\n".join(said).replace(str(out), "OUT"))


@pytest.mark.parametrize("layout", ["khmer", "blocked"])
@pytest.mark.parametrize("shards, local", [(1, 1), (2, 0), (3, 1)])
def test_a_sharded_normalize_is_the_one_process_run(cluster, tmp_path, shards, local, layout):
    """R1/R2 files (tables sized automatically, two passes) and interleaved pairs with single
    reads (a small fixed table whose counters saturate, one pass and two), on 1-3 shards held in
    the client and on the workers, tables of either layout: every output, the saved first table,
    the histograms, the messages and the report's summary (the table's layout and size among
    them) are the one-process run's."""
    interleaved = genome_reads(tmp_path / "reads.fq", paired=True)
    sharding = ["--scheduler", cluster.scheduler_address, "--shards", str(shards),
                "--local-shards", str(local), "--batch-kmers", "3000"]
    for inputs, extra in (([EXAMPLES / "demo_R1.fq.gz", EXAMPLES / "demo_R2.fq.gz"], ["--target", "5"]),
                          ([interleaved], ["-N", "3", "-x", "2000", "--passes", "1"]),
                          ([interleaved], ["-N", "3", "-x", "2000", "--target", "10"])):
        tag = f"{len(inputs)}{extra[-1]}"
        extra = [*extra, "--layout", layout]
        one = _run(tmp_path, f"one{tag}", inputs, extra, [])
        sharded = _run(tmp_path, f"sharded{tag}", inputs, extra, sharding)
        assert sharded[0].keys() == one[0].keys() and "t.ct" in one[0], sorted(sharded[0])
        for name, data in one[0].items():
            assert sharded[0][name] == data, f"{inputs} {extra}: {name} differs"
        assert sharded[1] == one[1]
        # The same lines (the input histogram's, counted beside the first pass, may come first).
        assert sorted(sharded[2].splitlines()) == sorted(one[2].splitlines())
        assert one[1]["reads_out"] > 0 and one[1]["trim"]["reads"] > 0
        assert one[1]["first_pass"]["table"]["layout"] == layout


@pytest.mark.parametrize("layout", ["khmer", "blocked"])
def test_the_function_runs_on_a_client(cluster, tmp_path, layout):
    """``kmerflow.normalize(..., scheduler=client)`` runs the sharded normalize (either layout)
    on the client's cluster, with the one-process function's summary."""
    import distributed

    import kmerflow

    reads = genome_reads(tmp_path / "reads.fq", paired=True)
    args = dict(layout=layout, max_tablesize=5000, n_tables=3, target=10)
    one = kmerflow.normalize([reads], output=str(tmp_path / "one.fq"), **args)
    with distributed.Client(cluster) as client:
        sharded = kmerflow.normalize([reads], output=str(tmp_path / "sharded.fq"), scheduler=client,
                                     shards=2, **args)
    assert "--scheduler" in sharded.argv
    assert (tmp_path / "sharded.fq").read_bytes() == (tmp_path / "one.fq").read_bytes()
    assert sharded.summary["steps"] == one.summary["steps"] and one.summary["reads_out"] > 0

