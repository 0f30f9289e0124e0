"""Tables sharded over Dask workers (kmerflow.distributed): the same tables, kept reads and
histograms as the one-process run with the same table sizes, on khmer's test data and on
generated reads with colliding and saturating counters (255, bigcount), single and paired, at
1-3 shards (trim-low-abund and filter-abund included); and the faults: a lost worker, a shard
over its worker's memory limit, an unreachable scheduler. One real LocalCluster (2 workers) serves the module."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any, Callable, Iterator, Tuple

import numpy as np
import pytest

from conftest import WORKER_MEMORY, kmerflow
from conftest import genome_reads as _genome_reads

distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import kmerflow as kf  # noqa: E402
from kmerflow.distributed import ShardedCountgraph, ShardError, running_workers  # noqa: E402
from kmerflow.distributed.cluster import local_cluster  # noqa: E402
from kmerflow.errors import ParameterError  # noqa: E402


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


def _countgraph(sizes) -> kf.Countgraph:
    table = kf.Countgraph(20, 1, len(sizes), primes=sizes)
    table.set_use_bigcount(True)
    return table


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_local_shards_count_like_one_table(tmp_path, shards):
    reads = _genome_reads(tmp_path / "r.fq")
    sizes = [401, 397, 389]
    graph = ShardedCountgraph(20, 1, 3, primes=sizes, shards=shards, batch_kmers=1000)
    assert graph.consume_seqfile(reads) == _countgraph(sizes).consume_seqfile(str(reads))
    expected = _countgraph(sizes)
    expected.consume_seqfile(str(reads))
    gathered = graph.to_countgraph()
    for a, b in zip(gathered.get_raw_tables(), expected.get_raw_tables(), strict=True):
        assert np.array_equal(a, b)
    assert (graph.n_occupied(), graph.n_unique_kmers()) == (expected.n_occupied(),
                                                            expected.n_unique_kmers())
    seq = reads.read_text().splitlines()[1]
    assert graph.get_kmer_counts(seq) == expected.get_kmer_counts(seq)
    assert max(graph.get_kmer_counts(seq)) > 255
    assert graph.get_median_count(seq)[0] == expected.get_median_count(seq)[0]
    assert graph.histogram().sum() == sum(sizes)


def test_a_shard_refuses_a_malformed_message_in_one_line():
    """A message that the native run did not encode (cut short, an unknown kind) is an error
    naming it, never a crash, and leaves the shard's counters as they were."""
    from kmerflow import _core as core
    shard = core.Shard.zeroed(None, 100, 200)
    for message in (b"", b"\x07", b"\x00" + bytes(5)):
        with pytest.raises(ParameterError, match="a shard message is malformed"):
            shard.handle(np.frombuffer(message, dtype=np.uint8))
    assert not shard.cells().any()


@pytest.mark.parametrize("shards,local", [(1, 0), (2, 0), (3, 1)])
def test_worker_shards_count_khmer_data_like_one_table(client, data, tmp_path, shards, local):
    graph = ShardedCountgraph(20, 1e4, 4, client=client, shards=shards, local=local,
                              batch_kmers=500)
    expected = kf.Countgraph(20, 1e4, 4)
    expected.set_use_bigcount(True)
    for name in ("test-abund-read-2.fa", "random-20-a.fa"):
        graph.consume_seqfile(data / name)
        expected.consume_seqfile(str(data / name))
    graph.save(tmp_path / "sharded.ct")
    expected.save(str(tmp_path / "one.ct"))
    assert (tmp_path / "sharded.ct").read_bytes() == (tmp_path / "one.ct").read_bytes()


