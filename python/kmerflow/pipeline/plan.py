"""What each step of a sample runs: its command, arguments, input and output files.

Final outputs go to ``OUTDIR/SAMPLE/``; intermediates (the interleaved input, the saved table,
chunk files, and the reads of a khmer step that a later step reads, unless the configuration
keeps them: :attr:`~kmerflow.pipeline.config.PipelineConfig.keep_intermediates`) go to
``SCRATCH/SAMPLE/`` and are removed when the sample completes (kept for a failed sample, whose
rerun resumes from them; a complete sample's rerun that changes a step redoes the steps whose
removed outputs it needs). A step writes each output
under a temporary name beside it (:func:`staged`), which the runner renames to the final name
once the manifest records the step complete: a file under a final name is always a completed
step's, and a rerun, which removes the temporary names first, redoes a step that did not
complete (:mod:`kmerflow.pipeline.runner`).

A plan says what a step *may* run as chunk tasks; whether it does, and in how many chunks, is
decided by the runner when the step becomes ready (:mod:`kmerflow.pipeline.runner`). Every
step can run as one task over whole files (:meth:`StepPlan.whole_call`). The histogram step
(``abundance-dist-single``) may count per chunk: each chunk task counts its chunk into a table
(``load-into-counting`` with the step's table parameters), the tables are added pairwise (a
tree: tables are additive), and ``abundance-dist`` writes the histogram of the whole file
against the sum, which equals the single command's (see :class:`Counted`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmerflow.errors import KmerflowError
from kmerflow.pipeline.config import (
    OWN_CLUSTER,
    READS_STEPS,
    SHARD_PARAMS,
    SHARDED_STEPS,
    STEP_COMMANDS,
    command_keywords,
)
from kmerflow.pipeline.samplesheet import Sample
from kmerflow.reads import open_reads


@dataclass
class Counted:
    """The per-chunk form of a counting step: chunk tables counted by ``load_into_counting``
    with ``count_options``, added pairwise, then ``function`` run with the sum before the
    step's positional arguments and ``options``."""

    count_options: dict[str, Any]
    function: str
    options: dict[str, Any]
    #: Bytes of one chunk's table (what each chunk task saves and each addition reads twice).
    table_bytes: float


@dataclass
class StepPlan:
    """One step of one sample."""

    name: str
    #: The :mod:`kmerflow.commands` function.
    function: str
    #: Final output files: role → path (``reads``, ``mate``, ``orphans``, ``single``, ``table``,
    #: ``keep_curve``, ...).
    outputs: dict[str, Path]
    #: Files read: path → the step that writes it (None for the sample's own read files).
    inputs: dict[Path, str | None]
    #: Keyword arguments (the step's parameters and the pipeline's file options).
    options: dict[str, Any]
    #: Positional arguments of a whole-file run.
    positional: list[Any] = field(default_factory=list)
    #: For a step that may run per chunk: the file cut into chunks, positional arguments before
    #: the chunk, and role → output keyword of each part (of the output in a whole-file run).
    chunk_source: Path | None = None
    chunk_before: list[Any] = field(default_factory=list)
    part_keywords: dict[str, str] = field(default_factory=dict)
    #: Output roles that live on scratch (not kept, not checked on a rerun).
    scratch_roles: frozenset[str] = frozenset()
    #: For a counting step run per chunk (``chunk_source`` is what is counted): its form.
    counted: Counted | None = None

    @property
    def chunkable(self) -> bool:
        """Whether the step may run as chunk tasks (then a concatenation or a sum of tables)."""
        return self.chunk_source is not None

    def staged_outputs(self) -> dict[str, Path]:
        """Role → the temporary name the step writes that output under (:func:`staged`)."""
        return {role: staged(path) for role, path in self.outputs.items()}

    def stage(self, value: Any) -> Any:
        """``value`` (a path, or a list or dict of values) with the step's outputs replaced by
        their staged names: the arguments the step runs with."""
        names = {path: staged(path) for path in self.outputs.values()}
        if isinstance(value, list):
            return [self.stage(v) for v in value]
        if isinstance(value, dict):
            return {k: self.stage(v) for k, v in value.items()}
        return names.get(value, value) if isinstance(value, Path) else value

    def whole_call(self) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments of the step's command over whole files, writing
        its outputs under their staged names (for a chunkable step: the chunk's place taken
        by the whole file)."""
        outputs = {kw: self.outputs[role] for role, kw in self.part_keywords.items()}
        return self.stage(list(self.positional)), self.stage({**self.options, **outputs})


def staged(path: Path) -> Path:
    """Where a step writes ``path`` until the runner renames it: a temporary name of this
    process in the same folder (so the rename stays on one file system), which
    :func:`kmerflow.pipeline.lock.remove_leftovers` removes when a later run finds it."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-step")


