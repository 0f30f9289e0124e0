"""One run per output folder: an exclusive lock on ``OUTDIR/.kmerflow.lock``.

The lock is an operating-system lock (``fcntl.lockf``) held on the open file for the whole run;
the file holds the holder's pid and host, for the message a second run gives. The system drops
the lock when its process ends, however it ends, so the file of a dead run is simply taken over.
The run holding the lock owns every temporary file in OUTDIR, so the ones an interrupted run
left behind are removed (:func:`remove_leftovers`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import socket
from pathlib import Path
from types import TracebackType
from typing import Optional

#: The lock file's name in OUTDIR.
LOCK_NAME = ".kmerflow.lock"


#: Temporary names of files being written: ``.NAME.tmp-...`` (the commands, manifests, reports)
#: and ``.NAME.part-...`` (concatenations).
_TEMPORARY = re.compile(r"\..+\.(tmp|part)-[0-9]")


class OutdirBusy(RuntimeError):
    """OUTDIR is locked by another run (nothing was started)."""


class OutdirLock:
    """The lock of one output folder, held between :meth:`acquire` and :meth:`release` (or as
    a context manager)."""

    def __init__(self, outdir: Path) -> None:
        self.path = outdir / LOCK_NAME
        self._fd: Optional[int] = None

    def acquire(self) -> None:
        """Take the lock; raises :class:`OutdirBusy` naming the holder when another process
        has it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_holder(fd)
            os.close(fd)
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            raise OutdirBusy(f"{self.path.parent}: in use by another kmerflow pipeline run "
                             f"({holder}; lock file {self.path})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (the file stays; its content names the last holder)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "OutdirLock":
        self.acquire()
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    """The holder named in the lock file ("pid N on HOST"), or a placeholder while it is being
    written."""
    text = os.pread(fd, 256, 0).decode(errors="replace").strip()
    return text or "pid unknown"


def remove_leftovers(folder: Path) -> None:
    """Remove the temporary files of an interrupted run from ``folder`` (call with the lock
    held; the folder may not exist)."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        if _TEMPORARY.match(entry.name) and entry.is_file(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)
