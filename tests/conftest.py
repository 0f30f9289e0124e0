"""Shared fixtures: paths to test data, running kmerflow and the khmer oracle, the Dask cluster
and the generated reads of the sharding tests."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The khmer test inputs the tests use, vendored with khmer's licence (see its README.md).
KHMER_DATA = Path(__file__).resolve().parent / "data" / "khmer"
#: Golden outputs produced by khmer 3.0 and committed with the tests.
GOLDEN = Path(__file__).resolve().parent / "golden"
#: Where the Debian khmer package installs its scripts.
KHMER_BIN = Path("/usr/lib/khmer/bin")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def data() -> Path:
    """The vendored khmer test inputs (tests/data/khmer)."""
    assert KHMER_DATA.is_dir(), f"missing {KHMER_DATA}"
    return KHMER_DATA


def kmerflow(*args: str | os.PathLike, cwd: str | os.PathLike | None = None,
             stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``kmerflow ARGS`` (the installed command) and return the completed process."""
    exe = shutil.which("kmerflow")
    cmd = [exe] if exe else [sys.executable, "-m", "kmerflow"]
    proc = subprocess.run([*cmd, *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"kmerflow {' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


def khmer(script: str, *args: str | os.PathLike, cwd: str | os.PathLike | None = None,
          stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run khmer 3.0's ``SCRIPT.py ARGS`` with the system Python (the oracle)."""
    path = KHMER_BIN / f"{script}.py"
    if not path.exists():
        if _in_ci():
            raise AssertionError(f"khmer is not installed ({path}); .ci/run must install it")
        pytest.skip("khmer (Debian package) is not installed")
    proc = subprocess.run(["/usr/bin/python3", str(path), *map(str, args)], cwd=cwd,
                          input=stdin, capture_output=True, timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(f"khmer {script} {' '.join(map(str, args))} exited "
                             f"{proc.returncode}:\n{proc.stderr.decode(errors='replace')}")
    return proc


#: The memory limit of each worker of the sharding tests' cluster.
WORKER_MEMORY = 400e6


@pytest.fixture(scope="module")
def cluster():
    """A real Dask LocalCluster of two one-thread worker processes, one per test module."""
    from kmerflow.distributed.cluster import local_cluster

    with local_cluster(2, memory_limit=WORKER_MEMORY) as c:
        yield c


def genome_reads(path: Path, paired: bool = False, seed: int = 7, n: int = 1500) -> Path:
    """Reads from a 1 kb genome at high coverage (counts pass 255), some with N, pairs named
    /1 /2 when ``paired`` (a few orphans)."""
    rng = random.Random(seed)
    genome = "".join(rng.choice("ACGT") for _ in range(1000))
    lines = []
    for i in range(n):
        start = rng.randrange(0, len(genome) - 80)
        seq = list(genome[start:start + rng.randrange(40, 80)])
        if rng.random() < 0.2:
            seq[rng.randrange(len(seq))] = rng.choice("ACGTN")
        mates = ["/1", "/2"] if paired and i % 7 else [""]
        for mate in mates:
            lines.append(f"@r{i}{mate}\n{''.join(seq)}\n+\n{'I' * len(seq)}\n")
    path.write_text("".join(lines))
    return path
