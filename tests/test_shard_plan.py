"""The plan of a sharded run (``_core.shard_plan``, a typed Rust struct serialized as JSON) against
the types the Python side reads it through (``kmerflow.distributed.plan``): every key the
parser sends is declared, every declared key is sent by some command, and every key that
``distributed/cli.py`` reads is declared. No cluster starts: the plans are only parsed."""

from __future__ import annotations

import ast
import inspect
from typing import Dict, Set

import pytest

import kmerflow as kf
from kmerflow import _core
from kmerflow.distributed import cli
from kmerflow.distributed.plan import Cluster, Message, Plan, Run, Table, parse

SIZES = [1009, 1013]


def _keys(typed: type) -> Set[str]:
    return set(typed.__required_keys__ | typed.__optional_keys__)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> Dict[str, Run]:
    """A plan of each sharded command, of each table shape (khmer, blocked, a saved table)."""
    tmp = tmp_path_factory.mktemp("plans")
    saved = tmp / "saved.ct"
    kf.Countgraph(20, 1, len(SIZES), primes=SIZES).save(str(saved))
    reads = tmp / "reads.fa"
    reads.write_text(">r\nACGTACGTACGTACGTACGTACGTA\n")
    table = ["-N", "2", "-x", "1000", "--local-cluster", "1"]
    lines = {
        "load-into-counting": ["load-into-counting", *table, str(tmp / "o.ct"), str(reads)],
        "load-into-counting blocked": ["load-into-counting", *table, "--layout", "blocked",
                                       str(tmp / "o.kf"), str(reads)],
        "normalize-by-median": ["normalize-by-median", *table, "-p", "-u", str(reads), "-R",
                                str(tmp / "r.csv"), "-o", str(tmp / "out.fa"), str(reads)],
        "normalize-by-median -l": ["normalize-by-median", "--local-cluster", "1", "-l", str(saved),
                                   "-s", str(tmp / "again.ct"), str(reads)],
        "abundance-dist-single": ["abundance-dist-single", *table, str(reads), str(tmp / "h")],
        "filter-abund-single": ["filter-abund-single", *table, str(reads)],
        "trim-low-abund": ["trim-low-abund", *table, str(reads)],
        "filter-abund": ["filter-abund", "--local-cluster", "1", str(saved), str(reads)],
        "normalize": ["normalize", *table, "--layout", "khmer", "-o", str(tmp / "n.fa"), str(reads)],
    }
    found = {}
    for name, args in lines.items():
        text = _core.shard_plan(["kmerflow", *args])
        assert text is not None, name
        found[name] = parse(text, [])
    return found


def test_every_key_sent_is_declared_and_every_required_one_sent(plans):
    for name, plan in plans.items():
        sent = set(plan) - {"argv"}
        assert _keys(Plan) >= sent >= Plan.__required_keys__, name
        assert _keys(Table) >= set(plan["table"]) >= Table.__required_keys__, name
        assert set(plan["cluster"]) == _keys(Cluster), name
        assert all(set(m) == _keys(Message) for m in plan["messages"]), name
    assert plans["normalize-by-median -l"]["table"]["loadgraph"].endswith("saved.ct")
    assert plans["load-into-counting blocked"]["table"]["layout"] == "blocked"
    assert plans["normalize-by-median -l"]["save"].endswith("again.ct")
    # normalize's run makes its tables (one a pass): the plan gives no shape.
    assert set(plans["normalize"]["table"]) == Table.__required_keys__


def test_every_declared_key_is_sent_by_some_command(plans):
    sent = set().union(*(plan.keys() for plan in plans.values()))
    assert sent - {"argv"} == _keys(Plan)
    assert set().union(*(plan["table"].keys() for plan in plans.values())) == _keys(Table)


def _read_keys(source: str) -> Dict[str, Set[str]]:
    """The string keys that ``source`` reads (``x["key"]``, ``x.get("key")``) from each name, a
    subscript of a name counted as the name with its key (``plan.table``)."""

    def key(node: ast.expr) -> str:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""

    def base(node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return f"{base(node.value)}.{node.slice.value!s}"
        return ""

    reads: Dict[str, Set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and key(node.slice):
            reads.setdefault(base(node.value), set()).add(key(node.slice))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and key(node.args[0])):
            reads.setdefault(base(node.func.value), set()).add(key(node.args[0]))
    return reads


#: The names ``cli.py`` reads string keys from that are not the plan (summaries, reports; ``""``
#: for a call's answer).
NOT_THE_PLAN = {"", "tally", "summary", "result.1"}


def test_the_front_end_reads_only_declared_keys():
    reads = _read_keys(inspect.getsource(cli))
    # The names cli.py gives the plan and its parts, and the types they are read through.
    declared = {
        "plan": _keys(Run), "plan.table": _keys(Table), "table": _keys(Table),
        "plan.cluster": _keys(Cluster), "cluster": _keys(Cluster), "m": _keys(Message),
    }
    assert set(reads) <= set(declared) | NOT_THE_PLAN
    for name, keys in reads.items():
        assert name in NOT_THE_PLAN or keys <= declared[name], (name, keys - declared.get(name, set()))
    # The check sees the reads (it cannot pass for want of finding them).
    assert {"save", "argv"} <= reads["plan"] and {"shape", "loadgraph"} <= reads["table"]


def test_an_undeclared_key_is_caught():
    reads = _read_keys('def f(plan):\n    return plan["table"]["size"], plan.get("savegraf")\n')
    assert not reads["plan.table"] <= _keys(Table) and not reads["plan"] <= _keys(Run)