def _cli(tmp_path: Path, reads: Path, sharding: tuple[str, ...]):
    """normalize-by-median, load-into-counting, abundance-dist-single and filter-abund-single
    outputs of one configuration (sharded when ``sharding`` is given)."""
    tag = "s" if sharding else "o"
    table = ["-k", "20", "-N", "3", "-x", "250", "-f"]
    kmerflow("normalize-by-median", *table, "-C", "200", "-o", tmp_path / f"{tag}.keep",
             "-s", tmp_path / f"{tag}.norm.ct", reads, *sharding)
    kmerflow("load-into-counting", *table, tmp_path / f"{tag}.ct", reads, *sharding)
    kmerflow("abundance-dist-single", *table[:-1], reads, tmp_path / f"{tag}.hist", *sharding)
    kmerflow("filter-abund-single", *table, "-C", "3", reads, "-o", tmp_path / f"{tag}.filt",
             *sharding)
    return [(tmp_path / f"{tag}{suffix}").read_bytes()
            for suffix in (".keep", ".norm.ct", ".ct", ".hist", ".filt")]


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_commands_match_the_one_process_run(cluster, tmp_path, shards):
    reads = _genome_reads(tmp_path / "reads.fq", seed=shards)
    one = _cli(tmp_path, reads, sharding=())
    sharded = _cli(tmp_path, reads, sharding=("--scheduler", cluster.scheduler_address,
                                              "--shards", str(shards), "--batch-kmers", "700"))
    assert sharded == one
    kept = one[0].count(b"\n@") + 1
    assert 0 < kept < reads.read_bytes().count(b"\n@") + 1


def test_paired_bundles_stay_together(cluster, tmp_path):
    reads = _genome_reads(tmp_path / "pairs.fq", paired=True, n=600)
    out = {}
    for tag, sharding in (("o", ()), ("s", ("--scheduler", cluster.scheduler_address))):
        kmerflow("normalize-by-median", "-k", "20", "-x", "300", "-N", "2", "-C", "40", "-f",
                 "-o", tmp_path / tag, reads, *sharding)
        out[tag] = (tmp_path / tag).read_bytes()
    assert out["s"] == out["o"]


@pytest.mark.parametrize("paired", [False, True])
def test_normalize_file_with_local_and_worker_shards(client, tmp_path, paired):
    """The native file run (look-ups and updates riding one message per shard and batch) with
    shards both here and on the workers: the kept reads, table and statistics of one process."""
    reads = _genome_reads(tmp_path / "r.fq", paired=paired, seed=11, n=900)
    kmerflow("normalize-by-median", "-k", "20", "-N", "3", "-x", "250", "-C", "30", "-f",
             "-o", tmp_path / "one.keep", "-s", tmp_path / "one.ct", reads)
    graph = ShardedCountgraph(20, 250, 3, client=client, shards=3, local=1, batch_kmers=600,
                              use_bigcount=False)
    with open(tmp_path / "sharded.keep", "wb") as out:
        n_reads, kept = graph.normalize_file(reads, out, 30, pairs=True)
    graph.save(tmp_path / "sharded.ct")
    assert (tmp_path / "sharded.keep").read_bytes() == (tmp_path / "one.keep").read_bytes()
    assert (tmp_path / "sharded.ct").read_bytes() == (tmp_path / "one.ct").read_bytes()
    assert n_reads == reads.read_text().count("\n+\n")
    assert 0 < kept == (tmp_path / "one.keep").read_text().count("\n+\n") < n_reads


def test_one_worker_local_cluster(data, tmp_path):
    reads = data / "test-abund-read-2.fa"
    kmerflow("normalize-by-median", "-C", "2", "-o", tmp_path / "o", reads)
    kmerflow("normalize-by-median", "-C", "2", "-o", tmp_path / "s", reads,
             "--local-cluster", "1", "--shards", "2")
    assert (tmp_path / "s").read_bytes() == (tmp_path / "o").read_bytes()