#: The default scratch folder, in OUTDIR (the run's own: it holds only what runs made).
DEFAULT_SCRATCH = ".scratch"

#: The file that marks a sample's folder in a scratch folder given by the user as the
#: pipeline's (made by it, so removed by it).
SCRATCH_MARK = ".kmerflow-scratch"


@dataclass
class SampleDirs:
    """Where a sample's files go."""

    out: Path
    scratch: Path
    #: Its manifest (:mod:`kmerflow.pipeline.manifest`) and JSON summary, in ``out``.
    manifest: Path
    summary: Path

    def make_scratch(self) -> None:
        """Create the scratch folder, marked as the pipeline's (:data:`SCRATCH_MARK`)."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        (self.scratch / SCRATCH_MARK).touch()

    def foreign_scratch(self) -> bool:
        """Whether the scratch folder exists, holds files and was not made by the pipeline
        (then it is not the pipeline's to remove)."""
        try:
            entries = {e.name for e in os.scandir(self.scratch)}
        except (FileNotFoundError, NotADirectoryError):
            return False
        return bool(entries) and SCRATCH_MARK not in entries


def sample_dirs(sample: Sample, outdir: Path, scratch: Path) -> SampleDirs:
    """The sample's output and scratch folders (not created) and its own files."""
    out = outdir / sample.name
    return SampleDirs(out, scratch / sample.name, out / f"{sample.name}.manifest.json",
                      out / f"{sample.name}.summary.json")


#: Output roles that hold reads (what readstats lists and a later step may read).
READS_ROLES = ("reads", "mate", "orphans", "single")


def plan_steps(sample: Sample, dirs: SampleDirs) -> list[StepPlan]:
    """The steps of ``sample`` in order, each reading the reads of the one before."""
    name, out, tmp = sample.name, dirs.out, dirs.scratch
    ext = ".fq" if _is_fastq(sample.r1) else ".fa"
    params = sample.config.params
    reads: Path = sample.r1
    reads_from: str | None = None
    single: Path | None = None
    table: Path | None = None
    all_reads: list[Path] = [sample.r1] + ([sample.r2] if sample.r2 else [])
    last_reads = [s for s in sample.steps if s in READS_STEPS][-1:]
    plans: list[StepPlan] = []
    for step in sample.steps:
        opts = dict(params[step])
        if step in SHARDED_STEPS and SHARD_PARAMS & opts.keys():
            opts["scheduler"] = OWN_CLUSTER  # its table on the pipeline's cluster (tasks.run_step)
        function = STEP_COMMANDS[step]
        # Reads a later step reads: on scratch unless kept (the last step's are final).
        kept = sample.config.keep_intermediates or [step] == last_reads
        reads_dir, reads_roles = (out, frozenset()) if kept else \
            (tmp, frozenset({"reads", "single"}))
        if step == "protocol":
            hist = out / f"{name}.histogram.csv"
            opts["hist_out"] = hist
            if sample.r2 is not None:
                outputs = {"reads": out / f"{name}.protocol_1{ext}",
                           "mate": out / f"{name}.protocol_2{ext}",
                           "orphans": out / f"{name}.protocol.orphans{ext}", "histogram": hist}
                opts.update(output=outputs["reads"], mate_output=outputs["mate"],
                            orphans=outputs["orphans"])
            else:
                outputs = {"reads": out / f"{name}.protocol{ext}", "histogram": hist}
                opts["output"] = outputs["reads"]
            plan = StepPlan(step, function, outputs, {p: None for p in all_reads}, opts,
                            positional=[list(all_reads)])
        elif step == "interleave":
            assert sample.r2 is not None
            dest = tmp / f"{name}.interleaved{ext}"
            plan = StepPlan(step, function, {"reads": dest},
                            {sample.r1: None, sample.r2: None}, {**opts, "output": dest},
                            positional=[sample.r1, sample.r2], scratch_roles=frozenset({"reads"}))
        elif step in ("normalize", "renormalize"):
            dest = reads_dir / f"{name}.{step}{ext}"
            curve = out / f"{name}.{step}.keep.csv"
            outputs = {"reads": dest, "keep_curve": curve}
            opts.update(output=dest, report=curve)
            inputs: dict[Path, str | None] = {reads: reads_from}
            if sample.paired and reads_from in ("interleave", "extract"):
                opts["paired"] = True
            if single is not None:
                opts["unpaired_reads"] = single
                inputs[single] = "extract"
            scratch_roles = reads_roles
            if step == "normalize":
                table = tmp / f"{name}.normalize.ct"
                outputs["table"] = table
                opts["savegraph"] = table
                scratch_roles |= {"table"}
            plan = StepPlan(step, function, outputs, inputs, opts, positional=[[reads]],
                            scratch_roles=scratch_roles)
            single = None
        elif step == "filter":
            assert table is not None
            dest = reads_dir / f"{name}.filter{ext}"
            plan = StepPlan(step, function, {"reads": dest},
                            {reads: reads_from, table: "normalize"}, opts,
                            positional=[table, reads], chunk_source=reads, chunk_before=[table],
                            part_keywords={"reads": "output"}, scratch_roles=reads_roles)
        elif step == "extract":
            pe = reads_dir / f"{name}.extract.pe{ext}"
            se = reads_dir / f"{name}.extract.se{ext}"
            plan = StepPlan(step, function, {"reads": pe, "single": se}, {reads: reads_from},
                            opts, positional=[reads], chunk_source=reads,
                            part_keywords={"reads": "output_paired", "single": "output_single"},
                            scratch_roles=reads_roles)
            single = se
        elif step == "histogram":
            dest = out / f"{name}.histogram.csv"
            # Chunks only of a file the pipeline wrote (plain, see chunks.py).
            counted = _counted_histogram(opts) if reads_from is not None else None
            plan = StepPlan(step, function, {"histogram": dest}, {reads: reads_from}, opts,
                            positional=[reads, dest], counted=counted,
                            chunk_source=reads if counted else None)
        else:  # readstats
            dest = out / f"{name}.readstats.txt"
            files = list(dict.fromkeys(all_reads))
            plan = StepPlan(step, function, {"readstats": dest},
                            {p: _producer(plans, p) for p in files}, {**opts, "output": dest},
                            positional=[files])
        plans.append(plan)
        if "reads" in plan.outputs:
            reads, reads_from = plan.outputs["reads"], step
            if step != "interleave":  # the inputs again, interleaved
                all_reads += [plan.outputs[r] for r in READS_ROLES if r in plan.outputs]
    return plans


def _counted_histogram(opts: dict[str, Any]) -> Counted | None:
    """``abundance-dist-single`` with ``opts`` as chunk counts, additions and ``abundance-dist``;
    None when an option needs the one command or leaves the table size unknown before the run
    (tables sized from the input: ``-M auto``, or no ``-x``/``-M``)."""
    size = table_bytes(opts)
    if size is None:
        return None
    counting, dist = command_keywords("load_into_counting"), command_keywords("abundance_dist")
    return Counted({k: v for k, v in opts.items() if k in counting}, "abundance_dist",
                   {k: v for k, v in opts.items() if k in dist}, size)


#: The counting commands' default number of tables (``-N``).
DEFAULT_N_TABLES = 4


def table_bytes(opts: dict[str, Any]) -> float | None:
    """The bytes of the table a counting command makes with ``opts``: ``-M`` if given, else
    ``-N`` x ``-x`` (half for 4-bit counters); None when it is sized from the input (``-M auto``,
    or neither ``-M`` nor ``-x``) or a value is not a size (the command's own check refuses it
    before the run)."""
    memory = opts.get("max_memory_usage")
    if memory is not None and str(memory).lower() == "auto":
        return None
    if opts.get("max_tablesize") is None and memory is None:
        return None
    try:
        if memory is not None:
            from dask.utils import parse_bytes

            return float(parse_bytes(str(memory)))
        size = float(opts.get("n_tables", DEFAULT_N_TABLES)) * float(opts["max_tablesize"])
    except (TypeError, ValueError):
        return None
    return size / 2 if opts.get("small_count") else size


def _producer(plans: list[StepPlan], path: Path) -> str | None:
    for plan in plans:
        if path in plan.outputs.values():
            return plan.name
    return None


def _is_fastq(path: Path) -> bool:
    """Whether the sample's reads are FASTQ (the outputs then are too); FASTQ for unreadable
    reads, which their first step reports."""
    try:
        st = path.stat()
    except OSError:
        return True
    return _first_record_has_quality(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _first_record_has_quality(path: Path, size: int, mtime_ns: int) -> bool:
    """:func:`_is_fastq` of the file as it is (its size and time: the run's checks and its plans
    ask, the file is read once)."""
    try:
        for record in open_reads(path):
            return record.quality is not None
    except KmerflowError:
        pass
    return True
