"""The streaming filters (kmerflow.Normalizer, AbundanceFilter, Trimmer) give exactly what the
commands write, on generated reads; their documentation examples run."""

from __future__ import annotations

import doctest
import random
from pathlib import Path

import pytest

import kmerflow
import kmerflow.streaming
from conftest import kmerflow as run_kmerflow

K = 20
TABLE = ("-k", str(K), "-x", "2e5", "-N", "4")
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def new_table() -> kmerflow.Countgraph:
    return kmerflow.Countgraph(K, 2e5, 4)


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> Path:
    """Interleaved FASTQ pairs from a 3-kbp genome at about 60x, with 1% errors, a few reads
    with N, lower-case bases or shorter than k, and some orphans."""
    rng = random.Random(11)
    genome = "".join(rng.choice("ACGT") for _ in range(3000))

    def read(length: int) -> str:
        start = rng.randrange(len(genome) - length)
        seq = genome[start:start + length]
        if rng.random() < 0.5:
            seq = seq[::-1].translate(COMPLEMENT)
        bases = [rng.choice("ACGT") if rng.random() < 0.01 else b for b in seq]
        if rng.random() < 0.03:
            bases[rng.randrange(length)] = "N"
        if rng.random() < 0.03:
            bases = [b.lower() for b in bases]
        return "".join(bases)

    lines = []
    for i in range(1200):
        mates = (1, 2) if rng.random() < 0.9 else (rng.choice((1, 2)),)
        for mate in mates:
            length = 15 if rng.random() < 0.02 else 80
            seq = read(length)
            lines.append(f"@pair{i}/{mate}\n{seq}\n+\n{'I' * len(seq)}\n")
    path = tmp_path_factory.mktemp("streaming") / "reads.fq"
    path.write_text("".join(lines))
    return path


def records(path: Path) -> list[tuple[str, str, str | None]]:
    return [(r.name, r.sequence, r.quality) for r in kmerflow.open_reads(path)]


def flat(items) -> list[tuple[str, str, str | None]]:
    out = []
    for item in items:
        for r in item if isinstance(item, tuple) else (item,):
            if r is not None:
                out.append((r.name, r.sequence, r.quality))
    return out


@pytest.mark.parametrize("paired", [False, True])
def test_normalizer_matches_normalize_by_median(reads, tmp_path, paired):
    out = tmp_path / "keep.fq"
    pairing = () if paired else ("--force_single",)
    run_kmerflow("normalize-by-median", *TABLE, "-C", "10", *pairing, "-o", out, reads)
    expected = records(out)
    normalizer = kmerflow.Normalizer(new_table(), cutoff=10, paired=paired)
    got = flat(normalizer.filter(kmerflow.open_reads(reads, pairs=paired, min_length=K),
                                 batch_size=97))
    assert 0 < len(got) < 2300 and got == expected


def test_normalizer_drops_short_reads_itself(reads):
    """Without min_length, reads shorter than k never come out (as the command drops them)."""
    kept = list(kmerflow.Normalizer(new_table(), cutoff=10).filter(kmerflow.open_reads(reads)))
    assert kept and all(len(r.sequence) >= K for r in kept)


@pytest.mark.parametrize("variable", [False, True])
def test_abundance_filter_matches_filter_abund(reads, tmp_path, variable):
    graph, out = tmp_path / "reads.ct", tmp_path / "out.fq"
    run_kmerflow("load-into-counting", *TABLE, graph, reads)
    flags = ("-V", "-Z", "40") if variable else ()
    run_kmerflow("filter-abund", "-C", "3", *flags, "-o", out, graph, reads)
    expected = records(out)
    table = kmerflow.Countgraph.load(graph)
    filt = kmerflow.AbundanceFilter(table, cutoff=3, variable_coverage=variable, normalize_to=40)
    got = flat(filt.filter(kmerflow.open_reads(reads), batch_size=101))
    assert got == expected
    assert any(len(s) < 80 for _, s, _ in got if len(s) >= K)       # some reads were cut


@pytest.mark.parametrize("paired,variable", [(False, False), (True, False), (True, True)])
def test_trimmer_matches_trim_low_abund(reads, tmp_path, paired, variable):
    out = tmp_path / "out.fq"
    pairing = () if paired else ("--ignore-pairs",)
    coverage = ("-V", "-Z", "25") if variable else ()
    run_kmerflow("trim-low-abund", *TABLE, "-C", "2", *coverage, *pairing, "-o", out,
                 "--tempdir", tmp_path, reads)
    expected = records(out)
    trimmer = kmerflow.Trimmer(new_table(), cutoff=2, trim_at_coverage=25 if variable else 20,
                               variable_coverage=variable, paired=paired)
    got = flat(trimmer.filter(kmerflow.open_reads(reads, pairs=paired, min_length=K),
                              batch_size=89))
    assert got == expected and len(got) > 1500


def test_paired_items_must_be_bundles(reads):
    with pytest.raises(TypeError, match="tuples"):
        list(kmerflow.Normalizer(new_table(), paired=True).filter(kmerflow.open_reads(reads)))


def test_presence_tables_are_refused():
    with pytest.raises(ValueError, match="presence table"):
        kmerflow.AbundanceFilter(kmerflow.Nodegraph(K, 1e3, 1))


def test_documentation_examples_run():
    result = doctest.testmod(kmerflow.streaming, raise_on_error=False)
    assert result.attempted >= 4 and result.failed == 0
