"""The front end of the sharded commands: their flags are the native command definitions'
(help, defaults, range checks, usage errors naming the flag), the native executable refuses
them clearly, normalize-by-median's -R, -u and --report-json and load-into-counting's .info
and -s files equal the one-process run's, and the command functions run on the shards given
``scheduler=`` with the same summaries. One real LocalCluster (2 workers) serves the module."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from conftest import genome_reads, kmerflow

distributed = pytest.importorskip("distributed")

import kmerflow as kf  # noqa: E402
from kmerflow import _core  # noqa: E402

TABLE = ["-k", "20", "-N", "3", "-x", "400", "-f"]


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


def _reads(path: Path, n: int, seed: int, prefix: str = "r", paired: bool = False) -> Path:
    """Reads from a 600 bp genome (counts pass the cutoffs; some shorter than k), mates named
    /1 /2 when ``paired``."""
    rng = random.Random(seed)
    genome = "".join(random.Random(1).choice("ACGT") for _ in range(600))
    lines = []
    for i in range(n):
        start = rng.randrange(0, len(genome) - 80)
        seq = genome[start:start + rng.choice([12, 50, 70])]
        for mate in (["/1", "/2"] if paired else [""]):
            lines.append(f"@{prefix}{i}{mate}\n{seq}\n+\n{'I' * len(seq)}\n")
    path.write_text("".join(lines))
    return path


def test_help_shows_the_shard_flags():
    for args in (("normalize-by-median", "--help"), ("load-into-counting", "--help", "--local-cluster", "2"),
                 ("trim-low-abund", "--help"), ("filter-abund", "--help")):
        proc = kmerflow(*args)
        text = proc.stdout.decode()
        assert "--scheduler <ADDRESS>" in text and "--local-cluster <N>" in text, text
        assert "--shards <N>" in text and "kmerflow[dask]" in text


@pytest.mark.parametrize("args,flag", [
    (["-k", "0"], "--ksize"),
    (["-C", "300"], "--cutoff"),
    (["-x", "nan"], "--max-tablesize"),
    (["--small-count"], "'--small-count'"),
    (["--gzip"], "'--gzip'"),
    (["--local-cluster", "0"], "--local-cluster"),
    (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler"),
])
def test_usage_errors_are_the_native_ones(tmp_path, args, flag):
    extra = [] if "--local-cluster" in args else ["--local-cluster", "1"]
    proc = kmerflow("normalize-by-median", *args, *extra, "-o", tmp_path / "o", tmp_path / "r.fq",
                    check=False)
    assert proc.returncode == 2, proc.stderr
    assert flag in proc.stderr.decode()
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args,flag", [
    (["--batched"], "'--batched'"),
    (["--small-count"], "'--small-count'"),
    (["--metrics", "m.json"], "'--metrics'"),
])
def test_trim_low_abund_refuses_what_shards_cannot_do(tmp_path, args, flag):
    reads = _reads(tmp_path / "r.fq", 50, seed=1)
    proc = kmerflow("trim-low-abund", *args, "--local-cluster", "1", "-o", tmp_path / "o", reads,
                    check=False)
    assert proc.returncode == 2, proc.stderr
    assert flag in proc.stderr.decode() and "--scheduler" in proc.stderr.decode()
    assert not (tmp_path / "o").exists()


def test_shards_alone_need_a_cluster(tmp_path):
    proc = kmerflow("load-into-counting", "--shards", "2", tmp_path / "t.ct", tmp_path / "r.fq",
                    check=False)
    assert proc.returncode == 2 and b"--scheduler" in proc.stderr, proc.stderr


def test_the_native_command_line_refuses_them(tmp_path, capfd):
    code, _ = _core.cli_main(["kmerflow", "load-into-counting", "--local-cluster", "2",
                              str(tmp_path / "t.ct"), str(tmp_path / "r.fq")])
    err = capfd.readouterr().err
    assert code == 2 and "pip install 'kmerflow[dask]'" in err and "python -m kmerflow" in err, err
    for argv in (["filter-abund-single", "--scheduler", "local", "r.fq"],
                 ["trim-low-abund", "--local-cluster", "2", "r.fq"],
                 ["filter-abund", "--scheduler", "local", "t.ct", "r.fq"]):
        with pytest.raises(kf.CommandError) as refused:
            _core.run_command(argv, lambda *_: None)
        assert refused.value.code == 2


def _normalize(tmp_path: Path, tag: str, reads: Path, unpaired: Path, sharding: list) -> dict:
    out = {s: tmp_path / f"{tag}.{s}" for s in ("keep", "csv", "json", "ct")}
    kmerflow("normalize-by-median", *TABLE, "-C", "12", "-p", reads, "-u", unpaired,
             "-o", out["keep"], "-R", out["csv"], "--report-frequency", "150",
             "--report-json", out["json"], "-s", out["ct"], *sharding)
    report = json.loads(out["json"].read_text())
    return {"keep": out["keep"].read_bytes(), "csv": out["csv"].read_text(),
            "ct": out["ct"].read_bytes(), "summary": report["summary"],
            "inputs": [i["path"] for i in report["inputs"]],
            "outputs": sorted(Path(o["path"]).name[len(tag):] for o in report["outputs"])}


def test_normalize_report_unpaired_and_report_json_match_one_process(cluster, tmp_path):
    reads = _reads(tmp_path / "pairs.fq", 400, seed=3, paired=True)
    unpaired = _reads(tmp_path / "single.fq", 300, seed=4, prefix="u")
    one = _normalize(tmp_path, "o", reads, unpaired, [])
    sharded = _normalize(tmp_path, "s", reads, unpaired,
                         ["--scheduler", cluster.scheduler_address, "--shards", "3",
                          "--batch-kmers", "900"])
    assert sharded == one
    assert one["csv"].count("\n") > 4 and one["csv"].startswith("total,kept,f_kept\n")
    assert 0 < one["summary"]["kept"] < one["summary"]["total"]
    assert one["summary"]["short_dropped"] > 0


def test_load_into_counting_info_and_summary_files_match_one_process(cluster, tmp_path):
    reads = _reads(tmp_path / "r.fq", 500, seed=5)
    outputs = {}
    for tag, sharding in (("o", []), ("s", ["--scheduler", cluster.scheduler_address, "--shards", "2"])):
        table = tmp_path / tag / "t.ct"
        table.parent.mkdir()
        kmerflow("load-into-counting", *TABLE, "-s", "json", table, reads, "--report-json",
                 tmp_path / f"{tag}.json", *sharding)
        report = json.loads((tmp_path / f"{tag}.json").read_text())
        outputs[tag] = ([(table.parent / n).read_bytes() for n in ("t.ct", "t.ct.info", "t.ct.info.json")],
                        report["summary"],
                        sorted(Path(o["path"]).name for o in report["outputs"]))
    assert outputs["s"] == outputs["o"]
    assert outputs["o"][1]["tally"]["short_reads"] > 0


def test_every_shard_held_here_reaches_no_cluster(tmp_path, monkeypatch):
    """``--local-shards`` equal to ``--shards``: nothing is placed on workers, so the run neither
    contacts ``--scheduler`` (nobody listens at port 9) nor starts ``--local-cluster``'s
    LocalCluster, and writes the one-process run's table and .info files."""
    from kmerflow.distributed import cli

    reads = _reads(tmp_path / "r.fq", 500, seed=5)
    outputs = {}
    for tag, sharding in (("o", []), ("s", ["--scheduler", "tcp://127.0.0.1:9", "--shards", "3",
                                            "--local-shards", "3"])):
        (tmp_path / tag).mkdir()
        kmerflow("load-into-counting", *TABLE, tmp_path / tag / "t.ct", reads, *sharding)
        outputs[tag] = [(tmp_path / tag / n).read_bytes() for n in ("t.ct", "t.ct.info")]
    assert outputs["s"] == outputs["o"]

    def no_cluster(*args, **kwargs):
        raise AssertionError(f"connect{args} called")

    monkeypatch.setattr(cli, "connect", no_cluster)
    summary, _ = cli.run(["load-into-counting", *TABLE, "-q", "--local-cluster", "1", "--shards", "2",
                          "--local-shards", "2", str(tmp_path / "l.ct"), str(reads)])
    assert (tmp_path / "l.ct").read_bytes() == outputs["o"][0] and summary["tally"]["reads"] == 500


