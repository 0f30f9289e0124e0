"""Input robustness and flags: range checks (exit 2 naming the flag), khmer's option handling
(unique prefixes, --info, --loadgraph k), table kinds, FIFOs and stdin, empty inputs, the
bound on a record's length, gzip zero padding and wrapped FASTQ.

Every input is generated here; where behaviour must match khmer, the khmer 3.0 scripts are run
on the same input (the oracle)."""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import khmer, kmerflow

COMMANDS = [
    "abundance-dist", "abundance-dist-single", "count-median", "extract-long-sequences",
    "extract-paired-reads", "fastq-to-fasta", "filter-abund", "filter-abund-single",
    "interleave-reads", "load-graph", "load-into-counting", "normalize-by-median", "readstats",
    "sample-reads-randomly", "split-paired-reads", "trim-low-abund", "unique-kmers",
    "annotate-partitions", "do-partition", "extract-partitions", "filter-stoptags", "merge-partitions",
    "partition-graph",
]


def _reads(n: int = 300, length: int = 60, seed: int = 1, genome_len: int = 2000) -> bytes:
    """FASTQ reads sampled from one random genome (so that k-mers repeat)."""
    rng = random.Random(seed)
    genome = "".join(rng.choice("ACGT") for _ in range(genome_len))
    out = []
    for i in range(n):
        start = rng.randrange(genome_len - length)
        out.append(f"@r{i}\n{genome[start:start + length]}\n+\n{'I' * length}\n")
    return "".join(out).encode()


@pytest.fixture
def reads(tmp_path: Path) -> Path:
    path = tmp_path / "reads.fq"
    path.write_bytes(_reads())
    return path


def _error_line(proc: subprocess.CompletedProcess) -> str:
    text = proc.stderr.decode()
    assert "Traceback" not in text and "panicked" not in text, text
    return text.strip().splitlines()[-1] if text.strip() else ""


# --- 1. range checks ----------------------------------------------------------------------

BAD_FLAGS = [
    (["load-into-counting", "-k", "0", "o.ct", "r.fq"], "--ksize"),
    (["load-into-counting", "-k", "33", "o.ct", "r.fq"], "--layout blocked"),
    (["normalize-by-median", "-k", "200", "r.fq"], "--layout blocked"),
    (["load-graph", "-k", "33", "g", "r.fq"], "--ksize"),
    (["trim-low-abund", "-k", "40", "r.fq"], "--ksize"),
    (["load-into-counting", "-x", "0", "o.ct", "r.fq"], "--max-tablesize"),
    (["load-into-counting", "-x", "inf", "o.ct", "r.fq"], "--max-tablesize"),
    (["load-into-counting", "-x", "1e30", "o.ct", "r.fq"], "--max-tablesize"),
    (["normalize-by-median", "-M", "nan", "r.fq"], "--max-memory-usage"),
    (["normalize-by-median", "-M", "1e20", "r.fq"], "--max-memory-usage"),
    (["abundance-dist-single", "-N", "0", "r.fq", "h.csv"], "--n_tables"),
    (["unique-kmers", "-e", "0", "r.fq"], "--error-rate"),
    (["unique-kmers", "-k", "0", "r.fq"], "--ksize"),
    (["load-into-counting", "-U", "1e6", "--fp-rate", "2", "o.ct", "r.fq"], "--fp-rate"),
    (["load-into-counting", "-U", "1e6", "--fp-rate", "0", "o.ct", "r.fq"], "--fp-rate"),
    (["load-into-counting", "-U", "1e6", "--fp-rate", "-0.5", "o.ct", "r.fq"], "--fp-rate"),
    (["load-into-counting", "-U", "-5", "o.ct", "r.fq"], "--unique-kmers"),
    (["load-into-counting", "-k", "-3", "o.ct", "r.fq"], "--ksize"),
    (["load-into-counting", "--max-memory-usage=-1G", "o.ct", "r.fq"], "--max-memory-usage"),
    (["normalize-by-median", "-C", "256", "r.fq"], "--cutoff"),
    (["filter-abund", "-C", "300", "t.ct", "r.fq"], "--cutoff"),
    (["sample-reads-randomly", "-N", "0", "r.fq"], "--num_reads"),
    (["sample-reads-randomly", "-S", "0", "r.fq"], "--samples"),
]


