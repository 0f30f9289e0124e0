"""The cluster's faults, for sharded runs and ``kmerflow pipeline`` alike: a ``--scheduler``
that is an HTTP server, unreachable or malformed is one line naming it within seconds (exit 1,
2 when malformed); the only worker dying while it allocates its shard is an error naming the
shard and the worker, not a wait; the parser picks the sharded front end for every spelling it
accepts; the LocalClusters kmerflow starts serve nothing on port 8787."""

from __future__ import annotations

import contextlib
import http.server
import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import kmerflow

distributed = pytest.importorskip("distributed")

import kmerflow as kf  # noqa: E402
from kmerflow.distributed import ShardedCountgraph, ShardError, cluster, running_workers  # noqa: E402
from kmerflow.distributed.cluster import CONNECT_TIMEOUT, local_cluster  # noqa: E402

#: The most seconds a refused scheduler may take besides starting Python and Dask (measured by
#: each test on a malformed address, refused before any connection): the scheduler's time to
#: answer, and a margin for a loaded machine.
WAITS_AT_MOST_S = CONNECT_TIMEOUT + 2.0

READS = "".join(f"@r{i}\n{'ACGTTGCAAGGCTTACCGATGCATCGATCGGATCCATG'[i % 7:] * 2}\n+\n"
                f"{'I' * (2 * (38 - i % 7))}\n" for i in range(40))


@pytest.fixture()
def reads(tmp_path: Path) -> Path:
    path = tmp_path / "in.fq"
    path.write_text(READS)
    return path


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The address of an HTTP server on this host (it accepts connections and answers HTTP)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _refused(args: list, code: int, names: str) -> str:
    """Runs kmerflow ARGS, which must fail with ``code`` and one line naming ``names`` within
    WAITS_AT_MOST_S seconds more than a run refused at once; returns the line."""
    def timed(args: list) -> tuple:
        started = time.monotonic()
        proc = kmerflow(*args, check=False)
        return proc, time.monotonic() - started

    _, at_once = timed([*args[:-2], "--scheduler", "not-an-address"])
    proc, took = timed(args)
    lines = proc.stderr.decode().strip().splitlines()
    assert (proc.returncode, len(lines)) == (code, 1), lines
    assert names in lines[0] and "Traceback" not in lines[0], lines
    assert took < at_once + WAITS_AT_MOST_S, f"{took:.1f} s (at once: {at_once:.1f} s): {lines}"
    return lines[0]


def _runs(tmp_path: Path, reads: Path) -> list:
    """A sharded run's and a pipeline's command lines, to be followed by the cluster flags."""
    sheet = tmp_path / "samples.tsv"
    sheet.write_text(f"sample\tr1\nA\t{reads}\n")
    return [["load-into-counting", "-x", "1e4", tmp_path / "t.ct", reads],
            ["pipeline", sheet, "-o", tmp_path / "out"]]


def test_a_port_that_is_not_a_dask_scheduler_is_one_line(tmp_path, reads, http_server):
    for args in _runs(tmp_path, reads):
        line = _refused([*args, "--scheduler", http_server], 1, http_server)
        assert "Dask scheduler" in line
    assert not (tmp_path / "t.ct").exists()


def test_an_unreachable_scheduler_is_one_line(tmp_path, reads):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    for args in _runs(tmp_path, reads):
        assert "cannot reach the Dask scheduler" in _refused([*args, "--scheduler", address], 1, address)


@pytest.mark.parametrize("address", ["not-an-address", "http://127.0.0.1:80", "tcp://127.0.0.1"])
def test_a_malformed_scheduler_address_is_a_usage_error(tmp_path, reads, address):
    for args in _runs(tmp_path, reads):
        _refused([*args, "--scheduler", address], 2, f"--scheduler {address}")


def test_a_file_that_is_not_a_scheduler_file_is_named(tmp_path, reads):
    (tmp_path / "s.json").write_text("{}")
    for args in _runs(tmp_path, reads):
        _refused([*args, "--scheduler", tmp_path / "s.json"], 1, "not a Dask scheduler file")


@contextlib.contextmanager
def _one_worker() -> Iterator[tuple]:
    with local_cluster(1) as cluster, distributed.Client(cluster, direct_to_workers=True) as client:
        yield cluster, client