def test_unreachable_scheduler_is_one_line(tmp_path, data):
    proc = kmerflow("load-into-counting", "-x", "1e6", tmp_path / "t.ct", data / "random-20-a.fa",
                    "--scheduler", "tcp://127.0.0.1:9", check=False)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in lines[0]
    assert not (tmp_path / "t.ct").exists()
    proc = kmerflow("load-into-counting", tmp_path / "t.ct", data / "random-20-a.fa",
                    "--scheduler", tmp_path / "missing.json", check=False)
    assert proc.returncode == 1 and b"no such scheduler file" in proc.stderr


def test_shard_over_the_memory_limit_is_refused(cluster, client, tmp_path, data):
    with pytest.raises(ParameterError, match="do not fit in worker"):
        ShardedCountgraph(20, WORKER_MEMORY, 2, client=client, shards=2)
    proc = kmerflow("load-into-counting", "-M", "2G", tmp_path / "t.ct", data / "random-20-a.fa",
                    "--scheduler", cluster.scheduler_address, check=False)
    assert proc.returncode == 1 and b"do not fit in worker" in proc.stderr
    assert not (tmp_path / "t.ct").exists()


def test_lost_worker_names_the_shard():
    with local_cluster(1) as cluster, \
            distributed.Client(cluster) as client:
        graph = ShardedCountgraph(20, 1e4, 2, client=client, shards=2, local=1)
        graph.add("A" * 20)
        worker = list(running_workers(client))[0]
        os.kill(client.run(os.getpid)[worker], signal.SIGKILL)
        with pytest.raises(ShardError, match=r"shard 1 \(counters \d+\.\.\d+\) on tcp://"):
            graph.get("A" * 20)


def _looked_up(out: Path, reads: Path, **sharding) -> list:
    """filter-abund-single (-V, gzip output, --savegraph) and abundance-dist-single (-z, -b)
    of one configuration into ``out``: their summaries, then their files' bytes."""
    out.mkdir()
    # Colliding tables whose counts pass 255, and a larger one (reads trimmed with -V).
    table = {"ksize": 20, "n_tables": 3, "max_tablesize": 250, "force": True, **sharding}
    larger = {**table, "max_tablesize": 3000}
    results = [
        kf.filter_abund_single(reads, cutoff=3, output=out / "c.fq", savegraph=out / "c.ct", **table),
        kf.filter_abund_single(reads, cutoff=20, variable_coverage=True, normalize_to=25,
                               output=out / "v.fq.gz", **larger),
        kf.abundance_dist_single(reads, out / "z.csv", no_zero=True, **table),
        kf.abundance_dist_single(reads, out / "b.csv", no_bigcount=True, **table),
    ]
    files = {p.name: gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
             for p in out.iterdir()}
    return [r.summary for r in results] + [files]


@pytest.mark.parametrize("shards,local,paired", [(1, 0, False), (2, 1, True), (3, 0, True)])
def test_filter_and_histogram_look_up_on_the_shards(client, tmp_path, shards, local, paired):
    """The filtered reads, saved table, histograms (with and without zeros and bigcount) and
    summaries of the commands whose second pass looks the reads up on the shards equal the
    one-process run's: small colliding tables, counts past 255, shards held here and on the
    workers, single and paired reads, batches of a few reads."""
    reads = _genome_reads(tmp_path / "reads.fq", paired=paired, seed=20 + shards, n=1500)
    one = _looked_up(tmp_path / "o", reads)
    sharded = _looked_up(tmp_path / "s", reads, scheduler=client, shards=shards, local_shards=local,
                         batch_kmers=600)
    assert sharded == one
    variable, files = one[1], one[4]
    assert variable["truncated"] > 0 and variable["removed"] > 0
    rows = [line.split(",") for line in files["z.csv"].decode().split()[1:]]
    assert int(rows[-1][0]) > 255 and all(int(count) > 0 for _, count, _, _ in rows)
    assert files["b.csv"].decode().split()[-1].startswith("255,")