def test_an_automatically_sized_table_is_in_the_report(cluster, tmp_path):
    """``-M auto``: the sharded run's report gives the size chosen, as the one-process run's."""
    rng = random.Random(6)
    genome = "".join(rng.choice("ACGT") for _ in range(5000))
    starts = [rng.randrange(0, len(genome) - 70) for _ in range(1000)]
    reads = tmp_path / "r.fq"
    reads.write_text("".join(f"@r{i}\n{genome[s:s + 70]}\n+\n{'I' * 70}\n" for i, s in enumerate(starts)))
    sizing = {}
    for tag, sharding in (("o", []), ("s", ["--scheduler", cluster.scheduler_address, "--shards", "2"])):
        kmerflow("load-into-counting", "-k", "20", "-M", "auto", "--report-json", tmp_path / f"{tag}.json",
                 tmp_path / f"{tag}.ct", reads, *sharding)
        sizing[tag] = json.loads((tmp_path / f"{tag}.json").read_text())["table_sizing"]
        assert (tmp_path / f"{tag}.ct").stat().st_size > 0
    assert sizing["o"]["estimated"] and sizing["o"]["distinct_kmers"] > 0
    # The pre-pass time and the cap (a share of the RAM available at the time) vary between runs.
    chosen = ("distinct_kmers", "estimated", "target_fp_rate", "memory_bytes", "n_tables", "tablesize")
    assert {k: sizing["s"][k] for k in chosen} == {k: sizing["o"][k] for k in chosen}
    assert sizing["s"]["expected_fp_rate"] == pytest.approx(sizing["o"]["expected_fp_rate"], rel=1e-12)


