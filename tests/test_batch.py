"""Exact batched decisions: the three phase kernels on numpy arrays give the read-by-read
decisions and tables, and normalize-by-median / trim-low-abund give the same output at any
number of threads with `--batched` as read by read on generated data with
colliding and saturating counters, single and paired."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from conftest import kmerflow
from kmerflow import _core


def _reads(seed: int, n_reads: int, distinct: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 2**63, size=distinct, dtype=np.uint64)
    return [pool[rng.integers(0, distinct, size=rng.integers(0, 12))] for _ in range(n_reads)]


def _keeps(counts: list[int], cutoff: int) -> bool:
    passed = sum(c >= cutoff for c in counts)
    return not counts or passed < int(0.5 + len(counts) / 2.0)


def _table() -> _core.Countgraph:
    table = _core.Countgraph(20, 1, 3, primes=[97, 89, 83])
    table.set_use_bigcount(True)
    return table


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_kernels_match_read_by_read(threads):
    reads = _reads(3, 2500, 120)
    cutoff = 300
    expected_table, expected = _table(), []
    for read in reads:
        keep = _keeps([expected_table.get(int(h)) for h in read], cutoff)
        if keep:
            for h in read:
                expected_table.add(int(h))
        expected.append(keep)
    assert max(expected_table.get(int(h)) for h in np.concatenate(reads)) > 255

    table, kept = _table(), []
    for start in range(0, len(reads), 300):
        batch = reads[start:start + 300]
        hashes = np.concatenate(batch).astype(np.uint64)
        ends = np.cumsum([len(r) for r in batch]).astype(np.uint64)
        bases, slots = _core.batch_lookup(table, hashes, threads=threads)
        decision = _core.batch_decide(table, hashes, bases, slots, ends, cutoff)
        _core.batch_apply(table, hashes, bases, slots, decision, threads=threads)
        kept.extend(decision.keep.tolist())
    assert kept == expected
    for a, b in zip(table.get_raw_tables(), expected_table.get_raw_tables(), strict=True):
        assert np.array_equal(a, b)
    assert table.n_occupied() == expected_table.n_occupied()
    assert table.n_unique_kmers() == expected_table.n_unique_kmers()
    assert all(table.get(int(h)) == expected_table.get(int(h)) for h in np.concatenate(reads))


def test_kernels_refuse_bad_arrays():
    table = _table()
    hashes = np.array([1, 2, 3], dtype=np.uint64)
    bases, slots = _core.batch_lookup(table, hashes)
    with pytest.raises(ValueError):
        _core.batch_decide(table, hashes, bases, slots, np.array([4], dtype=np.uint64), 5)
    with pytest.raises(ValueError):
        _core.batch_decide(table, hashes[:2], bases, slots, np.array([2], dtype=np.uint64), 5)
    decision = _core.batch_decide(table, hashes, bases, slots, np.array([3], dtype=np.uint64), 5)
    full = np.full_like(bases, 255)
    with pytest.raises(ValueError):
        _core.batch_apply(table, hashes, full, slots, decision)
    assert table.n_occupied() == 0


def _genome_reads(path: Path, paired: bool, seed: int = 5) -> None:
    """Reads of a short genome (high coverage: counts saturate), every record in a pair."""
    rnd = random.Random(seed)
    genome = "".join(rnd.choice("ACGT") for _ in range(3000))
    out = []
    for i in range(6000):
        pos = rnd.randrange(0, len(genome) - 80)
        read = genome[pos:pos + rnd.randrange(15, 80)]
        if rnd.random() < 0.05:
            read = read[:10] + "N" + read[11:]
        suffix = f"/{1 + i % 2}" if paired else ""
        out.append(f">r{i // 2 if paired else i}{suffix}\n{read}\n")
    path.write_text("".join(out))


@pytest.mark.parametrize("layout", ["khmer", "blocked"])
@pytest.mark.parametrize("paired", [False, True])
def test_normalize_identical_at_any_thread_count(tmp_path, layout, paired):
    _genome_reads(tmp_path / "in.fa", paired)
    pair = ["-p"] if paired else []
    outs = []
    for t, batched in (("1", []), ("1", ["--batched"]), ("2", ["--batched"]), ("3", ["--batched"])):
        kmerflow("normalize-by-median", "-q", "-k", "17", "-C", "30", "-N", "3", "-x", "2000", "-f",
                 "--layout", layout, *pair, "-T", t, *batched, "-o", f"o{t}.fa", "-s", f"g{t}", "in.fa",
                 cwd=tmp_path)
        outs.append(((tmp_path / f"o{t}.fa").read_bytes(), (tmp_path / f"g{t}").read_bytes()))
    assert outs[0][0].count(b">") > 100
    assert outs[0] == outs[1] == outs[2] == outs[3]


def test_trim_low_abund_identical_at_any_thread_count(tmp_path):
    _genome_reads(tmp_path / "in.fa", True)
    outs = []
    for t, batched in (("1", []), ("1", ["--batched"]), ("2", ["--batched"]), ("3", ["--batched"])):
        kmerflow("trim-low-abund", "-q", "-k", "17", "-C", "3", "-Z", "25", "-V", "-N", "3", "-x", "3000",
                 "--force", "--threads", t, *batched, "-o", f"o{t}.fa", "-s", f"g{t}", "in.fa", cwd=tmp_path)
        outs.append(((tmp_path / f"o{t}.fa").read_bytes(), (tmp_path / f"g{t}").read_bytes()))
    assert outs[0][0].count(b">") > 100
    assert outs[0] == outs[1] == outs[2] == outs[3]