def test_file_histogram_and_filter_file_on_the_shards(client, tmp_path):
    """The class's look-up methods equal a one-process Countgraph of the same sizes (counts past
    255 with bigcount), with a shard held here and two on the workers."""
    reads = _genome_reads(tmp_path / "reads.fq", seed=5, n=1500)
    sizes = [401, 397, 389]
    graph = ShardedCountgraph(20, 1, 3, primes=sizes, client=client, shards=3, local=1, batch_kmers=700)
    graph.consume_seqfile(reads)
    expected = _countgraph(sizes)
    expected.consume_seqfile(str(reads))
    tracking = kf.Nodegraph(20, 1, 3, primes=sizes)
    histogram = graph.file_histogram(reads)
    assert histogram.tolist() == expected.abundance_distribution(str(reads), tracking)
    assert histogram[256:].sum() > 0
    expected.save(str(tmp_path / "t.ct"))
    for cutoff, normalize_to in ((100, 50), (150, None)):
        summary = graph.filter_file(reads, tmp_path / "s.fq", cutoff=cutoff, normalize_to=normalize_to)
        one = kf.filter_abund(tmp_path / "t.ct", reads, cutoff=cutoff, output=tmp_path / "o.fq",
                              variable_coverage=normalize_to is not None, normalize_to=normalize_to)
        assert summary == one.summary and summary["truncated"] > 0 and summary["removed"] > 0
        assert (tmp_path / "s.fq").read_bytes() == (tmp_path / "o.fq").read_bytes()
    assert graph.filter_file([reads, reads], tmp_path / "twice.fq.gz", cutoff=150)["reads"] == 3000
    assert gzip.decompress((tmp_path / "twice.fq.gz").read_bytes()) == 2 * (tmp_path / "o.fq").read_bytes()


def test_look_ups_on_one_worker_with_a_local_shard(data, tmp_path):
    """khmer's test data through one worker and one shard held by the command (-V with -Z
    past 255: counts stop at 255, as khmer's filter-abund-single counts)."""
    reads = data / "test-abund-read-2.fa"
    table = ["-k", "17", "-N", "2", "-x", "1e4"]
    for tag, sharding in (("o", ()), ("s", ("--local-cluster", "1", "--shards", "2", "--local-shards", "1"))):
        kmerflow("filter-abund-single", *table, "-V", "-Z", "300", "-C", "2", "-o", tmp_path / f"{tag}.v",
                 reads, *sharding)
        kmerflow("filter-abund-single", *table, "-C", "2", "-o", tmp_path / f"{tag}.c", reads, *sharding)
        kmerflow("abundance-dist-single", *table, reads, tmp_path / f"{tag}.csv", *sharding)
    for suffix in (".v", ".c", ".csv"):
        assert (tmp_path / f"s{suffix}").read_bytes() == (tmp_path / f"o{suffix}").read_bytes()
    assert (tmp_path / "o.v").read_bytes() == reads.read_bytes()  # no read's median reaches 300
    assert len((tmp_path / "o.c").read_bytes()) < len(reads.read_bytes())


@pytest.mark.parametrize("shards,local", [(1, 0), (2, 0), (3, 1)])
def test_trim_low_abund_never_gathers_the_table(client, tmp_path, caplog, monkeypatch, shards, local):
    """The second pass looks up on the shards and the -s table is saved shard by shard (nothing
    gathers it, not even with a shard held here): the outputs and the table file are the
    one-process run's, byte for byte."""
    reads = _genome_reads(tmp_path / "reads.fq", seed=3, n=700)
    table = {"ksize": 20, "n_tables": 3, "max_tablesize": 250, "force": True, "cutoff": 3,
             "variable_coverage": True, "trim_at_coverage": 25, "tempdir": tmp_path}
    one = kf.trim_low_abund(reads, output=tmp_path / "o.fq", savegraph=tmp_path / "o.ct", **table)
    monkeypatch.setattr(ShardedCountgraph, "to_countgraph", lambda self: pytest.fail("the table was gathered"))
    with caplog.at_level(logging.INFO, logger="kmerflow"):
        sharded = kf.trim_low_abund(reads, output=tmp_path / "s.fq", savegraph=tmp_path / "s.ct",
                                    scheduler=client, shards=shards, local_shards=local, batch_kmers=500,
                                    **table)
    assert sharded.summary == one.summary and one.summary["reads_trimmed"] > 0
    assert (tmp_path / "s.fq").read_bytes() == (tmp_path / "o.fq").read_bytes()
    assert (tmp_path / "s.ct").read_bytes() == (tmp_path / "o.ct").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.ct", "o.fq", "reads.fq", "s.ct", "s.fq"]
    said = [r.getMessage() for r in caplog.records]
    assert any(text.startswith("second pass") for text in said)
    assert said[-1] == f"Saving k-mer countgraph to {tmp_path / 's.ct'}"
    assert not any("gathering" in text for text in said)


