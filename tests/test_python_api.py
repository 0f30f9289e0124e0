"""The Python API: record iterator, error mapping, tables, HLL, command functions.

Pinned values come from docs/khmer-compat.md (§1, §2, §6.2 rows 23-25) or from khmer 3.0 run live as the
oracle.
"""

from __future__ import annotations

import errno
import inspect
import logging
import os
import random
import re
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import kmerflow
from conftest import _in_ci
from conftest import kmerflow as run_kmerflow
from kmerflow.commands import command_argv

# --- records -----------------------------------------------------------------------------------

def test_fastq_gz_records(data):
    recs = list(kmerflow.open_reads(data / "test-reads.fq.gz"))
    assert len(recs) == 25000
    assert recs[0].name == "850:2:1:1126:16664/1"
    assert recs[0].sequence.startswith("CCATGTAGCGCCGCACACCT")
    assert recs[0].quality.startswith("##########")
    assert recs[-1].name == "850:2:1:3781:15748 1::FOO"
    assert sum(len(r.sequence) for r in recs) == 1900000
    assert all(len(r.quality) == len(r.sequence) for r in recs)
    assert all(isinstance(r.sequence, str) for r in recs[:10])


def test_fasta_records_have_no_quality(data):
    recs = list(kmerflow.open_reads(data / "random-20-a.fa"))
    assert len(recs) == 99
    assert recs[0].name == "35"
    assert all(r.quality is None for r in recs)


def test_batches_are_lists(data):
    batches = list(kmerflow.open_reads(data / "test-reads.fq.gz").batches())
    assert all(isinstance(b, list) and b for b in batches)
    assert sum(map(len, batches)) == 25000


def _shared_by_two_threads(make_iter, key):
    """The items two threads took from one iterator, each keyed; fails on a hang or an error."""
    it = make_iter()
    taken: list[list] = [[], []]
    errors: list[BaseException] = []

    def take(i):
        try:
            for item in it:
                taken[i].append(key(item))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hangs on the shared iterator"
    assert not errors, errors
    return taken


@pytest.fixture(scope="module")
def many_reads(tmp_path_factory):
    """40,000 FASTQ records named r0.. (several batches of about 1 MiB)."""
    path = tmp_path_factory.mktemp("reads") / "many.fq"
    rng = random.Random(5)
    with path.open("w") as out:
        for i in range(40000):
            seq = "".join(rng.choice("ACGT") for _ in range(60))
            out.write(f"@r{i}\n{seq}\n+\n{'I' * 60}\n")
    return path


def test_threads_sharing_one_reads_iterator_each_get_different_records(many_reads):
    names = [f"r{i}" for i in range(40000)]
    for run in range(20):
        taken = _shared_by_two_threads(lambda: iter(kmerflow.open_reads(many_reads)), lambda r: r.name)
        assert sorted(taken[0] + taken[1], key=lambda n: int(n[1:])) == names, run
        # Each thread's records come in file order.
        assert all(t == sorted(t, key=lambda n: int(n[1:])) for t in taken), run
    for run in range(20):
        taken = _shared_by_two_threads(lambda: kmerflow.open_reads(many_reads).batches(), len)
        assert sum(taken[0] + taken[1]) == 40000, run


def test_records_and_batches_of_one_reader_continue_each_other(many_reads):
    reads = kmerflow.open_reads(many_reads)
    records = iter(reads)
    first = [next(records).name for _ in range(3)]
    rest = [r.name for batch in reads.batches() for r in batch]
    assert first + rest == [f"r{i}" for i in range(40000)]


def _names(bundles):
    return [(a.name, b.name if b is not None else None) for a, b in bundles]


def test_broken_pairs(data):
    bundles = list(kmerflow.open_reads(data / "paired-mixed.fq", pairs=True))
    assert _names(bundles) == [
        ("895:1:37:17593:9954/1", "895:1:37:17593:9954/2"),
        ("850:2:1:1118:7944/1", None),
        ("850:2:1:1123:19958/1", None),
        ("895:1:37:17593:9954 1::foo", "895:1:37:17593:9954 2::foo"),
        ("895:1:37:17593:9954/1", "895:1:37:17593:9954/2"),
        ("850:2:1:1126:16664/1", None),
        ("850:2:1:1128:16434/1", None),
        ("850:2:1:1131:10632/1", None),
    ]


def test_single_mode_and_required_pairs(data):
    singles = list(kmerflow.open_reads(data / "paired-mixed.fq", pairs="single"))
    assert len(singles) == 11 and all(b is None for _, b in singles)
    with pytest.raises(kmerflow.KmerflowError):
        list(kmerflow.open_reads(data / "paired-mixed.fq", pairs="require"))
    with pytest.raises(ValueError):
        kmerflow.open_reads(data / "paired-mixed.fq", pairs="sometimes")


