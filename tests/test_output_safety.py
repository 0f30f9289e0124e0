"""Outputs never destroy data: special files are written in place, write-protected targets and
inputs given as outputs are refused, temporary names are not predictable or followed, a failed
run leaves no output, and a table too big for the machine is refused before it is allocated."""

from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import kmerflow

READS = "".join(f"@r{i}\n{seq}\n+\n{'I' * len(seq)}\n"
                for i, seq in enumerate(["ACGTACGTTGCAAGCTAGCTAGGATCCA", "TTGACCGATCGATCGGCTAGCTAAACGT"] * 3))


def error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.decode().strip().splitlines()
    return lines[-1] if lines else ""


@pytest.fixture()
def reads(tmp_path: Path) -> Path:
    path = tmp_path / "in.fq"
    path.write_text(READS)
    return path


def test_a_fifo_output_is_written_in_place(tmp_path: Path, reads: Path) -> None:
    fifo = tmp_path / "out.fa"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    kmerflow("fastq-to-fasta", reads, "-o", fifo)
    reader.join(timeout=30)
    assert got and got[0].count(b">") == 6
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_symlink_to_dev_stdout_is_written_in_place(tmp_path: Path, reads: Path) -> None:
    link = tmp_path / "out.fa"
    link.symlink_to("/dev/stdout")
    proc = kmerflow("fastq-to-fasta", reads, "-o", link)
    assert proc.stdout.count(b">") == 6
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"


