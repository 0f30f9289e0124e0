"""Composing the read filters without files: each class takes records (or bundles) from any
iterable and yields the records the matching command would write, in the same order.

Items are records (objects with ``name``, ``sequence``, ``quality``, e.g. from
:func:`kmerflow.open_reads`), or with ``paired=True`` bundles ``(read1, read2_or_None)`` such as
``open_reads(path, pairs=True)`` gives. Items are taken in batches of ``batch_size``; each batch
is decided natively with the GIL released. Reads shorter than k are dropped, as the commands'
readers do (``open_reads(..., min_length=k)`` drops them before pairing, exactly as the
commands).

>>> import kmerflow
>>> table = kmerflow.Countgraph(4, 1e5, 2)
>>> reads = [kmerflow.Record("r%d" % i, "ACGTTGCA", None) for i in range(4)]
>>> [r.name for r in kmerflow.Normalizer(table, cutoff=2).filter(reads)]
['r0', 'r1']
>>> table.get("ACGT")
2
>>> [r.sequence for r in kmerflow.AbundanceFilter(table, cutoff=2).filter(
...     [kmerflow.Record("x", "ACGTTGCATT", None)])]
['ACGTTGCA']
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterable, Iterator, List

from kmerflow import _core

#: Items handed to the native code at once.
BATCH_SIZE = 10_000


def _batches(items: Iterable[Any], size: int) -> Iterator[List[Any]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


class Normalizer(_core.Normalizer):
    """Digital normalization (``normalize-by-median``) of a stream, counting into ``table``.

    ``Normalizer(table, cutoff=20, paired=False)``: a read (a bundle when ``paired``) is kept
    unless every one of its reads already has a median k-mer count of at least ``cutoff``; kept
    reads are counted into ``table``. The same table can be normalized into from several streams
    in turn, or saved afterwards (``table.save``) as ``--savegraph`` does.
    """

    def filter(self, items: Iterable[Any], batch_size: int = BATCH_SIZE) -> Iterator[Any]:
        """The kept items of ``items``, in order."""
        for batch in _batches(items, batch_size):
            yield from self.filter_batch(batch)


class AbundanceFilter(_core.AbundanceFilter):
    """Abundance filtering (``filter-abund``) of a stream of reads against ``table``.

    ``AbundanceFilter(table, cutoff=2, variable_coverage=False, normalize_to=20)``: each read is
    cut before its first k-mer with count below ``cutoff`` and dropped when fewer than k bases
    remain; with ``variable_coverage`` reads whose median count is below ``normalize_to`` are
    kept whole. The table is only read (count it first, e.g. ``table.consume_seqfile``).
    """

    def filter(self, items: Iterable[Any], batch_size: int = BATCH_SIZE) -> Iterator[Any]:
        """The kept, possibly truncated, records of ``items``, in order."""
        for batch in _batches(items, batch_size):
            yield from self.filter_batch(batch)


class Trimmer(_core.Trimmer):
    """Two-pass k-mer trimming (``trim-low-abund``) of a stream, counting into ``table``.

    ``Trimmer(table, cutoff=2, trim_at_coverage=20, variable_coverage=False, paired=False)``:
    reads (bundles when ``paired``) whose coverage already reaches ``trim_at_coverage`` are
    trimmed at ``cutoff`` and yielded at once; the others are counted and set aside, then
    trimmed against the final table and yielded when ``items`` is exhausted (the command's
    second pass). Set-aside reads are held in memory; ``single_pass=True`` drops them
    (``--single-pass``).
    """

    def filter(self, items: Iterable[Any], batch_size: int = BATCH_SIZE,
               single_pass: bool = False) -> Iterator[Any]:
        """The trimmed records of ``items``: first-pass ones as they come, then the set-aside
        ones."""
        aside: List[Any] = []
        for batch in _batches(items, batch_size):
            trimmed, set_aside = self.first_pass_batch(batch)
            yield from trimmed
            if not single_pass:
                aside += set_aside
        for batch in _batches(aside, batch_size):
            yield from self.second_pass_batch(batch)


__all__ = ["AbundanceFilter", "Normalizer", "Trimmer", "BATCH_SIZE"]
