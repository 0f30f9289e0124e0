"""Blocked tables sharded over Dask workers (``--layout blocked``, kmerflow.distributed.blocked):
the same table file (and ``OUT.info``), kept reads and ``-R`` report as the one-process run with
the same table parameters, on generated reads in a small table (k-mers sharing lines, counters
saturating at 255 or 15), single and paired, at 1-3 shards, one and two workers, shards held
here and on workers; and the faults: a shard over its
worker's memory limit, a lost worker, an unreachable scheduler. One real LocalCluster (2
workers) serves the module."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from conftest import WORKER_MEMORY, kmerflow
from conftest import genome_reads as _genome_reads

distributed = pytest.importorskip("distributed")

from kmerflow import _core  # noqa: E402
from kmerflow.distributed import ShardError, running_workers  # noqa: E402
from kmerflow.distributed.blocked import ShardedBlockedTable  # noqa: E402
from kmerflow.distributed.cluster import local_cluster  # noqa: E402
from kmerflow.errors import ParameterError  # noqa: E402

#: The counter data of a kmerflow table file starts here.
DATA_OFFSET = 4096


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster, direct_to_workers=True) as c:
        yield c


def _count(tmp_path: Path, tag: str, reads: Path, table: list, sharding: tuple) -> tuple[bytes, bytes]:
    """load-into-counting's table file and ``OUT.info`` of one configuration (its own
    directory, so that both runs write the same names)."""
    out = tmp_path / tag
    out.mkdir()
    kmerflow("load-into-counting", "--layout", "blocked", *table, out / "t.kf", reads, *sharding)
    return (out / "t.kf").read_bytes(), (out / "t.kf.info").read_bytes()


@pytest.mark.parametrize(("shards", "table"), [
    (1, ["-k", "20", "-N", "4", "-x", "1000", "-f"]),
    (2, ["-k", "20", "-N", "3", "-x", "700", "-f"]),
    (3, ["-k", "20", "-N", "4", "-x", "1000", "-f"]),
    (3, ["-k", "25", "-N", "2", "-x", "2000", "-f", "--small-count"]),
])
def test_load_into_counting_matches_the_one_process_run(cluster, tmp_path, shards, table):
    reads = _genome_reads(tmp_path / "reads.fq", seed=shards)
    one = _count(tmp_path, "one", reads, table, ())
    sharded = _count(tmp_path, "sharded", reads, table,
                     ("--scheduler", cluster.scheduler_address, "--shards", str(shards),
                      "--batch-kmers", "700"))
    assert sharded == one
    saturated = 15 if "--small-count" in table else 255
    counters = one[0][DATA_OFFSET:]
    nibbles = counters if saturated == 255 else bytes(b >> s & 15 for b in counters for s in (0, 4))
    assert saturated in nibbles and 0 in nibbles


def test_one_worker_with_a_local_shard(tmp_path):
    reads = _genome_reads(tmp_path / "reads.fq", seed=5, n=800)
    table = ["-k", "21", "-N", "3", "-x", "900", "-f"]
    one = _count(tmp_path, "one", reads, table, ())
    sharded = _count(tmp_path, "sharded", reads, table,
                     ("--local-cluster", "1", "--shards", "3", "--local-shards", "1"))
    assert sharded == one


def _normalize(tmp_path: Path, tag: str, reads: Path, flags: list, sharding: tuple) -> list[bytes]:
    """normalize-by-median's kept reads, ``-s`` table and ``-R`` report of one configuration."""
    out = tmp_path / tag
    out.mkdir()
    kmerflow("normalize-by-median", "--layout", "blocked", *flags, "-o", out / "keep", "-s", out / "t.kf",
             "-R", out / "report", reads, *sharding)
    return [(out / name).read_bytes() for name in ("keep", "t.kf", "report")]


