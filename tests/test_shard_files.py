"""Sharded tables' files written and read shard by shard: a save from 1-3 shards (one and two
workers, shards held here and on workers) is the one-process file byte for byte (khmer's layout
with bigcounts; the blocked layout, 8- and 4-bit); a saved table loaded into shards counts,
answers and normalizes as the one-process table loaded from it, and ``-l`` of
normalize-by-median and trim-low-abund, and filter-abund of a saved table, give the one-process
command's outputs (a table the shards cannot read is refused in one line); a worker that
does not see the file (its path resolves elsewhere in its process) gets and sends its counters
through the client; a worker lost during the save leaves no file."""

from __future__ import annotations

import gzip
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from conftest import genome_reads, kmerflow

distributed = pytest.importorskip("distributed")

import kmerflow as kf  # noqa: E402
from kmerflow.distributed import (  # noqa: E402
    ShardedBlockedTable,
    ShardedCountgraph,
    ShardError,
    running_workers,
)
from kmerflow.distributed.cluster import local_cluster  # noqa: E402

SIZES = [401, 397, 389]


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster, direct_to_workers=True) as c:
        yield c


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> Path:
    return genome_reads(tmp_path_factory.mktemp("reads") / "reads.fq", seed=11)


def _one_process(reads: Path, path: Path) -> kf.Countgraph:
    table = kf.Countgraph(20, 1, len(SIZES), primes=SIZES)
    table.set_use_bigcount(True)
    table.consume_seqfile(str(reads))
    table.save(str(path))
    return table


def _blocked(reads: Path, path: Path, small: bool) -> bytes:
    """The one-process command's blocked table of ``reads`` (the shape of
    ``ShardedBlockedTable(20, 1000, 4, small_count=small)``)."""
    kmerflow("load-into-counting", "--layout", "blocked", "-k", "20", "-N", "4", "-x", "1000", "-f",
             *(["--small-count"] if small else []), path, reads)
    (path.parent / f"{path.name}.info").unlink()
    return path.read_bytes()


def _saved_khmer(client, reads: Path, tmp_path: Path, shards: int, local: int) -> None:
    """A sharded Countgraph of ``reads`` saved shard by shard is the one-process file and the
    gathered one (bigcounts included)."""
    expected = _one_process(reads, tmp_path / "one.ct")
    graph = ShardedCountgraph(20, 1, 3, primes=SIZES, client=client, shards=shards, local=local, batch_kmers=700)
    graph.consume_seqfile(reads)
    graph.save(tmp_path / "sharded.ct")
    graph.to_countgraph().save(str(tmp_path / "gathered.ct"))
    one = (tmp_path / "one.ct").read_bytes()
    assert (tmp_path / "sharded.ct").read_bytes() == one == (tmp_path / "gathered.ct").read_bytes()
    sequences = reads.read_text().split("\n")[1::4]
    assert any(max(expected.get_kmer_counts(seq), default=0) > 255 for seq in sequences)  # bigcounts saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gathered.ct", "one.ct", "sharded.ct"]


def _saved_blocked(client, reads: Path, tmp_path: Path, shards: int, local: int, small: bool) -> None:
    """A sharded blocked table of ``reads`` saved shard by shard is the one-process file."""
    one = _blocked(reads, tmp_path / "one.kf", small)
    table = ShardedBlockedTable(20, 1000, 4, small_count=small, client=client, shards=shards, local=local,
                                batch_kmers=700)
    table.consume_seqfile(reads)
    table.save(tmp_path / "sharded.kf")
    assert (tmp_path / "sharded.kf").read_bytes() == one


@pytest.mark.parametrize("shards,local", [(1, 0), (2, 0), (3, 1)])
def test_khmer_layout_saved_shard_by_shard_is_the_one_process_file(client, reads, tmp_path, shards, local):
    _saved_khmer(client, reads, tmp_path, shards, local)