def test_links_planted_at_temporary_names_are_not_followed(tmp_path: Path, reads: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    # Every name a predictable scheme could use, for the next process ids.
    for pid in range(os.getpid(), os.getpid() + 200):
        (tmp_path / f".out.fa.tmp-{pid}").symlink_to(victim)
    kmerflow("fastq-to-fasta", reads, "-o", "out.fa", cwd=tmp_path)
    assert victim.read_text() == "precious"
    out = tmp_path / "out.fa"
    assert out.is_file() and not out.is_symlink() and out.read_text().count(">") == 6


def test_a_write_protected_output_is_refused_and_unchanged(tmp_path: Path, reads: Path) -> None:
    out = tmp_path / "out.fa"
    out.write_text("keep me")
    out.chmod(0o402)
    proc = kmerflow("fastq-to-fasta", reads, "-o", out, check=False)
    assert proc.returncode == 1
    assert "out.fa: Permission denied" in error_line(proc)
    assert out.read_text() == "keep me" and stat.S_IMODE(out.stat().st_mode) == 0o402
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq", "out.fa"]


def test_a_replaced_output_keeps_its_mode(tmp_path: Path, reads: Path) -> None:
    out = tmp_path / "out.fa"
    out.write_text("old")
    out.chmod(0o640)
    kmerflow("fastq-to-fasta", reads, "-o", out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_text().count(">") == 6


def test_a_full_disk_is_an_error_naming_the_file(reads: Path) -> None:
    proc = kmerflow("fastq-to-fasta", reads, "-o", "/dev/full", check=False)
    assert proc.returncode == 1
    assert "/dev/full" in error_line(proc) and "No space left" in error_line(proc)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_stale_temporary_of_a_dead_process_is_removed(tmp_path: Path, reads: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".out.fa.tmp-{dead.pid}-Zq81kLmx"
    stale.write_text("half-written")
    kmerflow("fastq-to-fasta", reads, "-o", "out.fa", cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq", "out.fa"]


@pytest.mark.parametrize("args", [
    ["fastq-to-fasta", "in.fq", "-o", "in.fq"],
    ["fastq-to-fasta", "in.fq", "-o", "./link.fq"],
    ["load-into-counting", "-x", "1e4", "in.fq", "in.fq"],
    ["normalize-by-median", "-x", "1e4", "in.fq", "-o", "in.fq"],
    ["normalize-by-median", "-x", "1e4", "in.fq", "-s", "in.fq"],
    ["trim-low-abund", "-x", "1e4", "in.fq", "-o", "link.fq"],
    ["filter-abund-single", "-x", "1e4", "in.fq", "-o", "in.fq"],
    ["extract-long-sequences", "in.fq", "-o", "in.fq"],
    ["interleave-reads", "in.fq", "in.fq", "-o", "in.fq"],
])
def test_an_input_given_as_output_is_refused_untouched(tmp_path: Path, reads: Path, args: list[str]) -> None:
    (tmp_path / "link.fq").symlink_to("in.fq")
    proc = kmerflow(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr
    line = error_line(proc)
    assert "is the same file as input in.fq" in line, line
    assert reads.read_text() == READS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq", "link.fq"]


def test_a_derived_output_name_equal_to_an_input_is_refused(tmp_path: Path, reads: Path) -> None:
    shutil.copy(reads, tmp_path / "in.fq.keep")
    proc = kmerflow("normalize-by-median", "-x", "1e4", "in.fq", "in.fq.keep", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "output in.fq.keep is the same file as input in.fq.keep" in error_line(proc)
    assert (tmp_path / "in.fq.keep").read_text() == READS


@pytest.mark.parametrize("args", [
    ["normalize-by-median", "-k", "4", "-N", "1", "-x", "4", "in.fq", "-R", "rep.csv", "--report-json", "r.json"],
    ["normalize-by-median", "-k", "4", "-N", "1", "-x", "4", "in.fq", "-o", "out.fq", "-s", "saved.ct"],
    ["trim-low-abund", "-k", "4", "-N", "1", "-x", "4", "in.fq", "-o", "out.fq", "-s", "saved.ct"],
    ["load-into-counting", "-k", "4", "-N", "1", "-x", "4", "-s", "json", "saved.ct", "in.fq"],
    ["load-into-counting", "-k", "4", "-N", "1", "-x", "64", "--layout", "blocked", "saved.kf", "in.fq"],
    ["load-graph", "-k", "4", "-N", "1", "-x", "4", "saved.pt", "in.fq"],
])
def test_a_failed_fp_rate_check_leaves_no_output(tmp_path: Path, reads: Path, args: list[str]) -> None:
    proc = kmerflow(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "false positive rate" in error_line(proc), error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


def test_a_table_larger_than_the_machine_is_refused_quickly(tmp_path: Path, reads: Path) -> None:
    start = time.monotonic()
    proc = kmerflow("normalize-by-median", "-M", "100e12", reads, "-o", tmp_path / "out.fq", check=False)
    assert time.monotonic() - start < 20
    assert proc.returncode == 1
    line = error_line(proc)
    assert "does not fit in" in line and "-M/--max-memory-usage" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


def test_a_table_beyond_ulimit_v_is_refused_before_allocation(tmp_path: Path, reads: Path) -> None:
    limit = 3 << 30

    def limit_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    exe = shutil.which("kmerflow")
    cmd = [exe] if exe else [sys.executable, "-m", "kmerflow"]
    proc = subprocess.run([*cmd, "load-into-counting", "-M", "4e9", "out.ct", str(reads)], cwd=tmp_path,
                          capture_output=True, timeout=60, preexec_fn=limit_address_space)
    assert proc.returncode == 1, proc.stderr
    line = error_line(proc)
    assert "ulimit -v" in line and "-M/--max-memory-usage" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


def test_plots_without_matplotlib_are_refused_before_the_run(tmp_path: Path, reads: Path) -> None:
    """The ``kmerflow`` command draws ``--plots`` with matplotlib: without it (hidden from the
    interpreter here) the run is refused before anything is read or written."""
    hide = ("import sys; sys.modules['matplotlib'] = None; sys.argv[0] = 'kmerflow'; "
            "from kmerflow.__main__ import main; main()")
    args = ["fastq-to-fasta", str(reads), "-o", str(tmp_path / "out.fa"), "--plots", str(tmp_path / "plots")]
    proc = subprocess.run([sys.executable, "-c", hide, *args], capture_output=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    line = error_line(proc)
    assert f"--plots {tmp_path / 'plots'}" in line and "matplotlib" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


@pytest.mark.parametrize("flag", ["--html", "--report-json", "--metrics", "--multiqc", "--plots"])
def test_a_side_output_naming_a_main_output_is_refused_before_the_run(tmp_path: Path, reads: Path,
                                                                       flag: str) -> None:
    out = tmp_path / "out.fa"
    proc = kmerflow("fastq-to-fasta", reads, "-o", out, flag, tmp_path / "." / "out.fa", check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"output {out} and {flag} " in error_line(proc), error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


@pytest.mark.parametrize("flag", ["--html", "--report-json", "--metrics"])
def test_side_files_in_a_missing_folder_are_refused_before_the_run(tmp_path: Path, reads: Path, flag: str) -> None:
    proc = kmerflow("fastq-to-fasta", reads, "-o", tmp_path / "out.fa", flag, tmp_path / "no" / "r", check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"{flag} {tmp_path / 'no' / 'r'}: No such file or directory" in error_line(proc), error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]
