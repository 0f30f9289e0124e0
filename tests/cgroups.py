"""A nested cgroup with a small memory limit for one test's child processes (cgroup v2
``memory.max`` or the v1 memory controller's ``memory.limit_in_bytes``), below this process's own
cgroup; the test is skipped, saying why, where the kernel or container does not allow one."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _own_memory_cgroup() -> tuple[Path, str] | None:
    """This process's cgroup folder that can hold a memory limit and the limit file's name
    (the v1 memory controller's, else cgroup v2's), or None."""
    cgroups = Path("/proc/self/cgroup").read_text().splitlines()
    mounts = [line.split(" - ") for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for before, after in (m for m in mounts if len(m) == 2):
        root, mount_point = before.split()[3:5]
        fs_type, _source, options = after.split()[:3]
        if fs_type == "cgroup" and "memory" in options.split(","):
            wanted, limit_file = (lambda c: "memory" in c.split(",")), "memory.limit_in_bytes"
        elif fs_type == "cgroup2":
            wanted, limit_file = (lambda c: c == ""), "memory.max"
        else:
            continue
        for line in cgroups:
            _id, controllers, path = line.split(":", 2)
            if wanted(controllers):
                relative = os.path.relpath(path, root)
                folder = Path(mount_point) / ("" if relative.startswith("..") else relative)
                if fs_type == "cgroup" or "memory" in (folder / "cgroup.subtree_control").read_text().split():
                    return folder, limit_file
    return None


@contextlib.contextmanager
def memory_cgroup(limit: int) -> Iterator[Callable[[], None]]:
    """A ``preexec_fn`` moving the child into a new cgroup below this process's own, limited to
    ``limit`` bytes; the cgroup is removed afterwards (its processes must have ended)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("creating a cgroup needs root on Linux")
    own = _own_memory_cgroup()
    if own is None:
        pytest.skip("no cgroup v1 memory controller, nor cgroup v2 with memory enabled for children of ours")
    parent, limit_file = own
    child = parent / f"kmerflow-test-{uuid.uuid4().hex[:8]}"
    try:
        child.mkdir()
        (child / limit_file).write_text(str(limit))
    except OSError as e:
        if child.exists():
            child.rmdir()
        pytest.skip(f"this kernel or container does not let us make a limited cgroup in {parent}: {e}")
    procs = child / "cgroup.procs"

    def move_in() -> None:
        procs.write_text(str(os.getpid()))

    try:
        yield move_in
    finally:
        # a LocalCluster's workers are joined before the run returns, but multiprocessing's
        # resource tracker, a child of the run, ends only after it (when its pipe closes)
        deadline = time.monotonic() + 10
        while procs.read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        child.rmdir()