def _trim(tmp_path: Path, tag: str, reads: Path, table: list, flags: list, sharding: tuple) -> list:
    """trim-low-abund's reads, saved table and --summary-info file, and filter-abund's reads on
    that table, of one configuration (``tag``: its files' prefix)."""
    out = tmp_path / tag
    out.mkdir()
    kmerflow("trim-low-abund", *table, *flags, "-o", out / "trim.fq", "-s", out / "trim.ct",
             "--summary-info", "json", "-T", out, reads, *sharding)
    kmerflow("filter-abund", "-C", "3", "-o", out / "filt.fq", out / "trim.ct", reads, *sharding)
    assert sorted(p.name for p in out.iterdir()) == ["filt.fq", "trim.ct", "trim.fq",
                                                     "trim.fq.info.json"]
    return [(out / name).read_bytes() for name in ("trim.fq", "trim.ct", "filt.fq")] + \
        [json.loads((out / "trim.fq.info.json").read_text())]


@pytest.mark.parametrize("shards,flags", [(1, ["-C", "3"]), (2, ["-V", "-Z", "25", "-C", "2"]),
                                          (3, ["--diginorm", "--diginorm-coverage", "40"])])
def test_trim_low_abund_matches_the_one_process_run(cluster, tmp_path, shards, flags):
    """Small colliding tables (counts pass 255), reads trimmed in pass 1 and in pass 2 (pairs
    at 2 shards)."""
    reads = _genome_reads(tmp_path / "reads.fq", paired=shards == 2, seed=shards, n=900)
    table = ["-k", "20", "-N", "3", "-x", "250", "--force"]
    one = _trim(tmp_path, "o", reads, table, flags, ())
    sharded = _trim(tmp_path, "s", reads, table, flags,
                    ("--scheduler", cluster.scheduler_address, "--shards", str(shards),
                     "--batch-kmers", "700"))
    assert sharded == one
    summary = one[3]
    assert 0 < summary["reads_trimmed"] and 0 < summary["basepairs_removed_or_trimmed"]


def test_trim_low_abund_on_khmer_data_with_one_worker(data, tmp_path):
    reads = data / "test-abund-read-2.fa"
    table = ["-k", "17", "-N", "2", "-x", "1e4"]
    one = _trim(tmp_path, "o", reads, table, ["-C", "2"], ())
    sharded = _trim(tmp_path, "s", reads, table, ["-C", "2"],
                    ("--local-cluster", "1", "--shards", "2", "--local-shards", "1"))
    assert sharded == one
    assert len(one[0]) < len(reads.read_bytes()) and one[3]["reads_trimmed"] > 0


@contextlib.contextmanager
def worker_killed_on(message: str) -> Iterator[Tuple[Any, Any, Callable[[str, str], None]]]:
    """A LocalCluster of one worker, a client of it, and a command's message callback that kills
    the worker when a message starts with ``message``."""
    with local_cluster(1) as cluster, \
            distributed.Client(cluster) as client:
        worker = list(running_workers(client))[0]
        pid = client.run(os.getpid)[worker]

        def on_message(_level: str, text: str) -> None:
            if text.startswith(message):
                os.kill(pid, signal.SIGKILL)

        yield cluster, client, on_message


