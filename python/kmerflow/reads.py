"""Iterating over FASTA/FASTQ records from Python at native parsing speed."""

from __future__ import annotations

import os
from typing import Iterator, Literal, Optional, Union, overload

from kmerflow._core import ReadReader, Record

PairsArg = Union[bool, Literal["broken", "require", "single"]]


class Reads:
    """An iterable over the records (or bundles) of a sequence file; see :func:`open_reads`.

    Batches of records are parsed natively with the GIL released and converted to Python objects
    a batch at a time; :meth:`batches` exposes those lists directly. Threads may share one
    iterator: each record goes to exactly one of them.
    """

    def __init__(self, reader: ReadReader) -> None:
        self._reader = reader

    def __iter__(self) -> Iterator:
        return self._reader.records()

    def batches(self) -> Iterator[list]:
        """The records as lists of about 1 MiB of input each."""
        return iter(self._reader)

    @property
    def short_dropped(self) -> int:
        """Reads dropped so far for being shorter than ``min_length`` (with pairs that must
        stay together, their mates too)."""
        return self._reader.short_dropped


@overload
def open_reads(path: Union[str, os.PathLike], pairs: Literal[False] = False,
               min_length: Optional[int] = None, mate: None = None) -> Reads: ...
@overload
def open_reads(path: Union[str, os.PathLike], pairs: PairsArg = ...,
               min_length: Optional[int] = None,
               mate: Optional[Union[str, os.PathLike]] = None) -> Reads: ...


def open_reads(path, pairs=False, min_length=None, mate=None):
    """Open a FASTA/FASTQ file (gzip, bzip2, xz, zstd detected from the content; ``-`` = stdin).

    Iterating gives :class:`Record` objects (``.name``, ``.sequence``, ``.quality``; quality is
    ``None`` for FASTA), or with ``pairs`` tuples ``(read1, read2_or_None)``:

    * ``pairs=True`` or ``"broken"``: mates recognised by name (``/1`` ``/2``, Casava ``1:``/``2:``)
      form pairs, other reads come alone (khmer's broken-paired reading);
    * ``"require"``: every read must have its mate (an orphan raises :class:`FormatError`);
    * ``"single"``: every read alone, as ``(read, None)``;
    * ``mate=PATH``: read *i* of ``path`` pairs with read *i* of ``mate``.

    ``min_length`` drops shorter reads exactly as khmer's scripts do.
    """
    if mate is not None and pairs is False:
        pairs = True
    return Reads(ReadReader(os.fspath(path), pairs, min_length,
                            None if mate is None else os.fspath(mate)))


__all__ = ["Reads", "Record", "open_reads", "PairsArg"]
