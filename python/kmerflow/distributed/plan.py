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


class _TableShared(TypedDict):
    layout: str
    ksize: int


class Table(_TableShared, total=False):
    """The run's table: ``layout`` (``khmer`` or ``blocked``), ``ksize``, and either its
    ``shape`` (khmer's hash table sizes, or the blocked layout's ``[memory_bytes, bits,
    probes]``) or the saved table to load (``loadgraph``); neither for ``normalize``, whose
    run makes a table a pass."""

    shape: List[int]
    loadgraph: str


class Message(TypedDict):
    """A message to print before the run: ``level`` (``info``, ``warning``, ``error``) and text."""

    level: str
    text: str


class Plan(TypedDict):
    """The run: the ``command``, its ``cluster`` and ``table``, ``bigcount``, where the table is
    saved shard by shard once the native run is done (``save``: load-into-counting's output,
    ``-s``), the ``messages`` to print first and the report's ``table_sizing`` (handed back to
    ``_core.shard_finish``); the native run reads the command's other arguments from ``argv``."""

    command: str
    cluster: Cluster
    table: Table
    bigcount: bool
    save: Optional[str]
    messages: List[Message]
    table_sizing: Optional[Any]


class Run(Plan):
    """The plan with the command line it was made from (``argv``, program name first), which the
    native parts of the run (``_core.run_sharded_command``) parse again."""

    argv: List[str]


def parse(text: str, argv: List[str]) -> Run:
    """The run of the command line ``argv`` whose plan is ``text`` (``_core.shard_plan``'s answer)."""
    return cast(Run, {**json.loads(text), "argv": argv})
