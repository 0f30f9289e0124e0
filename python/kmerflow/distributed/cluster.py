"""The LocalCluster that kmerflow starts itself (``--local-cluster N``, ``--scheduler local``,
the pipeline's default)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

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


def local_cluster(n_workers: int, memory_limit: Any = "auto",
                  config: Optional[Mapping[str, Any]] = None) -> Any:
    """A LocalCluster of ``n_workers`` single-thread worker processes without a dashboard,
    started with :data:`QUIET` and ``config`` (the worker processes inherit them)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({**QUIET, **(config or {})}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                            memory_limit=memory_limit, dashboard_address=None)