@pytest.mark.parametrize("shards,local,small", [(1, 0, False), (2, 0, True), (3, 1, False), (3, 0, True)])
def test_blocked_layout_saved_shard_by_shard_is_the_one_process_file(client, reads, tmp_path, shards, local,
                                                                     small):
    _saved_blocked(client, reads, tmp_path, shards, local, small)


def test_saved_shard_by_shard_with_one_worker(reads, tmp_path):
    """Every shard on one worker (and some here). The cluster is the test's own, made after the
    module's, so that its client is Dask's default while the test runs (actors reach their
    workers through it)."""
    with local_cluster(1) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        for n, (shards, local) in enumerate([(1, 0), (2, 0), (3, 1)]):
            (tmp_path / f"k{n}").mkdir()
            _saved_khmer(client, reads, tmp_path / f"k{n}", shards, local)
            (tmp_path / f"b{n}").mkdir()
            _saved_blocked(client, reads, tmp_path / f"b{n}", shards, local, small=n == 1)


@pytest.mark.parametrize("shards,local", [(1, 0), (2, 0), (3, 1)])
def test_a_saved_table_loads_into_shards(client, reads, tmp_path, shards, local):
    expected = _one_process(reads, tmp_path / "one.ct")
    graph = ShardedCountgraph.load(tmp_path / "one.ct", client=client, shards=shards, local=local,
                                   batch_kmers=700)
    assert graph.hashsizes() == SIZES and graph.ksize() == 20
    assert graph.n_occupied() == expected.n_occupied()
    sequences = [seq for seq in reads.read_text().split("\n")[1::4][:60] if "N" not in seq]
    for seq in sequences:
        assert graph.get_kmer_counts(seq) == list(expected.get_kmer_counts(seq))
    # Counting on: the loaded shards and the loaded one-process table stay equal.
    more = genome_reads(tmp_path / "more.fq", seed=12, n=300)
    loaded = kf.Countgraph.load(str(tmp_path / "one.ct"))
    graph.consume_seqfile(more)
    loaded.consume_seqfile(str(more))
    graph.save(tmp_path / "again.ct")
    loaded.save(str(tmp_path / "loaded.ct"))
    assert (tmp_path / "again.ct").read_bytes() == (tmp_path / "loaded.ct").read_bytes()
    assert graph.n_unique_kmers() == loaded.n_unique_kmers()


@pytest.mark.parametrize("small", [False, True])
def test_a_saved_blocked_table_loads_into_shards(client, reads, tmp_path, small):
    one = _blocked(reads, tmp_path / "one.kf", small)
    table = ShardedBlockedTable.load(tmp_path / "one.kf", client=client, shards=3, local=1)
    here = ShardedBlockedTable(20, 1000, 4, small_count=small)
    here.consume_seqfile(reads)
    assert (table.n_occupied(), table.n_unique_kmers()) == (here.n_occupied(), here.n_unique_kmers())
    for seq in reads.read_text().split("\n")[1::4][:50]:
        assert table.get_kmer_counts(seq) == here.get_kmer_counts(seq)
    table.save(tmp_path / "again.kf")
    assert (tmp_path / "again.kf").read_bytes() == one
    damaged = bytearray(one)
    damaged[-1] ^= 1
    (tmp_path / "damaged.kf").write_bytes(damaged)
    with pytest.raises(kf.KmerflowError, match=r"damaged\.kf.*checksum"):
        ShardedBlockedTable.load(tmp_path / "damaged.kf", client=client, shards=2)


