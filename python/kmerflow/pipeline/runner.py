"""Running the samples' steps on a Dask cluster.

The driver keeps each started sample's chain of steps and submits a task only when the task's
files are ready, so every task reaches the scheduler without Dask dependencies and waits in the
scheduler's queue (``distributed.scheduler.worker-saturation`` = 1.0: a worker thread gets one
task at a time), where Dask's ``priority`` decides which ready task goes next:

* a sample's one-task steps (interleave, the normalizations, a step run whole, concatenations,
  additions of tables, abundance-dist, readstats) are its critical path: high priority;
* chunk tasks (filter-abund, extract-paired-reads and the histogram's counting on chunks) come
  after every critical task and fill the workers the narrow steps leave idle;
* within each class, the sample started first goes first.

Chunking is decided when a chunkable step becomes ready (:meth:`Driver.chunks_for`), from what
the cluster is doing then: chunks exist to spread one sample's step over workers that would
otherwise idle, so a step gets as many chunks as there are worker threads without a task
(threads minus the tasks submitted and not yet finished, the step's own slot included), at
most the configured ``chunks``; with every thread taken by other samples' tasks the step runs as
one task over the whole file (no chunk files, concatenation or tables to add), which is the
least work. The same count sets a task's own threads (every command takes ``threads``): a
task submitted while the other threads hold or await tasks runs on one thread (as its worker
thread promises the scheduler), a task that finds threads idle keeps the command's default (all
the cores of its node), so one sample alone still uses the whole machine; chunk tasks run on
one thread each. The histogram counts per chunk only when its reads are at least
:data:`COUNT_RATIO` times its table's bytes: each chunk saves a full-size table and each
addition reads two and saves one, so smaller reads cost more in table I/O than the counting
the chunks spread.

Samples start largest input first (the small ones then fill the end of the run) and at most
``max_active`` at a time (by default the number of worker threads plus one), a new one whenever
one finishes.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from kmerflow.pipeline import tasks
from kmerflow.pipeline.lock import remove_leftovers
from kmerflow.pipeline.manifest import Manifest, resume_index
from kmerflow.pipeline.plan import SampleDirs, StepPlan, plan_steps, sample_dirs
from kmerflow.pipeline.samplesheet import Sample

#: Priority offset of critical-path tasks over chunk tasks.
CRITICAL = 1_000_000

#: Worker saturation set for clusters this module starts (see the module docstring).
WORKER_SATURATION = 1.0

#: Reads bytes per table byte from which the histogram may count per chunk (module docstring).
COUNT_RATIO = 10

#: The option that runs a command on one thread.
ONE_THREAD = {"threads": 1}


@dataclass
class TaskInfo:
    """What a submitted task is, for the timeline."""

    sample: str
    step: str
    kind: str  # "step", "chunk", "join" or "add"
    chunk: Optional[int] = None


@dataclass
class SampleRun:
    """A sample's progress through its steps."""

    sample: Sample
    dirs: SampleDirs
    plans: list[StepPlan]
    manifest: Manifest
    rank: int = 0
    step_index: int = 0
    status: str = "pending"  # pending, running, done, skipped, failed
    error: Optional[str] = None
    started: Optional[float] = None
    finished: Optional[float] = None
    skipped_steps: list[str] = field(default_factory=list)
    #: Chunk tasks of the step now running (1: one task over whole files).
    n_chunks: int = 1
    parts: dict[int, dict[str, str]] = field(default_factory=dict)
    #: A counted step: summed tables not yet added, and its chunk and add tasks in flight.
    tables: list[str] = field(default_factory=list)
    outstanding: int = 0
    step_started: float = 0.0

    #: The first step to run (None until :meth:`resume` looked).
    resume_at: Optional[int] = None

    @property
    def plan(self) -> StepPlan:
        """The step now running."""
        return self.plans[self.step_index]

    def remove_temporaries(self) -> None:
        """Remove what unfinished steps left under temporary names in the sample's folders
        (an earlier run's, or this run's once it stopped)."""
        remove_leftovers(self.dirs.out)
        remove_leftovers(self.dirs.scratch)

    def resume(self) -> bool:
        """Remove temporaries (:meth:`remove_temporaries`), find the first step to run (see
        :func:`resume_index`; once) and return whether the sample is complete."""
        self.remove_temporaries()
        if self.resume_at is None:
            self.resume_at = resume_index(self.plans, self.manifest)
            self.skipped_steps = [p.name for p in self.plans[:self.resume_at]]
        return self.resume_at == len(self.plans) and bool(self.manifest.data.get("complete"))