def test_two_file_pairs(data):
    bundles = list(kmerflow.open_reads(data / "paired.fq.1", mate=data / "paired.fq.2"))
    interleaved = list(kmerflow.open_reads(data / "paired.fq", pairs="require"))
    assert _names(bundles) == _names(interleaved)
    assert len(bundles) == 3  # paired.fq holds three pairs


def test_min_length_drops_short_reads(data):
    recs = list(kmerflow.open_reads(data / "test-abund-read-2.fa", min_length=19))
    assert [len(r.sequence) for r in recs] == [114]


# --- errors ------------------------------------------------------------------------------------

def test_missing_file_is_oserror(tmp_path):
    missing = tmp_path / "nope.fq"
    with pytest.raises(kmerflow.KmerflowIOError) as info:
        list(kmerflow.open_reads(missing))
    assert isinstance(info.value, OSError) and isinstance(info.value, kmerflow.KmerflowError)
    assert info.value.errno == errno.ENOENT
    assert str(missing) in str(info.value)


def test_os_errors_are_the_standard_subclasses(tmp_path):
    missing = tmp_path / "nope.fq"
    with pytest.raises(FileNotFoundError) as info:
        kmerflow.Countgraph(4, 1e3, 1).consume_seqfile(missing)
    assert isinstance(info.value, kmerflow.KmerflowIOError) and info.value.filename == str(missing)
    with pytest.raises(IsADirectoryError):
        list(kmerflow.open_reads(tmp_path))
    with pytest.raises(FileNotFoundError):
        kmerflow.Countgraph(4, 1e3, 1).save(tmp_path / "no" / "such" / "dir.ct")
    error = kmerflow.KmerflowIOError(errno.EACCES, "refused", "f")
    assert isinstance(error, PermissionError) and isinstance(error, kmerflow.KmerflowError)
    assert type(kmerflow.KmerflowIOError(errno.EIO, "I/O", "f")) is kmerflow.KmerflowIOError


def test_truncated_gzip_is_format_error(data):
    with pytest.raises(kmerflow.FormatError) as info:
        list(kmerflow.open_reads(data / "100-reads.fq.truncated.gz"))
    assert isinstance(info.value, ValueError)
    assert "100-reads.fq.truncated.gz" in str(info.value)


def test_truncated_fastq_is_format_error(data):
    with pytest.raises(kmerflow.FormatError):
        list(kmerflow.open_reads(data / "truncated.fq"))


# --- hashing (docs/khmer-compat.md §1, §2.2, §6.2 row 23) ----------------------------------------------------

def test_forward_hash_values():
    assert kmerflow.forward_hash("AAAA", 4) == 0
    assert kmerflow.forward_hash("CCCC", 4) == 170
    assert kmerflow.forward_hash("G" * 12, 12) == 11184810
    assert kmerflow.forward_hash("AAACGTATGACT", 12) == 184777
    assert kmerflow.forward_hash("GGTTGACGGGGCTCAGGGGGCGGCTGACTCCG", 32) == 13607885392109549066
    assert kmerflow.forward_hash_no_rc("TTTT", 4) == 85
    assert kmerflow.reverse_hash(184777, 12) in ("AAACGTATGACT", "AGTCATACGTTT")
    with pytest.raises(ValueError):
        kmerflow.forward_hash("ACGT", 5)


def test_murmur_values():
    assert kmerflow.hash_no_rc_murmur3("AAAA") == 5231866503566620412
    assert kmerflow.hash_murmur3("AAAA") == 526240128537019279
    assert kmerflow.hash_murmur3("CCCC") == 14391997331386449225
    assert kmerflow.hash_murmur3("ACGT") == 11375041580139570462
    assert kmerflow.reverse_complement("ACGTc") == "GACGT"
    assert kmerflow.reverse_complement("ACGTNRY") == "RYNACGT"   # IUPAC codes are nucleotides


@pytest.mark.parametrize("call", [
    lambda: kmerflow.reverse_complement("ACGTÄ"),
    lambda: kmerflow.reverse_complement("ACG T"),
    lambda: kmerflow.reverse_complement("AC1GT"),
    lambda: kmerflow.hash_murmur3("ACGÄ"),
    lambda: kmerflow.forward_hash("ACGÄ", 4),
    lambda: kmerflow.Countgraph(4, 1e3, 1).consume("ACGTACGTÄ"),
    lambda: kmerflow.Countgraph(4, 1e3, 1).get_kmers("ACGTACGTÄ"),
    lambda: kmerflow.Countgraph(4, 1e3, 1).trim_on_abundance("ACGTÄACGT", 1),
])
def test_non_nucleotides_are_value_errors(call):
    with pytest.raises(ValueError, match="non-nucleotide character"):
        call()


