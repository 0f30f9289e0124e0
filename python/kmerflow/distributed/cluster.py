"""The Dask cluster of a kmerflow run: :func:`connect` (the one way sharded runs and
``kmerflow pipeline`` reach a scheduler or start a LocalCluster) and :func:`local_cluster`
(the LocalCluster that kmerflow starts itself: ``--local-cluster N``, ``--scheduler local``,
the pipeline's default)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import signal
import socket
import sys
import tempfile
import threading
from typing import Any, Callable, Iterator, Mapping, Optional

from kmerflow.errors import CommandError

#: Dask settings of the clusters kmerflow starts. They have no dashboard, so the workers'
#: statistical profiler (a stack sample every 10 ms), the 20 ms event-loop tick, the 500 ms
#: system monitor, work stealing (tasks wait in the scheduler's queue or are pinned to a shard's
#: worker) and the active memory manager (tasks return small records) would only take CPU from
#: the tasks. Measured idle, 2 workers for 20 s: 1.0-1.1 CPU-s with Dask's defaults, 0.3 with
#: these.
QUIET: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.scheduler.work-stealing": False,
    "distributed.scheduler.active-memory-manager.start": False,
}

#: Seconds that :func:`connect` gives a scheduler to answer, connection included.
CONNECT_TIMEOUT = 5.0

#: The address schemes of Dask's communication layers.
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
#: A scheduler address: ``SCHEME://HOST:PORT`` (``inproc://`` has its own form) or ``HOST:PORT``.
ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[\w.-]+):(?P<port>\d{1,5})$")


#: Exit statuses of a run stopped by SIGINT (Ctrl-C) and by SIGTERM, as the native commands'.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
#: Seconds a stopped run may take to clean up before the process ends without it (as the
#: native commands' watchdog).
STOP_GRACE = 1.5


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C raises :class:`KeyboardInterrupt`."""


@contextlib.contextmanager
def stopped_by_signals(command: str) -> Iterator[None]:
    """The run of ``kmerflow COMMAND`` in the main thread, which SIGINT (Ctrl-C, sent to the
    whole process group by a terminal) stops with :class:`KeyboardInterrupt` and SIGTERM with
    :class:`Terminated`, so that it unwinds: outputs staged under temporary names and the
    cluster's workers go (see :func:`connect`). Should the unwinding take more than
    :data:`STOP_GRACE` seconds, the process ends with the signal's status and the line
    ``kmerflow COMMAND: interrupted`` (its workers end with it). Dask's logs are silenced from
    the signal on (:func:`quiet_dask_logs`). Nothing outlives the run: the signal handlers and
    the level of the ``distributed`` logger are restored when it ends (the command line ends a
    stopped run's process itself, :func:`end_stopped_process`)."""
    stopped, unwound = threading.Event(), threading.Event()
    status = [EXIT_INTERRUPTED]

    def handler(signum: int, _frame: Any) -> None:
        status[0] = EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED
        if not stopped.is_set():
            stopped.set()
            quiet.enter_context(quiet_dask_logs())  # until the run has unwound
            threading.Thread(target=watchdog, name="kmerflow-watchdog", daemon=True).start()
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def watchdog() -> None:
        if not unwound.wait(STOP_GRACE):
            print(f"kmerflow {command}: interrupted", file=sys.stderr, flush=True)
            os._exit(status[0])

    with contextlib.ExitStack() as quiet, _signals_handled_by(handler):
        try:
            yield
        finally:
            unwound.set()


@contextlib.contextmanager
def _signals_handled_by(action: Any) -> Iterator[None]:
    """SIGINT and SIGTERM handled by ``action`` (a handler, or ``signal.SIG_IGN``) for the block,
    as before after it; left as they are outside the main thread, which alone may set them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, action) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, before in previous.items():
            signal.signal(s, before)


@contextlib.contextmanager
def quiet_dask_logs() -> Iterator[None]:
    """The ``distributed`` loggers silenced (below CRITICAL) for the block, their level
    restored after it: the teardown of a stopped or failed run closes connections and ends
    workers, which Dask logs (with a traceback) as noise on the run's terminal."""
    dask_log = logging.getLogger("distributed")
    level = dask_log.level
    dask_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        dask_log.setLevel(level)