def _functions(tmp_path: Path, reads: Path, tag: str, **sharding) -> list:
    """The results of the sharded commands' functions (one-process without ``sharding``)."""
    table = {"ksize": 20, "n_tables": 3, "max_tablesize": 400, "force": True, **sharding}
    return [
        kf.load_into_counting(tmp_path / f"{tag}.ct", reads, **table),
        kf.normalize_by_median(reads, cutoff=10, output=tmp_path / f"{tag}.keep", **table),
        kf.abundance_dist_single(reads, tmp_path / f"{tag}.hist", **table),
        kf.filter_abund_single(reads, cutoff=3, output=tmp_path / f"{tag}.filt", **table),
        kf.trim_low_abund(reads, cutoff=3, output=tmp_path / f"{tag}.trim", tempdir=tmp_path, **table),
    ]


#: The resource line, as the one-process command line ends a run (the command line captured).
RESOURCE_LINE = re.compile(r"\[kmerflow\] Version: [^;]+; CMD: (.*); Real time: [0-9.]+ sec; "
                           r"CPU: [0-9.]+ sec; Peak RSS: [0-9.]+ GB")


#: trim-low-abund's temporary directory, named by the process and the clock.
TEMP_DIR = re.compile(r"tmp\d+-\d+-\d+kmerflow")


@pytest.mark.parametrize("command", [
    ["normalize-by-median", "-C", "12", "r.fq", "-o", "out.keep"],
    ["abundance-dist-single", "r.fq", "out.hist"],
    # Over the false-positive ceiling: the -f warning is the one-process run's too.
    ["filter-abund-single", "-C", "3", "r.fq", "-o", "out.filt"],
    ["trim-low-abund", "-C", "3", "-T", ".", "r.fq", "-o", "out.trim"],
])
def test_the_sharded_run_prints_the_one_process_lines(cluster, tmp_path, command):
    """The messages and the resource line of a sharded run are the one-process run's (printed
    by the same native code), the resource line naming the sharded command line; ``-q`` hides
    them both."""
    sharding = ["--scheduler", cluster.scheduler_address, "--shards", "2"]
    printed = {}
    for tag, extra in (("one", []), ("sharded", sharding)):
        folder = tmp_path / tag
        folder.mkdir()
        _reads(folder / "r.fq", 300, seed=8)
        table = [a for a in TABLE if a != "-f"] if command[0] == "trim-low-abund" else TABLE  # no -f there
        argv = [command[0], *table, *command[1:], *extra]
        lines = kmerflow(*argv, cwd=folder).stderr.decode().splitlines()
        resource = RESOURCE_LINE.fullmatch(lines[-1])
        assert resource and resource.group(1) == " ".join(["kmerflow", *argv]), lines
        printed[tag] = [TEMP_DIR.sub("TMP", line) for line in lines[:-1]]
        (folder / command[-1]).unlink()  # abundance-dist-single keeps an existing output
        assert kmerflow(*argv, "-q", cwd=folder).stderr == b""
    assert printed["sharded"] == printed["one"]
    assert any(line.startswith(("Total number of unique k-mers", "making countgraph"))
               for line in printed["one"]), printed


