"""filter-abund, filter-abund-single, trim-low-abund: khmer's pinned results (docs/khmer-compat.md §6.2
rows 8, 15-19) and live byte-for-byte comparisons with khmer 3.0."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import khmer, kmerflow


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def fasta_seqs(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [lines[i + 1] for i, line in enumerate(lines) if line.startswith(">")]


def fastq_records(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text().splitlines()
    return [(lines[i][1:], lines[i + 1]) for i in range(0, len(lines), 4)]


def khmer_countgraph(tmp_path: Path, reads: Path, name: str) -> Path:
    """A k=17 countgraph of `reads` saved by khmer itself as `tmp_path/name`."""
    khmer("load-into-counting", "-k", "17", "-x", "1e7", "-N", "2", name, reads, cwd=tmp_path)
    return tmp_path / name


@pytest.fixture
def graph17(tmp_path, data):
    return khmer_countgraph(tmp_path, data / "test-abund-read-2.fa", "g17.ct")


def test_filter_abund_default(tmp_path, data, graph17):
    kmerflow("filter-abund", graph17, data / "test-abund-read-2.fa", cwd=tmp_path)
    assert set(fasta_seqs(tmp_path / "test-abund-read-2.fa.abundfilt")) == {"GGTTGACGGGGCTCAGGG"}


def test_filter_abund_c1(tmp_path, data, graph17):
    kmerflow("filter-abund", "-C", "1", graph17, data / "test-abund-read-2.fa", cwd=tmp_path)
    assert len(set(fasta_seqs(tmp_path / "test-abund-read-2.fa.abundfilt"))) == 2


@pytest.fixture
def graph3(tmp_path, data):
    return khmer_countgraph(tmp_path, data / "test-abund-read-3.fa", "g3.ct")


def test_filter_abund_trim_high_abund(tmp_path, data, graph3):
    kmerflow("filter-abund", "-V", graph3, data / "test-abund-read-3.fa", cwd=tmp_path)
    assert "GGTTGACGGGGCTCAGGGGGCGGCTGACTCCGAGAGACAGC" in \
        fasta_seqs(tmp_path / "test-abund-read-3.fa.abundfilt")


def test_filter_abund_trim_high_abund_z(tmp_path, data, graph3):
    kmerflow("filter-abund", "-V", "-Z", "25", graph3, data / "test-abund-read-3.fa", cwd=tmp_path)
    assert any("AGCgtgCCG" in s for s in fasta_seqs(tmp_path / "test-abund-read-3.fa.abundfilt"))


def test_filter_abund_single_outfile(tmp_path, data):
    kmerflow("filter-abund-single", "-o", "out", data / "paired-mixed-witherror.fa.pe", cwd=tmp_path)
    assert md5(tmp_path / "out") == "f17122f4c0c3dc0bcc4eeb375de93040"


def tla(tmp_path: Path, *args) -> str:
    return kmerflow("trim-low-abund", *args, cwd=tmp_path).stderr.decode()


def test_trim_low_abund_default(tmp_path, data):
    tla(tmp_path, "-k", "17", "-x", "1e7", "-N", "2", data / "test-abund-read-2.fa")
    assert set(fasta_seqs(tmp_path / "test-abund-read-2.fa.abundtrim")) == {"GGTTGACGGGGCTCAGGG"}
    assert not list(tmp_path.glob("tmp*")), "temporary files must be removed"


def test_trim_low_abund_v(tmp_path, data):
    tla(tmp_path, "-k", "17", "-x", "1e7", "-N", "2", "-V", data / "test-abund-read-2.fa")
    assert len(set(fasta_seqs(tmp_path / "test-abund-read-2.fa.abundtrim"))) == 2


def test_trim_low_abund_trimtest(tmp_path, data):
    tla(tmp_path, "-k", "17", "-x", "1e7", "-N", "2", "-Z", "2", "-C", "1", "-V",
        data / "test-abund-read-2.paired.fq")
    recs = fastq_records(tmp_path / "test-abund-read-2.paired.fq.abundtrim")
    d = dict(recs)
    assert d["seqtrim/1"] == "GGTTGACGGGGCTCAGGGGGCGGCTGACTCCGAGAGACAGCAGCC"
    assert d["seqtrim/2"].endswith("CAGCAGCCGC")
    assert d["seqtrim2/1"].endswith("GAGACAGCA")
    assert [n for n, _ in recs[-2:]] == ["pair/1", "pair/2"]


def test_trim_low_abund_reporting(tmp_path, data):
    err = tla(tmp_path, "-M", "1e7", "-V", "-Z", "5", "-C", "1", data / "test-reads.fa")
    assert "11157 11161 848236 2 152" in err


TLA_MD5 = [
    (["-C", "0", "--diginorm"], "942e9024c25a8d85033d755d86aba4a3"),
    (["-C", "0", "--diginorm", "--diginorm-coverage", "15"], "0d1b4b9d4c76cb8cdeee5a98f6e70163"),
    (["-C", "2", "--diginorm", "--diginorm-coverage", "15"], "fa09d094a9e623639a34f772b04d766c"),
    (["-C", "2"], "9495801b282ff6b08961b685d12a954c"),
    (["-C", "3"], "da36ec64e7d001470c04dc19af5b8635"),
    (["-C", "4"], "65596253b87ed8d5aeb14dc8cf5a7406"),
    (["-C", "4", "-V"], "324871db807839f8bddd43548abcbeda"),
    (["-C", "4", "-V", "-Z", "25"], "6ec4f9874262f3eaf98cab4910c428f5"),
    (["-C", "4", "-V", "-Z", "15"], "393805ac92e8bed31a374de9ee89ead8"),
]


@pytest.mark.parametrize("args,digest", TLA_MD5)
def test_script_output_md5(tmp_path, data, args, digest):
    tla(tmp_path, "-k", "21", "-M", "1e7", *args, data / "simple-genome-reads.fa")
    assert md5(tmp_path / "simple-genome-reads.fa.abundtrim") == digest


# --- live oracle ------------------------------------------------------------------------------

def both(tmp_path: Path, script: str, args: list, outputs: list[str]) -> None:
    (tmp_path / "k").mkdir(), (tmp_path / "m").mkdir()
    k = khmer(script, *args, cwd=tmp_path / "k", check=False)
    m = kmerflow(script, *args, cwd=tmp_path / "m", check=False)
    assert m.returncode == k.returncode, m.stderr.decode()
    if k.returncode != 0:
        # A configuration that overfills the table (false-positive rate too high): khmer writes
        # everything, then exits 1; kmerflow fails the same way but leaves no output. khmer's
        # outputs are compared with those of kmerflow --force, which goes on past the check.
        assert list((tmp_path / "m").iterdir()) == []
        kmerflow(script, "--force", *args, cwd=tmp_path / "m")
    for out in outputs:
        k_out, m_out = tmp_path / "k" / out, tmp_path / "m" / out
        # (khmer stops before its last outputs when it fails; kmerflow --force writes them all.)
        assert m_out.exists() == k_out.exists() or k.returncode != 0, out
        if k_out.exists():
            assert m_out.read_bytes() == k_out.read_bytes(), out


TLA_CONFIGS = [
    ["-k", "20", "-x", "1e5", "-C", "2"],
    ["-k", "12", "-x", "1e4", "-C", "1", "-V"],
    ["-k", "31", "-x", "1e6", "-C", "5", "-V", "-Z", "5", "--ignore-pairs"],
    ["-k", "32", "-x", "1e5", "-N", "3", "-C", "2", "--diginorm", "--diginorm-coverage", "5"],
    ["-k", "21", "-x", "1e5", "-C", "2", "--single-pass"],
]


@pytest.mark.parametrize("args", TLA_CONFIGS)
def test_trim_matches_khmer(tmp_path, data, args):
    both(tmp_path, "trim-low-abund",
         [*args, "-s", "g.ct", "-o", "out.fq", "--summary-info", "json",
          data / "test-reads.fa", data / "test-abund-read-2.paired.fq"],
         ["out.fq", "g.ct"])
    k_info, m_info = tmp_path / "k" / "out.fq.info.json", tmp_path / "m" / "out.fq.info.json"
    if k_info.exists():
        assert json.loads(m_info.read_text()) == json.loads(k_info.read_text())


def test_trim_summary_tsv_matches_khmer(tmp_path, data):
    both(tmp_path, "trim-low-abund",
         ["-k", "20", "-x", "1e5", "-o", "o.fa", "--summary-info", "tsv", data / "simple-genome-reads.fa"],
         ["o.fa", "o.fa.info.tsv"])


@pytest.mark.parametrize("args", [["-k", "17", "-x", "1e6"], ["-k", "20", "-x", "1e6", "-C", "1"],
                                  ["-k", "21", "-x", "1e6", "-V", "-Z", "5"], ["-k", "32", "-x", "1e4", "-C", "5"]])
def test_filter_abund_single_matches_khmer(tmp_path, data, args):
    both(tmp_path, "filter-abund-single",
         [*args, "--savegraph", "g.ct", data / "simple-genome-reads.fa"],
         ["simple-genome-reads.fa.abundfilt", "g.ct"])


def test_filter_abund_matches_khmer(tmp_path, data):
    khmer("load-into-counting", "-k", "20", "-x", "2e6", "g.ct", data / "test-reads.fa", cwd=tmp_path)
    (tmp_path / "k").mkdir(), (tmp_path / "m").mkdir()
    for who, run in (("k", khmer), ("m", kmerflow)):
        run("filter-abund", "-C", "3", "-V", "-Z", "10", tmp_path / "g.ct", data / "test-reads.fa",
            data / "test-filter-abund-Ns.fq", cwd=tmp_path / who)
    for out in ("test-reads.fa.abundfilt", "test-filter-abund-Ns.fq.abundfilt"):
        assert (tmp_path / "m" / out).read_bytes() == (tmp_path / "k" / out).read_bytes()


def test_trim_threads_identical(tmp_path, data):
    for t in ("1", "2"):
        tla(tmp_path, "-k", "20", "-x", "1e5", "--force", "--threads", t, "-o", f"t{t}.fa", data / "test-reads.fa")
    assert (tmp_path / "t1.fa").read_bytes() == (tmp_path / "t2.fa").read_bytes()