def end_stopped_process(status: int) -> None:
    """Ends the process of a ``kmerflow`` command line that a signal stopped (``status`` 130 or
    143) at once, its output flushed: the threads of the Dask client it closed would stall the
    interpreter's exit. Any other status returns."""
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def exit_status(stop: KeyboardInterrupt) -> int:
    """The exit status of a run ended by ``stop`` (:func:`stopped_by_signals`)."""
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one): the
    default number of workers of a LocalCluster kmerflow starts."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def local_cluster_refusal(n_workers: int) -> Optional[str]:
    """Why ``--local-cluster n_workers`` is refused: fewer than one worker, or more than
    :func:`available_cpus` (each worker is a single-thread process: more only share the CPUs
    and add their memory); ``None`` when it is accepted."""
    cpus = available_cpus()
    if 1 <= n_workers <= cpus:
        return None
    return f"--local-cluster {n_workers}: between 1 and the {cpus} CPU(s) this process may use"


def local_cluster(n_workers: int, memory_limit: Any = "auto",
                  config: Optional[Mapping[str, Any]] = None) -> Any:
    """A LocalCluster of ``n_workers`` single-thread worker processes without a dashboard,
    started with :data:`QUIET` and ``config`` (the worker processes inherit them)."""
    import dask
    from distributed import LocalCluster

    # SIGINT and SIGTERM ignored while the worker processes start, so that they inherit them
    # ignored (Python keeps an inherited ignored SIGINT): Ctrl-C and ``kill -TERM`` reach the
    # whole process group, and the run, not each worker, decides what stops; the workers end
    # with the cluster (their nanny stops them through a queue, or kills them).
    with dask.config.set({**QUIET, **(config or {})}), _signals_handled_by(signal.SIG_IGN):
        # The scheduler serves HTTP even without a dashboard, on port 8787 unless told: an
        # ephemeral port on this host instead (no "Port 8787 is already in use").
        # The workers' own logs stay quiet (a failed shard's "Compute Failed" and traceback):
        # the run reports each failure once, in its one line naming the shard and the worker.
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                            memory_limit=memory_limit, dashboard_address=None, silence_logs=logging.CRITICAL,
                            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})


@contextlib.contextmanager
def connect(scheduler: Optional[str] = None, local_cluster: Optional[int] = None, *,
            command: str, timeout: float = CONNECT_TIMEOUT, direct_to_workers: bool = True,
            start_local: Callable[[int], Any] = local_cluster) -> Iterator[Any]:
    """A ``distributed.Client`` of the run of ``kmerflow COMMAND``, closed (with the cluster
    started for it) on leaving: with ``scheduler`` an address (``tcp://HOST:PORT``,
    ``HOST:PORT``, ...) or a scheduler file, that scheduler, which must answer as a Dask
    scheduler within ``timeout`` seconds; else (``scheduler`` None or ``"local"``) a
    LocalCluster of ``local_cluster`` workers (one per CPU this process may use by default,
    :func:`available_cpus`) made by
    ``start_local``. Raises :class:`kmerflow.CommandError`, one line naming the address: exit
    status 2 for a malformed address, 1 for a scheduler that cannot be reached or is not one
    (or Dask not installed)."""
    fail = f"kmerflow {command}: error:"
    try:
        from distributed import Client
    except ImportError as e:
        raise CommandError(f"{fail} a run on Dask needs it installed: pip install 'kmerflow[dask]' ({e})",
                           1) from e
    if scheduler is None or scheduler == "local":
        import dask

        # The workers' scratch space (``dask-scratch-space``) in a directory of the run's own,
        # removed with the cluster: nothing is left in $TMPDIR.
        with tempfile.TemporaryDirectory(prefix="kmerflow-dask-", ignore_cleanup_errors=True) as scratch, \
                dask.config.set({"temporary-directory": scratch}), \
                contextlib.ExitStack() as teardown, \
                start_local(local_cluster or available_cpus()) as cluster:
            try:
                with Client(cluster, direct_to_workers=direct_to_workers) as client:
                    yield client
            except BaseException:
                teardown.enter_context(quiet_dask_logs())  # until the cluster has closed
                _end_workers(cluster)
                raise
        return
    address = scheduler_address(scheduler, fail)
    _probe(address, scheduler, timeout, fail)
    try:
        client = Client(address, timeout=f"{timeout}s", direct_to_workers=direct_to_workers)
    except (OSError, TimeoutError) as e:
        raise CommandError(f"{fail} cannot reach the Dask scheduler at {scheduler}: {e}", 1) from e
    with client:
        yield client