def test_files_the_shards_cannot_read_are_refused_in_one_line(client, reads, tmp_path):
    import gzip

    _one_process(reads, tmp_path / "one.ct")
    (tmp_path / "one.ct.gz").write_bytes(gzip.compress((tmp_path / "one.ct").read_bytes()))
    with pytest.raises(kf.KmerflowError, match=r"one\.ct\.gz.*gzip-compressed.*gunzip"):
        ShardedCountgraph.load(tmp_path / "one.ct.gz", client=client, shards=2)
    (tmp_path / "short.ct").write_bytes((tmp_path / "one.ct").read_bytes()[:-3])
    with pytest.raises(kf.KmerflowError, match=r"short\.ct"):
        ShardedCountgraph.load(tmp_path / "short.ct", client=client, shards=2)
    kf.Nodegraph(20, 1000, 2).save(str(tmp_path / "presence.pt"))
    with pytest.raises(kf.KmerflowError, match=r"presence\.pt.*nodegraph"):
        ShardedCountgraph.load(tmp_path / "presence.pt", client=client, shards=2)


def test_workers_that_do_not_see_the_file_go_through_the_client(client, reads, tmp_path, monkeypatch):
    """``here`` resolves to each process's working directory: the client's is ``mine``, the
    workers' is another, so the workers do not see the files the client makes under it."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (tmp_path / "here").symlink_to("/proc/self/cwd")
    monkeypatch.chdir(mine)
    _one_process(reads, tmp_path / "one.ct")
    graph = ShardedCountgraph(20, 1, 3, primes=SIZES, client=client, shards=3, local=1, batch_kmers=700)
    assert graph._seeing(str(tmp_path / "one.ct")) == [True, True, True]
    (mine / "seen").write_bytes(b"")
    assert graph._seeing(str(tmp_path / "here" / "seen")) == [True, False, False]
    (mine / "seen").unlink()
    graph.consume_seqfile(reads)
    graph.save(tmp_path / "here" / "sharded.ct")
    assert (mine / "sharded.ct").read_bytes() == (tmp_path / "one.ct").read_bytes()
    (mine / "one.ct").write_bytes((tmp_path / "one.ct").read_bytes())
    loaded = ShardedCountgraph.load(tmp_path / "here" / "one.ct", client=client, shards=2)
    loaded.save(tmp_path / "again.ct")
    assert (tmp_path / "again.ct").read_bytes() == (tmp_path / "one.ct").read_bytes()
    one = _blocked(reads, tmp_path / "one.kf", small=True)
    blocked = ShardedBlockedTable(20, 1000, 4, small_count=True, client=client, shards=2)
    blocked.consume_seqfile(reads)
    blocked.save(tmp_path / "here" / "sharded.kf")
    assert (mine / "sharded.kf").read_bytes() == one
    (mine / "one.kf").write_bytes(one)
    ShardedBlockedTable.load(tmp_path / "here" / "one.kf", client=client, shards=2).save(tmp_path / "b.kf")
    assert (tmp_path / "b.kf").read_bytes() == one
    assert sorted(p.name for p in mine.iterdir()) == ["one.ct", "one.kf", "sharded.ct", "sharded.kf"]


def test_workers_are_asked_of_the_scheduler_not_the_clients_copy(cluster):
    """The client's copy of the scheduler's answer, which it refreshes without the workers, is
    not where the shards' workers come from (refreshed here all the time, it had no workers in
    about one placement in four)."""
    import dask

    from kmerflow.distributed import _place

    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}), \
            distributed.Client(cluster, direct_to_workers=True) as client:
        for _ in range(200):
            assert sorted(_place(client, [(1, 1)] * 2, 0)) == sorted(cluster.scheduler_info["workers"])


def test_a_cluster_just_starting_is_waited_for(reads, tmp_path):
    """Shards placed on a cluster whose worker joins a second later wait for it; on one where
    none joins the run fails, once the wait is over, in one line naming the scheduler."""
    _one_process(reads, tmp_path / "one.ct")
    with local_cluster(0) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        with pytest.raises(kf.ParameterError) as refused:
            running_workers(client, timeout=0.5)
        assert str(refused.value) == \
            f"the Dask cluster at {cluster.scheduler_address} has no running workers (none joined within 0.5 s)"
        joining = threading.Timer(1.0, cluster.scale, [1])
        joining.start()
        try:
            graph = ShardedCountgraph(20, 1, 3, primes=SIZES, client=client, shards=2, local=1)
        finally:
            joining.join()
        assert graph._where[1] in running_workers(client)
        graph.consume_seqfile(reads)
        graph.save(tmp_path / "sharded.ct")
    assert (tmp_path / "sharded.ct").read_bytes() == (tmp_path / "one.ct").read_bytes()


def test_a_worker_lost_during_the_save_leaves_no_file(reads, tmp_path):
    with local_cluster(1) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        graph = ShardedCountgraph(20, 1, 3, primes=SIZES, client=client, shards=3, local=2)
        graph.consume_seqfile(reads)
        (tmp_path / "t.ct").write_bytes(b"the previous table")
        worker = list(running_workers(client))[0]
        os.kill(client.run(os.getpid)[worker], signal.SIGKILL)
        with pytest.raises(ShardError, match=r"shard 2 \(counters \d+\.\.\d+\) on tcp://"):
            graph.save(tmp_path / "t.ct")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.ct"]
    assert (tmp_path / "t.ct").read_bytes() == b"the previous table"


TABLE = ["-k", "20", "-N", "3", "-x", "5000"]


def _loaded_runs(tmp_path: Path, tag: str, table: Path, reads: Path, sharding: list) -> list:
    """normalize-by-median's and trim-low-abund's outputs with ``-l table`` (one configuration)."""
    out = tmp_path / tag
    out.mkdir()
    norm = kmerflow("normalize-by-median", "-l", table, "-k", "25", "-C", "20", "-o", out / "keep.fq",
                    "-R", out / "report.csv", "-s", out / "norm.ct", "--report-json", out / "n.json",
                    reads, *sharding)
    trim = kmerflow("trim-low-abund", "-l", table, "-C", "3", "-o", out / "trim.fq", "-s", out / "trim.ct",
                    "-T", out, reads, *sharding)
    files = [(out / n).read_bytes() for n in ("keep.fq", "report.csv", "norm.ct", "trim.fq", "trim.ct")]
    said = [line for line in norm.stderr.decode().splitlines() if "loading" in line.lower()]
    return files + [json.loads((out / "n.json").read_text())["summary"], said,
                    [line for line in trim.stderr.decode().splitlines() if "loading" in line]]


@pytest.mark.parametrize("shards", [1, 3])
def test_loadgraph_runs_match_the_one_process_run(cluster, tmp_path, shards):
    reads = genome_reads(tmp_path / "reads.fq", seed=13, n=800)
    kmerflow("load-into-counting", *TABLE, tmp_path / "t.ct", genome_reads(tmp_path / "first.fq", seed=14))
    one = _loaded_runs(tmp_path, "o", tmp_path / "t.ct", reads, [])
    sharded = _loaded_runs(tmp_path, "s", tmp_path / "t.ct", reads,
                           ["--scheduler", cluster.scheduler_address, "--shards", str(shards),
                            "--batch-kmers", "600"])
    assert sharded == one
    assert one[0].count(b"\n@") + 1 < reads.read_bytes().count(b"\n@") + 1
    assert any("-k/--ksize" in line for line in one[6]), one[6]


def test_loadgraph_of_a_blocked_table_matches_the_one_process_run(cluster, tmp_path):
    reads = genome_reads(tmp_path / "reads.fq", seed=15, n=800)
    kmerflow("load-into-counting", "--layout", "blocked", "--small-count", *TABLE, tmp_path / "t.kf",
             genome_reads(tmp_path / "first.fq", seed=16))
    runs = {}
    for tag, sharding in (("o", []), ("s", ["--scheduler", cluster.scheduler_address, "--shards", "2"])):
        out = tmp_path / tag
        out.mkdir()
        kmerflow("normalize-by-median", "-l", tmp_path / "t.kf", "-C", "10", "-o", out / "keep.fq",
                 "-s", out / "norm.kf", reads, *sharding)
        runs[tag] = [(out / n).read_bytes() for n in ("keep.fq", "norm.kf")]
    assert runs["s"] == runs["o"]


def test_loadgraph_files_the_shards_cannot_read_are_one_line(cluster, tmp_path):
    reads = genome_reads(tmp_path / "reads.fq", seed=17, n=100)
    kmerflow("load-into-counting", "--small-count", *TABLE, tmp_path / "small.ct", reads)
    for command in ("normalize-by-median", "trim-low-abund"):
        proc = kmerflow(command, "-l", tmp_path / "small.ct", "-o", tmp_path / "out.fq", reads,
                        "--scheduler", cluster.scheduler_address, check=False)
        err = proc.stderr.decode().strip()
        assert proc.returncode == 1 and len(err.splitlines()) == 1, err
        assert "small.ct" in err and "8-bit" in err
        assert not (tmp_path / "out.fq").exists()


def _filter_runs(tmp_path: Path, tag: str, table: Path, inputs: list, flags: list, sharding: list) -> dict:
    """filter-abund's outputs on the saved ``table`` in one configuration (run in a directory of
    its own, so that ``<input>.abundfilt`` lands there): every file written, stdout, the
    messages (less the one-process command's closing resource line, which no sharded command
    prints) and the ``--report-json`` summary."""
    out = tmp_path / tag
    out.mkdir()
    proc = kmerflow("filter-abund", *flags, "--report-json", "r.json", table, *inputs, *sharding, cwd=out)
    summary = json.loads((out / "r.json").read_text())["summary"]
    (out / "r.json").unlink()
    return {"files": {p.name: p.read_bytes() for p in sorted(out.iterdir())}, "stdout": proc.stdout,
            "said": [line for line in proc.stderr.decode().splitlines() if not line.startswith("[kmerflow] Version")],
            "summary": summary}


@pytest.fixture(scope="module")
def big_table(tmp_path_factory) -> Path:
    """A colliding table (-N 3 -x 5000) of reads at high coverage: counts past 255 (bigcount)."""
    where = tmp_path_factory.mktemp("big")
    path = where / "t.ct"
    kmerflow("load-into-counting", *TABLE, "--force", path, genome_reads(where / "first.fq", seed=21, n=8000))
    loaded = kf.Countgraph.load(str(path))
    genome_read = (where / "first.fq").read_text().split("\n")[1]
    assert max(loaded.get_kmer_counts(genome_read.replace("N", "A"))) > 255
    return path


@pytest.mark.parametrize("shards,local,paired,flags", [
    (1, 0, False, ["-C", "3"]),                                   # two inputs, <input>.abundfilt
    (2, 0, True, ["-V", "-Z", "300", "-C", "2", "-o", "filt.fq"]),  # medians past 255
    (3, 1, False, ["-C", "2", "-o", "filt.fq.gz"]),               # gzip by the name
    (2, 2, True, ["-V", "-C", "3", "--gzip", "-o", "-"]),          # every shard held here, stdout
])
def test_filter_abund_of_a_saved_table_matches_the_one_process_run(cluster, tmp_path, big_table, shards, local,
                                                                   paired, flags):
    # Reads of the table's genome (its first reads; their errors are the k-mers cut).
    inputs = [genome_reads(tmp_path / "a.fq", paired=paired, seed=21, n=700)]
    if "-o" not in flags:
        inputs.append(genome_reads(tmp_path / "b.fq", seed=21, n=300))
    one = _filter_runs(tmp_path, "o", big_table, inputs, flags, [])
    sharded = _filter_runs(tmp_path, "s", big_table, inputs, flags,
                           ["--scheduler", cluster.scheduler_address, "--shards", str(shards),
                            "--local-shards", str(local), "--batch-kmers", "600"])
    assert sharded == one
    assert one["said"][0] == f"loading countgraph: {big_table}"
    assert 0 < one["summary"]["truncated"] and 0 < one["summary"]["written"] < one["summary"]["reads"]


def test_filter_abund_on_shards_does_not_load_the_table_here(cluster, tmp_path, big_table, monkeypatch):
    """Run in this process (the command function): the filtering is the sharded native pass, and
    the table is never gathered nor loaded whole here."""
    import kmerflow.distributed.cli as shard_cli

    reads = genome_reads(tmp_path / "a.fq", seed=21, n=300)
    calls = []
    monkeypatch.setattr(ShardedCountgraph, "to_countgraph", lambda self: calls.append("gathered"))
    real = shard_cli._core.run_sharded_command
    monkeypatch.setattr(shard_cli._core, "run_sharded_command",
                        lambda argv, *a: calls.append(f"sharded {argv[1]}") or real(argv, *a))
    with distributed.Client(cluster, direct_to_workers=True) as client:
        shard_cli.run(["filter-abund", "-C", "3", "-o", str(tmp_path / "s.fq"), str(big_table), str(reads),
                       "--scheduler", cluster.scheduler_address, "--shards", "2"],
                      lambda *_: None, client=client)
    kmerflow("filter-abund", "-C", "3", "-o", tmp_path / "o.fq", big_table, reads)
    assert calls == ["sharded filter-abund"]
    assert (tmp_path / "s.fq").read_bytes() == (tmp_path / "o.fq").read_bytes()


def test_filter_abund_tables_the_shards_cannot_read_are_refused(cluster, tmp_path, big_table):
    """A gzip-compressed table, 4-bit counters and a nodegraph: exit 1, the loader's line naming
    the file, no output (the one-process command reads the first two in one process)."""
    reads = genome_reads(tmp_path / "reads.fq", seed=25, n=100)
    (tmp_path / "t.ct.gz").write_bytes(gzip.compress(big_table.read_bytes()))
    kmerflow("load-into-counting", "--small-count", *TABLE, tmp_path / "small.ct", reads)
    kmerflow("load-graph", "-k", "20", "-x", "1e4", tmp_path / "g.ht", reads)
    for table, why in (("t.ct.gz", "gzip-compressed"), ("small.ct", "8-bit"), ("g.ht", "nodegraph")):
        proc = kmerflow("filter-abund", "-o", tmp_path / "out.fq", tmp_path / table, reads,
                        "--scheduler", cluster.scheduler_address, check=False)
        err = proc.stderr.decode().strip().splitlines()
        assert proc.returncode == 1 and err[-1].startswith("kmerflow filter-abund: error: "), err
        assert table in err[-1] and why in err[-1], err
        assert not any(line.startswith("kmerflow") for line in err[:-1]), err
        assert not (tmp_path / "out.fq").exists()


def test_tables_saved_where_no_shard_can_write_are_gathered(reads, tmp_path):
    """A khmer table named ``.gz`` and a table saved to a FIFO are gathered into this process
    and saved by the client: the same bytes as the one-process table (decompressed)."""
    _one_process(reads, tmp_path / "one.ct")
    graph = ShardedCountgraph(20, 1, 3, primes=SIZES, shards=3)
    graph.consume_seqfile(reads)
    graph.save(tmp_path / "t.ct.gz")
    assert gzip.decompress((tmp_path / "t.ct.gz").read_bytes()) == (tmp_path / "one.ct").read_bytes()
    one = _blocked(reads, tmp_path / "one.kf", small=False)
    blocked = ShardedBlockedTable(20, 1000, 4, shards=2)
    blocked.consume_seqfile(reads)
    os.mkfifo(tmp_path / "fifo")
    read = {}

    def drain() -> None:
        read["bytes"] = (tmp_path / "fifo").read_bytes()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    blocked.save(tmp_path / "fifo")
    reader.join(timeout=60)
    assert read["bytes"] == one
