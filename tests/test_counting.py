"""Counting commands against khmer 3.0: pinned results (docs/khmer-compat.md §6.2) and live oracle runs
comparing saved tables, CSVs and info files byte for byte."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from conftest import GOLDEN, khmer, kmerflow

G = GOLDEN / "counting2"


def split_countgraph(path: Path) -> tuple[bytes, set[tuple[int, int]]]:
    """A type-1 countgraph as (header + tables, set of bigcount entries); other types whole."""
    raw = path.read_bytes()
    if raw[5] != 1:
        return raw, set()
    n_tables = raw[11]
    pos = 20
    for _ in range(n_tables):
        (size,) = struct.unpack_from("<Q", raw, pos)
        pos += 8 + size
    (n_big,) = struct.unpack_from("<Q", raw, pos)
    entries = {struct.unpack_from("<QH", raw, pos + 8 + 10 * i) for i in range(n_big)}
    assert len(raw) == pos + 8 + 10 * n_big
    return raw[:pos + 8], entries


def assert_same_table(ours: Path, theirs: Path) -> None:
    assert split_countgraph(ours) == split_countgraph(theirs)


def stderr(proc) -> str:
    return proc.stderr.decode(errors="replace")


# --- pinned results (docs/khmer-compat.md §6.2) ---------------------------------------------------------

def test_load_into_counting_small_table(tmp_path, data):  # row 9
    proc = kmerflow("load-into-counting", "-x", "1e3", "-N", "2", "-k", "20",
                    tmp_path / "out.ct", data / "test-abund-read-2.fa")
    assert "Total number of unique k-mers: 94" in stderr(proc)
    assert (tmp_path / "out.ct.info").read_text().splitlines()[-3] == "Total number of unique k-mers: 94"


@pytest.mark.parametrize("fmt", ["json", "tsv"])
def test_load_into_counting_summary(tmp_path, data, fmt):  # row 10
    reads = data / "test-abund-read-2.fa"
    kmerflow("load-into-counting", "-x", "1e7", "-N", "2", "-k", "20", "-s", fmt,
             tmp_path / "out.ct", reads)
    text = (tmp_path / f"out.ct.info.{fmt}").read_text()
    if fmt == "json":
        info = json.loads(text)
        assert (info["num_kmers"], info["num_reads"], info["fpr"]) == (95, 1001, 9.025048735197377e-11)
        assert info["mrinfo_version"] == "0.2.0" and info["files"] == [str(reads)]
    else:
        assert text.splitlines()[1] == f"out.ct\t0.000\t95\t1001\t{reads}"


def test_load_into_counting_multifile(tmp_path, data):  # row 11
    files = [data / "test-abund-read-2.fa"] * 11
    proc = kmerflow("load-into-counting", "-x", "1e7", "-N", "2", "-k", "20", tmp_path / "o.ct", *files)
    assert "Total number of unique k-mers: 95" in stderr(proc)
    assert (tmp_path / "o.ct.info").read_text().count("through ") == 11


@pytest.mark.parametrize("flags,last", [([], "1001,2,98,1.0"), (["-b"], "255,2,98,1.0")])
def test_abundance_dist(tmp_path, data, flags, last):  # row 12
    reads = data / "test-abund-read-2.fa"
    kmerflow("load-into-counting", "-k", "17", tmp_path / "g.ct", reads)
    kmerflow("abundance-dist", *flags, "-z", tmp_path / "g.ct", reads, tmp_path / "h.csv")
    rows = (tmp_path / "h.csv").read_bytes().split(b"\r\n")
    assert rows[1:] == [b"1,96,96,0.98", last.encode(), b""]


@pytest.mark.parametrize("threads", ["1", "2"])
def test_abundance_dist_single(tmp_path, data, threads):  # row 13
    proc = kmerflow("abundance-dist-single", "-x", "1e7", "-N", "2", "-k", "17", "-z", "-T", threads,
                    data / "test-abund-read-2.fa", tmp_path / "h.csv")
    assert "Total number of unique k-mers: 98" in stderr(proc)
    assert (tmp_path / "h.csv").read_bytes().split(b"\r\n")[1:3] == [b"1,96,96,0.98", b"1001,2,98,1.0"]


def test_count_median(tmp_path, data):  # row 14
    reads = data / "test-abund-read-2.fa"
    kmerflow("load-into-counting", "-k", "8", tmp_path / "g.ct", reads)
    kmerflow("count-median", tmp_path / "g.ct", reads, tmp_path / "m.csv")
    rows = (tmp_path / "m.csv").read_text().splitlines()
    assert "seq,1001,1001.0,0.0,18" in rows
    assert "895:1:37:17593:9954/1,1,103.803741455,303.702941895,114" in rows


def test_unique_kmers(tmp_path, data):  # row 20
    proc = kmerflow("unique-kmers", "-k", "20", "-e", "0.01",
                    data / "random-20-a.fa", data / "paired-mixed.fa", "-R", tmp_path / "r")
    err = stderr(proc)
    assert f"Estimated number of unique 20-mers in {data / 'random-20-a.fa'}: 3950" in err
    assert f"Estimated number of unique 20-mers in {data / 'paired-mixed.fa'}: 232" in err
    assert "Total estimated number of unique 20-mers: 4170" in err
    assert (tmp_path / "r").read_text().startswith("3950 20 (total)\n232 20 (total)\n4170 20 total\n")


@pytest.mark.parametrize("threads", ["1", "2"])
def test_load_graph_matches_khmer_files(tmp_path, data, threads):  # row 21
    kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "-T", threads,
             tmp_path / "out", data / "random-20-a.fa")
    assert (tmp_path / "out.info").read_text() == (G / "random-20-a.k20.info").read_text()
    assert (tmp_path / "out.tagset").read_bytes() == (G / "random-20-a.k20.tagset").read_bytes()
    assert hashlib.md5((tmp_path / "out").read_bytes()).hexdigest() == "4e4e5437d654b86d348e91f6298e18d9"


@pytest.mark.parametrize("threads", ["1", "2"])
def test_load_graph_tags_long_records_like_khmer(tmp_path, threads):
    # Records longer than a hashing slice (2^19 k-mers) are consumed in pieces: the tags of a
    # read must still be khmer's (a repeat brings back tagged k-mers).
    import random

    rng = random.Random(11)
    genome = bytes(rng.choices(b"ACGT", k=700_000))
    records = [genome + genome[:500_000], genome[100_000:]]
    fasta = tmp_path / "long.fa"
    fasta.write_bytes(b"".join(b">r%d\n%s\n" % (i, seq) for i, seq in enumerate(records)))
    args = ["-x", "1e7", "-N", "2", "-k", "25"]
    kmerflow("load-graph", *args, "-T", threads, tmp_path / "ours", fasta)
    khmer("load-graph", *args, tmp_path / "theirs", fasta)
    for suffix in ("", ".tagset", ".info"):
        ours, theirs = tmp_path / f"ours{suffix}", tmp_path / f"theirs{suffix}"
        assert ours.read_bytes() == theirs.read_bytes(), suffix
    # without a tagset the graph is filled by the counting owner threads: the same graph
    kmerflow("load-graph", "-n", *args, "-T", threads, tmp_path / "untagged", fasta)
    assert (tmp_path / "untagged").read_bytes() == (tmp_path / "theirs").read_bytes()
    assert (tmp_path / "untagged.info").read_bytes() == (tmp_path / "theirs.info").read_bytes()
    assert not (tmp_path / "untagged.tagset").exists()


def test_refuses_k_above_32(tmp_path, data):
    proc = kmerflow("load-into-counting", "-k", "33", tmp_path / "g.ct", data / "random-20-a.fa", check=False)
    assert proc.returncode != 0 and "<= 32" in stderr(proc)


# --- live oracle ----------------------------------------------------------------------------

CONFIGS = [
    ("test-abund-read-2.fa", ["-k", "12", "-x", "1e4"]),
    ("random-20-a.fa", ["-k", "20", "-x", "1e4", "-N", "3"]),
    ("random-20-a.fa", ["-k", "21", "-x", "1e5", "--small-count"]),
    ("simple-genome-reads.fa", ["-k", "31", "-x", "1e5"]),
    ("simple-genome-reads.fa", ["-k", "32", "-M", "1e6", "-N", "2"]),
    ("test-reads.fa", ["-k", "20", "-x", "1e6", "-N", "2"]),
    ("test-reads.fa", ["-k", "21", "-M", "4e5", "--small-count", "-f"]),
]


@pytest.mark.parametrize("name,flags", CONFIGS)
def test_load_into_counting_matches_khmer(tmp_path, data, name, flags):
    reads = data / name
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    theirs = khmer("load-into-counting", *flags, "-s", "tsv", "out.ct", reads, cwd=tmp_path / "a", check=False)
    # khmer ran single-threaded (its default); we use two threads: the table and the info files,
    # unique k-mer count included, are the same for any -T.
    ours = kmerflow("load-into-counting", *flags, "-T", "2", "-s", "tsv", "out.ct", reads,
                    cwd=tmp_path / "b", check=False)
    assert (ours.returncode == 0) == (theirs.returncode == 0), stderr(ours)
    if theirs.returncode != 0:
        # A too-full table: khmer leaves the table and out.ct.info behind; kmerflow writes nothing.
        assert list((tmp_path / "b").iterdir()) == []
        return
    assert_same_table(tmp_path / "b/out.ct", tmp_path / "a/out.ct")
    for side in ["out.ct.info", "out.ct.info.tsv"]:
        assert (tmp_path / "b" / side).read_bytes() == (tmp_path / "a" / side).read_bytes()


@pytest.mark.parametrize("name,flags", CONFIGS[:5])
def test_abundance_dist_single_and_count_median_match_khmer(tmp_path, data, name, flags):
    reads = data / name
    khmer("abundance-dist-single", *flags, "-f", "--savegraph", tmp_path / "k.ct", reads, tmp_path / "k.csv")
    kmerflow("abundance-dist-single", *flags, "-f", "-T", "2", "--savegraph", tmp_path / "o.ct", reads,
             tmp_path / "o.csv")
    assert (tmp_path / "o.csv").read_bytes() == (tmp_path / "k.csv").read_bytes()
    assert_same_table(tmp_path / "o.ct", tmp_path / "k.ct")
    if "--small-count" in flags:
        return
    khmer("abundance-dist", "-z", tmp_path / "k.ct", reads, tmp_path / "kd.csv")
    kmerflow("abundance-dist", "-z", tmp_path / "k.ct", reads, tmp_path / "od.csv")
    assert (tmp_path / "od.csv").read_bytes() == (tmp_path / "kd.csv").read_bytes()
    khmer("count-median", tmp_path / "k.ct", reads, tmp_path / "km.csv")
    kmerflow("count-median", tmp_path / "k.ct", reads, tmp_path / "om.csv")
    assert (tmp_path / "om.csv").read_bytes() == (tmp_path / "km.csv").read_bytes()


def test_threads_give_identical_tables(tmp_path, data):
    reads = data / "test-reads.fa"
    for t in ("1", "2"):
        kmerflow("load-into-counting", "-k", "20", "-x", "1e5", "-f", "-T", t, tmp_path / f"t{t}.ct", reads)
    assert (tmp_path / "t1.ct").read_bytes() == (tmp_path / "t2.ct").read_bytes()


def test_large_file_matches_khmer(tmp_path, data):
    reads = data / "test-large.fa.gz"
    flags = ["-k", "20", "-x", "2e7", "-N", "2"]
    khmer("load-into-counting", *flags, tmp_path / "k.ct", reads)
    kmerflow("load-into-counting", *flags, "-T", "3", tmp_path / "o.ct", reads)
    assert (tmp_path / "o.ct").read_bytes() == (tmp_path / "k.ct").read_bytes()
    # Every line of the info file, the unique k-mer count (adds that found an empty bin, which
    # depends on the order of adds when k-mers collide) included, is khmer's one-thread value.
    ours = (tmp_path / "o.ct.info").read_text().replace(str(tmp_path / "o.ct"), "")
    theirs = (tmp_path / "k.ct.info").read_text().replace(str(tmp_path / "k.ct"), "")
    assert ours == theirs and "Total number of unique k-mers: 7768759\n" in ours


def test_unique_kmers_matches_khmer_on_stream_and_report(tmp_path, data):
    reads = data / "test-abund-read-2.fq"
    theirs = khmer("unique-kmers", "-k", "17", "-S", "--diagnostics", "-R", tmp_path / "k", reads)
    ours = kmerflow("unique-kmers", "-k", "17", "-S", "--diagnostics", "-R", tmp_path / "o", reads)
    assert ours.stdout == theirs.stdout
    assert (tmp_path / "o").read_text() == (tmp_path / "k").read_text()



def genome_reads_fastq(path: Path, reads: int, length: int = 100) -> None:
    """Writes `reads` reads of `length` bases sampled from a random 100 kb genome to `path`,
    named like the reads of a read simulator (the bench data's shape: 258-byte records)."""
    import random

    rng = random.Random(7)
    genome = bytes(rng.choices(b"ACGT", k=100_000))
    qual = b"I" * length
    with path.open("wb") as out:
        for i in range(reads):
            start = rng.randrange(len(genome) - length)
            name = b"sim-genome_%07d_%07d_0_1_0_0_1:0:0_2:0:0_%06x/1" % (start, start + 400, i)
            out.write(b"@%s\n%s\n+\n%s\n" % (name, genome[start:start + length], qual))


def peak_rss(args: list, tmp_path: Path) -> int:
    """Peak memory in bytes of `kmerflow ARGS` (from --metrics)."""
    kmerflow(*args, "--metrics", tmp_path / "m.json")
    m = json.loads((tmp_path / "m.json").read_text())
    return m["peak_rss_bytes"]


def peak_rss_beyond(command: list[str], reads: Path, tmp_path: Path) -> float:
    """Runs a counting `command` on `reads` at two threads with 4 tables of ~1e6 counters and
    returns its peak memory beyond those tables (4 MB; the histogram's tracking filter adds
    0.5 MB) and beyond the program itself (a run on one tiny read: the installed command may
    be a Python interpreter around the library), in MiB."""
    tiny = tmp_path / "tiny.fa"
    tiny.write_text(">r\nACGTACGTAC\n")
    program = peak_rss(["readstats", tiny], tmp_path)
    args = [a.format(reads=reads, out=tmp_path / "out") for a in command]
    run = peak_rss([*args, "-N", "4", "-x", "1e6", "--force", "-T", "2"], tmp_path)
    return (run - program - 4.5e6) / 2**20


COUNTING_COMMANDS = [
    ["abundance-dist-single", "-k", "20", "{reads}", "{out}"],
    ["load-into-counting", "-k", "21", "{out}", "{reads}"],
    ["load-into-counting", "-k", "21", "--layout", "blocked", "{out}", "{reads}"],
]


@pytest.mark.parametrize("command", [
    *COUNTING_COMMANDS,
    ["normalize-by-median", "-k", "20", "{reads}", "-o", "{out}"],
])
def test_peak_memory_stays_within_64_mib_of_the_tables(tmp_path: Path, command: list[str]) -> None:
    # 52 MB of reads: batches in flight, parser chunks and k-mer hashes stay under 64 MiB.
    reads = tmp_path / "reads.fq"
    genome_reads_fastq(reads, 200_000)
    assert peak_rss_beyond(command, reads, tmp_path) <= 64


@pytest.mark.parametrize("command", COUNTING_COMMANDS)
def test_a_chromosome_long_record_is_hashed_in_bounded_slices(tmp_path: Path, command: list[str]) -> None:
    # One 20 Mbp record: it is held (and joined from its chunks), but its k-mer hashes are not
    # (8-12 bytes per base, 160-240 MB, when the record was hashed at once).
    import os

    length = 20_000_000
    bases = os.urandom(length).translate(bytes(b"ACGT"[i % 4] for i in range(256)))
    reads = tmp_path / "chr.fa"
    reads.write_bytes(b">chr\n" + b"\n".join(bases[i:i + 60] for i in range(0, length, 60)) + b"\n")
    assert peak_rss_beyond(command, reads, tmp_path) <= 2 * length / 2**20 + 64
