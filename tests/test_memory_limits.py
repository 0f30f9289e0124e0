"""Memory limits the process really runs under: a nested cgroup with a small memory limit (v2
``memory.max`` or the v1 memory controller's ``memory.limit_in_bytes``), and ``ulimit -v``.
A table that does not fit is refused before it is allocated, naming -M and the limit; ``-M auto``
sizes within the limit."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cgroups import memory_cgroup

from conftest import genome_reads

#: The memory limit of the test cgroup.
LIMIT = 200 << 20


@pytest.fixture
def in_small_cgroup() -> Iterator[Callable[[], None]]:
    """A preexec_fn moving the child into a new cgroup limited to LIMIT bytes."""
    with memory_cgroup(LIMIT) as move_in:
        yield move_in


def limit_address_space(limit: int) -> Callable[[], None]:
    """A preexec_fn setting ``ulimit -v`` to ``limit`` bytes."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run(args: list[str], cwd: Path, preexec_fn: Callable[[], None]) -> subprocess.CompletedProcess:
    exe = shutil.which("kmerflow")
    cmd = [exe] if exe else [sys.executable, "-m", "kmerflow"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, timeout=120, preexec_fn=preexec_fn)


def python(code: str, cwd: Path, preexec_fn: Callable[[], None]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, timeout=120,
                          preexec_fn=preexec_fn, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.decode().strip().splitlines()
    assert lines and "Traceback" not in proc.stderr.decode(), proc.stderr.decode()
    return lines[-1]


def auto_memory(proc: subprocess.CompletedProcess) -> float:
    """The -M (bytes) of the 'table sized automatically' line."""
    m = re.search(r"-M (\d+(?:\.\d+)?)([KMG]?) for a false-positive rate", proc.stderr.decode())
    assert m, proc.stderr.decode()
    return float(m.group(1)) * {"K": 1e3, "M": 1e6, "G": 1e9, "": 1}[m.group(2)]


def test_a_table_beyond_the_cgroup_limit_is_refused_naming_the_flag_and_the_limit(
        tmp_path: Path, in_small_cgroup: Callable[[], None]) -> None:
    reads = genome_reads(tmp_path / "in.fq")
    for command in (["load-into-counting", "-M", "400M", "out.ct", "in.fq"],
                    ["normalize-by-median", "-M", "400M", "in.fq", "-o", "out.fq"]):
        proc = run(command, tmp_path, in_small_cgroup)
        assert proc.returncode == 1, (proc.returncode, proc.stderr.decode())
        line = error_line(proc)
        assert "cgroup" in line and "limit of 0.21 GB" in line and "-M/--max-memory-usage" in line, line
        assert sorted(p.name for p in tmp_path.iterdir()) == [reads.name]
    # A table that fits runs in the same cgroup.
    proc = run(["load-into-counting", "-M", "20M", "out.ct", "in.fq"], tmp_path, in_small_cgroup)
    assert proc.returncode == 0, proc.stderr.decode()


def test_auto_sizing_is_capped_by_the_cgroup_limit(tmp_path: Path, in_small_cgroup: Callable[[], None]) -> None:
    genome_reads(tmp_path / "in.fq")
    # 3e7 distinct k-mers need -M 146M, above half of what the 200 MiB cgroup leaves: refused,
    # naming the cap it computed from the cgroup (the machine has far more memory).
    proc = run(["load-into-counting", "-M", "auto", "-U", "3e7", "out.ct", "in.fq"], tmp_path, in_small_cgroup)
    assert proc.returncode == 1, proc.stderr.decode()
    line = error_line(proc)
    cap = re.search(r"memory cap of (\d+(?:\.\d+)?)M", line)
    assert "needs -M 146M" in line and cap and 30 < float(cap.group(1)) <= LIMIT / 2e6, line
    proc = run(["load-into-counting", "-M", "auto", "-U", "5e6", "out.ct", "in.fq"], tmp_path, in_small_cgroup)
    assert proc.returncode == 0, proc.stderr.decode()
    assert auto_memory(proc) <= LIMIT / 2


def test_python_tables_beyond_the_cgroup_limit_raise(tmp_path: Path, in_small_cgroup: Callable[[], None]) -> None:
    code = """if True:
        import kmerflow
        from kmerflow._core import Shard
        for make in (lambda: kmerflow.Countgraph(20, 100e6, 4), lambda: kmerflow.Nodegraph(20, 4e9, 4),
                     lambda: Shard.zeroed(None, 0, 400_000_000)):
            try:
                make()
            except kmerflow.ParameterError as e:
                print("refused:", e)
        kmerflow.Countgraph(20, 1e6, 4)
        print("small table ok")
    """
    proc = python(code, tmp_path, in_small_cgroup)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode().splitlines()
    assert len(out) == 4 and all("cgroup" in line for line in out[:3]) and out[3] == "small table ok", out


def test_auto_sizing_and_python_tables_honour_ulimit_v(tmp_path: Path) -> None:
    genome_reads(tmp_path / "in.fq")
    limited = limit_address_space(1 << 30)
    proc = run(["load-into-counting", "-M", "auto", "-U", "2e8", "out.ct", "in.fq"], tmp_path, limited)
    assert proc.returncode == 1, proc.stderr.decode()
    cap = re.search(r"memory cap of (\d+(?:\.\d+)?)M", error_line(proc))
    assert cap and float(cap.group(1)) < 512, error_line(proc)
    code = """if True:
        import kmerflow
        try:
            kmerflow.Countgraph(20, 1e9, 4)
        except kmerflow.ParameterError as e:
            print("refused:", e)
    """
    proc = python(code, tmp_path, limited)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "ulimit -v" in proc.stdout.decode(), proc.stdout.decode()


def test_a_shard_beyond_the_cgroup_limit_is_refused_by_its_worker_in_one_line(tmp_path: Path) -> None:
    """A sharded run whose LocalCluster (started by kmerflow, its workers in the same small
    cgroup) cannot hold a shard: the worker refuses it before allocating it, and the run says so
    in its one line naming the shard and the limit (the workers' own logs stay quiet); nothing is
    left behind."""
    examples = Path(__file__).resolve().parent.parent / "examples"
    with memory_cgroup(300 << 20) as move_in:
        proc = run(["normalize", examples / "demo_R1.fq.gz", examples / "demo_R2.fq.gz", "-o", "o1.fq.gz",
                    "-O", "o2.fq.gz", "-M", "1G", "--local-cluster", "1", "--shards", "2"], tmp_path, move_in)
    assert proc.returncode == 1, (proc.returncode, proc.stderr.decode())
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert re.search(r"error: shard \d .* failed: .*cgroup's limit", lines[0]), lines[0]
    assert list(tmp_path.iterdir()) == []
