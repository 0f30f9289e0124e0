"""kmerflow: fast, scalable k-mer counting and read preprocessing (a khmer successor).

The Python API mirrors khmer's: table classes (:class:`Countgraph`, :class:`Nodegraph`, ...),
:class:`HLLCounter`, hash functions, :func:`add_tables` (sums saved tables), plus
:func:`open_reads` and one function per command (:func:`normalize_by_median`,
:func:`fastq_to_fasta`, ..., returning a :class:`RunResult`), and the streaming filters
:class:`Normalizer`, :class:`AbundanceFilter` and :class:`Trimmer`.

Objects shared by threads: tables (counted atomically), :class:`HLLCounter` (locked), the
streaming filters (over a shared table) and the command functions (each run is separate).
"""

from kmerflow._core import (
    Countgraph,
    Counttable,
    HLLCounter,
    Nodegraph,
    Nodetable,
    Record,
    SmallCountgraph,
    SmallCounttable,
    SubsetPartition,
    Table,
    __version__,
    add_tables,
    forward_hash,
    forward_hash_no_rc,
    get_n_primes_near_x,
    hash_murmur3,
    hash_no_rc_murmur3,
    is_prime,
    reverse_complement,
    reverse_hash,
)
from kmerflow.commands import *  # noqa: F401,F403  (one function per command)
from kmerflow.commands import RunResult
from kmerflow.commands import __all__ as _command_names
from kmerflow.errors import (
    CommandError,
    FormatError,
    KmerflowError,
    KmerflowIOError,
    KmerflowWarning,
    ParameterError,
)
from kmerflow.reads import Reads, open_reads
from kmerflow.streaming import AbundanceFilter, Normalizer, Trimmer

__all__ = [
    "__version__",
    "KmerflowError", "FormatError", "KmerflowIOError", "ParameterError", "CommandError",
    "KmerflowWarning",
    "open_reads", "Reads", "Record",
    "Table", "Countgraph", "SmallCountgraph", "Nodegraph", "SubsetPartition",
    "Counttable", "SmallCounttable", "Nodetable", "HLLCounter",
    "forward_hash", "forward_hash_no_rc", "reverse_hash", "hash_murmur3", "hash_no_rc_murmur3",
    "reverse_complement", "get_n_primes_near_x", "is_prime", "add_tables",
    "Normalizer", "AbundanceFilter", "Trimmer", "RunResult",
    *_command_names,
]