def _end_workers(cluster: Any) -> None:
    """Ends the worker processes of the LocalCluster ``cluster`` at once, for a run that stops
    (Ctrl-C, SIGTERM, an error): closing it would wait for the tasks they are running. Their
    nannies are told first not to start new ones."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        process = getattr(getattr(nanny, "process", None), "process", None)
        with contextlib.suppress(AttributeError, OSError):
            nanny.close_gracefully()
            if process is not None:
                os.kill(process.pid, signal.SIGKILL)


def scheduler_address(scheduler: str, fail: str) -> str:
    """The address that ``--scheduler`` ``scheduler`` names: itself, or the one written in the
    scheduler file of that name. Raises :class:`kmerflow.CommandError` whose one line starts
    with ``fail``: exit status 2 for a malformed address, 1 for a scheduler file that is not one."""
    match = ADDRESS.match(scheduler)
    if match and match["scheme"] in (None, *SCHEMES):
        if not 0 < int(match["port"]) < 65536:
            raise CommandError(f"{fail} --scheduler {scheduler}: port {match['port']} out of range", 2)
        return scheduler
    if os.path.isfile(scheduler):
        try:
            with open(scheduler, encoding="utf-8") as f:
                address = json.load(f)["address"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CommandError(f"{fail} {scheduler}: not a Dask scheduler file ({e})", 1) from e
        if not isinstance(address, str) or not ADDRESS.match(address) and not address.startswith("inproc://"):
            raise CommandError(f"{fail} {scheduler}: not a Dask scheduler file (address {address!r})", 1)
        return address
    if scheduler.startswith("inproc://"):
        return scheduler
    if "://" not in scheduler and (os.sep in scheduler or scheduler.endswith(".json")):
        raise CommandError(f"{fail} {scheduler}: no such scheduler file (give tcp://HOST:PORT or a file)", 1)
    raise CommandError(f"{fail} --scheduler {scheduler}: not a Dask scheduler address "
                       "(give tcp://HOST:PORT, a scheduler file, or local)", 2)


def _probe(address: str, scheduler: str, timeout: float, fail: str) -> None:
    """Asks ``address`` who it is, within ``timeout`` seconds all told, before a Client is made
    (whose start waits without end on a server that accepts the connection and never answers
    as Dask does, an HTTP server for one)."""
    if address.startswith("inproc://"):
        return
    named = scheduler if scheduler == address else f"{address} (from {scheduler})"
    match = ADDRESS.match(address)
    if match and match["scheme"] in (None, "tcp"):
        # Refused at once, where Dask would try again until the timeout.
        try:
            socket.create_connection((match["host"].strip("[]"), int(match["port"])), timeout).close()
        except OSError as e:
            raise CommandError(f"{fail} cannot reach the Dask scheduler at {named}: "
                               f"{e.strerror or type(e).__name__}", 1) from e
    from distributed.core import rpc

    async def identity() -> Any:
        remote = rpc(address, timeout=timeout)
        try:
            return await remote.identity()
        finally:
            await remote.close_rpc()

    # On a thread of its own (a daemon: Ctrl-C does not wait for it), so that the caller may
    # have an event loop running.
    asked: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def ask() -> None:
        try:
            asked.set_result(asyncio.run(asyncio.wait_for(identity(), timeout)))
        except BaseException as e:  # handed to the caller
            asked.set_exception(e)

    threading.Thread(target=ask, name="kmerflow-scheduler-probe", daemon=True).start()
    try:
        answer = asked.result()
    except TimeoutError:
        raise CommandError(f"{fail} {named}: no answer as a Dask scheduler within {timeout:g} s "
                           "(is it one?)", 1) from None
    except OSError as e:
        raise CommandError(f"{fail} cannot reach the Dask scheduler at {named}: {e}", 1) from e
    except Exception as e:  # an answer Dask cannot read: another kind of server
        raise CommandError(f"{fail} {named} is not a Dask scheduler ({type(e).__name__})", 1) from e
    if not isinstance(answer, dict) or answer.get("type") != "Scheduler":
        kind = answer.get("type") if isinstance(answer, dict) else type(answer).__name__
        raise CommandError(f"{fail} {named} is not a Dask scheduler (it answers as {kind})", 1)
