"""End-to-end tests of the read-handling commands against khmer 3.0.

Each case in ``CASES`` runs one command in a scratch directory holding copies of its inputs
(so that file names in outputs and derived output names are the same for everyone), and
compares every output byte for byte:

* with the committed golden files in ``tests/golden/reads/<case>/`` (made by khmer 3.0;
  regenerate with ``python tests/test_read_commands.py --regenerate``), and
* with a live run of khmer on the same inputs (skipped where khmer is not installed).
"""

from __future__ import annotations

import bz2
import gzip
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import GOLDEN, KHMER_DATA, khmer, kmerflow  # noqa: E402

GOLDEN_READS = GOLDEN / "reads"


@dataclass(frozen=True)
class Case:
    """One command run: inputs copied from khmer's test data, outputs to compare."""

    name: str
    command: str
    args: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...] = ("stdout",)
    golden: bool = True


CASES = [
    Case("f2f-paired-mixed", "fastq-to-fasta", ("paired-mixed.fq",), ("paired-mixed.fq",)),
    Case("f2f-n-reads", "fastq-to-fasta", ("test-fastq-n-reads.fq",), ("test-fastq-n-reads.fq",)),
    Case("f2f-keep-n", "fastq-to-fasta", ("-n", "test-fastq-n-reads.fq"), ("test-fastq-n-reads.fq",)),
    Case("f2f-gz-out", "fastq-to-fasta", ("100-reads.fq.gz", "-o", "out.fa"), ("100-reads.fq.gz",),
         ("out.fa",)),
    Case("f2f-big", "fastq-to-fasta", ("test-reads.fq.gz",), ("test-reads.fq.gz",), golden=False),
    Case("interleave", "interleave-reads", ("paired.fq.1", "paired.fq.2"),
         ("paired.fq.1", "paired.fq.2")),
    Case("interleave-slash", "interleave-reads", ("paired-slash1.fq.1", "paired-slash1.fq.2", "-o", "i.fq"),
         ("paired-slash1.fq.1", "paired-slash1.fq.2"), ("i.fq",)),
    Case("split", "split-paired-reads", ("paired.fq",), ("paired.fq",), ("paired.fq.1", "paired.fq.2")),
    Case("split-orphans", "split-paired-reads",
         ("-0", "orphans.fq", "-1", "left.fq", "-2", "right.fq", "paired-mixed.fq"),
         ("paired-mixed.fq",), ("left.fq", "right.fq", "orphans.fq")),
    Case("split-dir", "split-paired-reads", ("-d", "out", "paired.fa"), ("paired.fa",),
         ("out/paired.fa.1", "out/paired.fa.2")),
    Case("extract-fq", "extract-paired-reads", ("paired-mixed.fq",), ("paired-mixed.fq",),
         ("paired-mixed.fq.pe", "paired-mixed.fq.se")),
    Case("extract-fa", "extract-paired-reads", ("paired-mixed.fa",), ("paired-mixed.fa",),
         ("paired-mixed.fa.pe", "paired-mixed.fa.se")),
    Case("extract-casava", "extract-paired-reads", ("casava_18-pe.fq", "-p", "p.fq", "-s", "s.fq"),
         ("casava_18-pe.fq",), ("p.fq", "s.fq")),
    # 25000 reads, 12465 pairs and 70 orphans (several input batches).
    Case("extract-big", "extract-paired-reads", ("test-reads.fa",), ("test-reads.fa",),
         ("test-reads.fa.pe", "test-reads.fa.se"), golden=False),
    Case("long-fa", "extract-long-sequences", ("--length", "10", "paired-mixed.fa"), ("paired-mixed.fa",)),
    Case("long-many", "extract-long-sequences", ("-l", "80", "test-abund-read-2.fq", "random-20-a.fq"),
         ("test-abund-read-2.fq", "random-20-a.fq")),
    Case("readstats", "readstats", ("test-abund-read-2.fq", "paired-mixed.fq", "100-reads.fq.gz"),
         ("test-abund-read-2.fq", "paired-mixed.fq", "100-reads.fq.gz")),
    Case("readstats-csv", "readstats", ("--csv", "test-sweep-reads.fq", "paired-mixed.fa"),
         ("test-sweep-reads.fq", "paired-mixed.fa")),
    Case("readstats-big", "readstats", ("test-reads.fq.gz", "-o", "stats.txt"), ("test-reads.fq.gz",),
         ("stats.txt",), golden=False),
]


