"""Single-strand hashing (``--single-strand``, ``single_strand=True``): a k-mer and its reverse
complement are different molecules (stranded RNA-seq), counted apart; tables record it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_partition import read_part

import kmerflow
from conftest import khmer
from conftest import kmerflow as run_kmerflow

COMPLEMENT = str.maketrans("ACGT", "TGCA")


def revcomp(seq: str) -> str:
    return seq.translate(COMPLEMENT)[::-1]


def random_seq(length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(length))


def both_strands(path: Path, seq: str) -> Path:
    """PATH written as a FASTA file of SEQ (read ``fwd``) and its reverse complement (``rev``)."""
    path.write_text(f">fwd\n{seq}\n>rev\n{revcomp(seq)}\n")
    return path


@pytest.fixture
def stranded_reads(tmp_path) -> Path:
    """Two reads of one molecule on one strand, then its reverse complement (another molecule
    of single-stranded data), and an unrelated read."""
    fwd, other = random_seq(80, 1), random_seq(80, 2)
    path = tmp_path / "stranded.fa"
    path.write_text(f">f1\n{fwd}\n>f2\n{fwd}\n>rc\n{revcomp(fwd)}\n>other\n{other}\n")
    return path


TABLE_CLASSES = [kmerflow.Countgraph, kmerflow.SmallCountgraph, kmerflow.Nodegraph,
                 kmerflow.Counttable, kmerflow.SmallCounttable, kmerflow.Nodetable]


@pytest.mark.parametrize("cls", TABLE_CLASSES, ids=lambda c: c.__name__)
def test_kmer_and_reverse_complement_count_apart(cls):
    kmer = "AAACGTATGACTTTGCAGGCA"
    single, canonical = cls(21, 1e5, 2, single_strand=True), cls(21, 1e5, 2)
    assert (single.single_strand(), canonical.single_strand()) == (True, False)
    for table in (single, canonical):
        table.add(kmer)
    assert single.get(kmer) == 1 and single.get(revcomp(kmer)) == 0
    assert canonical.get(kmer) == 1 and canonical.get(revcomp(kmer)) == 1


def test_single_strand_hashes_are_the_forward_values():
    kmer = "AAACGTATGACTTTGCAGGCA"
    graph = kmerflow.Countgraph(21, 1e5, 2, single_strand=True)
    assert graph.hash(kmer) == kmerflow.forward_hash_no_rc(kmer, 21)
    assert graph.hash(revcomp(kmer)) == kmerflow.forward_hash_no_rc(revcomp(kmer), 21)
    assert graph.get_kmer_hashes(kmer + "T") == [kmerflow.forward_hash_no_rc(kmer, 21),
                                                 kmerflow.forward_hash_no_rc(kmer[1:] + "T", 21)]
    table = kmerflow.Counttable(21, 1e5, 2, single_strand=True)
    assert table.hash(kmer) == kmerflow.hash_no_rc_murmur3(kmer)


@pytest.mark.parametrize("cls", [kmerflow.Countgraph, kmerflow.SmallCountgraph, kmerflow.Nodegraph],
                         ids=lambda c: c.__name__)
def test_header_round_trip(tmp_path, cls):
    kmer = "AAACGTATGACTTTGCAGGCA"
    for single in (True, False):
        table = cls(21, 1e4, 2, single_strand=single)
        table.add(kmer)
        path = tmp_path / f"{cls.__name__}-{single}.table"
        table.save(path)
        khmer_type = path.read_bytes()[5]
        # khmer's type byte for the canonical table, with bit 0x80 for single-strand.
        assert khmer_type & 0x80 == (0x80 if single else 0)
        assert khmer_type & 0x7F in (1, 2, 7)
        loaded = cls.load(path)
        assert loaded.single_strand() is single
        assert loaded.get(revcomp(kmer)) == (0 if single else 1)


def test_tables_of_different_strands_are_not_added():
    single, canonical = kmerflow.Countgraph(21, 1e4, 2, single_strand=True), kmerflow.Countgraph(21, 1e4, 2)
    with pytest.raises(ValueError, match="strands"):
        single.update(canonical)


@pytest.mark.parametrize("layout", ["khmer", "blocked"])
def test_counting_commands_count_strands_apart(tmp_path, stranded_reads, layout):
    """normalize-by-median -C 2 keeps the reverse-complement read only when it is another
    molecule; the saved table is read back only the way it was made."""
    kept = {}
    for flags in ([], ["--single-strand"]):
        out, table = tmp_path / f"kept{len(flags)}.fa", tmp_path / f"t{len(flags)}.{layout}"
        run_kmerflow("normalize-by-median", "-q", "-k", "21", "-C", "2", "-x", "1e5", "-N", "2",
                     "--layout", layout, *flags, "-s", table, "-o", out, stranded_reads)
        kept[bool(flags)] = [line[1:] for line in out.read_text().split() if line.startswith(">")]
        other = [] if flags else ["--single-strand"]
        proc = run_kmerflow("normalize-by-median", "-q", "-k", "21", "-C", "2", *other, "-l", table,
                            "-o", tmp_path / "again.fa", stranded_reads, check=False)
        assert proc.returncode == 1
        lines = proc.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and str(table.name) in lines[0], lines
        assert ("holds single-strand k-mers" if flags else "holds canonical k-mers") in lines[0]
    assert kept[False] == ["f1", "f2", "other"]
    assert kept[True] == ["f1", "f2", "rc", "other"]


def test_abundance_dist_of_a_stranded_set(tmp_path, stranded_reads):
    hists = {}
    for flags in ([], ["--single-strand"]):
        table, hist = tmp_path / f"t{len(flags)}.ct", tmp_path / f"h{len(flags)}.csv"
        run_kmerflow("load-into-counting", "-q", "-k", "21", "-x", "1e5", "-N", "2", *flags, table, stranded_reads)
        run_kmerflow("abundance-dist", "-q", *flags, table, stranded_reads, hist)
        rows = [line.split(",") for line in hist.read_text().splitlines()[1:]]
        hists[bool(flags)] = {int(row[0]): int(row[1]) for row in rows if int(row[1])}
    # 60 k-mers of the molecule, 60 of the other read: canonically the molecule's k-mers are
    # seen three times; single-stranded, twice on one strand and once on the other.
    assert hists[False] == {1: 60, 3: 60}
    assert hists[True] == {1: 120, 2: 60}


def test_unique_kmers_counts_both_strands(tmp_path):
    reads = both_strands(tmp_path / "r.fa", random_seq(2000, 3))
    estimates = {}
    for flags in ([], ["--single-strand"]):
        proc = run_kmerflow("unique-kmers", "-k", "21", *flags, reads)
        line = next(x for x in proc.stderr.decode().splitlines() if x.startswith("Total estimated"))
        estimates[bool(flags)] = int(line.split()[-1])
    assert 1.8 < estimates[True] / estimates[False] < 2.2, estimates


def test_partitions_do_not_join_strands(tmp_path):
    """A read and its reverse complement are one partition canonically, two single-stranded."""
    reads = both_strands(tmp_path / "r.fa", random_seq(200, 4))
    groups = {}
    for flags in ([], ["--single-strand"]):
        where = tmp_path / f"run{len(flags)}"
        where.mkdir()
        run_kmerflow("load-graph", "-q", "-x", "1e5", "-N", "2", "-k", "21", *flags, "g", reads, cwd=where)
        run_kmerflow("partition-graph", "-q", *flags, "g", cwd=where)
        run_kmerflow("merge-partitions", "-q", "-k", "21", "g", cwd=where)
        run_kmerflow("annotate-partitions", "-q", "-k", "21", *flags, "g", reads, cwd=where)
        groups[bool(flags)] = read_part(where / "r.fa.part")[1]
    assert groups[False] == {frozenset({"fwd", "rev"})}
    assert groups[True] == {frozenset({"fwd"}), frozenset({"rev"})}
    proc = run_kmerflow("partition-graph", "g", cwd=tmp_path / "run1", check=False)
    assert proc.returncode == 1 and "holds single-strand k-mers" in proc.stderr.decode()


def test_khmer_refuses_a_single_strand_table(tmp_path, stranded_reads):
    table = tmp_path / "t.ct"
    run_kmerflow("load-into-counting", "-q", "-k", "21", "-x", "1e4", "-N", "2", "--single-strand",
                 table, stranded_reads)
    proc = khmer("abundance-dist", table, stranded_reads, tmp_path / "h.csv", check=False)
    assert proc.returncode != 0


def test_pipeline_shorthand_sets_every_hashing_step():
    from kmerflow.pipeline.config import PROTOCOL_REPLACES, load_config

    khmer_steps = load_config(steps=[*PROTOCOL_REPLACES, "readstats"]).with_overrides({"single_strand": True})
    hashing = ("normalize", "filter", "renormalize", "histogram")
    assert all(khmer_steps.params[step]["single_strand"] is True for step in hashing)
    protocol = load_config().with_overrides({"single_strand": True})
    assert protocol.params["protocol"]["single_strand"] is True