@pytest.mark.parametrize("command,when", [
    (["trim-low-abund", "-s", "{tmp}/t.ct", "-T", "{tmp}"], "created temporary directory"),
    (["filter-abund-single", "--savegraph", "{tmp}/t.ct"], "filtering"),
])
def test_lost_worker_during_a_run_names_the_shard_and_leaves_nothing(tmp_path, data, command, when):
    """The worker dies once the table is placed (trim-low-abund) or counted (filter-abund-single,
    before its look-up pass): the run fails naming the shard and leaves no output, no saved
    table and no temporary directory."""
    from kmerflow.distributed import cli

    with worker_killed_on(when) as (cluster, client, on_message):
        argv = [a.format(tmp=tmp_path) for a in command] + [
            "-k", "17", "-x", "1e4", "-N", "2", "-o", str(tmp_path / "out.fq"), str(data / "test-abund-read-2.fa"),
            "--scheduler", cluster.scheduler_address, "--shards", "2", "--local-shards", "1"]
        # Dask reports the loss when the call is made, or after the connection attempts time out.
        with dask.config.set({"distributed.comm.timeouts.connect": "3s"}), \
                pytest.raises(kf.CommandError, match=r"shard 1 \(counters \d+\.\.\d+\) on tcp://") as e:
            cli.run(argv, on_message, client=client)
        assert e.value.code == 1
    assert list(tmp_path.iterdir()) == []


#: The table options of the runs of :data:`SAVING`.
SIZED = ["-k", "17", "-x", "1e4", "-N", "2"]

#: Each command that saves its table: its arguments ({table}: the table saved, {out}: the folder
#: of its other outputs, {reads}: the input) and the start of its last line before the save
#: (normalize's save comes after its passes, before its histograms and outputs are in place).
SAVING = {
    "load-into-counting": ([*SIZED, "{table}", "{reads}"], "fp rate estimated"),
    "normalize-by-median": ([*SIZED, "-s", "{table}", "-o", "{out}/keep.fq", "-R", "{out}/report.csv", "{reads}"],
                            "fp rate estimated"),
    "trim-low-abund": ([*SIZED, "-s", "{table}", "-T", "{out}", "-o", "{out}/trim.fq", "--summary-info", "tsv",
                        "{reads}"], "Saving k-mer countgraph"),
    "filter-abund-single": ([*SIZED, "--savegraph", "{table}", "-o", "{out}/filt.fq", "{reads}"],
                            "Saving k-mer countgraph"),
    "abundance-dist-single": ([*SIZED, "--savegraph", "{table}", "{reads}", "{out}/hist"], "Saving k-mer countgraph"),
    "normalize": (["-k", "17", "--save-table", "{table}", "-o", "{out}/norm.fq", "--hist", "{out}/hist.csv",
                   "{reads}"], "saving the first pass's table"),
}


def _saving(command: str, table: Path, out: Path, reads: Path) -> list:
    """``command``'s command line of :data:`SAVING`."""
    return [command, *(a.format(table=table, out=out, reads=reads) for a in SAVING[command][0])]


def _failed_save(argv: list, on_message: Callable[[str, str], None], client: Any, names: str) -> None:
    """Runs the sharded ``argv`` on ``client``, whose table's save must fail: exit 1, one line
    naming ``names``."""
    from kmerflow.distributed import cli

    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}), pytest.raises(kf.CommandError) as e:
        cli.run(argv, on_message, client=client)
    line = str(e.value).strip()
    assert e.value.code == 1 and "\n" not in line and names in line and "Traceback" not in line, line


