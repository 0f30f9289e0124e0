"""The plan of a sharded run, as the native command line parser hands it over
(``_core.shard_plan``, the Rust ``kmerflow_cli::sharded::Plan`` serialized as JSON): these
types name every key the Python side reads, and say which are there for every command and
which for some only (``tests/test_shard_plan.py`` checks them against the plans the parser
makes)."""

from __future__ import annotations

import json
from typing import Any, List, Optional, TypedDict, cast


class Cluster(TypedDict):
    """Where the run runs and how its table is split."""

    #: ``--scheduler``: a running cluster's address or scheduler file.
    scheduler: Optional[str]
    #: ``--local-cluster``: the workers of a cluster started for the run.
    local_cluster: Optional[int]
    #: ``--shards``; ``None`` for one per worker plus the local ones.
    shards: Optional[int]
    #: ``--local-shards``: the shards held in this process.
    local_shards: int
    #: ``--batch-kmers``: the k-mers sent to a shard in one message.
    batch_kmers: int


class FpCheck(TypedDict):
    """The false-positive check made of the counted table, as the one-process command makes it."""

    #: The ceiling: a higher estimated rate is an error (a warning with ``-f``).
    max: float
    #: The ``--fp-rate`` of the ``-M`` the error suggests.
    target: float


class _TableShared(TypedDict):
    layout: str
    ksize: int
    force: bool
    fp_check: Optional[FpCheck]


class Table(_TableShared, total=False):
    """The run's table: ``layout`` (``khmer`` or ``blocked``), ``ksize``, ``force`` (``-f``),
    ``fp_check`` (``None`` where the sharded run makes none), and its shape: khmer's
    ``sizes``, the blocked layout's ``memory_bytes``, ``bits`` and ``probes``, or the saved
    table to load (``loadgraph``); none for ``normalize``, whose run makes a table a pass."""

    sizes: List[int]
    memory_bytes: int
    bits: int
    probes: int
    loadgraph: str


class Message(TypedDict):
    """A message to print before the run: ``level`` (``info``, ``warning``, ``error``) and text."""

    level: str
    text: str


class _PlanShared(TypedDict):
    command: str
    cluster: Cluster
    table: Table
    bigcount: bool
    inputs: List[str]
    messages: List[Message]
    table_sizing: Optional[Any]


class Plan(_PlanShared, total=False):
    """The run: the ``command``, its ``cluster`` and ``table``, ``bigcount``, the ``inputs``,
    the ``messages`` to print first and the report's ``table_sizing`` (handed back to
    ``_core.shard_finish``), and the command's own arguments that this side needs (the native
    run reads the others from ``argv``): ``output`` (load-into-counting's table), ``savegraph``
    (saved here shard by shard; every command but load-into-counting and filter-abund) and
    normalize-by-median's ``unpaired`` (an input of the run report)."""

    output: Optional[str]
    savegraph: Optional[str]
    unpaired: Optional[str]


class Run(Plan):
    """The plan with the command line it was made from (``argv``, program name first), which the
    native parts of the run (``_core.run_sharded_command``) parse again."""

    argv: List[str]


def parse(text: str, argv: List[str]) -> Run:
    """The run of the command line ``argv`` whose plan is ``text`` (``_core.shard_plan``'s answer)."""
    return cast(Run, {**json.loads(text), "argv": argv})