def test_primes():
    assert kmerflow.get_n_primes_near_x(7, 20) == [19, 17, 13, 11, 7, 5, 3]
    assert kmerflow.get_n_primes_near_x(4, 1e6) == [999983, 999979, 999961, 999959]
    assert kmerflow.is_prime(999983) and not kmerflow.is_prime(999981)
    with pytest.raises(ValueError):
        kmerflow.get_n_primes_near_x(1, 3)


# --- tables (docs/khmer-compat.md §2, §6.2 rows 24-25) --------------------------------------------------------

def test_countgraph_occupancy(data):
    cg = kmerflow.Countgraph(12, 1e5, 4)
    assert cg.hashsizes() == kmerflow.get_n_primes_near_x(4, 1e5)
    n_reads, _ = cg.consume_seqfile(data / "random-20-a.fa")
    assert n_reads == 99
    assert cg.n_occupied() == 3886


def test_nodegraph_occupancy(data):
    ng = kmerflow.Nodegraph(20, 100000, 1)
    ng.consume_seqfile(data / "random-20-a.fa")
    assert ng.n_occupied() == 3884
    ng3 = kmerflow.Nodegraph(20, 100000, 3)
    ng3.consume_seqfile(data / "random-20-a.fa")
    assert (ng3.n_occupied(), ng3.n_unique_kmers()) == (3884, 3960)


def test_counttable_kmer_hashes():
    s = "ATGGATATGGAGGACAAGTATATGGAGGACAAGTATATGGAGGACAAGTAT"
    ct = kmerflow.Counttable(33, 1e6, 4)
    assert ct.get_kmer_hashes(s[:33]) == [4743239192574154715]
    assert ct.get_kmer_hashes(s[:34])[1] == 2122462908541313313


def test_bigcount():
    cg = kmerflow.Countgraph(4, 1000, 2)
    for _ in range(1000):
        cg.add("ACGA")
    assert cg.get("ACGA") == 255
    cg.set_use_bigcount(True)
    assert cg.get_use_bigcount()
    big = kmerflow.Countgraph(4, 1000, 2)
    big.set_use_bigcount(True)
    for _ in range(70000):
        big.count("ACGA")
    assert big.get("ACGA") == 65535
    with pytest.raises(ValueError):
        kmerflow.SmallCountgraph(4, 1000, 2).set_use_bigcount(True)


def test_per_sequence_statistics():
    cg = kmerflow.Countgraph(4, 1000, 2)
    cg.consume("ACGAT")        # k-mers ACGA, CGAT
    cg.add("CGAT")
    cg.add("CGAT")
    assert cg.get_kmer_counts("ACGAT") == [1, 3]
    assert cg.get_median_count("ACGAT") == (3, 2.0, 1.0)
    assert cg.median_at_least("ACGAT", 3)
    assert not cg.median_at_least("ACGAT", 4)
    assert cg.trim_on_abundance("ACGAT", 2) == ("", 0)
    assert cg.trim_on_abundance("ACGA", 1) == ("", 0)  # a single k-mer always trims to 0
    cg.add("GATT")                     # ACGATT: counts [1, 3, 1]
    assert [cg.trim_below_abundance("ACGATT", c) for c in (0, 1, 3)] == [
        ("", 0), ("ACGA", 4), ("ACGATT", 6)]
    assert cg.trim_on_abundance("ACGATT", 1) == ("ACGATT", 6)
    assert cg.get_kmers("ACGAT") == ["ACGA", "CGAT"]
    assert cg.hash("ACGA") == kmerflow.forward_hash("ACGA", 4)
    assert cg.get(cg.hash("CGAT")) == 3
    with pytest.raises(ValueError):
        cg.consume("ACG")
    with pytest.raises(TypeError):
        cg.get(1.5)


def test_two_bit_tables_refuse_large_k():
    with pytest.raises(ValueError):
        kmerflow.Countgraph(33, 1e5, 4)
    with pytest.raises(ValueError):
        kmerflow.Nodegraph(40, 1e5, 4)
    assert kmerflow.Counttable(40, 1e5, 4).ksize() == 40


