"""`--layout blocked` of load-into-counting and normalize-by-median: any k, kmerflow's own
file format, thread-independent results, and agreement with khmer's layout when the table is
large enough to be exact."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from conftest import kmerflow

#: Bytes before the counters of a native table file (the header page).
NATIVE_HEADER = 4096
#: A table far larger than test-reads.fa's ~200k k-mers: no collisions in either layout.
LARGE = ("-N", "4", "-x", "1e7")


def records(path: Path) -> int:
    return path.read_text().count(">")


@pytest.mark.parametrize("k", [21, 40])
def test_count_then_normalize_with_the_saved_blocked_table(tmp_path, data, k):
    table = tmp_path / "reads.kf"
    kmerflow("load-into-counting", "-q", "-k", k, *LARGE, "--layout", "blocked", table,
             data / "test-reads.fa")
    assert table.read_bytes()[:8] != gzip.open(data / "normC20k20.ct.gz").read(8)
    info = (tmp_path / "reads.kf.info").read_text().splitlines()
    unique = int(info[2].rsplit(" ", 1)[1])
    # test-reads.fa holds 1,398,305 distinct canonical 21-mers and 924,383 40-mers (counted
    # with a set); the estimate misses only k-mers whose counters were all already non-zero.
    distinct = {21: 1_398_305, 40: 924_383}[k]
    assert distinct * 0.995 < unique <= distinct
    assert info[3] == "fp rate estimated to be 0.000"
    # Every read was counted once: with -C 1 all are discarded, with -C 2 most are kept.
    for cutoff, expect_kept in [("1", False), ("2", True)]:
        out = tmp_path / f"keep{cutoff}.fa"
        kmerflow("normalize-by-median", "-q", "-k", k, "-C", cutoff, "-l", table, "-o", out,
                 data / "test-reads.fa")
        assert (records(out) > 20_000) == expect_kept


def test_blocked_normalization_equals_khmer_layout_when_exact(tmp_path, data):
    outs = {}
    for layout in ["khmer", "blocked"]:
        outs[layout] = tmp_path / f"{layout}.fa"
        kmerflow("normalize-by-median", "-q", "-k", "20", "-C", "20", *LARGE, "--layout", layout,
                 "-o", outs[layout], data / "test-reads.fa")
    kept = outs["khmer"].read_bytes()
    assert 0 < kept.count(b">") < 25_000
    assert outs["blocked"].read_bytes() == kept


def test_blocked_results_do_not_depend_on_threads(tmp_path, data):
    for threads in ["1", "2"]:
        kmerflow("normalize-by-median", "-q", "-T", threads, "-k", "20", "-C", "5", *LARGE,
                 "--layout", "blocked", "-s", tmp_path / f"nbm{threads}.kf",
                 "-o", tmp_path / f"nbm{threads}.fa", data / "test-reads.fa")
        kmerflow("load-into-counting", "-q", "-T", threads, "-k", "33", *LARGE,
                 "--layout", "blocked", tmp_path / f"lic{threads}.kf", data / "test-reads.fa")
    for name in ["nbm{}.fa", "nbm{}.kf"]:
        one, two = (tmp_path / name.format(t) for t in "12")
        assert one.read_bytes() == two.read_bytes(), name
    # The counters are identical; the header's unique-k-mer count may follow the interleaving.
    one, two = ((tmp_path / f"lic{t}.kf").read_bytes() for t in "12")
    assert len(one) == len(two) > NATIVE_HEADER
    assert one[NATIVE_HEADER:] == two[NATIVE_HEADER:]
    assert any(one[NATIVE_HEADER:])


def test_small_count_blocked_table_halves_the_file(tmp_path, data):
    for flag, name in [((), "8.kf"), (("--small-count",), "4.kf")]:
        kmerflow("load-into-counting", "-q", "-k", "21", "-N", "4", "-x", "1e6", "-f", *flag,
                 "--layout", "blocked", tmp_path / name, data / "test-reads.fa")
    size8, size4 = ((tmp_path / n).stat().st_size - NATIVE_HEADER for n in ["8.kf", "4.kf"])
    assert size8 == 4_000_000 // 64 * 64
    assert size4 == 2_000_000 // 64 * 64


def test_khmer_layout_still_refuses_k_over_32(tmp_path, data):
    proc = kmerflow("load-into-counting", "-k", "33", tmp_path / "t.ct", data / "test-reads.fa",
                    check=False)
    assert proc.returncode == 2  # a usage error of -k, before anything is read
    assert b"k-mer sizes <= 32" in proc.stderr and b"--layout blocked" in proc.stderr


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_corrupt_native_table_is_a_one_line_error(tmp_path, data, damage):
    table = tmp_path / "reads.kf"
    kmerflow("load-into-counting", "-q", "-k", "21", "-N", "4", "-x", "1e5", "-f",
             "--layout", "blocked", table, data / "test-reads.fa")
    raw = bytearray(table.read_bytes())
    if damage == "flip":
        raw[NATIVE_HEADER + 100] ^= 0xFF
    elif damage == "truncate":
        raw = raw[: len(raw) - 64]
    else:
        raw = raw[:8] + b"not a table at all"
    table.write_bytes(bytes(raw))
    proc = kmerflow("normalize-by-median", "-q", "-k", "21", "-l", table,
                    "-o", tmp_path / "out.fa", data / "test-reads.fa", check=False)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 1, err
    assert "\n" not in err and str(table) in err and "panicked" not in err, err