#: The early stop's prefix of the one-process error line (the sharded run checks at the end).
STOPPED_AT = re.compile(r"r\.fq: stopped at read \d+: ")


@pytest.mark.parametrize("command", [
    ["filter-abund-single", "r.fq", "-o", "out"],
    ["normalize-by-median", "r.fq", "-o", "out"],
    ["load-into-counting", "out", "r.fq"],
    ["load-into-counting", "--layout", "blocked", "out", "r.fq"],
])
def test_a_too_small_sharded_table_fails_as_in_one_process(cluster, tmp_path, command):
    """Over the command's false-positive ceiling, the sharded run fails with the one-process
    error line (ceiling and the layout's -M hint included), exit status 1, and writes nothing."""
    table = ["-k", "20", "-M", "2e3"] if "blocked" in command else ["-k", "20", "-N", "3", "-x", "100"]
    errors = {}
    for tag, extra in (("one", []), ("sharded", ["--scheduler", cluster.scheduler_address, "--shards", "2"])):
        folder = tmp_path / tag
        folder.mkdir()
        genome_reads(folder / "r.fq", n=300)
        run = kmerflow(command[0], *table, *command[1:], *extra, cwd=folder, check=False)
        assert run.returncode == 1, run.stderr
        errors[tag] = STOPPED_AT.sub("", run.stderr.decode().splitlines()[-1])
        assert sorted(p.name for p in folder.iterdir()) == ["r.fq"]
    assert errors["sharded"] == errors["one"]
    assert "** ERROR: the graph structure is too small" in errors["one"], errors
    assert "increase it with " in errors["one"] and errors["one"].endswith("or use --force")


def test_command_functions_run_on_the_shards(client, tmp_path):
    reads = _reads(tmp_path / "r.fq", 400, seed=6)
    one = _functions(tmp_path, reads, "o")
    sharded = _functions(tmp_path, reads, "s", scheduler=client, shards=2)
    assert [r.summary for r in sharded] == [r.summary for r in one]
    assert [r.report["command"] for r in sharded] == [r.command for r in one]
    assert "--scheduler" in sharded[0].argv and "--shards" in sharded[0].argv
    for suffix in (".ct", ".keep", ".hist", ".filt", ".trim"):
        assert (tmp_path / f"s{suffix}").read_bytes() == (tmp_path / f"o{suffix}").read_bytes()


@pytest.mark.parametrize("layout", ["khmer", "blocked"])
def test_normalize_says_and_reports_what_one_process_does(cluster, tmp_path, layout):
    """normalize-by-median on shards (either layout; batches of a few reads and of all of them)
    prints the one-process run's lines byte for byte (progress every --report-frequency reads,
    DONE, output in, unique k-mers, saving, fp rate, dropped short reads) and writes its -R
    report, keep curve, outputs and table: one code makes them for both."""
    inputs = [genome_reads(tmp_path / "a.fq", seed=6, n=900), genome_reads(tmp_path / "b.fq", seed=7, n=600),
              _reads(tmp_path / "c.fq", 200, seed=8, prefix="c")]

    def run(tag: str, sharding: list) -> dict:
        where = tmp_path / tag
        where.mkdir()
        proc = kmerflow("normalize-by-median", "-k", "20", "-N", "3", "-x", "5000", "--layout", layout, "-C", "5",
                        *inputs, "-R", "r.csv", "--report-frequency", "53", "--report-json", "r.json", "-s", "t",
                        *sharding, cwd=where)
        *said, resources = proc.stderr.decode().splitlines()
        assert resources.startswith("[kmerflow] Version: ") and "Peak RSS" in resources
        return {"said": said, "csv": (where / "r.csv").read_text(), "table": (where / "t").read_bytes(),
                "keep": [(where / f"{p.name}.keep").read_bytes() for p in inputs],
                "curve": json.loads((where / "r.json").read_text())["summary"]["keep_curve"]}

    one = run("one", [])
    assert one["csv"].count("\n") > 10 and len(one["curve"]) > 10 and one["curve"][-1][1] > 20
    assert "output in b.fq.keep" in one["said"] and any(line.startswith("DONE with") for line in one["said"])
    assert any(line.startswith("dropped ") for line in one["said"])
    for batch_kmers in ("300", "1000000"):
        sharding = ["--scheduler", cluster.scheduler_address, "--shards", "3", "--local-shards", "1",
                    "--batch-kmers", batch_kmers]
        assert run(f"sharded{batch_kmers}", sharding) == one


