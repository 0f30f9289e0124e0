"""The progress line on a terminal (a pseudo-terminal here): erased before every other line so
that it never reaches the scrollback, and its overall percentage never falls when a command
starts its second pass over the input or opens another file."""

from __future__ import annotations

import fcntl
import os
import pty
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from conftest import kmerflow

PROGRESS = "[kmerflow abundance-dist-single]"
#: Runs of the redraw-while-printing test (each deadlocked often enough before the fix).
REDRAW_RACE_RUNS = 10


def _reads(path: Path, n: int = 60_000, length: int = 100) -> None:
    rng = random.Random(7)
    genome = rng.randbytes(20_000).translate(bytes(b"ACGT"[i % 4] for i in range(256)))
    with open(path, "wb") as f:
        for i in range(n):
            start = rng.randrange(len(genome) - length)
            f.write(b">r%d\n%s\n" % (i, genome[start:start + length]))


def _on_terminal(args: list[str], cwd: Path, redraw_ms: int = 5) -> tuple[int, bytes]:
    """Runs kmerflow with stderr on a pseudo-terminal, its progress line redrawn every
    ``redraw_ms`` milliseconds; returns its exit status and what the terminal received. A run
    that prints nothing for 60 s fails the test with the stacks of its threads."""
    exe = shutil.which("kmerflow")
    cmd = [exe] if exe else [sys.executable, "-m", "kmerflow"]
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {**os.environ, "KMERFLOW_PROGRESS_MS": str(redraw_ms)}
    proc = subprocess.Popen([*cmd, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=terminal, env=env)
    os.close(terminal)
    received = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            stacks = _stacks(proc.pid)
            proc.kill()
            raise AssertionError(f"no output for 60 s; the threads of the stuck process:\n{stacks}")
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        received += chunk
    os.close(controller)
    return proc.wait(timeout=60), received


def _stacks(pid: int) -> str:
    """The stack of every thread of process ``pid``: gdb's backtraces when gdb is installed,
    else the name and kernel wait channel of each thread."""
    gdb = shutil.which("gdb")
    if gdb:
        out = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=60, check=False)
        return out.stdout + out.stderr
    threads = []
    try:
        for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
            name, wchan = ((task / f).read_text().strip() for f in ("comm", "wchan"))
            threads.append(f"{task.name} {name}: waiting in {wchan}")
    except OSError as e:  # the process ended meanwhile
        threads.append(str(e))
    return "\n".join(threads)


def _scrollback(stream: str) -> list[str]:
    """The lines a terminal shows after receiving ``stream`` (carriage return, erase to the end
    of the line, newline)."""
    lines, line, col = [], [], 0
    for token in re.findall(r"\x1b\[K|\r|\n|[^\r\n\x1b]", stream):
        if token == "\r":
            col = 0
        elif token == "\n":
            lines.append("".join(line))
            line, col = [], 0
        elif token == "\x1b[K":
            del line[col:]
        else:
            if col < len(line):
                line[col] = token
            else:
                line.append(token)
            col += 1
    if line:
        lines.append("".join(line))
    return lines


def _drawn(stream: str, label: str) -> list[str]:
    """The progress lines of ``kmerflow LABEL`` drawn in ``stream``."""
    return [d.split("\r")[0] for d in stream.split("\x1b[K")[1:] if d.startswith(f"[kmerflow {label}]")]


def _overall(drawn: list[str]) -> list[int]:
    return [int(m.group(1)) for d in drawn if (m := re.search(r"overall (\d+)%", d))]


def test_progress_line_is_erased_and_overall_progress_never_falls(tmp_path: Path) -> None:
    _reads(tmp_path / "reads.fa")
    args = ["abundance-dist-single", "-k", "20", "-x", "2e6", "-N", "2", "-T", "1", "-s", "reads.fa", "hist.csv"]
    status, received = _on_terminal(args, tmp_path)
    assert status == 0, received.decode(errors="replace")
    stream = received.decode()
    drawn = _drawn(stream, "abundance-dist-single")
    assert any("pass 1/2 counting" in d for d in drawn), drawn
    assert any("pass 2/2 histogram" in d for d in drawn), drawn
    overall = _overall(drawn)
    assert overall == sorted(overall) and overall[-1] >= 50, overall
    lines = _scrollback(stream)
    assert not [line for line in lines if PROGRESS in line], lines
    quiet = kmerflow(*args, "-q", cwd=tmp_path)  # the same messages without a terminal
    expected = kmerflow(*args, cwd=tmp_path).stderr.decode().splitlines()
    assert quiet.stderr == b""
    assert [line for line in lines if not line.startswith("[kmerflow] Version")] == \
        [line for line in expected if not line.startswith("[kmerflow] Version")]


