"""The kmerflow exception hierarchy (raised by the native module and the command functions)."""

from __future__ import annotations


class KmerflowError(Exception):
    """Base class of every error raised by kmerflow."""


class FormatError(KmerflowError, ValueError):
    """Malformed input data: a bad FASTA/FASTQ record, a corrupt compressed stream or table file."""


class KmerflowIOError(KmerflowError, OSError):
    """An operating-system error on a named file (``errno``, ``strerror``, ``filename`` are set)."""


class ParameterError(KmerflowError, ValueError):
    """Invalid parameters or an impossible request (for example k > 32 for a 2-bit table)."""


class CommandError(KmerflowError):
    """A kmerflow command failed; ``code`` is its exit status (1 data/I-O error, 2 usage error)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