@pytest.mark.parametrize("command", sorted(SAVING))
def test_a_save_that_fails_leaves_no_output(cluster, client, tmp_path, data, command):
    """The table's folder removed as the table is about to be saved: one line naming the table,
    exit 1, and none of the run's outputs in place (they are committed only once the table is
    saved), nor a temporary. Then a good run writes what the one-process run writes."""
    reads, saved, out = data / "test-abund-read-2.fa", tmp_path / "saved", tmp_path / "out"
    saved.mkdir()
    out.mkdir()

    def on_message(_level: str, text: str) -> None:
        if text.startswith(SAVING[command][1]) and saved.exists():
            saved.rmdir()

    sharding = ["--scheduler", cluster.scheduler_address, "--shards", "2", "--local-shards", "1"]
    _failed_save([*_saving(command, saved / "t.ct", out, reads), *sharding], on_message, client, str(saved / "t.ct"))
    assert (list(tmp_path.iterdir()), list(out.iterdir())) == ([out], [])
    kmerflow(*_saving(command, tmp_path / "one.ct", out, reads))
    one = {p.name: p.read_bytes() for p in out.iterdir()}
    for p in out.iterdir():
        p.unlink()
    kmerflow(*_saving(command, tmp_path / "sharded.ct", out, reads), *sharding)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == one
    assert (tmp_path / "sharded.ct").read_bytes() == (tmp_path / "one.ct").read_bytes()


@pytest.mark.parametrize("command", sorted(SAVING))
def test_a_worker_lost_during_the_save_leaves_no_output(tmp_path, data, command):
    """The worker dies as the table is being saved: one line naming the shard, exit 1, the
    previous file under the table's name left as it was, none of the run's outputs, no
    temporary file or directory."""
    with worker_killed_on(SAVING[command][1]) as (cluster, client, on_message):
        (tmp_path / "t.ct").write_bytes(b"the previous table")
        argv = [*_saving(command, tmp_path / "t.ct", tmp_path, data / "test-abund-read-2.fa"),
                "--scheduler", cluster.scheduler_address, "--shards", "2", "--local-shards", "1"]
        _failed_save(argv, on_message, client, "shard 1 (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.ct"]
    assert (tmp_path / "t.ct").read_bytes() == b"the previous table"


def test_trim_low_abund_mate_files_match_the_one_process_run(cluster, tmp_path):
    """R1/R2 inputs (--mate) and outputs (-O, --orphans), gzip-compressed: the native command's
    reading and writing around the sharded first pass."""
    records = _genome_reads(tmp_path / "il.fq", paired=True, seed=5, n=700).read_text().split("\n@")
    records = ["@" + r.lstrip("@").rstrip("\n") + "\n" for r in records]
    mates = {m: [r for r in records if r.split("\n", 1)[0].endswith("/" + m)] for m in ("1", "2")}

    def miscalled(record: str) -> str:
        """The record with its first base changed (a k-mer seen once: the read is trimmed away)."""
        name, seq, rest = record.split("\n", 2)
        return f"{name}\n{'C' if seq[0] == 'A' else 'A'}{seq[1:]}\n{rest}"

    (tmp_path / "r1.fq").write_text("".join(mates["1"]))
    (tmp_path / "r2.fq").write_text("".join(miscalled(r) if i % 5 == 0 else r for i, r in enumerate(mates["2"])))
    out = {}
    for tag, sharding in (("o", ()), ("s", ("--scheduler", cluster.scheduler_address, "--shards", "2"))):
        names = [tmp_path / f"{tag}{n}" for n in ("1.fq.gz", "2.fq.gz", "orphans.fq")]
        kmerflow("trim-low-abund", "-k", "20", "-N", "3", "-x", "5e3", "--force", "-C", "4",
                 "-T", tmp_path, tmp_path / "r1.fq", "--mate", tmp_path / "r2.fq", "-o", names[0],
                 "-O", names[1], "--orphans", names[2], *sharding)
        out[tag] = [gzip.decompress(n.read_bytes()) if n.suffix == ".gz" else n.read_bytes() for n in names]
    assert out["s"] == out["o"]
    assert out["o"][0].count(b"\n+\n") > 100 and out["o"][2]