@pytest.mark.parametrize("args,flag", BAD_FLAGS, ids=[" ".join(a[:3]) for a, _ in BAD_FLAGS])
def test_out_of_range_flags_are_usage_errors_naming_the_flag(args: list[str], flag: str, tmp_path: Path) -> None:
    (tmp_path / "r.fq").write_bytes(_reads(5))
    started = time.monotonic()
    proc = kmerflow(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr.decode()
    assert flag in proc.stderr.decode()
    assert time.monotonic() - started < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.fq"]


def test_large_k_is_accepted_with_the_blocked_layout(reads: Path, tmp_path: Path) -> None:
    kmerflow("load-into-counting", "-q", "-k", "40", "--layout", "blocked", "-x", "1e5", "t.kf", reads, cwd=tmp_path)
    assert (tmp_path / "t.kf").exists()


# --- 2. khmer's option handling ---------------------------------------------------------------

def test_unique_prefixes_of_long_options_are_accepted(reads: Path, tmp_path: Path) -> None:
    kmerflow("normalize-by-median", "-q", "-k", "17", "--max-mem", "1e6", "--out", "a.fq", reads, cwd=tmp_path)
    kmerflow("normalize-by-median", "-q", "-k", "17", "--max-memory-usage", "1e6", "--output", "b.fq", reads,
             cwd=tmp_path)
    assert (tmp_path / "a.fq").read_bytes() == (tmp_path / "b.fq").read_bytes() != b""
    # An ambiguous prefix is a usage error, as with argparse.
    assert kmerflow("normalize-by-median", "--max", "1e6", reads, cwd=tmp_path, check=False).returncode == 2


def _citations(stderr: bytes) -> list[str]:
    return [line.strip() for line in stderr.decode().splitlines() if line.lstrip("| ").startswith("*")]


@pytest.mark.parametrize("command", COMMANDS)
def test_info_prints_khmers_citations(command: str) -> None:
    ours = kmerflow(command, "--info")
    assert ours.stdout == b""
    theirs = khmer(command, "--info")
    assert _citations(ours.stderr) == _citations(theirs.stderr) != []


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_point_to_the_citations(flag: str) -> None:
    # khmer's scripts print their citation notice on stderr for --help and --version too.
    proc = kmerflow("partition-graph", flag)
    assert "publication" in proc.stderr.decode() and "kmerflow partition-graph --info" in proc.stderr.decode()
    assert "usage:" not in proc.stderr.decode()
    assert ("usage: kmerflow partition-graph" in proc.stdout.decode()) == (flag == "--help")


def test_loadgraph_k_wins_over_k_flag_as_in_khmer(tmp_path: Path) -> None:
    reads = tmp_path / "reads.fa"
    rng = random.Random(3)
    reads.write_text("".join(f">r{i}\n{''.join(rng.choice('ACGT') for _ in range(rng.randrange(8, 60)))}\n"
                             for i in range(400)))
    kmerflow("load-into-counting", "-q", "-k", "32", "-x", "1e5", "t.ct", reads, cwd=tmp_path)
    ours = kmerflow("normalize-by-median", "-k", "7", "--loadgraph", "t.ct", "-o", "ours.fa", reads, cwd=tmp_path)
    khmer("normalize-by-median", "-k", "7", "--loadgraph", "t.ct", "-o", "theirs.fa", reads, cwd=tmp_path)
    assert (tmp_path / "ours.fa").read_bytes() == (tmp_path / "theirs.fa").read_bytes()
    assert "WARNING" in ours.stderr.decode() and "t.ct" in ours.stderr.decode()


def test_force_covers_a_too_small_table(reads: Path, tmp_path: Path) -> None:
    args = ["-k", "17", "-N", "1", "-x", "50", "t.ct", reads]
    refused = kmerflow("load-into-counting", "-q", *args, cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "too small" in _error_line(refused)
    forced = kmerflow("load-into-counting", "-q", "-f", *args, cwd=tmp_path)
    assert "too small" in forced.stderr.decode()
    assert (tmp_path / "t.ct").exists()


# --- 5. table kinds -----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["abundance-dist", "g.ht", "reads.fq", "h.csv"],
    ["filter-abund", "g.ht", "reads.fq"],
    ["count-median", "g.ht", "reads.fq", "m.csv"],
    ["normalize-by-median", "-k", "17", "-l", "g.ht", "reads.fq"],
    ["trim-low-abund", "-k", "17", "-l", "g.ht", "reads.fq"],
], ids=lambda a: a[0])
def test_a_nodegraph_is_refused_where_counts_are_needed(args: list[str], reads: Path, tmp_path: Path) -> None:
    kmerflow("load-graph", "-q", "-n", "-k", "17", "-x", "1e5", "g.ht", reads, cwd=tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = kmerflow(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 1
    line = _error_line(proc)
    assert "g.ht" in line and "nodegraph" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# --- 6. FIFOs and stdin -----------------------------------------------------------------------

def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    os.mkfifo(path)

    def write() -> None:
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError:
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _unblock(path: Path) -> None:
    """Ends a writer still waiting for a reader on FIFO `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


@pytest.mark.parametrize("args", [
    ["abundance-dist-single", "-k", "17", "-x", "1e5", "in.fq", "h.csv"],
    ["filter-abund-single", "-k", "17", "-x", "1e5", "in.fq"],
], ids=lambda a: a[0])
def test_commands_reading_twice_refuse_a_fifo(args: list[str], tmp_path: Path) -> None:
    _feed_fifo(tmp_path / "in.fq", _reads(50))
    proc = kmerflow(*args, cwd=tmp_path, check=False)
    _unblock(tmp_path / "in.fq")
    assert proc.returncode == 1
    line = _error_line(proc)
    assert "in.fq" in line and "needs a regular file" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


def test_stdin_is_refused_by_commands_reading_twice(reads: Path, tmp_path: Path) -> None:
    proc = kmerflow("abundance-dist-single", "-k", "17", "-", "h.csv", cwd=tmp_path, stdin=reads.read_bytes(),
                    check=False)
    assert proc.returncode == 1 and "needs a regular file" in _error_line(proc)


@pytest.mark.parametrize("args", [
    ["trim-low-abund", "-q", "-k", "17", "-x", "1e5", "-o", "{out}", "{in}"],
    ["normalize-by-median", "-q", "-k", "17", "-x", "1e5", "-o", "{out}", "{in}"],
    ["fastq-to-fasta", "{in}", "-o", "{out}"],
], ids=lambda a: a[0])
def test_one_pass_commands_read_a_fifo(args: list[str], reads: Path, tmp_path: Path) -> None:
    def run(inp: str, out: str) -> bytes:
        kmerflow(*[a.format(**{"in": inp, "out": out}) for a in args], cwd=tmp_path)
        return (tmp_path / out).read_bytes()

    expected = run(str(reads), "file.out")
    _feed_fifo(tmp_path / "pipe.fq", reads.read_bytes())
    assert run("pipe.fq", "fifo.out") == expected != b""


def test_interleave_reads_two_fifos(tmp_path: Path) -> None:
    left = b"".join(b"@p%d/1\nACGTACGT\n+\nIIIIIIII\n" % i for i in range(20000))
    right = left.replace(b"/1\n", b"/2\n")
    (tmp_path / "l.fq").write_bytes(left)
    (tmp_path / "r.fq").write_bytes(right)
    kmerflow("interleave-reads", "-q", "l.fq", "r.fq", "-o", "file.fq", cwd=tmp_path)
    _feed_fifo(tmp_path / "lp", left)
    _feed_fifo(tmp_path / "rp", right)
    kmerflow("interleave-reads", "-q", "lp", "rp", "-o", "fifo.fq", cwd=tmp_path)
    assert (tmp_path / "fifo.fq").read_bytes() == (tmp_path / "file.fq").read_bytes()


# --- 7. empty inputs ------------------------------------------------------------------------

EMPTY_RUNS = {
    "fastq-to-fasta": (["e.fq", "-o", "out"], "out"),
    "normalize-by-median": (["-k", "17", "-x", "1e5", "e.fq"], "e.fq.keep"),
    "extract-long-sequences": (["e.fq", "-o", "out"], "out"),
    "filter-abund-single": (["-k", "17", "-x", "1e5", "e.fq"], "e.fq.abundfilt"),
    "trim-low-abund": (["-k", "17", "-x", "1e5", "e.fq"], "e.fq.abundtrim"),
    "sample-reads-randomly": (["e.fq", "-o", "out"], "out"),
    "interleave-reads": (["e.fq", "e2.fq", "-o", "out"], "out"),
    "unique-kmers": (["e.fq"], None),
    "readstats": (["e.fq"], None),
    "load-into-counting": (["-k", "17", "-x", "1e5", "t.ct", "e.fq"], "t.ct"),
}


@pytest.mark.parametrize("command", sorted(EMPTY_RUNS))
@pytest.mark.parametrize("content", [b"", b"\n\n"], ids=["empty", "blank"])
def test_empty_input_warns_and_succeeds(command: str, content: bytes, tmp_path: Path) -> None:
    args, output = EMPTY_RUNS[command]
    (tmp_path / "e.fq").write_bytes(content)
    (tmp_path / "e2.fq").write_bytes(content)  # interleave-reads' R2
    proc = kmerflow(command, *args, cwd=tmp_path)
    assert "e.fq is empty" in proc.stderr.decode()
    if output == "out":
        assert (tmp_path / output).read_bytes() == b""
    elif output is not None:
        assert (tmp_path / output).exists()


def test_empty_input_gives_khmers_outputs(tmp_path: Path) -> None:
    (tmp_path / "e.fq").write_bytes(b"")
    kmerflow("fastq-to-fasta", "e.fq", "-o", "ours.fa", cwd=tmp_path)
    khmer("fastq-to-fasta", "e.fq", "-o", "theirs.fa", cwd=tmp_path)
    assert (tmp_path / "ours.fa").read_bytes() == (tmp_path / "theirs.fa").read_bytes() == b""
    kmerflow("normalize-by-median", "-k", "17", "-x", "1e5", "e.fq", "-o", "ours.keep", cwd=tmp_path)
    khmer("normalize-by-median", "-k", "17", "-x", "1e5", "e.fq", "-o", "theirs.keep", cwd=tmp_path)
    assert (tmp_path / "ours.keep").read_bytes() == (tmp_path / "theirs.keep").read_bytes()


# --- 3. the bound on a record's length -----------------------------------------------------

def test_a_record_longer_than_the_bound_fails_fast(tmp_path: Path) -> None:
    # 64 MiB of one line, a few hundred KB compressed; the bound is set to 4 MiB.
    with gzip.open(tmp_path / "bomb.fq.gz", "wb", compresslevel=1) as f:
        f.write(b"@r1\nACGT\n+\nIIII\n@long\n")
        block = b"A" * (1 << 20)
        for _ in range(64):
            f.write(block)
    env = dict(os.environ, KMERFLOW_MAX_RECORD_BYTES="4M")
    for args in (["fastq-to-fasta", "bomb.fq.gz", "-o", "out.fa"], ["unique-kmers", "bomb.fq.gz"],
                 ["load-into-counting", "-k", "17", "-x", "1e5", "t.ct", "bomb.fq.gz"]):
        started = time.monotonic()
        proc = subprocess.run(["kmerflow", *args], cwd=tmp_path, env=env, capture_output=True, timeout=60)
        assert proc.returncode == 1
        line = _error_line(proc)
        assert "bomb.fq.gz" in line and "record 2" in line and "longer than 4194304 bytes" in line, line
        assert time.monotonic() - started < 20
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.fq.gz"]


def test_a_bad_record_bound_is_an_error(reads: Path, tmp_path: Path) -> None:
    env = dict(os.environ, KMERFLOW_MAX_RECORD_BYTES="lots")
    proc = subprocess.run(["kmerflow", "readstats", str(reads)], env=env, capture_output=True, timeout=60)
    assert proc.returncode == 1 and "KMERFLOW_MAX_RECORD_BYTES" in _error_line(proc)


# --- 4. gzip padding and wrapped FASTQ -------------------------------------------------------

def test_gzip_zero_padding_is_ignored_with_a_warning(reads: Path, tmp_path: Path) -> None:
    padded = tmp_path / "padded.fq.gz"
    padded.write_bytes(gzip.compress(reads.read_bytes()) + b"\0" * 4096)
    ours = kmerflow("fastq-to-fasta", padded, "-o", "ours.fa", cwd=tmp_path)
    assert "trailing zero bytes ignored" in ours.stderr.decode()
    khmer("fastq-to-fasta", padded, "-o", "theirs.fa", cwd=tmp_path)
    assert (tmp_path / "ours.fa").read_bytes() == (tmp_path / "theirs.fa").read_bytes() != b""
    garbage = tmp_path / "garbage.fq.gz"
    garbage.write_bytes(gzip.compress(reads.read_bytes()) + b"\0\0junk")
    proc = kmerflow("fastq-to-fasta", garbage, "-o", "g.fa", cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "garbage.fq.gz" in _error_line(proc)


def _wrap(fastq: bytes, width: int) -> bytes:
    lines = fastq.decode().split("\n")
    out = []
    for i in range(0, len(lines) - 1, 4):
        name, seq, _, qual = lines[i:i + 4]
        out.append(name)
        out.extend(seq[j:j + width] for j in range(0, len(seq), width))
        out.append("+")
        out.extend(qual[j:j + width] for j in range(0, len(qual), width))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("command,args,output", [
    ("fastq-to-fasta", ["{in}", "-o", "{out}"], "{out}"),
    ("normalize-by-median", ["-k", "17", "-x", "1e5", "-C", "5", "{in}", "-o", "{out}"], "{out}"),
], ids=["fastq-to-fasta", "normalize-by-median"])
def test_wrapped_fastq_reads_as_in_khmer(command: str, args: list[str], output: str, tmp_path: Path) -> None:
    # Qualities starting with '@' on a wrapped line must not start a record.
    fastq = _reads(200).replace(b"IIIIIIIIII\n", b"@IIIIIIIII\n")
    (tmp_path / "w.fq").write_bytes(_wrap(fastq, 25))
    fill = lambda out: [a.format(**{"in": "w.fq", "out": out}) for a in args]  # noqa: E731
    kmerflow(command, *fill("ours"), cwd=tmp_path)
    khmer(command, *fill("theirs"), cwd=tmp_path)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes() != b""