def _die_when_allocating() -> None:
    """Run on the worker: the next shard it allocates kills its process, as the OOM killer."""
    from kmerflow.distributed import ShardActor

    def allocate(self, start, size):  # noqa: ARG001 (the actor's signature)
        os.kill(os.getpid(), signal.SIGKILL)

    ShardActor.__init__ = allocate


def test_the_only_worker_dying_while_it_allocates_its_shard_is_an_error(tmp_path, reads):
    from kmerflow.distributed import cli

    with _one_worker() as (cluster, client):
        worker = next(iter(running_workers(client)))
        client.run(_die_when_allocating)
        started = time.monotonic()
        with pytest.raises(ShardError, match=rf"shard 0 \(counters 0\.\.\d+\) on {worker} failed: its worker left"):
            ShardedCountgraph(20, 1e4, 2, client=client, shards=1, local=0)
        # The nanny starts a new worker, which allocates: the run's worker is the one named.
        client.wait_for_workers(1, timeout=30)
        worker = next(iter(running_workers(client)))
        client.run(_die_when_allocating)
        argv = ["load-into-counting", "-x", "1e4", str(tmp_path / "t.ct"), str(reads),
                "--scheduler", cluster.scheduler_address]
        with pytest.raises(kf.CommandError, match=rf"shard 0 .* on {worker} failed") as e:
            cli.run(argv, lambda _level, _text: None, client=client)
        assert e.value.code == 1 and "\n" not in str(e.value).strip()
        assert time.monotonic() - started < 60
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fq"]


@pytest.mark.parametrize("flag", ["--local-clus", "--local-cluster="])
def test_the_parser_picks_the_sharded_run_for_any_spelling(tmp_path, reads, flag):
    """A prefix of a sharding flag, as clap accepts it, runs the sharded command (which once
    fell through to the one-process run that refuses it)."""
    args = [f"{flag}1"] if flag.endswith("=") else [flag, "1"]
    kmerflow("load-into-counting", "-x", "1e4", tmp_path / "s.ct", reads, *args)
    kmerflow("load-into-counting", "-x", "1e4", tmp_path / "o.ct", reads)
    assert (tmp_path / "s.ct").read_bytes() == (tmp_path / "o.ct").read_bytes()


def test_clusters_kmerflow_starts_serve_nothing_on_port_8787(tmp_path, reads):
    with socket.socket() as taken:
        with contextlib.suppress(OSError):  # else another process holds it: as good
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        proc = kmerflow("load-into-counting", "-x", "1e4", tmp_path / "t.ct", reads, "--local-cluster", "1")
    assert b"8787" not in proc.stderr and b"HTTP server" not in proc.stderr, proc.stderr.decode()


def test_a_failed_runs_teardown_keeps_dask_quiet(monkeypatch):
    """A run failing on the LocalCluster it started ends the workers and closes the cluster with
    the `distributed` loggers silenced (Dask logs the closed connections with a traceback), and
    leaves their level as it was."""
    dask_log = logging.getLogger("distributed")
    monkeypatch.setattr(dask_log, "level", dask_log.level)  # the caller's, restored after
    dask_log.setLevel(logging.INFO)
    batched = logging.getLogger("distributed.batched")
    levels = []
    end_workers = cluster._end_workers

    def ending(started):
        levels.append(("end workers", batched.getEffectiveLevel()))
        end_workers(started)

    @contextlib.contextmanager
    def started(n):
        with local_cluster(n) as c:
            try:
                yield c
            finally:
                levels.append(("close", batched.getEffectiveLevel()))

    monkeypatch.setattr(cluster, "_end_workers", ending)
    with pytest.raises(RuntimeError, match="the run failed"):
        with cluster.connect(local_cluster=1, command="test", start_local=started):
            raise RuntimeError("the run failed")
    assert levels == [("end workers", logging.CRITICAL), ("close", logging.CRITICAL)]
    assert dask_log.level == logging.INFO
    with cluster.connect(local_cluster=1, command="test", start_local=started):
        pass  # a run that ends well: its cluster closes as usual
    assert levels[-1] == ("close", logging.INFO)