@pytest.mark.parametrize(("shards", "local", "batch", "flags", "paired"), [
    (1, 0, 600, ["-k", "20", "-N", "4", "-x", "1000", "-C", "40", "-f"], False),
    (2, 0, 600, ["-k", "20", "-N", "3", "-x", "700", "-C", "60", "-f"], True),
    (3, 0, 600, ["-k", "20", "-N", "4", "-x", "1000", "-C", "40", "-f"], True),
    (3, 0, 600, ["-k", "22", "-N", "2", "-x", "1500", "-C", "12", "-f", "--small-count"], False),
    (3, 2, 90, ["-k", "22", "-N", "3", "-x", "900", "-C", "14", "-f", "--small-count"], True),
])
def test_normalize_matches_the_one_process_run(cluster, tmp_path, shards, local, batch, flags, paired):
    """Batches of ``batch`` k-mers, two in flight at once: the second's values get the remote
    updates of the first, decided meanwhile (counters saturating at 15 or 255)."""
    reads = _genome_reads(tmp_path / "reads.fq", paired=paired, seed=shards + local, n=1200)
    one = _normalize(tmp_path, "one", reads, flags, ())
    sharded = _normalize(tmp_path, "sharded", reads, flags,
                         ("--scheduler", cluster.scheduler_address, "--shards", str(shards),
                          "--local-shards", str(local), "--batch-kmers", str(batch)))
    assert sharded == one
    kept = one[0].count(b"\n+\n")
    assert 0 < kept < reads.read_bytes().count(b"\n+\n")
    if "--small-count" in flags:
        assert 15 in bytes(b >> s & 15 for b in one[1][DATA_OFFSET:] for s in (0, 4))


def test_normalize_with_one_worker_and_a_local_shard(tmp_path):
    reads = _genome_reads(tmp_path / "reads.fq", seed=9, n=700)
    flags = ["-k", "20", "-N", "3", "-x", "600", "-C", "30", "-f"]
    one = _normalize(tmp_path, "one", reads, flags, ())
    sharded = _normalize(tmp_path, "sharded", reads, flags,
                         ("--local-cluster", "1", "--shards", "2", "--local-shards", "1"))
    assert sharded == one


def test_the_class_counts_and_saves_like_one_process(client, tmp_path):
    """``ShardedBlockedTable`` with shards here and on the workers: the saved file is the
    one-process command's; counts and statistics agree with the table held all here."""
    reads = _genome_reads(tmp_path / "r.fq", seed=11, n=900)
    one, _ = _count(tmp_path, "one", reads, ["-k", "20", "-N", "4", "-x", "800", "-f"], ())
    tables = [ShardedBlockedTable(20, 800, 4, client=client, shards=3, local=1, batch_kmers=500),
              ShardedBlockedTable(20, 800, 4, shards=2)]
    for table in tables:
        assert table.consume_seqfile(reads) == (900, sum(len(s) - 19 for s in reads.read_text().split("\n")[1::4]))
        table.save(tmp_path / "sharded.kf")
        assert (tmp_path / "sharded.kf").read_bytes() == one
    sharded, here = tables
    assert sharded.shard_bounds[-1] == here.shard_bounds[-1] == 800 * 4 // 64
    assert (sharded.n_occupied(), sharded.n_unique_kmers()) == (here.n_occupied(), here.n_unique_kmers())
    assert sharded.expected_fp_rate() == here.expected_fp_rate() > 0
    read = reads.read_text().split("\n")[1]
    assert sharded.get_median_count(read) == here.get_median_count(read)
    assert sharded.get(read[:20]) == here.get(read[:20]) > 0
    for table in tables:
        assert table.consume(read) == len(read) - 19
        table.add(read[:20])
    assert sharded.get_kmer_counts(read) == here.get_kmer_counts(read)
    with pytest.raises(ParameterError, match="20 bases"):
        sharded.get("ACGT")


