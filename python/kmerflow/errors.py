"""The kmerflow exception hierarchy (raised by the native module and the command functions)."""

from __future__ import annotations

import errno


class KmerflowError(Exception):
    """Base class of every error raised by kmerflow."""


class FormatError(KmerflowError, ValueError):
    """Malformed input data: a bad FASTA/FASTQ record, a corrupt compressed stream or table file."""


class KmerflowIOError(KmerflowError, OSError):
    """An operating-system error on a named file (``errno``, ``strerror``, ``filename`` are set).

    Built as ``KmerflowIOError(errno, message, filename)``, it is an instance of the subclass that
    is also Python's standard exception for that errno, as :class:`OSError` does: a missing file
    is a :class:`FileNotFoundError`, a refused one a :class:`PermissionError`, ...
    """

    def __new__(cls, *args: object) -> "KmerflowIOError":
        if cls is KmerflowIOError and args and isinstance(args[0], int):
            cls = _BY_ERRNO.get(args[0], cls)
        return super().__new__(cls, *args)


class KmerflowFileNotFoundError(KmerflowIOError, FileNotFoundError):
    """A file or directory that does not exist (``ENOENT``)."""


class KmerflowPermissionError(KmerflowIOError, PermissionError):
    """Access refused (``EACCES``, ``EPERM``)."""


class KmerflowIsADirectoryError(KmerflowIOError, IsADirectoryError):
    """A directory where a file was expected (``EISDIR``)."""


class KmerflowNotADirectoryError(KmerflowIOError, NotADirectoryError):
    """A file where a directory was expected (``ENOTDIR``)."""


class KmerflowFileExistsError(KmerflowIOError, FileExistsError):
    """A file that must not exist yet (``EEXIST``)."""


class KmerflowBrokenPipeError(KmerflowIOError, BrokenPipeError):
    """The reader of an output went away (``EPIPE``)."""


_BY_ERRNO: dict[int, type[KmerflowIOError]] = {
    errno.ENOENT: KmerflowFileNotFoundError,
    errno.EACCES: KmerflowPermissionError,
    errno.EPERM: KmerflowPermissionError,
    errno.EISDIR: KmerflowIsADirectoryError,
    errno.ENOTDIR: KmerflowNotADirectoryError,
    errno.EEXIST: KmerflowFileExistsError,
    errno.EPIPE: KmerflowBrokenPipeError,
}


class ParameterError(KmerflowError, ValueError):
    """Invalid parameters or an impossible request (for example k > 32 for a 2-bit table)."""


class ShardError(KmerflowError):
    """A shard of a table held by a Dask worker could not answer (its worker was lost, or it
    refused the call); the message names the shard and its worker."""


class KmerflowWarning(UserWarning):
    """A warning of a kmerflow run (for example a table too small for the data)."""


class CommandError(KmerflowError):
    """A kmerflow command failed; ``code`` is its exit status (1 data/I-O error, 2 usage error)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
