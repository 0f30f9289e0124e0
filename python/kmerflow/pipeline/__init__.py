"""Many samples at once: the normalization protocol per sample on a Dask cluster.

:func:`run` (and ``kmerflow pipeline``) reads a sample sheet, runs the configured steps of every
sample (see :mod:`kmerflow.pipeline.config`) with a task graph whose width changes from step to
step, several samples at once with priorities, and writes the outputs, a manifest that makes a
rerun skip completed work, and reports (per-sample JSON, MultiQC custom content, one HTML file).
Needs the ``dask`` extra (``pip install kmerflow[dask]``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from kmerflow.errors import KmerflowWarning
from kmerflow.pipeline import preflight
from kmerflow.pipeline.config import ConfigError, PipelineConfig, load_config
from kmerflow.pipeline.lock import OutdirBusy, OutdirLock, remove_leftovers
from kmerflow.pipeline.plan import DEFAULT_SCRATCH
from kmerflow.pipeline.preflight import FolderError
from kmerflow.pipeline.samplesheet import Sample, SampleSheetError, read_samplesheet

__all__ = ["run", "PipelineResult", "ConfigError", "SampleSheetError", "OutdirBusy",
           "FolderError", "PipelineConfig", "load_config", "read_samplesheet"]

# A step's commands run quietly, their warnings too (an empty input: the step reports its 0
# reads), as does the look at a sample's first record; a warning is attributed to the module
# that called the command, so this leaves the warnings of the caller's own commands alone.
warnings.filterwarnings("ignore", category=KmerflowWarning, module=r"kmerflow\.pipeline\.")

#: The run's own files in OUTDIR that a run rewrites (not a run that had nothing to do).
RUN_REPORT, RUN_JSON = "kmerflow_report.html", "kmerflow_run.json"


@dataclass
class PipelineResult:
    """The outcome of :func:`run`."""

    #: Sample → "done", "skipped" (complete from an earlier run) or "failed".
    status: dict[str, str]
    #: Sample → error message, for the failed ones.
    errors: dict[str, str]
    #: Utilisation, samples per hour, wall time (see ``kmerflow_run.json``).
    stats: dict[str, Any]
    #: The HTML report.
    report: Path

    @property
    def ok(self) -> bool:
        """Whether no sample failed."""
        return not self.errors


def run(samplesheet: str | os.PathLike[str], outdir: str | os.PathLike[str], *,
        steps: Optional[Iterable[str]] = None, config: str | os.PathLike[str] | None = None,
        params: Iterable[str] = (), chunks: Optional[int] = None,
        scheduler: Optional[str] = None, local_cluster: Optional[int] = None,
        client: Any = None, scratch: str | os.PathLike[str] | None = None,
        keep_going: bool = False, max_active: Optional[int] = None,
        keep_intermediates: Optional[bool] = None,
        log: Optional[Callable[[str], None]] = None) -> PipelineResult:
    """Run the pipeline over a sample sheet; returns a :class:`PipelineResult`.

    ``steps``, ``config`` (a TOML file), ``params`` (``"STEP.PARAM=VALUE"`` strings),
    ``chunks`` (the most chunk tasks of a per-chunk step) and ``keep_intermediates`` (keep the
    khmer steps' reads that a later step reads in OUTDIR) choose what runs; the cluster is ``client``
    (a :class:`distributed.Client`), else the scheduler at ``scheduler``, else a new
    LocalCluster of ``local_cluster`` single-thread workers (one per CPU by default).
    ``scratch`` holds intermediate files (default ``OUTDIR/.scratch``); ``max_active`` bounds
    the samples running at once (default: worker threads + 1; 1 runs them one after another).
    ``log`` takes the run's messages (a sample done, failed, resuming); by default they go to
    stderr, where a terminal also shows a status line updated in place
    (:mod:`kmerflow.pipeline.progress`).
    Without ``keep_going`` the first failing sample stops the run. Everything is checked
    before a folder is created or a cluster started (:mod:`kmerflow.pipeline.preflight`): a bad
    sample sheet, configuration or cluster option raises :class:`SampleSheetError` /
    :class:`ConfigError`, an OUTDIR or scratch folder that cannot be used :class:`FolderError`,
    an OUTDIR that another run is using :class:`OutdirBusy` (see :mod:`kmerflow.pipeline.lock`),
    a missing Dask :class:`ImportError` naming the extra to install. A run with nothing to do
    (every sample complete) keeps the last run's ``kmerflow_report.html`` and
    ``kmerflow_run.json``.
    """
    try:
        import distributed  # noqa: F401
    except ImportError as e:
        raise ImportError(f"the pipeline runs on Dask, which is not installed ({e}): "
                          f"pip install 'kmerflow[dask]'") from None
    preflight.check_cluster_options(scheduler if client is None else None,
                                    local_cluster if client is None else None, max_active)
    cfg = load_config(config, steps, params, chunks, keep_intermediates)
    preflight.check_config(cfg)
    samples = read_samplesheet(samplesheet, cfg)
    out = Path(outdir).resolve()
    scratch_dir = Path(scratch).resolve() if scratch is not None else out / DEFAULT_SCRATCH
    preflight.check_folder(out, "OUTDIR")
    preflight.check_run_files(out)
    preflight.check_folder(scratch_dir, "scratch folder")
    preflight.check_samples(samples, Path(samplesheet),
                            Path(config) if config is not None else None, out, scratch_dir)
    preflight.make_folder(out, "OUTDIR")
    with OutdirLock(out):
        try:
            return _run_locked(samples, out, scratch_dir, client, scheduler, local_cluster,
                               keep_going, max_active, log)
        finally:
            remove_leftovers(out)  # a report's temporary file, when writing it failed


def _run_locked(samples: list[Sample], out: Path, scratch_dir: Path, client: Any,
                scheduler: Optional[str], local_cluster: Optional[int], keep_going: bool,
                max_active: Optional[int], log: Optional[Callable[[str], None]]
                ) -> PipelineResult:
    from kmerflow.distributed.cluster import connect
    from kmerflow.pipeline import runner
    from kmerflow.pipeline.progress import Progress

    runs = runner.sample_runs(samples, out, scratch_dir)
    if all(r.resume() for r in runs):  # nothing to run: no cluster
        for r in runs:
            r.status = "skipped"
        now = time.time()
        return _write_reports(samples, runner.RunOutcome(runs, [], {}, now, now), out)
    try:
        with contextlib.ExitStack() as stack:
            on_change = None
            if log is None:  # messages on stderr, with a status line on a terminal
                progress = stack.enter_context(Progress(sys.stderr))
                log, on_change = progress.message, progress.update
            if client is None:
                client = stack.enter_context(connect(scheduler, local_cluster, command="pipeline",
                                                     direct_to_workers=False, start_local=runner.local_cluster))
                if scheduler not in (None, "local"):
                    _check_saturation(client)
            outcome = runner.Driver(client, runs, keep_going, max_active, log, on_change).run()
    finally:  # also on Ctrl-C / SIGTERM: a rerun resumes from the manifest
        for sample_run in runs:
            sample_run.remove_temporaries()  # of the steps stopped unfinished
    return _write_reports(samples, outcome, out)


def _check_saturation(client: Any) -> None:
    saturation = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION)
    if saturation > 1.0:
        warnings.warn(f"the scheduler's distributed.scheduler.worker-saturation is {saturation}: "
                      "set it to 1.0 when starting the scheduler so task priorities take effect "
                      "(DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=1.0)", stacklevel=3)


def _write_reports(samples: list[Sample], outcome: Any, out: Path) -> PipelineResult:
    import json

    from kmerflow.pipeline import report

    status = {r.sample.name: r.status for r in outcome.samples}
    previous = out / RUN_JSON
    if all(s == "skipped" for s in status.values()) and previous.is_file() \
            and (out / RUN_REPORT).is_file():
        try:  # nothing ran: the last run's reports stay
            stats = json.loads(previous.read_text())["stats"]
        except (OSError, ValueError, KeyError, TypeError):
            stats = None
        if isinstance(stats, dict):
            return PipelineResult(status, {}, stats, out / RUN_REPORT)
    summaries = []
    for sample_run in outcome.samples:
        sample = sample_run.sample
        summary_path = sample_run.dirs.summary
        if sample_run.status != "pending":  # pending: never started (the run stopped early)
            sample_run.dirs.out.mkdir(parents=True, exist_ok=True)
            summary = report.sample_summary(
                sample.name, "done" if sample_run.status == "skipped" else sample_run.status,
                sample_run.error,
                [p for p in (sample.r1, sample.r2) if p is not None], sample.overrides,
                sample_run.manifest.data, out)
            report.write_atomic(summary_path, json.dumps(summary, indent=1, default=str))
            summaries.append(summary)
    n_done = sum(r.status == "done" for r in outcome.samples)
    stats = report.run_stats(outcome.timeline, outcome.workers, outcome.started,
                             outcome.finished, n_done)
    report.write_multiqc(out, [s for s in summaries if s["status"] == "done"])
    report.write_atomic(out / RUN_JSON, json.dumps(
        {"stats": stats, "workers": outcome.workers,
         "samples": {r.sample.name: {"status": r.status, "error": r.error,
                                     "skipped_steps": r.skipped_steps}
                     for r in outcome.samples},
         "timeline": [{**t, "start": round(t["start"] - outcome.started, 4),
                       "stop": round(t["stop"] - outcome.started, 4)}
                      for t in outcome.timeline]}, indent=1))
    html_path = out / RUN_REPORT
    report.write_html(html_path, summaries, stats, outcome.timeline, outcome.started,
                      "kmerflow pipeline report")
    return PipelineResult(status, {r.sample.name: r.error or "" for r in outcome.samples
                           if r.status == "failed"}, stats, html_path)
