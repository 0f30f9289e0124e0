"""kmerflow pipeline: end to end on a real LocalCluster (outputs equal to the steps run by hand,
reports, MultiQC parsing), resume after a killed run, a failing sample, a bad sample sheet."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import kmerflow

distributed = pytest.importorskip("distributed")

from kmerflow.pipeline import SampleSheetError, run  # noqa: E402
from kmerflow.pipeline.runner import local_cluster  # noqa: E402

#: khmer's separate steps, their intermediate reads kept in OUTDIR (compared with the commands
#: by hand); small tables for small data (4 x 1e6 bytes), the keep curve every 500 reads, 3 chunks.
CONFIG = """\
steps = ["interleave", "normalize", "filter", "extract", "renormalize", "histogram", "readstats"]
keep_intermediates = true
chunks = 3
[normalize]
max_tablesize = 1e6
n_tables = 4
report_frequency = 500
[renormalize]
max_tablesize = 1e6
n_tables = 4
[histogram]
max_tablesize = 1e6
n_tables = 4
"""


def _reads(genome: str, n_pairs: int, seed: int) -> tuple[list[str], list[str]]:
    """FASTQ records of ``n_pairs`` simulated 100-bp pairs (1 % substitutions)."""
    rng = random.Random(seed)
    comp = str.maketrans("ACGT", "TGCA")
    r1, r2 = [], []
    for i in range(n_pairs):
        pos = rng.randrange(len(genome) - 300)
        frag = genome[pos:pos + rng.randrange(200, 300)]
        mates = [frag[:100], frag[-100:].translate(comp)[::-1]]
        for mate, out in zip(mates, (r1, r2), strict=True):
            seq = "".join(rng.choice("ACGT") if rng.random() < 0.01 else b for b in mate)
            out.append(f"@s{seed}_{i}/{1 + (out is r2)}\n{seq}\n+\n{'I' * len(seq)}\n")
    return r1, r2


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three samples: paired plain, paired gzip, single-end; plus the config file."""
    d = tmp_path_factory.mktemp("inputs")
    rng = random.Random(7)
    genome = "".join(rng.choice("ACGT") for _ in range(30_000))
    for name, n, seed in (("a", 3000, 1), ("b", 2000, 2), ("c", 1500, 3)):
        r1, r2 = _reads(genome, n, seed)
        if name == "b":
            with gzip.open(d / "b_1.fq.gz", "wt") as f:
                f.write("".join(r1))
            with gzip.open(d / "b_2.fq.gz", "wt") as f:
                f.write("".join(r2))
        else:
            (d / f"{name}_1.fq").write_text("".join(r1))
            (d / f"{name}_2.fq").write_text("".join(r2))
    (d / "samples.tsv").write_text("sample\tr1\tr2\n"
                                   "a\ta_1.fq\ta_2.fq\n"
                                   "b\tb_1.fq.gz\tb_2.fq.gz\n"
                                   "c\tc_1.fq\t\n")
    (d / "steps.toml").write_text(CONFIG)
    return d


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two single-thread workers, as the pipeline starts it."""
    cluster = local_cluster(2)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def finished(inputs: Path, client, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUTDIR of a complete run over the three samples."""
    out = tmp_path_factory.mktemp("run") / "out"
    result = run(inputs / "samples.tsv", out, config=inputs / "steps.toml", client=client,
                 log=lambda m: None)
    assert result.ok, result.errors
    assert result.status == {"a": "done", "b": "done", "c": "done"}
    return out


SIZES = ["-N", "4", "-x", "1e6"]


def test_outputs_equal_the_steps_run_by_hand(inputs: Path, finished: Path, tmp_path: Path):
    for name, r1 in (("a", "a_1.fq"), ("b", "b_1.fq.gz")):
        r2 = r1.replace("_1", "_2")
        h = tmp_path / name
        h.mkdir()
        kmerflow("interleave-reads", inputs / r1, inputs / r2, "-o", h / "il.fq")
        kmerflow("normalize-by-median", "-p", "-k", "20", "-C", "20", *SIZES, "--savegraph",
                 h / "t.ct", "-R", h / "curve.csv", "--report-frequency", "500", "-o",
                 h / "norm.fq", h / "il.fq")
        kmerflow("filter-abund", "-V", h / "t.ct", h / "norm.fq", "-o", h / "filt.fq")
        kmerflow("extract-paired-reads", h / "filt.fq", "-p", h / "pe.fq", "-s", h / "se.fq")
        # An empty orphan file is left out (normalize-by-median refuses it; it adds nothing).
        unpaired = ["-u", h / "se.fq"] if (h / "se.fq").stat().st_size else []
        kmerflow("normalize-by-median", "-p", "-k", "20", "-C", "5", *SIZES, *unpaired,
                 "-R", h / "curve5.csv", "-o", h / "renorm.fq", h / "pe.fq")
        kmerflow("abundance-dist-single", "-k", "20", *SIZES, h / "renorm.fq", h / "hist.csv")
        o = finished / name
        pairs = [("norm.fq", "normalize.fq"), ("curve.csv", "normalize.keep.csv"),
                 ("filt.fq", "filter.fq"), ("pe.fq", "extract.pe.fq"),
                 ("se.fq", "extract.se.fq"), ("renorm.fq", "renormalize.fq"),
                 ("curve5.csv", "renormalize.keep.csv"), ("hist.csv", "histogram.csv")]
        for mine, theirs in pairs:
            assert (h / mine).read_bytes() == (o / f"{name}.{theirs}").read_bytes(), (name, mine)
        # readstats lists the inputs and the pipeline's own files: the same command by hand.
        listed = [inputs / r1, inputs / r2] + [o / f"{name}.{t}" for t in (
            "normalize.fq", "filter.fq", "extract.pe.fq", "extract.se.fq", "renormalize.fq")]
        kmerflow("readstats", *listed, "-o", h / "readstats.txt")
        assert (h / "readstats.txt").read_bytes() == (o / f"{name}.readstats.txt").read_bytes()
    # The single-end sample: no interleave, no extract, no -p.
    h = tmp_path / "c"
    h.mkdir()
    kmerflow("normalize-by-median", "-k", "20", "-C", "20", *SIZES, "--savegraph", h / "t.ct",
             "-o", h / "norm.fq", inputs / "c_1.fq")
    kmerflow("filter-abund", "-V", h / "t.ct", h / "norm.fq", "-o", h / "filt.fq")
    kmerflow("normalize-by-median", "-k", "20", "-C", "5", *SIZES, "-o", h / "renorm.fq",
             h / "filt.fq")
    assert (h / "renorm.fq").read_bytes() == (finished / "c" / "c.renormalize.fq").read_bytes()
    assert not list((finished / ".scratch").iterdir())  # intermediates removed