def test_the_class_normalizes_like_one_process(client, tmp_path):
    """``normalize_file`` with shards here and on the workers, then counting on the same table
    (the last batch's updates sent first): the kept reads and table of the one-process run."""
    reads = _genome_reads(tmp_path / "r.fq", seed=13, n=900)
    one = _normalize(tmp_path, "one", reads, ["-k", "20", "-N", "4", "-x", "800", "-C", "30", "-f"], ())
    table = ShardedBlockedTable(20, 800, 4, client=client, shards=3, local=1, batch_kmers=500)
    with open(tmp_path / "sharded.keep", "wb") as out:
        n_reads, kept = table.normalize_file(reads, out, 30)
    assert (tmp_path / "sharded.keep").read_bytes() == one[0]
    assert 0 < kept == one[0].count(b"\n+\n") < n_reads == 900
    table.save(tmp_path / "sharded.kf")
    assert (tmp_path / "sharded.kf").read_bytes() == one[1]


def test_shard_over_the_memory_limit_is_refused(cluster, client, tmp_path, data):
    with pytest.raises(ParameterError, match="do not fit in worker"):
        ShardedBlockedTable(20, WORKER_MEMORY, 2, client=client, shards=2)
    proc = kmerflow("load-into-counting", "--layout", "blocked", "-M", "2G", tmp_path / "t.kf",
                    data / "random-20-a.fa", "--scheduler", cluster.scheduler_address, check=False)
    assert proc.returncode == 1 and b"do not fit in worker" in proc.stderr
    assert not (tmp_path / "t.kf").exists()


def test_lost_worker_names_the_shard():
    with local_cluster(1) as cluster, \
            distributed.Client(cluster) as client:
        table = ShardedBlockedTable(20, 1e4, 2, client=client, shards=2, local=1)
        table.consume("A" * 200 + "C" * 200)
        worker = list(running_workers(client))[0]
        os.kill(client.run(os.getpid)[worker], signal.SIGKILL)
        with pytest.raises(ShardError, match=r"shard 1 \(lines \d+\.\.\d+\) on tcp://"):
            table.get_kmer_counts("A" * 200 + "C" * 200)


def test_unreachable_scheduler_and_usage_errors(tmp_path, data):
    proc = kmerflow("load-into-counting", "--layout", "blocked", "-x", "1e6", tmp_path / "t.kf",
                    data / "random-20-a.fa", "--scheduler", "tcp://127.0.0.1:9", check=False)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in lines[0]
    assert not (tmp_path / "t.kf").exists()
    proc = kmerflow("normalize-by-median", "--small-count", "--local-cluster", "1",
                    data / "random-20-a.fa", check=False)
    assert proc.returncode == 2 and b"'--small-count'" in proc.stderr


def test_a_native_run_refuses_shards_of_the_other_layout(tmp_path):
    """The layout is the client's: a shard of the other layout given to a native run is refused
    with one error naming the mismatch, and a blocked shard refuses khmer's histogram."""
    reads = tmp_path / "r.fa"
    reads.write_text(">r\n" + "ACGT" * 10 + "\n")
    from kmerflow import _core as core
    blocked_shard = core.Shard.zeroed((20, 6400, 8, 2), 0, 100)
    with pytest.raises(ParameterError, match="not of its table's layout"):
        core.count_file_sharded(core.ShardClient(20, [1009, 1013], 1), [blocked_shard], None, str(reads), 1000)
    with pytest.raises(ValueError, match="blocked layout"):
        blocked_shard.histogram()


def test_a_native_run_of_a_command_without_one_is_a_usage_error(tmp_path):
    """The command line's own refusal is the only one: a command that has no sharded run given
    to ``_core.run_sharded_command`` is its usage error (exit 2), naming the command; nothing
    is written."""
    from kmerflow.errors import CommandError

    reads = tmp_path / "r.fa"
    reads.write_text(">r\n" + "ACGT" * 10 + "\n")
    argv = ["kmerflow", "count-median", str(tmp_path / "t.ct"), str(reads), str(tmp_path / "o.txt")]
    with pytest.raises(CommandError, match="count-median has no such sharded run") as refused:
        _core.run_sharded_command(argv, lambda *_: None, *ShardedBlockedTable(20, 800, 4).native_run())
    assert refused.value.code == 2 and sorted(os.listdir(tmp_path)) == ["r.fa"]