#: trim-low-abund with every read set aside (-V -Z 1000), so that the second pass reads as much
#: as the first and prints its messages while the progress line is drawn.
TRIM_ALL_ASIDE = ["trim-low-abund", "-k", "20", "-x", "2e6", "-N", "2", "--threads", "1", "-V", "-Z", "1000",
                  "-o", "out.fa", "reads.fa"]


def test_trim_low_abund_second_pass_is_a_pass_of_its_own(tmp_path: Path) -> None:
    """The set-aside file opened by the second pass does not pull the percentage back."""
    _reads(tmp_path / "reads.fa")
    status, received = _on_terminal(TRIM_ALL_ASIDE, tmp_path)
    assert status == 0, received.decode(errors="replace")
    drawn = _drawn(received.decode(), "trim-low-abund")
    assert any("pass 1/2 trimming" in d for d in drawn), drawn
    assert any("pass 2/2 second pass" in d for d in drawn), drawn
    overall = _overall(drawn)
    assert overall == sorted(overall) and overall[-1] >= 75, overall


def test_messages_printed_while_the_line_is_redrawn_do_not_deadlock(tmp_path: Path) -> None:
    """A message printed above the progress line while the line is being redrawn (here, with no
    pause between redraws, all the time) waits for the redraw, then prints: printing and
    redrawing take the terminal and the line in the same order."""
    _reads(tmp_path / "reads.fa", n=20_000)
    for _ in range(REDRAW_RACE_RUNS):
        status, received = _on_terminal(TRIM_ALL_ASIDE, tmp_path, redraw_ms=0)
        assert status == 0, received.decode(errors="replace")[-2000:]
        lines = _scrollback(received.decode())
        assert any(line.startswith("second pass: looking at sequences kept aside") for line in lines), lines
        assert lines[-1].startswith("[kmerflow] Version: "), lines[-1]


def test_a_run_whose_terminal_stopped_reading_ends_on_sigterm(tmp_path: Path) -> None:
    """The progress line blocks writing to a terminal nobody reads, holding stderr; SIGTERM still
    ends the run (the watchdog's last line does not wait for stderr), with status 143."""
    _reads(tmp_path / "reads.fa")
    exe = shutil.which("kmerflow")
    cmd = [exe] if exe else [sys.executable, "-m", "kmerflow"]
    controller, terminal = pty.openpty()
    env = {**os.environ, "KMERFLOW_PROGRESS_MS": "0"}
    proc = subprocess.Popen([*cmd, *TRIM_ALL_ASIDE], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=terminal, env=env)
    os.close(terminal)
    try:
        ready, _, _ = select.select([controller], [], [], 60)
        assert ready, "no output for 60 s"
        os.read(controller, 100)  # the run has started (its signal handlers too); no more reads
        time.sleep(1)  # the terminal's buffer fills up
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            stacks = _stacks(proc.pid)
            proc.kill()
            raise AssertionError(f"still running 10 s after SIGTERM:\n{stacks}") from None
        assert status == 143
    finally:
        proc.kill()
        proc.wait()
        os.close(controller)


def test_a_sharded_run_draws_the_one_process_progress_line(cluster, tmp_path: Path) -> None:
    """A sharded run's progress line is the one-process run's, fed by the reads of the sharded
    run, erased before the resource line."""
    _reads(tmp_path / "reads.fa")
    args = ["normalize-by-median", "-k", "20", "-x", "2e6", "-N", "2", "-o", "out.fa", "reads.fa",
            "--scheduler", cluster.scheduler_address, "--shards", "2", "--batch-kmers", "20000"]
    status, received = _on_terminal(args, tmp_path)
    stream = received.decode()
    assert status == 0, stream
    drawn = _drawn(stream, "normalize-by-median")
    assert any(re.search(r"[1-9][0-9.]*/[0-9.]+ MB read", d) for d in drawn), drawn
    lines = _scrollback(stream)
    assert not [line for line in lines if "[kmerflow normalize-by-median]" in line], lines
    assert lines[-1].startswith("[kmerflow] Version: ") and "--shards 2" in lines[-1], lines
