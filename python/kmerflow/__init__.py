"""kmerflow: fast, scalable k-mer counting and read preprocessing (a khmer successor)."""

from kmerflow._core import __version__

__all__ = ["__version__"]