def test_force_skips_an_input_it_cannot_open_as_one_process_does(cluster, tmp_path):
    """normalize-by-median -f skips an input it cannot open and goes on, sharded as in one
    process: exit 0, the same error lines and closing list, kept reads and summary."""
    reads = _reads(tmp_path / "r.fq", 400, seed=9)

    def run(tag: str, sharding: list) -> dict:
        where = tmp_path / tag
        where.mkdir()
        proc = kmerflow("normalize-by-median", *TABLE, "-C", "12", "missing.fq", reads, "-o", "kept.fq",
                        "--report-json", "r.json", *sharding, cwd=where)
        *said, _ = proc.stderr.decode().splitlines()
        return {"said": said, "keep": (where / "kept.fq").read_bytes(),
                "summary": json.loads((where / "r.json").read_text())["summary"]}

    one = run("one", [])
    assert "*** Skipping error file, moving on..." in one["said"] and "\tmissing.fq" in one["said"]
    assert one["summary"]["skipped_files"] == ["missing.fq"] and one["summary"]["kept"] > 0
    sharding = ["--scheduler", cluster.scheduler_address, "--shards", "2", "--local-shards", "1"]
    assert run("sharded", sharding) == one


@pytest.mark.parametrize("command,output", [("normalize-by-median", ["-o", "kept.fq"]),
                                            ("load-into-counting", ["t.ct"])])
def test_a_table_too_small_stops_the_sharded_run_early(cluster, tmp_path, command, output):
    """A table over the false-positive ceiling stops a sharded run as it stops one process
    (checked after each batch): exit 1, the one-process line (its read, rate and -M are the
    run's), nothing written."""
    rng = random.Random(5)
    reads = tmp_path / "random.fq"
    reads.write_text("".join(f"@x{i}\n{s}\n+\n{'I' * 60}\n"
                             for i, s in enumerate("".join(rng.choice("ACGT") for _ in range(60))
                                                   for _ in range(30_000))))
    lines = []
    for tag, sharding in (("one", []), ("sharded", ["--scheduler", cluster.scheduler_address, "--shards", "2",
                                                     "--batch-kmers", "5000"])):
        where = tmp_path / tag
        where.mkdir()
        proc = kmerflow(command, "-k", "20", "-N", "3", "-x", "2000", *output, reads, *sharding, cwd=where,
                        check=False)
        assert proc.returncode == 1, proc.stderr
        assert sorted(p.name for p in where.iterdir()) == []
        (line,) = [x for x in proc.stderr.decode().splitlines() if "error:" in x]
        assert "stopped at read" in line and "or use --force" in line, line
        lines.append(re.sub(r"\d+(\.\d+)?K?", "N", line))
    assert lines[0] == lines[1]


def test_the_resource_line_counts_the_planning(client, tmp_path, monkeypatch, capfd):
    """The sharded run's clock starts before its plan (where -M auto reads the inputs), as the
    one-process run's starts before its sizing pass: the resource line and --report-json's
    wall time count it."""
    from kmerflow.distributed import cli

    planned = _core.shard_plan

    def slow_plan(argv):
        time.sleep(2.0)
        return planned(argv)

    monkeypatch.setattr(cli._core, "shard_plan", slow_plan)
    reads = _reads(tmp_path / "r.fq", 50, seed=9)
    _, report = cli.run(["load-into-counting", *TABLE, "--scheduler", "x", str(tmp_path / "t.ct"), str(reads)],
                        client=client)
    (line,) = [x for x in capfd.readouterr().err.splitlines() if x.startswith("[kmerflow] Version")]
    assert float(re.search(r"Real time: ([\d.]+) sec", line).group(1)) >= 2.0, line
    assert report["timings"]["wall_s"] >= 2.0