@pytest.fixture(scope="module")
def default_run(inputs: Path, client, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUTDIR of a run over the three samples with the default steps and parameters."""
    out = tmp_path_factory.mktemp("default") / "out"
    result = run(inputs / "samples.tsv", out, client=client, log=lambda m: None)
    assert result.ok, result.errors
    return out


def test_the_default_is_normalize_in_one_run(inputs: Path, default_run: Path, tmp_path: Path):
    """By default a sample runs ``kmerflow normalize`` (khmer's protocol: --target 5; R1/R2 in
    and out, orphans, the output's histogram) and readstats: the outputs equal the command's by
    hand, and no intermediate file is written."""
    for name, r1 in (("a", "a_1.fq"), ("b", "b_1.fq.gz"), ("c", "c_1.fq")):
        h = tmp_path / name
        h.mkdir()
        paired = name != "c"
        if paired:
            outs = ["-o", h / "1.fq", "-O", h / "2.fq", "--orphans", h / "0.fq"]
            mine = {"1.fq": "protocol_1.fq", "2.fq": "protocol_2.fq", "0.fq": "protocol.orphans.fq"}
            reads = [inputs / r1, inputs / r1.replace("_1", "_2")]
        else:
            outs, mine, reads = ["-o", h / "1.fq"], {"1.fq": "protocol.fq"}, [inputs / r1]
        kmerflow("normalize", *reads, "-k", "20", "--target", "5", *outs, "--hist-out",
                 h / "hist.csv")
        o = default_run / name
        for by_hand, theirs in {**mine, "hist.csv": "histogram.csv"}.items():
            assert (h / by_hand).read_bytes() == (o / f"{name}.{theirs}").read_bytes(), theirs
        assert sorted(p.name for p in o.iterdir()) == sorted(
            [f"{name}.{t}" for t in mine.values()] +
            [f"{name}.{t}" for t in ("histogram.csv", "readstats.txt", "summary.json",
                                     "manifest.json")])
        summary = json.loads((o / f"{name}.summary.json").read_text())
        assert [r["step"] for r in summary["reads"]][:len(reads) + 1] == \
            ["input"] * len(reads) + ["protocol"]
        protocol = summary["steps"]["protocol"]
        assert summary["histogram"] and protocol["summary"]["fp_rate"] < 0.2
        # Compact: the histogram as its non-zero bins, as in the CSV.
        assert protocol["summary"]["histograms"]["output"] == \
            [[a, n] for a, n in summary["histogram"] if n]
        assert sorted(protocol["outputs"]) == sorted(["reads", "histogram"] +
                                                     (["mate", "orphans"] if paired else []))
    assert not list((default_run / ".scratch").iterdir())
    stats = json.loads((default_run / "kmerflow_pipeline_stats_mqc.json").read_text())["data"]
    assert stats["a"]["kmerflow_pipeline_stats_pairs_in"] == 3000
    assert 0 < stats["a"]["kmerflow_pipeline_stats_pairs_out"] < 3000
    assert "kmerflow_pipeline_stats_pairs_in" not in stats["c"]  # single-end: no pairs
    assert 0 < stats["c"]["kmerflow_pipeline_stats_reads_out"] < 1500


def test_a_changed_protocol_parameter_redoes_the_sample(inputs: Path, default_run: Path, client,
                                                        tmp_path: Path):
    """A rerun with the same configuration skips every sample; with another protocol target
    it redoes protocol and readstats, whose outputs then change."""
    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\nc\t{inputs / 'c_1.fq'}\n")
    out = tmp_path / "out"
    assert run(sheet, out, client=client, log=lambda m: None).status == {"c": "done"}
    assert run(sheet, out, client=client, log=lambda m: None).status == {"c": "skipped"}
    assert (out / "c" / "c.protocol.fq").read_bytes() == \
        (default_run / "c" / "c.protocol.fq").read_bytes()
    said: list[str] = []
    result = run(sheet, out, client=client, params=["protocol.target=10"], log=said.append)
    assert result.status == {"c": "done"} and not any("resuming" in m for m in said)
    assert (out / "c" / "c.protocol.fq").read_bytes() != \
        (default_run / "c" / "c.protocol.fq").read_bytes()
    kmerflow("normalize", inputs / "c_1.fq", "-k", "20", "--target", "10", "-o",
             tmp_path / "t10.fq")
    assert (out / "c" / "c.protocol.fq").read_bytes() == (tmp_path / "t10.fq").read_bytes()


def test_the_khmer_steps_keep_only_their_last_reads(inputs: Path, finished: Path, client,
                                                    tmp_path: Path):
    """Without keep_intermediates, the khmer steps' reads that a later step reads (normalize,
    filter, extract) live in the scratch folder, removed when the sample completes: OUTDIR
    holds the last reads, which equal those of the run that kept everything, and readstats
    still counts every step's reads."""
    config = tmp_path / "steps.toml"
    config.write_text(CONFIG.replace("keep_intermediates = true\n", ""))
    out = tmp_path / "out"
    result = run(inputs / "samples.tsv", out, config=config, client=client, log=lambda m: None)
    assert result.ok, result.errors
    for name in ("a", "b", "c"):
        kept = sorted(p.name.removeprefix(f"{name}.") for p in (out / name).iterdir())
        assert kept == ["histogram.csv", "manifest.json", "normalize.keep.csv",
                        "readstats.txt", "renormalize.fq", "renormalize.keep.csv",
                        "summary.json"], kept
        for file in (f"{name}.renormalize.fq", f"{name}.histogram.csv"):
            assert (out / name / file).read_bytes() == (finished / name / file).read_bytes()
        summary = json.loads((out / name / f"{name}.summary.json").read_text())
        before = json.loads((finished / name / f"{name}.summary.json").read_text())
        assert list(summary["steps"]["normalize"]["outputs"]) == ["keep_curve"]  # reads removed
        assert [(r["step"], r["reads"]) for r in summary["reads"]] == \
            [(r["step"], r["reads"]) for r in before["reads"]]
    assert not list((out / ".scratch").iterdir())
    again = run(inputs / "samples.tsv", out, config=config, client=client, log=lambda m: None)
    assert set(again.status.values()) == {"skipped"}


def test_protocol_replaces_the_khmer_steps_and_its_values_are_checked(inputs: Path,
                                                                       tmp_path: Path):
    from kmerflow.pipeline import ConfigError, load_config

    assert load_config().steps == ["protocol", "readstats"]
    with pytest.raises(ConfigError, match=r"protocol .* replaces step\(s\) normalize, filter:"):
        load_config(steps=["protocol", "normalize", "filter"])
    with pytest.raises(ConfigError, match="--param protocol.hist_out=x.csv: set by the pipeline"):
        load_config(params=["protocol.hist_out=x.csv"])
    out = tmp_path / "out"
    proc = subprocess.run(_pipeline_cmd(inputs / "samples.tsv", "-o", out, "--param",
                                        "protocol.passes=3"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--param protocol.passes=3: " in lines[0], proc.stderr
    assert not out.exists()


def _shards_started(client) -> int:
    """How many shards the cluster of ``client`` has started on its workers so far (the tasks
    that made a shard's actor, which the scheduler counts by their name's prefix)."""
    def started(dask_scheduler) -> int:
        prefix = dask_scheduler.task_prefixes.get("ShardActor")
        return 0 if prefix is None else prefix.state_counts["memory"]

    return client.run_on_scheduler(started)


def test_a_normalization_step_on_shards_of_the_pipelines_cluster(inputs: Path, client, tmp_path: Path):
    """``protocol.shards`` runs the protocol step's tables (either layout) on shards of the
    pipeline's own cluster (some held by the step's task): the outputs and the histogram are
    the unsharded step's. On a step without a table to shard, it is refused before the run."""
    from kmerflow.pipeline import ConfigError, load_config

    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\tr2\na\t{inputs / 'a_1.fq'}\t{inputs / 'a_2.fq'}\n")
    sharding = ["protocol.shards=3", "protocol.local_shards=1", "protocol.batch_kmers=5000"]
    for layout in ("khmer", "blocked"):
        for tag, params in (("one", []), ("sharded", sharding)):
            before = _shards_started(client)
            result = run(sheet, tmp_path / layout / tag, client=client,
                         params=[f"protocol.layout={layout}", *params], log=lambda m: None)
            assert result.status == {"a": "done"}, result.errors
            # Two shards on the workers for each of its two passes' tables.
            assert _shards_started(client) - before == (2 * 2 if params else 0), (layout, tag)
        for name in ("a.protocol_1.fq", "a.protocol_2.fq", "a.protocol.orphans.fq", "a.histogram.csv"):
            sharded, one = (tmp_path / layout / tag / "a" / name for tag in ("sharded", "one"))
            assert sharded.read_bytes() == one.read_bytes(), f"{layout}: {name}"
        assert (tmp_path / layout / "one" / "a" / "a.protocol_1.fq").stat().st_size > 0
    with pytest.raises(ConfigError, match="readstats.shards=2: only steps normalize, protocol, renormalize"):
        load_config(params=["readstats.shards=2"])


def test_the_khmer_normalizations_on_shards_of_the_pipelines_cluster(inputs: Path, finished: Path,
                                                                     client, tmp_path: Path):
    """``normalize.shards`` and ``renormalize.shards`` run those steps' tables on shards of the
    pipeline's own cluster: every output of the paired sample (the saved table filters its
    reads; the renormalization reads pairs and orphans) and of the single-end one is the
    unsharded run's."""
    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\tr2\na\t{inputs / 'a_1.fq'}\t{inputs / 'a_2.fq'}\n"
                     f"c\t{inputs / 'c_1.fq'}\t\n")
    sharding = [f"{step}.{param}" for step in ("normalize", "renormalize")
                for param in ("shards=2", "local_shards=1", "batch_kmers=5000")]
    out = tmp_path / "out"
    before = _shards_started(client)
    result = run(sheet, out, config=inputs / "steps.toml", params=sharding, client=client,
                 log=lambda m: None)
    assert result.status == {"a": "done", "c": "done"}, result.errors
    assert _shards_started(client) - before == 2 * 2  # one shard on a worker a step and sample
    for name in ("a", "c"):
        outputs = sorted(p.name for p in (finished / name).iterdir() if p.suffix in (".fq", ".csv"))
        assert f"{name}.renormalize.fq" in outputs and f"{name}.normalize.fq" in outputs
        for output in outputs:
            assert (out / name / output).read_bytes() == (finished / name / output).read_bytes(), output


def test_one_sample_at_a_time_runs_chunks_with_the_same_outputs(inputs: Path, finished: Path,
                                                                 client, tmp_path: Path):
    """One sample at a time leaves a thread idle whenever a step is ready: filter and extract run
    as chunks on both threads (two of the three configured), and the histogram, given a table
    much smaller than its reads, counts per chunk; the outputs equal the unchunked run's and
    the command's by hand."""
    out = tmp_path / "out"
    table = ["histogram.max_tablesize=2e4", "histogram.n_tables=2"]
    result = run(inputs / "samples.tsv", out, config=inputs / "steps.toml", params=table,
                 client=client, max_active=1, log=lambda m: None)
    assert result.ok, result.errors
    timeline = json.loads((out / "kmerflow_run.json").read_text())["timeline"]
    kinds = {step: sorted(t["kind"] for t in timeline if t["sample"] == "a" and t["step"] == step)
             for step in ("filter", "extract", "histogram")}
    assert kinds == {"filter": ["chunk", "chunk", "join"], "extract": ["chunk", "chunk", "join"],
                     "histogram": ["add", "chunk", "chunk", "step"]}
    for p in finished.glob("*/*.fq"):
        assert (out / p.parent.name / p.name).read_bytes() == p.read_bytes(), p
    renorm = out / "a" / "a.renormalize.fq"
    kmerflow("abundance-dist-single", "-k", "20", "-N", "2", "-x", "2e4", renorm, tmp_path / "h.csv")
    assert (out / "a" / "a.histogram.csv").read_bytes() == (tmp_path / "h.csv").read_bytes()


def test_the_started_cluster_queues_tasks_and_runs_no_profiler(client):
    """The cluster the pipeline starts: priorities take effect (worker saturation 1.0) and the
    workers run without the statistical profiler and work stealing (no dashboard reads them)."""
    import dask

    keys = ("distributed.worker.profile.enabled", "distributed.scheduler.work-stealing")
    on_workers = client.run(lambda: [dask.config.get(k) for k in keys])
    assert list(on_workers.values()) == [[False, False], [False, False]]
    assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION) == 1.0


def test_chunks_and_table_sizes_decided_from_the_run():
    from kmerflow.pipeline.plan import table_bytes

    assert table_bytes({"max_tablesize": 1e6}) == 4e6
    assert table_bytes({"n_tables": 2, "max_tablesize": 1e5, "small_count": True}) == 1e5
    assert table_bytes({"max_memory_usage": "2G", "max_tablesize": 1e5}) == 2e9
    assert table_bytes({"max_memory_usage": "auto"}) is None
    assert table_bytes({"unique_kmers": 10_000}) is None
    assert table_bytes({}) is None  # none of -M/-x/-U: sized from the input


def test_reports_and_multiqc(finished: Path, tmp_path: Path):
    summary = json.loads((finished / "a" / "a.summary.json").read_text())
    assert summary["status"] == "done"
    steps = [r["step"] for r in summary["reads"]]
    assert steps == ["input", "input", "normalize", "filter", "extract", "extract",
                     "renormalize"]
    assert summary["reads"][0]["reads"] == 3000
    assert summary["histogram"] and summary["keep_curves"]["normalize"]
    # Compact: the command's 65,535-bin histogram as its non-zero bins, as in the CSV.
    bins = summary["steps"]["histogram"]["summary"]["histogram"]
    assert bins == [[a, c] for a, c in summary["histogram"] if c]
    assert (finished / "a" / "a.summary.json").stat().st_size < 20_000
    assert (finished / "a" / "a.manifest.json").stat().st_size < 20_000
    run_info = json.loads((finished / "kmerflow_run.json").read_text())
    assert 0 < run_info["stats"]["utilisation"] <= 1
    assert sorted(run_info["workers"].values()) == [1, 1]  # the two one-thread workers
    assert {t["step"] for t in run_info["timeline"]} >= {"normalize", "filter", "extract"}
    # Three samples on two threads: when the first sample's filter and extract became ready the
    # other two samples' tasks held both threads, so each ran as one task (no chunks, no join).
    kinds = {step: [t["kind"] for t in run_info["timeline"] if t["sample"] == "a" and t["step"] == step]
             for step in ("filter", "extract", "histogram")}
    assert kinds == {"filter": ["step"], "extract": ["step"], "histogram": ["step"]}
    page = (finished / "kmerflow_report.html").read_text()
    assert page.count("<svg") == 4 and "samples/hour" in page and "src=" not in page
    # The real MultiQC picks the custom-content files up unmodified.
    mqc = tmp_path / "mqc"
    proc = subprocess.run([sys.executable, "-m", "multiqc", str(finished), "-o", str(mqc),
                           "--no-ansi", "-q"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((mqc / "multiqc_data" / "multiqc_data.json").read_text())
    text = json.dumps(data)
    for ident in ("kmerflow_reads", "kmerflow_histogram", "kmerflow_keep_curve"):
        assert ident in text, ident
    table = (mqc / "multiqc_data" / "multiqc_kmerflow_reads.txt").read_text().splitlines()
    header = table[0].split("\t")
    row_a = dict(zip(header, next(r for r in table if r.startswith("a\t")).split("\t"), strict=True))
    assert float(row_a["input"]) == 6000 and float(row_a["renormalize"]) > 0


def test_the_html_report_shows_each_samples_fp_rate_and_warns_above_0_2(tmp_path: Path):
    from kmerflow.pipeline.report import write_html

    def sample(name: str, fps: list[float]) -> dict:
        tables = {f"pass{i}": {"table": {"fp_rate": fp}} for i, fp in enumerate(fps)}
        return {"sample": name, "status": "done", "error": None, "reads": [], "histogram": [],
                "keep_curves": {}, "steps": {"protocol": {"seconds": 1.0, "summary": tables}}}

    stats = {"samples_done": 2, "wall_seconds": 2.0, "worker_threads": 1, "utilisation": 0.5,
             "samples_per_hour": 3600.0}
    write_html(tmp_path / "r.html", [sample("ok", [0.05, 0.02]), sample("full", [0.1, 0.31])], stats, [], 0.0,
               "run")
    page = (tmp_path / "r.html").read_text()
    assert "<th>FP rate</th>" in page
    assert "<td>0.050</td>" in page and "<span class='fail'>0.310</span>" in page
    warning = re.search(r"<p class='fail'>([^<]*)</p>", page)
    assert warning and "above 0.2" in warning.group(1) and warning.group(1).endswith(": full (0.310).")


def _snapshot(folder: Path) -> dict[Path, tuple[int, bytes]]:
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def test_rerun_skips_complete_samples_and_keeps_the_reports(inputs: Path, finished: Path, client):
    """A rerun with nothing to do changes nothing: not the outputs, not the last run's reports
    (which a report of "0 samples" would replace); it connects to no cluster (here an address
    where no scheduler listens)."""
    before = _snapshot(finished)
    proc = subprocess.run(_pipeline_cmd(inputs / "samples.tsv", "-o", finished, "--config",
                                        inputs / "steps.toml", "--scheduler", "tcp://127.0.0.1:9"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "nothing to run: all 3 sample(s) complete; report of the last run: " \
        f"{finished / 'kmerflow_report.html'}" in proc.stderr
    after = _snapshot(finished)
    lock = finished / ".kmerflow.lock"  # names the last holder
    assert {p: v for p, v in after.items() if p != lock} == \
        {p: v for p, v in before.items() if p != lock}
    result = run(inputs / "samples.tsv", finished, config=inputs / "steps.toml", client=client,
                 log=lambda m: None)
    assert result.status == {"a": "skipped", "b": "skipped", "c": "skipped"}
    assert result.stats["samples_done"] == 3  # the last real run's


def test_failing_sample_with_keep_going(inputs: Path, client, tmp_path: Path):
    (tmp_path / "bad.fq").write_text("@r1\nACGTACGTAC\n+\nIII\n")
    sheet = tmp_path / "samples.csv"
    sheet.write_text(f"sample,r1\nc,{inputs / 'c_1.fq'}\nbad,bad.fq\n")
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    # By scheduler address, as for any running cluster.
    result = run(sheet, out, config=inputs / "steps.toml", scheduler=client.scheduler.address,
                 keep_going=True, scratch=scratch, log=lambda m: None)
    assert result.status == {"c": "done", "bad": "failed"}
    # The completed sample's intermediates are removed from --scratch, the failed one's kept.
    assert not (scratch / "c").exists() and (scratch / "bad").is_dir()
    assert not (out / ".scratch").exists()
    assert "normalize" in result.errors["bad"] and "bad.fq" in result.errors["bad"]
    assert (out / "c" / "c.renormalize.fq").stat().st_size > 0
    summary = json.loads((out / "bad" / "bad.summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"]
    assert "bad" in (out / "kmerflow_report.html").read_text()
    # The failed sample's scratch folder is the pipeline's (marked): a rerun may use and remove
    # it, where a folder of the user's of the same name is refused before anything runs.
    again = run(sheet, out, config=inputs / "steps.toml", client=client, keep_going=True,
                scratch=scratch, log=lambda m: None)
    assert again.status == {"c": "skipped", "bad": "failed"}
    (scratch / "bad" / ".kmerflow-scratch").unlink()
    (scratch / "bad" / "notes.txt").write_text("mine\n")
    with pytest.raises(SampleSheetError, match="holds files kmerflow pipeline did not make"):
        run(sheet, out, config=inputs / "steps.toml", client=client, scratch=scratch)


def _pipeline_cmd(*args: object) -> list[str]:
    return [sys.executable, "-m", "kmerflow", "pipeline", *map(str, args)]


@pytest.mark.parametrize("steps", ["default", "shards", "khmer"])
def test_an_empty_sample_has_0_reads_and_empty_outputs(inputs: Path, tmp_path: Path, steps: str):
    """A sample whose files are empty runs like any other: every step makes empty reads,
    readstats reports 0 reads, and stderr holds only the pipeline's own lines (no warning). Of
    khmer's steps, abundance-dist-single refuses reads that hold no k-mer, as by hand: the
    sample fails at its histogram step with that one line."""
    (tmp_path / "e_1.fq").write_bytes(b"")
    (tmp_path / "e_2.fq").write_bytes(b"")
    (tmp_path / "samples.csv").write_text("sample,r1,r2\ne,e_1.fq,e_2.fq\n")
    config = {"default": [], "khmer": ["--config", inputs / "steps.toml"],
              "shards": ["--param", "protocol.shards=2"]}[steps]
    proc = subprocess.run(_pipeline_cmd(tmp_path / "samples.csv", "-o", tmp_path / "out",
                                        "--local-cluster", "1", *config),
                          capture_output=True, text=True, timeout=120)
    lines = proc.stderr.splitlines()
    assert all(line.startswith("kmerflow pipeline: ") for line in lines), lines
    reads = list((tmp_path / "out" / "e").glob("*.fq"))
    assert reads and all(p.stat().st_size == 0 for p in reads)
    if steps == "khmer":
        assert proc.returncode == 1 and len(lines) == 3, lines
        assert lines[1].endswith("step histogram: kmerflow abundance-dist-single: error: "
                                 f"{tmp_path / 'out' / 'e' / 'e.renormalize.fq'}: no abundance "
                                 "distribution to report: it holds no reads"), lines
        return
    assert proc.returncode == 0 and len(lines) == 2, lines
    assert lines[0].startswith("kmerflow pipeline: e: done in "), lines
    summary = json.loads((tmp_path / "out" / "e" / "e.summary.json").read_text())
    stats = summary["steps"]["readstats"]["summary"]["files"]
    assert len(stats) == 5 and all(f["seqs"] == 0 for f in stats), stats


def test_resume_after_killed_run(inputs: Path, finished: Path, tmp_path: Path):
    out = tmp_path / "out"
    cmd = _pipeline_cmd(inputs / "samples.tsv", "-o", out, "--config", inputs / "steps.toml",
                        "--local-cluster", "2")
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    try:
        while time.time() < deadline and proc.poll() is None:
            recorded = [json.loads(p.read_text())["steps"] for p in out.glob("*/*.manifest.json")
                        if p.stat().st_size]
            if any("filter" in steps for steps in recorded):
                break
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    # Whatever final output exists is complete (equal to the clean run's, recorded).
    _assert_final_names_recorded(out)
    for p in out.glob("*/*.fq"):
        assert p.read_bytes() == (finished / p.parent.name / p.name).read_bytes(), p
    # A temporary an interrupted write leaves (the kill may have left real ones too).
    (out / "a" / ".a.filter.fq.tmp-999999-x1").write_text("@half")
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming after" in rerun.stderr
    assert list(out.glob("*/.*")) == []  # the interrupted run's temporaries removed
    for p in finished.glob("*/*.fq"):
        assert (out / p.parent.name / p.name).read_bytes() == p.read_bytes(), p


def _temporaries(out: Path) -> list[Path]:
    own = {".kmerflow.lock", ".scratch", ".kmerflow-scratch"}
    return [p for p in out.rglob(".*") if p.name not in own]


def _assert_final_names_recorded(out: Path) -> None:
    """Every file under a step output's final name is one its manifest records complete."""
    for manifest in out.glob("*/*.manifest.json"):
        steps = json.loads(manifest.read_text())["steps"]
        recorded = {rec["path"] for step in steps.values() for rec in step["outputs"].values()}
        own = {manifest.name, manifest.name.replace(".manifest.", ".summary.")}
        for p in manifest.parent.iterdir():
            if not p.name.startswith(".") and p.name not in own:
                assert str(p) in recorded, f"{p} is not recorded in {manifest}"


def test_a_sample_stopped_by_another_failure_resumes(inputs: Path, finished: Path, client,
                                                    tmp_path: Path):
    """Without --keep-going a failing sample stops the others; what they left is only what their
    manifests record, nothing temporary, and a rerun completes them, even over a file left under
    a final name that no manifest records (as an earlier version left a stopped step's)."""
    (tmp_path / "bad.fq").write_text("@r1\nACGTACGTAC\n+\nIII\n")
    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\tr2\na\t{inputs / 'a_1.fq'}\t{inputs / 'a_2.fq'}\n"
                     f"bad\tbad.fq\t\n")
    out = tmp_path / "out"
    first = subprocess.run(_pipeline_cmd(sheet, "-o", out, "--config", inputs / "steps.toml",
                                         "--local-cluster", "1", "-q"),
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stderr
    assert "error: sample bad: step normalize" in first.stderr and "Traceback" not in first.stderr
    run_info = json.loads((out / "kmerflow_run.json").read_text())
    assert run_info["samples"]["a"]["status"] == "failed"  # stopped unfinished
    assert _temporaries(out) == []
    _assert_final_names_recorded(out)
    assert not (out / "a" / "a.histogram.csv").exists()
    (out / "a" / "a.histogram.csv").write_text("left by a stopped step\n")
    sheet.write_text(f"sample\tr1\tr2\na\t{inputs / 'a_1.fq'}\t{inputs / 'a_2.fq'}\n")
    result = run(sheet, out, config=inputs / "steps.toml", client=client, log=lambda m: None)
    assert result.status == {"a": "done"}, result.errors
    for p in (finished / "a").glob("a.*"):
        if not p.name.endswith((".json", ".readstats.txt")):  # readstats names the input paths
            assert (out / "a" / p.name).read_bytes() == p.read_bytes(), p
    assert _temporaries(out) == []


def test_a_truncated_output_is_redone(inputs: Path, finished: Path, client, tmp_path: Path):
    """An output whose file no longer matches its record (truncated) is made again, and the
    steps before it are reused."""
    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\nc\t{inputs / 'c_1.fq'}\n")
    out = tmp_path / "out"
    assert run(sheet, out, config=inputs / "steps.toml", client=client,
               log=lambda m: None).ok
    renormalized = out / "c" / "c.renormalize.fq"
    renormalized.write_bytes(renormalized.read_bytes()[:1000])
    said: list[str] = []
    result = run(sheet, out, config=inputs / "steps.toml", client=client, log=said.append)
    assert result.status == {"c": "done"}, result.errors
    assert "c: resuming after normalize, filter" in said
    for name in ("c.filter.fq", "c.renormalize.fq", "c.histogram.csv"):
        assert (out / "c" / name).read_bytes() == (finished / "c" / name).read_bytes(), name


def test_a_truncated_intermediate_is_made_again(inputs: Path, tmp_path: Path):
    """A scratch file a later step reads (the saved table) that differs from its record moves
    the resume point back to the step that writes it."""
    from kmerflow.pipeline.config import load_config
    from kmerflow.pipeline.manifest import Manifest, resume_index
    from kmerflow.pipeline.plan import plan_steps, sample_dirs
    from kmerflow.pipeline.samplesheet import read_samplesheet
    from kmerflow.pipeline.tasks import file_record

    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\nc\t{inputs / 'c_1.fq'}\n")
    (sample,) = read_samplesheet(sheet, load_config(inputs / "steps.toml"))
    dirs = sample_dirs(sample, tmp_path / "out", tmp_path / "scratch")
    plans = plan_steps(sample, dirs)
    assert [p.name for p in plans][:2] == ["normalize", "filter"]
    for path in plans[0].outputs.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{path.name}\n" * 100)
    manifest = Manifest(dirs.manifest, "c", dirs)
    manifest.record(plans[0], {"outputs": {role: file_record(p) for role, p in
                                           plans[0].outputs.items()}}, 1.0)
    assert resume_index(plans, manifest) == 1
    table = plans[0].outputs["table"]
    table.write_text("truncated")
    assert resume_index(plans, manifest) == 0


def test_without_dask_one_line_names_the_extra(inputs: Path, tmp_path: Path):
    code = ("import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None; "
            "from kmerflow.pipeline.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, str(inputs / "samples.tsv"), "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'kmerflow[dask]'" in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


def test_one_run_per_outdir_and_a_dead_holder_is_taken_over(inputs: Path, tmp_path: Path):
    from kmerflow.pipeline.lock import LOCK_NAME, OutdirLock

    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, pathlib; from kmerflow.pipeline.lock import OutdirLock; "
         "OutdirLock(pathlib.Path(sys.argv[1])).acquire(); print('held', flush=True); "
         "sys.stdin.read()", str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        proc = subprocess.run(_pipeline_cmd(inputs / "samples.tsv", "-o", out, "--config",
                                            inputs / "steps.toml"),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {holder.pid} on " in lines[0] and str(out) in lines[0], \
            proc.stderr
        assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # nothing started
    finally:
        holder.kill()
        holder.wait()
    # The holder died without cleaning up: its lock file is taken over.
    assert f"pid {holder.pid} " in (out / LOCK_NAME).read_text()
    with OutdirLock(out):
        assert (out / LOCK_NAME).read_text().startswith(f"pid {os.getpid()} on ")


@pytest.mark.parametrize("sheet, message", [
    ("sample\tr1\nx\tmissing.fq\n", "line 2: r1 'missing.fq': no such file"),
    ("name\tr1\nx\ta_1.fq\n", "line 1: the header has no 'sample' column"),
    ("sample\tr1\nx\ta_1.fq\nx\ta_1.fq\n", "line 3: sample 'x' already on line 2"),
    ("sample\tr1\tcutoff\nx\ta_1.fq\tlots\n",
     "line 2: column cutoff = 'lots': invalid value 'lots' for '--first-target"),
    ("sample\tr1\nx y\ta_1.fq\n", "line 2: sample name 'x y'"),
])
def test_bad_sample_sheet_is_one_clear_error(inputs: Path, tmp_path: Path, sheet: str,
                                             message: str):
    path = inputs / f"bad-{abs(hash(sheet))}.tsv"
    path.write_text(sheet)
    out = tmp_path / "out"
    proc = subprocess.run(_pipeline_cmd(path, "-o", out), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], proc.stderr
    assert not out.exists()
    with pytest.raises(SampleSheetError):
        run(path, out)


def test_help_lists_the_pipeline():
    top = kmerflow("--help").stdout.decode()
    assert "kmerflow pipeline SAMPLESHEET" in top
    assert re.search(r"^  pipeline +Many samples", top, re.M), top
    usage = subprocess.run(_pipeline_cmd("--help"), capture_output=True, text=True)
    assert usage.returncode == 0 and "--keep-going" in usage.stdout
    helped = subprocess.run([sys.executable, "-m", "kmerflow", "help", "pipeline"],
                            capture_output=True, text=True)
    assert helped.returncode == 0 and helped.stdout == usage.stdout


def test_counted_histogram_falls_back_when_a_sum_may_pass_255(tmp_path: Path):
    """A k-mer seen 150 times in each of two chunks: its summed counter reads 255 where counting
    the whole file (bigcount) gives 300; the step then runs abundance-dist-single."""
    from kmerflow.pipeline import tasks

    reads = tmp_path / "r.fa"
    reads.write_text("".join(f">r{i}\n{'ACGTTGCAAGGCTTAACCGGTA'}\n" for i in range(300)))
    opts = {"ksize": 20, "n_tables": 2, "max_tablesize": 1e5}
    tables = [tasks.count_chunk(str(reads), 2, i, opts, str(tmp_path / f"{i}.ct")) for i in (0, 1)]
    total = tasks.add_tables(*tables, str(tmp_path / "sum.ct"))
    hist = tmp_path / "hist.csv"
    result = tasks.run_counted(total, "abundance_dist", {}, "abundance_dist_single", opts,
                               [str(reads), str(hist)], {"histogram": str(hist)})
    kmerflow("abundance-dist-single", "-k", "20", "-N", "2", "-x", "1e5", reads, tmp_path / "one.csv")
    assert hist.read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert b"\n300," in hist.read_bytes()
    assert result["outputs"]["histogram"]["size"] > 0 and not list(tmp_path.glob("*.ct"))


def test_chunk_cuts_fall_between_pairs_at_record_starts(tmp_path: Path):
    from kmerflow.pipeline.chunks import cut_points, pair_key

    rng = random.Random(5)
    records = []
    for i in range(300):
        mates = (1, 2) if rng.random() < 0.8 else (rng.choice((1, 2)),)
        for m in mates:
            qual = "@" + "I" * 29  # a quality line starting with '@' must not resync
            records.append(f"@r{i}/{m} comment\n{'ACGT' * 7}AC\n+\n{qual}\n")
    path = tmp_path / "il.fq"
    path.write_text("".join(records))
    data = path.read_bytes()
    starts = {sum(len(r) for r in records[:j]) for j in range(len(records) + 1)}
    for n in (1, 2, 5, 17, 100):
        cuts = cut_points(path, n)
        assert cuts[0] == 0 and cuts[-1] == len(data) and cuts == sorted(cuts)
        for c in cuts[1:-1]:
            assert c in starts
            before = data[:c].decode().splitlines()[-4]
            after = data[c:].decode().splitlines()[0]
            assert pair_key(before.encode()) != pair_key(after.encode()), (n, c)
    fasta = tmp_path / "x.fa"
    fasta.write_text("".join(f">s{i}\nACGT\nACGT\n" for i in range(50)))
    cuts = cut_points(fasta, 4)
    assert all(fasta.read_bytes()[c:c + 1] == b">" for c in cuts[1:-1])


def _terminal_output(cmd: list[str], timeout: float) -> tuple[int, str]:
    """Run ``cmd`` with its stdout and stderr on a pseudo-terminal 70 columns wide; its exit
    status and everything it wrote there."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 70, 0, 0))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal's other end closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=30), b"".join(chunks).decode()


def test_a_terminal_shows_one_status_line_a_pipe_plain_lines(inputs: Path, tmp_path: Path):
    """On a terminal, one status line rewritten in place (samples done/running/failed, steps,
    elapsed time, within the terminal's width), cleared before the messages that remain; on a
    pipe, plain lines with the sample counts; with -q, nothing."""
    config = ["--config", inputs / "steps.toml", "--local-cluster", "1"]
    code, shown = _terminal_output(_pipeline_cmd(inputs / "samples.tsv", "-o", tmp_path / "tty",
                                                 *config), timeout=300)
    assert code == 0, shown
    status = [s.removesuffix("\x1b[K") for s in re.findall(r"\r(kmerflow pipeline: [^\r\n]*)",
                                                            shown)]
    status = [s for s in status if s.startswith("kmerflow pipeline: ") and "| " in s]
    assert any(re.fullmatch(r"kmerflow pipeline: \d/3 samples done(, \d running)?"
                            r"(, \d failed)? \| steps \d+/19 \| 0:00:\d\d( \| .*)?", s)
               for s in status), shown
    assert all(len(s) < 70 for s in status) and any(s.endswith("...") for s in status)
    # What stays on the screen: each \r-rewritten line as its last version.
    screen = [line.rsplit("\r", 1)[-1].replace("\x1b[K", "")
              for line in shown.replace("\r\n", "\n").split("\n")]
    assert [line for line in screen if line] == [
        *(line for line in screen if re.fullmatch(r"kmerflow pipeline: \w: done in .*", line)),
        next(line for line in screen if " sample(s) done in " in line)]
    assert sum(" done in " in line and "sample(s)" not in line for line in screen) == 3
    piped = subprocess.run(_pipeline_cmd(inputs / "samples.tsv", "-o", tmp_path / "pipe",
                                         *config), capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and "\r" not in piped.stderr and "\x1b" not in piped.stderr
    assert re.search(r"^kmerflow pipeline: \w: done in [0-9.]+ s \[\d/3 samples done",
                     piped.stderr, re.M), piped.stderr
    code, shown = _terminal_output(_pipeline_cmd(inputs / "samples.tsv", "-o", tmp_path / "q",
                                                 *config, "-q"), timeout=300)
    assert code == 0 and shown == "", shown


def test_the_status_line_counts_samples_and_steps():
    from kmerflow.pipeline.progress import Progress
    from kmerflow.pipeline.runner import SampleRun

    def sample_run(name: str, status: str, step_index: int) -> SampleRun:
        plans = [type("Plan", (), {"name": n})() for n in ("protocol", "readstats")]
        return SampleRun(type("S", (), {"name": name})(), None, plans, None,  # type: ignore
                         status=status, step_index=step_index)

    progress = Progress(sys.stderr, live=False)
    assert progress.status_line().startswith("kmerflow pipeline: starting the cluster | 0:00:0")
    progress.runs = [sample_run("a", "done", 2), sample_run("b", "running", 1),
                     sample_run("c", "failed", 0), sample_run("d", "pending", 0)]
    assert re.fullmatch(r"kmerflow pipeline: 1/4 samples done, 1 running, 1 failed \| "
                        r"steps 3/8 \| 0:00:0\d \| b:readstats", progress.status_line())
