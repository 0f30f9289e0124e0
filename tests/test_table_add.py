"""Adding tables: counting two parts of an input into two tables and adding them gives the
counters of counting the whole input into one table (``Table.update`` / ``+=`` on table
objects, :func:`kmerflow.add_tables` on saved files of either layout)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import kmerflow

#: Bytes before the counters of a native (blocked) table file: its header page.
NATIVE_HEADER = 4096

CLASSES = [kmerflow.Countgraph, kmerflow.SmallCountgraph, kmerflow.Nodegraph,
           kmerflow.Counttable, kmerflow.SmallCounttable, kmerflow.Nodetable]


def random_reads(rng: random.Random, n: int, alphabet: str = "ACGT") -> list[str]:
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(12, 150))) for _ in range(n)]


def counted(cls: type, reads: list[str], size: int) -> kmerflow.Table:
    table = cls(12, size, 3)
    for read in reads:
        table.consume(read)
    return table


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("seed", range(8))
def test_adding_the_tables_of_two_parts_equals_counting_the_whole(cls, seed):
    rng = random.Random(seed)
    # A small alphabet and small tables: collisions and saturated counters are common.
    reads = random_reads(rng, rng.randint(0, 60), rng.choice(["ACGT", "AC"]))
    split = rng.randint(0, len(reads))
    size = rng.choice([50, 1000, 100_000])
    total = counted(cls, reads[:split], size)
    part = counted(cls, reads[split:], size)
    unique = total.n_unique_kmers() + part.n_unique_kmers()
    if seed % 2:
        total += part
    else:
        total.update(part)
    whole = counted(cls, reads, size)
    for mine, theirs in zip(total.get_raw_tables(), whole.get_raw_tables(), strict=True):
        assert mine.tobytes() == theirs.tobytes()
    assert total.n_occupied() == whole.n_occupied()
    assert total.n_unique_kmers() == unique >= whole.n_unique_kmers()
    for read in reads:
        assert total.get_kmer_counts(read) == whole.get_kmer_counts(read)


def test_bigcounts_add_up():
    total, part = kmerflow.Countgraph(10, 1000, 2), kmerflow.Countgraph(10, 1000, 2)
    for table, times in [(total, 300), (part, 200)]:
        table.set_use_bigcount(True)
        for _ in range(times):
            table.add("ACGTTGCAAG")
    total += part
    assert total.get("ACGTTGCAAG") == 500


def test_tables_of_different_shapes_are_refused():
    table = kmerflow.Countgraph(12, 1000, 3)
    for other in [kmerflow.Countgraph(13, 1000, 3), kmerflow.Countgraph(12, 2000, 3),
                  kmerflow.SmallCountgraph(12, 1000, 3), kmerflow.Counttable(12, 1000, 3)]:
        with pytest.raises(kmerflow.ParameterError, match="cannot add tables of different"):
            table.update(other)


@pytest.mark.filterwarnings("ignore::kmerflow.KmerflowWarning")  # tables overfull on purpose
@pytest.mark.parametrize("layout", ["khmer", "blocked"])
def test_saved_tables_of_chunks_add_up_to_the_table_of_the_whole_file(tmp_path, layout):
    rng = random.Random(7)
    reads = random_reads(rng, 400)
    chunks = [reads[:150], reads[150:151], reads[151:]]
    paths = []
    for name, part in [("a", chunks[0]), ("b", chunks[1]), ("c", chunks[2]), ("whole", reads)]:
        fasta = tmp_path / f"{name}.fa"
        fasta.write_text("".join(f">r{i}\n{seq}\n" for i, seq in enumerate(part)))
        table = tmp_path / f"{name}.table"
        kmerflow.load_into_counting(table, fasta, ksize=15, n_tables=3, max_tablesize=2000,
                                    layout=layout, quiet=True, force=True)
        paths.append(table)
    *parts, whole = paths
    out = tmp_path / "sum.table"
    kmerflow.add_tables([parts[2], parts[0], parts[1]], out)
    if layout == "khmer":
        assert out.read_bytes() == whole.read_bytes()
    else:
        assert out.read_bytes()[NATIVE_HEADER:] == whole.read_bytes()[NATIVE_HEADER:]
    # The sum may replace one of its inputs.
    kmerflow.add_tables(parts, parts[0])
    assert parts[0].read_bytes()[NATIVE_HEADER:] == whole.read_bytes()[NATIVE_HEADER:]


def test_adding_saved_tables_of_different_layouts_names_the_file(tmp_path):
    fasta = tmp_path / "r.fa"
    fasta.write_text(">r\nACGTACGTTTGACCAGTAGGACCA\n")
    khmer_table, blocked_table = tmp_path / "k.ct", tmp_path / "b.kf"
    kmerflow.load_into_counting(khmer_table, fasta, ksize=15, max_tablesize=2000, quiet=True)
    kmerflow.load_into_counting(blocked_table, fasta, ksize=15, max_tablesize=2000,
                                layout="blocked", quiet=True)
    with pytest.raises(kmerflow.ParameterError, match=f"{khmer_table}: cannot add tables"):
        kmerflow.add_tables([blocked_table, khmer_table], tmp_path / "sum")
    with pytest.raises(FileNotFoundError):
        kmerflow.add_tables([tmp_path / "missing.ct"], tmp_path / "sum")
    assert not (tmp_path / "sum").exists()


def test_add_tables_needs_an_input(tmp_path: Path):
    with pytest.raises(kmerflow.ParameterError, match="no table to add"):
        kmerflow.add_tables([], tmp_path / "sum")