def _stage(case: Case, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name in case.inputs:
        shutil.copy(KHMER_DATA / name, where / name)
    return where


def _outputs(case: Case, where: Path, proc: subprocess.CompletedProcess) -> dict[str, bytes]:
    return {o: proc.stdout if o == "stdout" else (where / o).read_bytes() for o in case.outputs}


def _run_ours(case: Case, tmp: Path, *extra: str) -> dict[str, bytes]:
    where = _stage(case, tmp / "ours")
    proc = kmerflow(case.command, *case.args, *extra, cwd=where)
    return _outputs(case, where, proc)


@pytest.mark.parametrize("case", [c for c in CASES if c.golden], ids=lambda c: c.name)
def test_matches_golden(case: Case, tmp_path: Path) -> None:
    ours = _run_ours(case, tmp_path)
    for name, got in ours.items():
        assert got == (GOLDEN_READS / case.name / name.replace("/", "__")).read_bytes(), name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_khmer(case: Case, tmp_path: Path) -> None:
    where = _stage(case, tmp_path / "khmer")
    expected = _outputs(case, where, khmer(case.command, *case.args, cwd=where))
    assert _run_ours(case, tmp_path) == expected


@pytest.mark.parametrize("threads", ["1", "3"])
def test_output_is_the_same_for_any_thread_count(threads: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "extract-big")
    one = _run_ours(case, tmp_path / "one", "-T", "1")
    assert _run_ours(case, tmp_path / "many", "-T", threads) == one


@pytest.mark.parametrize("flag,decompress", [("--gzip", gzip.decompress), ("--bzip", bz2.decompress)])
def test_compressed_outputs(flag: str, decompress, tmp_path: Path) -> None:
    case = Case("split-c", "split-paired-reads", ("paired.fq", flag), ("paired.fq",),
                ("paired.fq.1", "paired.fq.2"))
    where = _stage(case, tmp_path / "khmer")
    expected = _outputs(case, where, khmer(case.command, *case.args, cwd=where))
    ours = _run_ours(case, tmp_path)
    assert {k: decompress(v) for k, v in ours.items()} == {k: decompress(v) for k, v in expected.items()}
    f2f = kmerflow("fastq-to-fasta", KHMER_DATA / "paired-mixed.fq", flag).stdout
    assert decompress(f2f) == (GOLDEN_READS / "f2f-paired-mixed" / "stdout").read_bytes()


def test_dropped_count_on_stderr(data: Path) -> None:
    proc = kmerflow("fastq-to-fasta", data / "test-fastq-n-reads.fq")
    assert b"lines dropped." in proc.stderr
    assert proc.stderr.count(b"[kmerflow] Version: ") == 1
    assert kmerflow("fastq-to-fasta", "-q", data / "test-fastq-n-reads.fq").stderr == b""


# --- error paths ---------------------------------------------------------------------------

BAD_FASTQ = b"@r1\nACGT\n+\nIIII\n@r2\nACGT\nIIII\n@r3\nACGT\n+\nIIII\n"


@pytest.mark.parametrize("make_input", ["missing", "truncated-gz", "no-plus"])
def test_bad_input_fails_cleanly(make_input: str, tmp_path: Path, data: Path) -> None:
    src = {
        "missing": None,
        "truncated-gz": data / "100-reads.fq.truncated.gz",
        "no-plus": None,
    }[make_input]
    inp = tmp_path / f"in-{make_input}"
    if src is not None:
        shutil.copy(src, inp)
    elif make_input == "no-plus":
        inp.write_bytes(BAD_FASTQ)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = kmerflow("fastq-to-fasta", inp.name, "-o", "out.fa", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("kmerflow fastq-to-fasta: error: ") and inp.name in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output, no temp file


def test_orphan_without_orphan_file_is_an_error(tmp_path: Path, data: Path) -> None:
    proc = kmerflow("split-paired-reads", data / "paired-mixed.fq", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert list(tmp_path.iterdir()) == []


def test_extract_without_pairs_is_an_error(tmp_path: Path, data: Path) -> None:
    proc = kmerflow("extract-paired-reads", data / "single-read.fq", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert list(tmp_path.iterdir()) == []


def test_extract_from_an_empty_file_writes_empty_files(tmp_path: Path) -> None:
    """No reads is not reads without mates: empty outputs, as from any command on an empty file."""
    (tmp_path / "empty.fq").write_bytes(b"")
    kmerflow("extract-paired-reads", "empty.fq", cwd=tmp_path)
    for name in ("empty.fq.pe", "empty.fq.se"):
        assert (tmp_path / name).read_bytes() == b""


@pytest.mark.parametrize("args", [("fastq-to-fasta",), ("no-such-command",), ("readstats", "x", "--bogus"),
                                  ("fastq-to-fasta", "x", "--gzip", "--bzip"), ("readstats", "x", "-T", "0")])
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    assert kmerflow(*args, check=False).returncode == 2


def test_version() -> None:
    assert kmerflow("--version").stdout.decode().strip() == "kmerflow 0.1.0"


def test_closed_pipe_ends_quietly(data: Path) -> None:
    exe = shutil.which("kmerflow") or "kmerflow"
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; '{exe}' fastq-to-fasta -q "
                           f"'{data / 'test-reads.fq.gz'}' | head -1"], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b">") and proc.stdout.count(b"\n") == 1
    assert proc.stderr == b""


# --- sampling --------------------------------------------------------------------------------

def _records(fastq: bytes) -> list[bytes]:
    lines = fastq.split(b"\n")
    return [lines[i][1:] for i in range(0, len(lines) - 1, 4)]


def test_sampling_is_deterministic_with_a_seed(tmp_path: Path, data: Path) -> None:
    def sample(seed: str) -> bytes:
        return kmerflow("sample-reads-randomly", "-N", "10", "-R", seed, "--force_single",
                        data / "test-fastq-reads.fq", "-o", "-").stdout
    first = sample("42")
    assert first == sample("42")
    assert first != sample("43")
    assert len(_records(first)) == 10


def test_sampling_keeps_pairs_together(tmp_path: Path, data: Path) -> None:
    kmerflow("sample-reads-randomly", "-N", "3", "-S", "2", data / "paired.fq", cwd=tmp_path)
    for i in range(2):
        names = _records((tmp_path / f"paired.fq.subset.{i}").read_bytes())
        assert len(names) == 6
        for left, right in zip(names[::2], names[1::2], strict=False):
            assert left.endswith(b"/1") and right == left[:-1] + b"2"


def test_sampling_force_single_and_default_name(tmp_path: Path, data: Path) -> None:
    shutil.copy(data / "paired.fq", tmp_path / "paired.fq")
    kmerflow("sample-reads-randomly", "-N", "5", "--force_single", "paired.fq", cwd=tmp_path)
    assert len(_records((tmp_path / "paired.fq.subset").read_bytes())) == 5


def test_sampling_everything_when_n_exceeds_input(data: Path) -> None:
    out = kmerflow("sample-reads-randomly", "-N", "1000", data / "paired.fq", "-o", "-").stdout
    assert out == (data / "paired.fq").read_bytes()


def test_metrics_json_reports_stages_bytes_and_records(tmp_path: Path, data: Path) -> None:
    import json

    src = data / "100-reads.fq.gz"
    kmerflow("fastq-to-fasta", "-T", "2", src, "-o", tmp_path / "out.fa",
             "--metrics", tmp_path / "m.json")
    m = json.loads((tmp_path / "m.json").read_text())
    for key in ("command", "argv", "threads", "wall_s", "cpu_s", "peak_rss_bytes", "inputs",
                "pipelines", "counters", "totals", "throughput"):
        assert key in m, key
    assert m["command"] == "fastq-to-fasta" and m["threads"] == 2
    (inp,) = m["inputs"]
    assert inp["compression"] == "gzip"
    assert inp["bytes_compressed"] == src.stat().st_size
    assert inp["bytes_decompressed"] == len(gzip.decompress(src.read_bytes()))
    for key in ("busy_s", "wait_s", "cpu_s"):
        assert key in inp["reader_thread"]
    (run,) = [p for p in m["pipelines"] if p["label"] == "records"]
    assert run["records"] == m["totals"]["records"] == 100
    assert len(run["workers"]) == 2
    assert {"reader", "sink", "wall_s", "records_per_s"} <= run.keys()


def test_metrics_count_the_kmers_hashed(tmp_path: Path, data: Path) -> None:
    import json

    src = data / "100-reads.fq.gz"
    lines = gzip.decompress(src.read_bytes()).decode().splitlines()
    seqs = lines[1::4]
    for command, k, extra in (("load-into-counting", 21, [tmp_path / "t.ct"]),
                              ("normalize-by-median", 20, ["-o", tmp_path / "kept.fq"])):
        kmerflow(command, "-k", str(k), "-N", "2", "-x", "1e5", "-T", "2", *extra, src,
                 "--metrics", tmp_path / "m.json")
        m = json.loads((tmp_path / "m.json").read_text())
        expected = sum(len(s) - k + 1 for s in seqs if len(s) >= k)
        assert m["counters"]["kmers"] == expected, command
        assert m["throughput"]["kmers_per_s"] > 0


def test_parallel_gz_output_decompresses_to_the_same_bytes(tmp_path: Path, data: Path) -> None:
    src = data / "100-reads.fq.gz"
    kmerflow("fastq-to-fasta", "-T", "1", src, "-o", tmp_path / "one.fa")
    kmerflow("fastq-to-fasta", "-T", "3", src, "-o", tmp_path / "par.fa.gz")
    par = (tmp_path / "par.fa.gz").read_bytes()
    assert par[12:14] == b"BC", "multi-threaded .gz output is BGZF"
    assert gzip.decompress(par) == (tmp_path / "one.fa").read_bytes()
    # and BGZF input is read back (in parallel) to the same records
    kmerflow("fastq-to-fasta", "-T", "2", tmp_path / "par.fa.gz", "-o", tmp_path / "again.fa")
    assert (tmp_path / "again.fa").read_bytes() == (tmp_path / "one.fa").read_bytes()
    # BGZF followed by plain gzip members (files joined with cat) reads as the whole text
    joined = tmp_path / "joined.fa.gz"
    joined.write_bytes(par + gzip.compress((tmp_path / "one.fa").read_bytes()))
    kmerflow("fastq-to-fasta", "-T", "2", joined, "-o", tmp_path / "both.fa")
    assert (tmp_path / "both.fa").read_bytes() == 2 * (tmp_path / "one.fa").read_bytes()


def _regenerate() -> None:
    """Rewrite the golden files by running khmer 3.0 on every golden case."""
    import tempfile

    for case in CASES:
        if not case.golden:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            where = _stage(case, Path(tmp))
            proc = subprocess.run(["/usr/bin/python3", f"/usr/lib/khmer/bin/{case.command}.py", *case.args],
                                  cwd=where, capture_output=True, check=True)
            dest = GOLDEN_READS / case.name
            dest.mkdir(parents=True, exist_ok=True)
            for name, content in _outputs(case, where, proc).items():
                (dest / name.replace("/", "__")).write_bytes(content)


if __name__ == "__main__" and "--regenerate" in sys.argv:
    _regenerate()