def test_look_up_runs_on_blocked_shards_match_the_table_held_here(client, tmp_path):
    """filter-abund-single (-V), abundance-dist-single and trim-low-abund run natively on
    blocked shards (the layout a parameter of the same run, ``_core.run_sharded_command``):
    shards held here and on the workers, batches of a few reads, give the outputs and summaries
    of the table held all here (their one-process commands have khmer's layout only)."""
    reads = _genome_reads(tmp_path / "r.fq", seed=17, n=900)

    def run(tag: str, **sharding) -> tuple:
        out = tmp_path / tag
        out.mkdir()
        commands = (["filter-abund-single", "-f", "-V", "-Z", "25", "-C", "20", reads, "-o", out / "f.fq"],
                    ["abundance-dist-single", "-f", "-z", reads, out / "h.csv"],
                    ["trim-low-abund", "-C", "20", reads, "-o", out / "t.fq", "--tempdir", tmp_path])
        summaries = []
        for argv in commands:
            table = ShardedBlockedTable(20, 800, 4, **sharding)
            summary, _, staged = _core.run_sharded_command(["kmerflow", *map(str, argv), "-k", "20"],
                                                           lambda *_: None, *table.native_run(), None)
            staged.commit()
            summaries.append(json.loads(summary))
        return summaries, {p.name: p.read_bytes() for p in out.iterdir()}

    here = run("here", shards=1)
    assert run("workers", client=client, shards=3, local=1, batch_kmers=500) == here
    (filtered, histogram, trimmed), files = here
    assert filtered["truncated"] > 0 and 0 < filtered["written"] and histogram["tally"]["reads"] == 900
    assert 0 < trimmed["reads_trimmed"] and files["t.fq"]
    assert int(files["h.csv"].decode().split()[-1].split(",")[0]) > 100


def test_the_class_filters_and_histograms_like_the_table_held_here(client, tmp_path):
    """``file_histogram`` and ``filter_file`` of a ``ShardedBlockedTable`` with shards here and on
    the workers (batches of a few reads) equal those of the table held all here, whose filtering
    and histogram are filter-abund-single's and abundance-dist-single's on the same table
    (``_core.run_sharded_command``)."""
    reads = _genome_reads(tmp_path / "r.fq", seed=19, n=900)

    def looked_up(tag: str, **sharding) -> tuple:
        table = ShardedBlockedTable(20, 800, 4, **sharding)
        table.consume_seqfile(reads)
        summary = table.filter_file(reads, tmp_path / f"{tag}.fq", cutoff=20, normalize_to=25)
        return table.file_histogram(reads).tolist(), summary, (tmp_path / f"{tag}.fq").read_bytes()

    here = looked_up("here", shards=1)
    assert looked_up("workers", client=client, shards=3, local=1, batch_kmers=500) == here
    histogram, summary, filtered = here
    assert sum(histogram[1:]) > 0 and max(i for i, n in enumerate(histogram) if n) > 20
    assert summary["truncated"] > 0 and summary["reads"] == 900
    for argv in (["filter-abund-single", "-V", "-Z", "25", "-C", "20", reads, "-o", tmp_path / "c.fq"],
                 ["abundance-dist-single", reads, tmp_path / "c.csv"]):
        _, _, staged = _core.run_sharded_command(["kmerflow", *map(str, argv), "-f", "-k", "20"],
                                                 lambda *_: None, *ShardedBlockedTable(20, 800, 4).native_run(), None)
        staged.commit()
    assert (tmp_path / "c.fq").read_bytes() == filtered
    rows = [line.split(",") for line in (tmp_path / "c.csv").read_text().split()[1:]]
    assert {int(a): int(n) for a, n, _, _ in rows if int(n)} == {a: n for a, n in enumerate(histogram) if n}
