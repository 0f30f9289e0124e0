"""What a run shows while it runs: its messages and, on a terminal, one status line.

On a terminal (the stream is a TTY) the last line is a status line rewritten in place, about
once a second and whenever a task finishes: samples done, running and failed out of all, the
steps done out of all, the step each running sample is in and the time since the start, cut
to the terminal's width (a wrapped line could not be rewritten). A message (a sample done,
failed or resuming) clears it, is printed as a line of its own, and the status line is drawn
again below it; it is cleared when the run ends, so what remains is the messages. Elsewhere (a
pipe, a file) the messages are plain lines, each with the counts of samples at that moment.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Optional, TextIO

if TYPE_CHECKING:
    from kmerflow.pipeline.runner import SampleRun

#: What each line starts with.
PREFIX = "kmerflow pipeline: "

#: Seconds between redraws of the status line when nothing happens (for the elapsed time).
INTERVAL = 1.0


class Progress:
    """The run's messages and status line on ``stream`` (see the module doc); ``live``: rewrite
    a status line (default: whether ``stream`` is a terminal)."""

    def __init__(self, stream: TextIO, live: Optional[bool] = None) -> None:
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self.started = time.monotonic()
        self.runs: list[SampleRun] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    def __enter__(self) -> Progress:
        """Start the clock, and on a terminal the redraws of the status line."""
        self.started = time.monotonic()
        if self.live:
            self._ticker = threading.Thread(target=self._tick, name="kmerflow-progress",
                                            daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the redraws and clear the status line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.live:
                self._write("\r\x1b[K")

    def message(self, text: str) -> None:
        """Print ``text`` as a line of its own (with the sample counts when not live)."""
        with self._lock:
            if self.live:
                self._write(f"\r\x1b[K{PREFIX}{text}\n")
                self._draw()
            else:
                counts = f" [{self.counts()}]" if self.runs else ""
                self._write(f"{PREFIX}{text}{counts}\n")

    def update(self, runs: list[SampleRun]) -> None:
        """The samples' states changed: redraw the status line (on a terminal)."""
        with self._lock:
            self.runs = runs
            if self.live:
                self._draw()

    def counts(self) -> str:
        """``3/10 samples done, 2 running, 1 failed`` (the parts that are not zero after the
        first)."""
        states = [r.status for r in self.runs]
        done = sum(s in ("done", "skipped") for s in states)
        parts = [f"{done}/{len(states)} samples done"]
        for state in ("running", "failed"):
            if states.count(state):
                parts.append(f"{states.count(state)} {state}")
        return ", ".join(parts)

    def status_line(self) -> str:
        """The status line (uncut): counts, steps done of all, elapsed time, running steps
        (before the first sample starts: the elapsed time of the cluster's start)."""
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        if not self.runs:
            return f"{PREFIX}starting the cluster | {clock}"
        total = sum(len(r.plans) for r in self.runs)
        done = sum(len(r.plans) if r.status in ("done", "skipped") else r.step_index
                   for r in self.runs if r.status != "pending")
        running = " ".join(f"{r.sample.name}:{r.plan.name}" for r in self.runs
                           if r.status == "running" and r.step_index < len(r.plans))
        line = f"{PREFIX}{self.counts()} | steps {done}/{total} | {clock}"
        return f"{line} | {running}" if running else line

    def _draw(self) -> None:
        width = self._columns() - 1
        line = self.status_line()
        if len(line) > width:
            line = line[:max(width - 3, 0)] + "..."
        self._write(f"\r{line}\x1b[K")

    def _columns(self) -> int:
        """The width of the stream's terminal (80 when it says none)."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80

    def _tick(self) -> None:
        while not self._stop.wait(INTERVAL):
            with self._lock:
                self._draw()

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
