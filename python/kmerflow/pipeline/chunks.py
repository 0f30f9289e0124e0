"""Cutting a reads file into chunks at record boundaries, and joining chunk outputs in order.

A plain FASTA or four-line FASTQ file is cut at byte offsets moved forward to a record start
(a resynchronising scan of a few lines), so every chunk task reads its own byte range. A cut
never falls between the two mates of a pair (records whose names agree once a trailing ``/1`` or
``/2`` and any comment are removed), so per-chunk ``extract-paired-reads`` outputs concatenate to
the whole file's. A file that cannot be resynchronised (multi-line FASTQ, a record over 4 MiB)
is one chunk. The pipeline only cuts files it wrote itself (plain FASTA/FASTQ): compressed
inputs are read once, in order, by the first step.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import BinaryIO, Iterator, Optional

#: How far a resynchronising scan looks for a record start before giving up.
_SCAN_LIMIT = 4 << 20


def _lines(f: BinaryIO, pos: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) from ``pos``, which must be a line start."""
    f.seek(pos)
    while True:
        line = f.readline()
        if not line:
            return
        yield pos, line
        pos += len(line)


def _records(f: BinaryIO, pos: int, fastq: bool) -> Iterator[tuple[int, bytes]]:
    """(offset, header line) of the records from the first record start at or after ``pos``
    (a line start); raises :class:`ValueError` if none is found within the scan limit."""
    window: list[tuple[int, bytes]] = []
    lines = _lines(f, pos)
    synced = False
    while True:
        while len(window) < 5:
            nxt = next(lines, None)
            if nxt is None:
                break
            window.append(nxt)
        if not window:
            return
        start, line = window[0]
        if fastq:
            is_header = (synced or _fastq_header(window)) and line.startswith(b"@")
            step = 4
        else:
            is_header = line.startswith(b">")
            step = 1
        if is_header:
            synced = fastq
            yield start, line
            del window[:step]
        else:
            if synced or start - pos > _SCAN_LIMIT:
                raise ValueError(f"no record start within {_SCAN_LIMIT} bytes of offset {pos}")
            del window[0]


def _fastq_header(window: list[tuple[int, bytes]]) -> bool:
    """Whether the first line of ``window`` starts a four-line FASTQ record."""
    if len(window) < 4:
        return False
    head, seq, plus, qual = (line for _, line in window[:4])
    return (head.startswith(b"@") and plus.startswith(b"+")
            and len(seq.rstrip(b"\r\n")) == len(qual.rstrip(b"\r\n"))
            and (len(window) < 5 or window[4][1].startswith(b"@")))


def pair_key(header: bytes) -> bytes:
    """The part of a header two mates share: the first word without a trailing /1 or /2."""
    word = header[1:].split(None, 1)[0] if header[1:].strip() else b""
    return word[:-2] if word[-2:] in (b"/1", b"/2") else word


def is_fastq(path: str | os.PathLike[str]) -> bool:
    """Whether a plain reads file is FASTQ (first non-blank byte ``@``)."""
    with open(path, "rb") as f:
        return f.read(4096).lstrip()[:1] == b"@"


def boundary(f: BinaryIO, offset: int, size: int, fastq: bool) -> int:
    """The first record start after ``offset`` (0 stays 0) whose previous record is not its
    mate; ``size`` if none. The same offset always gives the same boundary, and boundaries
    grow with the offset, so independent tasks agree on their common cuts."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    f.seek(offset - 1)
    pos = offset - 1 + len(f.readline())
    previous: Optional[bytes] = None
    for start, header in _records(f, pos, fastq):
        key = pair_key(header)
        if previous is not None and key != previous:
            return start
        previous = key
    return size


def cut_points(path: str | os.PathLike[str], n: int) -> list[int]:
    """``n + 1`` non-decreasing byte offsets cutting ``path`` into ``n`` chunks at safe record
    boundaries; the whole file as the first chunk if it cannot be resynchronised."""
    size = os.path.getsize(path)
    fastq = is_fastq(path)
    try:
        with open(path, "rb") as f:
            return [boundary(f, size * i // n, size, fastq) for i in range(n + 1)]
    except ValueError:
        return [0] + [size] * n


def copy_range(src: str | os.PathLike[str], start: int, end: int,
               dest: str | os.PathLike[str]) -> None:
    """Copy bytes ``[start, end)`` of ``src`` into a new file ``dest``."""
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        fin.seek(start)
        remaining = end - start
        while remaining > 0:
            block = fin.read(min(remaining, 1 << 20))
            if not block:
                raise ValueError(f"{src}: shorter than expected ({end} bytes)")
            fout.write(block)
            remaining -= len(block)


def concatenate(parts: list[Path], dest: Path) -> None:
    """Write the parts one after another into ``dest`` (under a temporary name in its folder,
    renamed when complete)."""
    tmp = dest.with_name(f".{dest.name}.part-{os.getpid()}")
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