def sample_runs(samples: list[Sample], outdir: Path, scratch: Path) -> list[SampleRun]:
    """The samples' runs, not started: folders, steps and manifests."""
    runs = []
    for sample in samples:
        dirs = sample_dirs(sample, outdir, scratch)
        runs.append(SampleRun(sample, dirs, plan_steps(sample, dirs),
                              Manifest(dirs.manifest, sample.name, dirs)))
    return runs


@dataclass
class RunOutcome:
    """What a run did: per-sample states and the task timeline."""

    samples: list[SampleRun]
    #: One entry per task: worker, thread, start, stop (seconds since the epoch) and its
    #: :class:`TaskInfo` fields.
    timeline: list[dict[str, Any]]
    #: Worker address → number of threads.
    workers: dict[str, int]
    started: float
    finished: float


class Driver:
    """Submits the samples' tasks to a Dask client and follows them to completion."""

    def __init__(self, client: Any, runs: list[SampleRun], keep_going: bool,
                 max_active: Optional[int], log: Callable[[str], None],
                 on_change: Optional[Callable[[list[SampleRun]], None]] = None) -> None:
        """``log`` takes the run's messages (a sample done, failed, resuming); ``on_change``
        is called with the samples' runs whenever a task finished or samples started (the
        progress display, :mod:`kmerflow.pipeline.progress`)."""
        self.client = client
        self.keep_going = keep_going
        self.log = log
        self.on_change = on_change or (lambda runs: None)
        self.runs = runs
        self.threads = sum(client.nthreads().values()) or 1
        self.max_active = max_active or self.threads + 1
        self.info: dict[str, TaskInfo] = {}
        self.futures: dict[str, Any] = {}
        #: Keys submitted and not yet seen finished (what occupies or waits for a thread).
        self.in_flight: set[str] = set()
        self.owner: dict[str, SampleRun] = {}
        self.counter = itertools.count()
        self.ranks = itertools.count()

    def run(self) -> RunOutcome:
        """Run every sample; returns the outcome (failures are recorded, not raised)."""
        from distributed import as_completed, get_task_stream

        order = sorted(self.runs, key=lambda r: -r.sample.input_bytes())
        waiting = deque(order)
        completed = as_completed()
        started = time.time()
        with get_task_stream(self.client) as stream:
            self._start_more(waiting, completed)
            self.on_change(self.runs)
            for future in completed:
                self._follow(future, waiting, completed)
                self.on_change(self.runs)
            finished = time.time()
        # asked of the scheduler: the client's cached scheduler_info() may be a copy without workers
        workers = dict(self.client.nthreads())
        return RunOutcome(self.runs, self._timeline(stream.data), workers, started, finished)

    def _follow(self, future: Any, waiting: deque[SampleRun], completed: Any) -> None:
        """Take a finished task's result: the next task of its sample, or the sample's
        failure (and, without ``keep_going``, the run's end)."""
        key = future.key
        self.in_flight.discard(key)
        sample_run = self.owner.get(key)
        if sample_run is None or sample_run.status != "running":
            return
        try:
            result = future.result()
            if isinstance(result, tasks.Failed):
                raise tasks.StepFailed(result.message)
        except Exception as e:  # a failed command: the sample fails, the others go on
            self._fail(sample_run, e)
            if not self.keep_going:
                waiting.clear()
                self._cancel_all()
            else:
                self._start_more(waiting, completed)
            return
        self._advance(sample_run, key, result, completed)
        if sample_run.status != "running":
            self._start_more(waiting, completed)

    # --- sample life cycle ------------------------------------------------------------------

    def _start_more(self, waiting: deque[SampleRun], completed: Any) -> None:
        while waiting and sum(r.status == "running" for r in self.runs) < self.max_active:
            sample_run = waiting.popleft()
            if sample_run.resume():
                sample_run.status = "skipped"
                self.log(f"{sample_run.sample.name}: complete, skipped")
                continue
            sample_run.rank = next(self.ranks)
            sample_run.status = "running"
            sample_run.started = time.time()
            assert sample_run.resume_at is not None
            sample_run.step_index = sample_run.resume_at
            sample_run.manifest.set_complete(False)
            sample_run.dirs.out.mkdir(parents=True, exist_ok=True)
            sample_run.dirs.make_scratch()
            if sample_run.skipped_steps:
                self.log(f"{sample_run.sample.name}: resuming after "
                         f"{', '.join(sample_run.skipped_steps)}")
            self._begin_step(sample_run, completed)

    def _begin_step(self, sample_run: SampleRun, completed: Any) -> None:
        if sample_run.step_index == len(sample_run.plans):
            self._finish(sample_run)
            return
        plan = sample_run.plan
        sample_run.step_started = time.time()
        sample_run.parts = {}
        n = sample_run.n_chunks = self.chunks_for(sample_run, plan)
        if n == 1:
            positional, options = plan.whole_call()
            self._submit(sample_run, TaskInfo(sample_run.sample.name, plan.name, "step"),
                         tasks.run_step, plan.function, positional, {**options, **self._threads()},
                         _paths(plan.staged_outputs()), completed=completed)
            return
        if plan.counted is not None:
            sample_run.tables, sample_run.outstanding = [], n
            for i in range(n):
                table = str(sample_run.dirs.scratch / f"{plan.name}.{i}.ct")
                self._submit(sample_run, TaskInfo(sample_run.sample.name, plan.name, "chunk", i),
                             tasks.count_chunk, str(plan.chunk_source), n, i,
                             {**plan.counted.count_options, **ONE_THREAD}, table,
                             completed=completed)
            return
        for i in range(n):
            parts = {kw: str(sample_run.dirs.scratch / f"{plan.name}.{i}.{role}")
                     for role, kw in plan.part_keywords.items()}
            self._submit(sample_run, TaskInfo(sample_run.sample.name, plan.name, "chunk", i),
                         tasks.run_chunk, plan.function, str(plan.chunk_source), n, i,
                         plan.chunk_before, {**plan.options, **ONE_THREAD}, parts,
                         completed=completed)

    def chunks_for(self, sample_run: SampleRun, plan: StepPlan) -> int:
        """How many chunk tasks ``plan`` runs as, now that it is ready (see the module doc):
        the threads without a task, at least 1 and at most the configured ``chunks``; 1 for a
        step that cannot be cut and for a histogram whose reads are under :data:`COUNT_RATIO`
        times its table's bytes."""
        if not plan.chunkable:
            return 1
        assert plan.chunk_source is not None
        n = max(1, min(sample_run.sample.config.chunks, self._free_threads()))
        if n > 1 and plan.counted is not None and \
                os.path.getsize(plan.chunk_source) < COUNT_RATIO * plan.counted.table_bytes:
            return 1
        return n

    def _free_threads(self) -> int:
        """Worker threads without a task: the cluster's threads minus the tasks submitted and
        not yet seen finished (running or queued; negative when tasks wait)."""
        return self.threads - len(self.in_flight)

    def _threads(self) -> dict[str, int]:
        """The ``threads`` option of a one-task step submitted now: one thread when at most one
        thread is free (this task's), else none (the command's default: all its node's cores)."""
        return ONE_THREAD if self._free_threads() <= 1 else {}

    def _advance(self, sample_run: SampleRun, key: str, result: Any, completed: Any) -> None:
        info = self.info[key]
        plan = sample_run.plan
        if plan.counted is not None and info.kind in ("chunk", "add"):
            self._add_tables(sample_run, result, completed)
            return
        if info.kind == "chunk":
            assert info.chunk is not None
            sample_run.parts[info.chunk] = result
            if len(sample_run.parts) < sample_run.n_chunks:
                return
            parts = {role: [sample_run.parts[i][kw] for i in sorted(sample_run.parts)]
                     for role, kw in plan.part_keywords.items()}
            self._submit(sample_run, TaskInfo(sample_run.sample.name, plan.name, "join"),
                         tasks.join_parts, parts, _paths(plan.staged_outputs()), completed=completed)
            return
        self._complete_step(sample_run, result)
        sample_run.step_index += 1
        self._begin_step(sample_run, completed)

    @staticmethod
    def _complete_step(sample_run: SampleRun, result: dict[str, Any]) -> None:
        """Record the step now running in the manifest under its outputs' final names, then
        rename its staged outputs to them (see :mod:`kmerflow.pipeline.plan`)."""
        plan = sample_run.plan
        outputs = {role: {**record, "path": str(plan.outputs[role])}
                   for role, record in result["outputs"].items()}
        sample_run.manifest.record(plan, {**result, "outputs": outputs},
                                   time.time() - sample_run.step_started)
        for role, path in plan.staged_outputs().items():
            os.replace(path, plan.outputs[role])

    def _add_tables(self, sample_run: SampleRun, table: Optional[str], completed: Any) -> None:
        """A chunk's table (None for an empty chunk) or a sum arrived: add ready tables two by
        two (a tree, as they come), then run the step's command with the last one."""
        plan = sample_run.plan
        assert plan.counted is not None
        sample_run.outstanding -= 1
        if table is not None:
            sample_run.tables.append(table)
        while len(sample_run.tables) >= 2:
            first, second = sample_run.tables.pop(0), sample_run.tables.pop(0)
            total = str(sample_run.dirs.scratch / f"{plan.name}.sum{next(self.counter)}.ct")
            sample_run.outstanding += 1
            self._submit(sample_run, TaskInfo(sample_run.sample.name, plan.name, "add"),
                         tasks.add_tables, first, second, total, completed=completed)
        if sample_run.outstanding == 0:
            table = sample_run.tables.pop() if sample_run.tables else None
            threads = self._threads()
            self._submit(sample_run, TaskInfo(sample_run.sample.name, plan.name, "step"),
                         tasks.run_counted, table, plan.counted.function,
                         {**plan.counted.options, **threads}, plan.function,
                         plan.stage({**plan.options, **threads}), plan.stage(plan.positional),
                         _paths(plan.staged_outputs()), completed=completed)

    def _release(self, sample_run: SampleRun) -> None:
        """Drop the sample's futures. They are held until then so that the scheduler's task
        group stays large enough for its queue (it counts tasks not yet forgotten)."""
        for key in [k for k, owner in self.owner.items() if owner is sample_run]:
            del self.owner[key]
            del self.futures[key]
            self.in_flight.discard(key)

    def _finish(self, sample_run: SampleRun) -> None:
        self._release(sample_run)
        sample_run.manifest.set_complete(True)
        shutil.rmtree(sample_run.dirs.scratch, ignore_errors=True)
        sample_run.status = "done"
        sample_run.finished = time.time()
        self.log(f"{sample_run.sample.name}: done in "
                 f"{sample_run.finished - (sample_run.started or sample_run.finished):.1f} s")

    def _fail(self, sample_run: SampleRun, error: BaseException) -> None:
        sample_run.status = "failed"
        sample_run.error = f"step {sample_run.plan.name}: {error}"
        sample_run.finished = time.time()
        self.log(f"{sample_run.sample.name}: FAILED: {sample_run.error}")
        mine = [k for k, owner in self.owner.items() if owner is sample_run]
        self.client.cancel([self.futures[k] for k in mine])
        self._release(sample_run)

    def _cancel_all(self) -> None:
        for sample_run in self.runs:
            if sample_run.status == "running":
                sample_run.status = "failed"
                sample_run.error = "not finished: stopped after another sample failed"
        self.client.cancel(list(self.futures.values()))
        self.futures.clear()
        self.owner.clear()
        self.in_flight.clear()

    # --- tasks --------------------------------------------------------------------------------

    def _submit(self, sample_run: SampleRun, info: TaskInfo, function: Callable[..., Any],
                *args: Any, completed: Any) -> None:
        """Submit one task with the priority of its class and sample (see the module doc)."""
        base = CRITICAL if info.kind != "chunk" else 0
        priority = base + (len(self.runs) - sample_run.rank)
        chunk = "" if info.chunk is None else f"-{info.chunk}"
        # One key prefix for all tasks: one large task group, queued on the scheduler.
        key = f"kmerflow-task-{next(self.counter):08d}-{info.sample}-{info.step}{chunk}"
        future = self.client.submit(tasks.guarded, function, *args, key=key, priority=priority,
                                    pure=False, retries=0)
        self.info[key] = info
        self.futures[key] = future
        self.owner[key] = sample_run
        self.in_flight.add(key)
        completed.add(future)

    def _timeline(self, stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = []
        for event in stream:
            info = self.info.get(event.get("key", ""))
            if info is None:
                continue
            for ss in event.get("startstops", ()):
                if ss.get("action") == "compute":
                    rows.append({"worker": event.get("worker"),
                                 "thread": event.get("thread"),
                                 "start": ss["start"], "stop": ss["stop"],
                                 "sample": info.sample, "step": info.step, "kind": info.kind,
                                 "chunk": info.chunk, "status": event.get("status")})
        rows.sort(key=lambda r: r["start"])
        return rows


def _paths(outputs: dict[str, Path]) -> dict[str, str]:
    """Role → path as text (what a task takes)."""
    return {role: str(path) for role, path in outputs.items()}


def local_cluster(n_workers: Optional[int]) -> Any:
    """A LocalCluster of single-thread worker processes (by default one per CPU this process may
    use, :func:`kmerflow.distributed.cluster.available_cpus`), without a
    memory limit (the tables are sized by the steps' parameters) or dashboard, its queue set
    to :data:`WORKER_SATURATION`."""
    from kmerflow.distributed.cluster import available_cpus
    from kmerflow.distributed.cluster import local_cluster as start

    return start(n_workers or available_cpus(), memory_limit=0,
                 config={"distributed.scheduler.worker-saturation": WORKER_SATURATION})
