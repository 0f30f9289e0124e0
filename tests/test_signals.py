"""SIGINT and SIGTERM cancel a run within a second or two: exit 130 / 143, one line saying so,
and nothing left behind (no temporary files or directories, no final output)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

#: How long a cancelled run may take to exit after the signal (generous for a loaded machine).
GRACE_S = 2.0


def _command() -> list[str]:
    exe = shutil.which("kmerflow")
    return [exe] if exe else [sys.executable, "-m", "kmerflow"]


def _reads(path: Path, n: int, length: int = 100, seed: int = 1) -> None:
    """Writes `n` random FASTQ reads of `length` bases."""
    rng = random.Random(seed)
    acgt = bytes.maketrans(bytes(range(256)), b"ACGT" * 64)
    qual = b"I" * length
    with open(path, "wb") as out:
        for i in range(n):
            seq = rng.randbytes(length).translate(acgt)
            out.write(b"@r%d\n%s\n+\n%s\n" % (i, seq, qual))


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 25 MB of reads: several seconds of work for the commands below at -T 2."""
    path = tmp_path_factory.mktemp("signal-data") / "reads.fq"
    _reads(path, 110_000)
    return path


def _interrupt(args: list[str], cwd: Path, sig: signal.Signals, delay: float,
               stdin=None) -> tuple[int, float, str]:
    """Starts kmerflow ARGS in `cwd`, sends `sig` after `delay` seconds; returns the exit
    status, the seconds from the signal to the exit, and stderr."""
    proc = subprocess.Popen([*_command(), *args], cwd=cwd, stdin=stdin,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    assert proc.poll() is None, f"the run ended before the signal: {proc.stderr.read().decode()}"
    proc.send_signal(sig)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return proc.returncode, time.monotonic() - sent, err.decode(errors="replace")


def _check(status: int, took: float, err: str, sig: signal.Signals, name: str) -> None:
    expected = 130 if sig == signal.SIGINT else 143
    assert status == expected, err
    assert took < GRACE_S, f"{took:.2f} s to stop"
    assert "Traceback" not in err, err
    assert err.rstrip("\n").splitlines()[-1] == f"kmerflow {name}: interrupted", err


def _left(cwd: Path, inputs: set[str]) -> list[str]:
    return sorted(p.name for p in cwd.iterdir() if p.name not in inputs)


# (command line, inputs it needs beside reads.fq); each is far from done when the signal comes.
COMMANDS = [
    ["normalize-by-median", "-T", "2", "-k", "20", "-M", "40e6", "-o", "out.fq", *["reads.fq"] * 20],
    ["load-into-counting", "-T", "2", "-k", "20", "-M", "40e6", "table.ct", *["reads.fq"] * 20],
    ["trim-low-abund", "--threads", "2", "-k", "20", "-M", "40e6", "--tempdir", ".", "-o", "out.fq",
     *[f"r{i}.fq" for i in range(20)]],
    ["filter-abund-single", "-T", "2", "-k", "20", "-M", "40e6", "-o", "out.fq", "big.fq"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_signal_cancels_the_run_and_leaves_nothing(args: list[str], reads: Path, tmp_path: Path):
    rng = random.Random(args[0])
    names = {"reads.fq"}
    os.symlink(reads, tmp_path / "reads.fq")
    for i in range(20):
        os.symlink(reads, tmp_path / f"r{i}.fq")
        names.add(f"r{i}.fq")
    if "big.fq" in args:
        with open(tmp_path / "big.fq", "wb") as big:
            data = reads.read_bytes()
            for _ in range(20):
                big.write(data)
        names.add("big.fq")
    for sig in (signal.SIGINT, signal.SIGTERM):
        status, took, err = _interrupt(args, tmp_path, sig, rng.uniform(0.3, 1.5))
        _check(status, took, err, sig, args[0])
        assert _left(tmp_path, names) == [], err


def test_a_signal_cancels_a_run_waiting_on_a_stalled_input(tmp_path: Path):
    fifo = tmp_path / "in.fq"
    os.mkfifo(fifo)
    stop = threading.Event()

    def feed() -> None:
        # Some records, then silence with the FIFO held open.
        with open(fifo, "wb") as w:
            w.write(b"@r\nACGTACGTAC\n+\nIIIIIIIIII\n" * 1000)
            w.flush()
            stop.wait(30)

    for sig in (signal.SIGINT, signal.SIGTERM):
        stop.clear()
        feeder = threading.Thread(target=feed)
        feeder.start()
        try:
            status, took, err = _interrupt(["fastq-to-fasta", str(fifo), "-o", "out.fa"], tmp_path, sig,
                                           random.uniform(0.5, 1.0))
        finally:
            stop.set()
            feeder.join()
        _check(status, took, err, sig, "fastq-to-fasta")
        assert _left(tmp_path, {"in.fq"}) == [], err