def test_save_load_round_trip(data, tmp_path):
    for cls in (kmerflow.Countgraph, kmerflow.SmallCountgraph, kmerflow.Nodegraph):
        table = cls(20, 1e5, 3)
        table.consume_seqfile(data / "random-20-a.fa")
        path = tmp_path / f"{cls.__name__}.kf"
        table.save(path)
        loaded = cls.load(path)
        assert type(loaded) is cls
        assert loaded.ksize() == 20 and loaded.hashsizes() == table.hashsizes()
        assert loaded.n_occupied() == table.n_occupied()
        for a, b in zip(loaded.get_raw_tables(), table.get_raw_tables(), strict=False):
            assert np.array_equal(a, b)
    with pytest.raises(ValueError):
        kmerflow.Countgraph.load(tmp_path / "Nodegraph.kf")


def _khmer_python(code: str) -> None:
    try:
        subprocess.run(["/usr/bin/python3", "-c", "import khmer"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        if _in_ci():
            raise AssertionError("khmer is not installed; .ci/run must install it") from None
        pytest.skip("khmer (Debian package) is not installed")
    subprocess.run(["/usr/bin/python3", "-c", code], check=True, capture_output=True)


def test_load_khmer_saved_countgraph(data, tmp_path):
    saved = tmp_path / "khmer.ct"
    reads = data / "random-20-a.fa"
    _khmer_python(f"import khmer; cg = khmer.Countgraph(12, 1e4, 3); cg.set_use_bigcount(True); "
                  f"cg.consume_seqfile({str(reads)!r}); cg.save({str(saved)!r})")
    ours = kmerflow.Countgraph(12, 1e4, 3)
    ours.consume_seqfile(reads)
    loaded = kmerflow.Countgraph.load(saved)
    assert loaded.get_use_bigcount()
    assert loaded.hashsizes() == ours.hashsizes()
    for a, b in zip(loaded.get_raw_tables(), ours.get_raw_tables(), strict=False):
        assert np.array_equal(a, b)
    seq = next(iter(kmerflow.open_reads(reads))).sequence
    assert loaded.get_kmer_counts(seq) == ours.get_kmer_counts(seq)


def test_abundance_distribution_matches_khmer(data, tmp_path):
    reads = data / "test-abund-read-2.fa"
    out = tmp_path / "dist.txt"
    _khmer_python(
        f"import khmer; cg = khmer.Countgraph(17, 1e5, 2); cg.set_use_bigcount(True); "
        f"cg.consume_seqfile({str(reads)!r}); ng = khmer.Nodegraph(17, 1, 1, "
        f"primes=cg.hashsizes()); d = cg.abundance_distribution({str(reads)!r}, ng); "
        f"open({str(out)!r}, 'w').write(' '.join(map(str, d)))")
    cg = kmerflow.Countgraph(17, 1e5, 2)
    cg.set_use_bigcount(True)
    cg.consume_seqfile(reads)
    tracking = kmerflow.Nodegraph(17, 1, 1, primes=cg.hashsizes())
    dist = cg.abundance_distribution(reads, tracking)
    assert len(dist) == 65535
    assert dist == [int(x) for x in out.read_text().split()]
    assert dist[1] == 96 and dist[1001] == 2


def test_raw_tables_are_copies():
    cg = kmerflow.Countgraph(4, 1, 1, primes=[11, 13])
    cg.add("AAAA")                      # hash 0 → bin 0 of both tables
    raw = cg.get_raw_tables()
    assert [a.shape for a in raw] == [(11,), (13,)] and raw[0].dtype == np.uint8
    assert raw[0][0] == 1 and raw[1][0] == 1
    cg.add("AAAA")                      # the copies do not change with the table ...
    assert raw[0][0] == 1 and cg.get_raw_tables()[0][0] == 2
    raw[0][0] = 9                       # ... nor the table with the copies
    assert cg.get("AAAA") == 2


def test_raw_tables_while_another_thread_counts():
    """Copies taken while another thread counts are snapshots between two states."""
    cg = kmerflow.Countgraph(12, 1e5, 2)
    seq = "ACGTTGCAAGGCTTACCGATCGGATCCAT" * 40
    done = threading.Event()

    def count() -> None:
        for _ in range(200):
            cg.consume(seq)
        done.set()

    worker = threading.Thread(target=count)
    worker.start()
    totals = []
    while not done.is_set():
        totals.append(int(cg.get_raw_tables()[0].sum()))
    worker.join()
    assert totals == sorted(totals)     # counts only grow
    assert int(cg.get_raw_tables()[0].sum()) >= max(totals, default=0)


def test_threads_share_one_table(data):
    path = data / "test-reads.fq.gz"
    serial = kmerflow.Countgraph(20, 1e6, 4)
    for _ in range(2):
        serial.consume_seqfile(path)
    shared = kmerflow.Countgraph(20, 1e6, 4)
    results = []
    threads = [threading.Thread(target=lambda: results.append(shared.consume_seqfile(path)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [(25000, 1425000)] * 2
    for a, b in zip(shared.get_raw_tables(), serial.get_raw_tables(), strict=False):
        assert np.array_equal(a, b)


def test_hll(data):
    hll = kmerflow.HLLCounter(0.01, 20)
    hll.consume_seqfile(data / "random-20-a.fa")
    assert hll.estimate_cardinality() == 3950 == len(hll)
    other = kmerflow.HLLCounter(0.01, 20)
    other.consume_seqfile(data / "paired-mixed.fa")
    assert other.estimate_cardinality() == 232
    hll.merge(other)
    assert hll.estimate_cardinality() == 4170
    with pytest.raises(ValueError):
        hll.add("ACGT")


def test_hll_shared_by_four_threads(data):
    """Four threads consuming into one counter give the one-thread estimate (no "Already
    borrowed", no lost updates)."""
    files = [data / name for name in ("random-20-a.fa", "paired-mixed.fa", "test-reads.fa",
                                      "test-abund-read-2.fa")]
    alone = kmerflow.HLLCounter(0.01, 20)
    for path in files:
        alone.consume_seqfile(path)
        with open(path) as f:
            for line in f:
                if not line.startswith(">") and len(line) > 21:
                    alone.consume_string(line.strip().upper())
    shared = kmerflow.HLLCounter(0.01, 20)
    errors = []

    def work(path):
        try:
            shared.consume_seqfile(path)
            with open(path) as f:
                for line in f:
                    if not line.startswith(">") and len(line) > 21:
                        shared.consume_string(line.strip().upper())
            shared.merge(shared)
        except Exception as e:          # collected: the test fails on any
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,)) for p in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert shared.estimate_cardinality() == alone.estimate_cardinality() > 3950


# --- command functions -------------------------------------------------------------------------

def test_tables_beyond_memory_are_refused_before_allocation():
    for make in (lambda: kmerflow.Countgraph(20, 1e3, 2**40), lambda: kmerflow.Nodegraph(20, 1e18, 4),
                 lambda: kmerflow.Counttable(20, 1e3, 2**40), lambda: kmerflow.Countgraph(20, 1, 2**62)):
        with pytest.raises(kmerflow.ParameterError, match="does not fit in .*starting_size and n_tables"):
            make()
    with pytest.raises(kmerflow.ParameterError, match="number of tables must be 1..=255"):
        kmerflow.Countgraph(20, 1e6, 300)


def test_consuming_a_long_sequence_needs_little_memory(tmp_path):
    """A 25 Mbp string is counted in pieces: the peak grows by far less than its ~40 bytes a
    base of hashes and bins (1 GB), and the counts equal those of one read at a time."""
    code = """if True:
        import random, resource, kmerflow
        rng = random.Random(3)
        seq = "".join(rng.choices("ACGT", k=25_000_000))
        table = kmerflow.Countgraph(20, 1e6, 4)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        n = table.consume(seq)
        print(n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
        piece = 200_000
        check = kmerflow.Countgraph(20, 1e6, 4)
        assert sum(check.consume(seq[i:i + piece + 19]) for i in range(0, len(seq) - 19, piece)) == n
        assert all((a == b).all() for a, b in zip(check.get_raw_tables(), table.get_raw_tables()))
        assert table.get(seq[12_345_678:12_345_698]) >= 1
    """
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    n, grown_kb = map(int, proc.stdout.split())
    assert n == 25_000_000 - 19
    assert grown_kb < 30_000, f"peak grew by {grown_kb} kB"


def test_unroute_out_of_range_is_a_value_error():
    order = np.array([5], dtype=np.uint32)
    with pytest.raises(ValueError, match="position 5"):
        kmerflow._core.ShardClient(20, [101], 1).kmer_counts(np.array([1], dtype=np.uint64), order,
                                                             [np.array([1], dtype=np.uint8)])


@pytest.mark.parametrize("name", ["--savegraph=x.ct", "--help", "-o"])
def test_inputs_beginning_with_a_dash_are_file_names(small_fasta, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        kmerflow.normalize_by_median([name, small_fasta], ksize=17, output=tmp_path / "out.fq")
    assert info.value.filename == name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([small_fasta.name])
    assert command_argv("readstats", ["-", name]) == ["readstats", "--", "-", name]
    assert command_argv("readstats", ["-"]) == ["readstats", "-"]


def test_command_argv():
    argv = command_argv("normalize-by-median", ["a.fq", "b.fq"], ksize=20, cutoff=None,
                        paired=True, force_single=False, unpaired_reads="u.fq",
                        max_tablesize=1e6)
    assert argv == ["normalize-by-median", "--ksize", "20", "--paired", "--unpaired-reads",
                    "u.fq", "--max-tablesize", "1000000.0", "a.fq", "b.fq"]
    assert command_argv("sample-reads-randomly", ["a.fq"], num_samples=2, num_reads=[5]) == \
        ["sample-reads-randomly", "--samples", "2", "--num_reads", "5", "a.fq"]
    with pytest.raises(TypeError, match="one value"):
        command_argv("normalize-by-median", [], report=["r1", "r2"])
    with pytest.raises(TypeError, match="switch"):
        command_argv("normalize-by-median", [], paired="yes")
    with pytest.raises(ValueError, match="no kmerflow command"):
        command_argv("no-such-command")


def test_every_command_has_a_function():
    for name in ("fastq_to_fasta", "interleave_reads", "split_paired_reads",
                 "extract_paired_reads", "extract_long_sequences", "sample_reads_randomly",
                 "readstats", "load_into_counting", "abundance_dist", "abundance_dist_single",
                 "normalize_by_median", "filter_abund", "filter_abund_single", "trim_low_abund",
                 "count_median", "unique_kmers", "load_graph"):
        fn = getattr(kmerflow, name)
        assert fn.__doc__ and len(inspect.signature(fn).parameters) >= 2


def test_readstats_function(data, tmp_path):
    out = tmp_path / "stats.csv"
    kmerflow.readstats([data / "test-sweep-reads.fq"], output=out, csv=True)
    assert out.read_text().splitlines()[1].startswith("358,5,71.6,")


@pytest.mark.parametrize("call", [
    lambda missing, out: kmerflow.readstats([missing]),
    lambda missing, out: kmerflow.normalize_by_median([missing], ksize=17, output=out),
    lambda missing, out: kmerflow.load_into_counting(out, [missing], ksize=17),
    lambda missing, out: kmerflow.filter_abund(missing, [missing], output=out),
], ids=["readstats", "normalize-by-median", "load-into-counting", "filter-abund"])
def test_a_missing_input_raises_file_not_found(tmp_path, call):
    """As the rest of the Python API: an OSError subclass naming the file, not a CommandError."""
    missing, out = tmp_path / "missing.fq", tmp_path / "out"
    with pytest.raises(FileNotFoundError) as info:
        call(missing, out)
    assert isinstance(info.value, kmerflow.KmerflowIOError)
    assert info.value.filename == str(missing)
    assert "missing.fq" in str(info.value) and "kmerflow " in str(info.value)
    assert not out.exists()


def test_a_failing_command_raises_command_error(small_fasta, tmp_path):
    with pytest.raises(kmerflow.CommandError) as info:
        kmerflow.load_into_counting(tmp_path / "t.ct", [small_fasta], ksize=17, max_tablesize=100)
    assert info.value.code == 1
    # The error is the early stop's (naming the file and read) or, where the counting threads
    # had not yet counted the one batch when it was checked, the final check's.
    assert str(info.value).startswith("kmerflow load-into-counting: error: ")
    assert "the graph structure is too small" in str(info.value)


def test_usage_error_raises_with_clap_message():
    with pytest.raises(kmerflow.CommandError) as info:
        kmerflow.run("readstats", ["x.fq"], threads=0)
    assert info.value.code == 2
    assert "--threads" in str(info.value)


def test_unknown_keyword_is_a_type_error(data):
    with pytest.raises(TypeError, match="nkeep"):
        kmerflow.fastq_to_fasta(data / "paired-mixed.fq", nkeep=True)


COMMAND_FUNCTIONS = {name.replace("-", "_"): name for name in kmerflow.commands.definitions()}


def _help_flags(command: str) -> set[str]:
    """The long flags `kmerflow COMMAND --help` lists (aliases and --help left out)."""
    proc = run_kmerflow(command, "--help", check=False)
    assert proc.returncode == 0, f"`kmerflow {command} --help` failed: {proc.stderr.decode()}"
    flags = re.findall(r"^\s+(?:-\w, )?--([\w-]+)", proc.stdout.decode(), re.MULTILINE)
    return set(flags) - {"help", "version"}


def _help_positionals(command: str) -> int:
    """The number of positional arguments of the usage line of `kmerflow COMMAND --help`."""
    usage = run_kmerflow(command, "--help").stdout.decode().split("usage:")[1].splitlines()[0]
    # Required options (`--output <OUTPUT>`) are shown in the usage line too.
    usage = re.sub(r"--[\w-]+ <\w+>", "", usage.split("[OPTIONS]")[-1])
    return len(re.findall(r"(?:<\w+>|\[\w+\])(?:\.\.\.)?(?=\s|$)", usage))


def test_every_command_has_a_function_and_no_more():
    assert set(COMMAND_FUNCTIONS) == {
        "fastq_to_fasta", "interleave_reads", "split_paired_reads", "extract_paired_reads",
        "extract_long_sequences", "sample_reads_randomly", "readstats", "load_into_counting",
        "abundance_dist", "abundance_dist_single", "normalize_by_median", "normalize", "filter_abund",
        "filter_abund_single", "trim_low_abund", "count_median", "unique_kmers", "load_graph",
        "partition_graph", "merge_partitions", "annotate_partitions", "extract_partitions",
        "do_partition", "filter_stoptags", "make_initial_stoptags", "find_knots"}


@pytest.mark.parametrize("name", sorted(COMMAND_FUNCTIONS))
def test_function_keywords_are_the_flags(name):
    """Per command: every flag of --help has a keyword of the same name, every keyword (and
    alias) is a flag, and the positional parameters are the command's."""
    command = COMMAND_FUNCTIONS[name]
    fn = getattr(kmerflow, name)
    params = inspect.signature(fn).parameters.values()
    keywords = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    flags = {f.replace("-", "_") for f in _help_flags(command)}
    aliases = {a for a, k in kmerflow.commands.ALIASES.items() if k in flags}
    assert keywords - aliases == flags, f"{command}: keywords without flag "\
        f"{sorted(keywords - aliases - flags)}, flags without keyword {sorted(flags - keywords)}"
    positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert len(positional) == _help_positionals(command)
    assert fn.__doc__


@pytest.fixture
def small_fasta(tmp_path):
    """40 random 60-base reads, each twice."""
    rng = random.Random(7)
    path = tmp_path / "small.fa"
    reads = ["".join(rng.choice("ACGT") for _ in range(60)) for _ in range(40)]
    path.write_text("".join(f">r{i}\n{s}\n" for i, s in enumerate(reads * 2)))
    return path


def test_keywords_follow_the_definitions(small_fasta, tmp_path):
    """layout=, huge_pages=, metrics= (missing from the hand-written map) work; mate= is refused
    by a command without --mate."""
    out = tmp_path / "t.ct"
    kmerflow.load_into_counting(out, small_fasta, ksize=20, max_tablesize=1e5,
                                n_tables=2, layout="khmer", huge_pages="off",
                                metrics=tmp_path / "m.json", quiet=True)
    assert out.exists()
    with pytest.raises(TypeError, match="mate"):
        kmerflow.load_into_counting(out, small_fasta, mate=small_fasta)


def test_commands_return_their_summary(small_fasta, tmp_path):
    result = kmerflow.normalize_by_median([small_fasta], ksize=17, cutoff=1,
                                          output=tmp_path / "out.fa", quiet=True)
    assert isinstance(result, kmerflow.RunResult) and result.command == "normalize-by-median"
    assert result.summary["kept"] == len(list(kmerflow.open_reads(tmp_path / "out.fa"))) > 0
    assert result.summary["total"] >= result.summary["kept"]
    assert result.to_dict()["summary"] == result.summary
    assert result.summary == {**result.summary, "total": 80, "kept": 40}
    assert result.argv[0] == "--ksize" and result.argv[-1] == str(small_fasta)
    stats = kmerflow.readstats([small_fasta], output=tmp_path / "s.txt")
    assert stats.command == "readstats" and stats.summary[0]["seqs"] == 80


def test_messages_go_to_logging_and_warnings(small_fasta, tmp_path, caplog):
    """Informational lines are logged (INFO), warnings are Python warnings, nothing is printed."""
    missing = tmp_path / "missing.fa"
    caplog.set_level(logging.INFO, logger="kmerflow")
    with pytest.warns(kmerflow.KmerflowWarning) as caught:
        result = kmerflow.normalize_by_median([small_fasta, missing], force=True, ksize=17,
                                              output=tmp_path / "out.fa")
    assert "** WARNING: Finished with errors!" in [str(w.message) for w in caught]
    assert {w.filename for w in caught} == {__file__}  # the line that called the command
    assert result.summary["skipped_files"] == [str(missing)]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.startswith("DONE with") for m in infos)
    assert any(str(missing) in m for m in errors)


def test_a_sharded_runs_warnings_point_at_its_caller(tmp_path):
    """A sharded run's warnings come from deeper below the command function than a one-process
    run's, and are still attributed to the line that called it (what warning filters by module
    and the printed source line rely on)."""
    pytest.importorskip("distributed")
    (tmp_path / "empty.fq").write_bytes(b"")
    with pytest.warns(kmerflow.KmerflowWarning, match="empty") as caught:
        kmerflow.normalize_by_median([tmp_path / "empty.fq"], output=tmp_path / "out.fq",
                                     local_cluster=1, shards=2)
    assert {w.filename for w in caught} == {__file__}


def test_messages_reach_python_while_the_command_runs(small_fasta, tmp_path):
    """Each message is handed to logging on the calling thread as it is emitted: the first ones
    arrive before the output (renamed into place at the end) exists."""
    table = tmp_path / "out.fa"
    seen: list[tuple[str, bool, bool]] = []

    class Probe(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append((record.getMessage(), table.exists(),
                         threading.current_thread() is threading.main_thread()))

    logger = logging.getLogger("kmerflow")
    probe, level = Probe(), logger.level
    logger.addHandler(probe)
    logger.setLevel(logging.INFO)
    try:
        kmerflow.normalize_by_median([small_fasta], ksize=17, max_tablesize=1e6, report_frequency=20,
                                     output=table)
    finally:
        logger.removeHandler(probe)
        logger.setLevel(level)
    assert table.exists() and len(seen) > 3
    assert [m for m, written, _ in seen if not written][:2] == ["making countgraph",
                                                               "... kept 20 of 20 or 100.0% sofar"]
    assert all(main for _, _, main in seen)


def test_an_exception_from_the_message_callback_stops_the_run(small_fasta, tmp_path):
    """A warning filter set to "error" (or a failing callback) cancels the run: it stops and
    leaves no output."""
    out = tmp_path / "out.fa"
    seen: list[str] = []

    def refuse(level: str, text: str) -> None:
        seen.append(text)
        raise RuntimeError(f"stop at {text!r}")

    argv = ["normalize-by-median", "-k", "17", "-x", "1e6", "--report-frequency", "20", "-o", str(out),
            str(small_fasta)]
    with pytest.raises(RuntimeError, match="stop at 'making countgraph'"):
        kmerflow._core.run_command(argv, refuse)
    assert seen == ["making countgraph"] and not out.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error", kmerflow.KmerflowWarning)
        with pytest.raises(kmerflow.KmerflowWarning, match="Finished with errors"):
            kmerflow.normalize_by_median([small_fasta, tmp_path / "missing.fa"], force=True,
                                         ksize=17, output=out)


INTERRUPTED = """
import os, signal, sys, threading, time
import kmerflow
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even if started ignoring it
fifo = sys.argv[1]
writer = os.open(fifo, os.O_RDWR)               # {head!r}, then a stalled input (or output)
os.write(writer, {head!r})
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    {call}
except KeyboardInterrupt:
    print(f"interrupted after {{time.monotonic() - started:.2f}} s")
"""


RECORD = b"@r1\n" + b"ACGT" * 10 + b"\n+\n" + b"I" * 40 + b"\n"


@pytest.mark.parametrize("call, head", [
    ("kmerflow.readstats([fifo])", RECORD),
    ("kmerflow.Countgraph(20, 1e5, 2).consume_seqfile(fifo)", RECORD),
    ("kmerflow.HLLCounter().consume_seqfile(fifo)", RECORD),
    ("kmerflow.Countgraph.load(fifo)", b"OXLI"),                 # a table that stops after its magic
    ("kmerflow.Countgraph(20, 1e6, 2).save(fifo)", b""),         # 2 MB into a FIFO nobody reads
    ("kmerflow.add_tables([fifo], fifo + '.sum')", b"OXLI"),
])
def test_ctrl_c_interrupts_a_running_call(tmp_path, call, head):
    fifo = tmp_path / "stalled.fq"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED.format(call=call, head=head), str(fifo)],
                          capture_output=True, timeout=30, text=True)
    assert proc.returncode == 0, proc.stderr
    seconds = float(proc.stdout.split()[2])
    assert 0.5 <= seconds < 2.0, proc.stdout


def test_command_functions_document_every_parameter_and_its_default():
    """help(kmerflow.normalize_by_median) lists each keyword with its flag, its help and the
    command's default, taken from the command line's own declarations."""
    doc = kmerflow.normalize_by_median.__doc__
    assert doc.startswith("Digital normalization")
    assert "ksize (--ksize, value; default 32)" in doc  # khmer's default k
    assert "cutoff (--cutoff, value; default 20)" in doc
    assert "paired (--paired, switch)\n    Require every read to be paired" in doc
    assert "mate (--mate, list)" in doc
    assert "num_samples" not in kmerflow.sample_reads_randomly.__doc__  # aliases not listed twice
