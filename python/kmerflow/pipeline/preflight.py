"""What a run checks before it creates a folder or starts a cluster.

* the cluster options: ``--local-cluster`` at most the CPUs this process may use
  (:func:`kmerflow.distributed.cluster.available_cpus`), ``--max-active`` positive,
  ``--scheduler`` an address Dask can parse;
* OUTDIR and the scratch folder: folders (or absent) that can be written (:func:`check_folder`),
  no folder in OUTDIR where the run writes a report (:func:`check_run_files`);
* each sample's files: its output and scratch folders not files; its scratch folder (removed
  when it completes) not holding its outputs, an input, or, in a ``--scratch`` folder, files
  the pipeline did not make (:data:`kmerflow.pipeline.plan.SCRATCH_MARK`); no output or manifest that is an input (the
  same file by any path or link) (:func:`check_samples`);
* each step's parameters: the command line of every configured step (:func:`check_config`),
  then of each step of each sample, is checked by the command line's own parser
  (``kmerflow._core.check_command``: the ranges, units and combinations the command would
  refuse), and a refusal names the sample-sheet line and column or the configuration key that
  set the value.

Problems of the sheet and the parameters raise :class:`SampleSheetError` /
:class:`ConfigError` (exit status 2), a folder that cannot be used :class:`FolderError` (1).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

from kmerflow import _core, commands
from kmerflow.errors import CommandError
from kmerflow.pipeline.config import DEFAULT_PARAMS, ConfigError, PipelineConfig, override_targets
from kmerflow.pipeline.plan import DEFAULT_SCRATCH, StepPlan, plan_steps, sample_dirs
from kmerflow.pipeline.samplesheet import RESERVED_PREFIX, Sample, SampleSheetError


class FolderError(RuntimeError):
    """OUTDIR or the scratch folder cannot be used (nothing was started; exit status 1)."""


def check_cluster_options(scheduler: Optional[str], local_cluster: Optional[int],
                          max_active: Optional[int]) -> None:
    """Refuse (:class:`ConfigError`) a LocalCluster size that
    :func:`~kmerflow.distributed.cluster.local_cluster_refusal` refuses and a ``max_active``
    under 1; a malformed scheduler address or a bad scheduler file as the run would
    (:func:`kmerflow.distributed.cluster.scheduler_address`, :class:`kmerflow.CommandError`)."""
    if local_cluster is not None:
        from kmerflow.distributed.cluster import local_cluster_refusal

        refusal = local_cluster_refusal(local_cluster)
        if refusal is not None:
            raise ConfigError(refusal)
    if max_active is not None and max_active < 1:
        raise ConfigError(f"--max-active {max_active}: must be at least 1")
    if scheduler is not None and scheduler != "local":
        from kmerflow.distributed.cluster import scheduler_address

        scheduler_address(scheduler, "kmerflow pipeline: error:")


def check_folder(path: Path, what: str) -> None:
    """Refuse (:class:`FolderError`) a ``path`` that is not a folder, or whose nearest existing
    folder cannot be written in (tried by creating and removing a file there)."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == path else f" ({existing} is not a folder)"
        raise FolderError(f"{what} {path}: not a folder{where}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".kmerflow-probe-", dir=existing)
    except OSError as e:
        raise FolderError(f"{what} {path}: cannot write in {existing}: "
                          f"{e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)


def check_run_files(out: Path) -> None:
    """Refuse (:class:`FolderError`) an OUTDIR holding a folder where the run writes one of its
    own files (their names start with
    :data:`~kmerflow.pipeline.samplesheet.RESERVED_PREFIX`)."""
    try:
        entries = list(os.scandir(out))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.name.lower().startswith(RESERVED_PREFIX) and not entry.is_file():
            raise FolderError(f"OUTDIR {out}: {entry.name} is not a file (the run writes its "
                              f"reports, {RESERVED_PREFIX}*, there)")


def make_folder(path: Path, what: str) -> None:
    """Create ``path`` (and its parents); :class:`FolderError` if that fails."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FolderError(f"{what} {path}: cannot create it: {e.strerror or e}") from None


def check_samples(samples: list[Sample], sheet: Path, config_file: Optional[Path], out: Path,
                  scratch: Path) -> None:
    """Check each sample's folders and files against the inputs, and each step's command line
    (see the module doc)."""
    inputs = [p for s in samples for p in (s.r1, s.r2) if p is not None]
    inputs += [sheet.resolve()] + ([config_file.resolve()] if config_file is not None else [])
    identities = {_identity(p): p for p in inputs if p.exists()}
    scratch_dirs = {sample_dirs(s, out, scratch).scratch: s for s in samples}
    holding = {scratch_dirs[d].name: p for p in inputs for d in p.parents if d in scratch_dirs}
    for sample in samples:
        where = f"{sheet} line {sample.line}: sample {sample.name!r}"
        dirs = sample_dirs(sample, out, scratch)
        for folder, role in ((dirs.out, "output"), (dirs.scratch, "scratch")):
            if folder.exists() and not folder.is_dir():
                raise SampleSheetError(f"{where}: its {role} folder {folder} is a file")
        removed = f"{where}: its scratch folder {dirs.scratch}, removed when it completes,"
        if dirs.out.is_relative_to(dirs.scratch):
            raise SampleSheetError(f"{removed} holds its output folder {dirs.out}")
        if sample.name in holding:
            raise SampleSheetError(f"{removed} holds the input {holding[sample.name]}")
        if scratch != out / DEFAULT_SCRATCH and dirs.foreign_scratch():
            raise SampleSheetError(f"{removed} holds files kmerflow pipeline did not make "
                                   f"(choose another --scratch)")
        plans = plan_steps(sample, dirs)
        written = [p for plan in plans for p in plan.outputs.values()]
        for path in [*written, dirs.manifest, dirs.summary]:
            same = identities.get(_identity(path)) if path.exists() else None
            if same is not None:
                raise SampleSheetError(f"{where}: its output {path} is the input {same}")
        _check_commands(sample, plans, sheet)


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


# --- the steps' command lines ------------------------------------------------------------------

def step_calls(plan: StepPlan) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """Every command the step may run, as (function, positional arguments, options): its
    whole-file run and, for a step that may count per chunk, the chunk counts and the command
    over their sum (:class:`kmerflow.pipeline.plan.Counted`)."""
    positional, options = plan.whole_call()
    calls = [(plan.function, positional, options)]
    if plan.counted is not None:
        table = next(iter(plan.outputs.values()))
        calls.append(("load_into_counting", [table, [plan.chunk_source]],
                      {**plan.counted.count_options, "force": True}))
        calls.append((plan.counted.function, [table, *plan.positional], plan.counted.options))
    return calls


def command_refusal(function: str, positional: Iterable[Any],
                    options: dict[str, Any]) -> Optional[str]:
    """The usage error (one line) of the :mod:`kmerflow.commands` call ``function(*positional,
    quiet=True, **options)``, checked by the command line's parser without running it; None if
    it would run."""
    values = [p for arg in positional for p in (arg if isinstance(arg, list) else [arg])]
    # The pipeline's paths are absolute and do not change how a command line parses: one
    # placeholder for all, so that the samples' command lines are parsed once per shape.
    values = [_PATH if isinstance(v, Path) else v for v in values]
    options = {k: _PATH if isinstance(v, Path) else v for k, v in options.items()}
    try:
        argv = commands.command_argv(function.replace("_", "-"), values,
                                     **{**options, "quiet": True})
    except TypeError as e:
        return str(e)
    return _parse_refusal(tuple(argv))


#: What :func:`command_refusal` puts in place of a path.
_PATH = "/path"


@functools.lru_cache(maxsize=4096)
def _parse_refusal(argv: tuple[str, ...]) -> Optional[str]:
    """The first line of the usage error of ``kmerflow ARGV``, without ``error:``; None."""
    try:
        _core.check_command(["kmerflow", *argv])
    except CommandError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "usage error"
        return first.removeprefix("error: ")
    return None


def check_config(config: PipelineConfig) -> None:
    """Check the command line of every configured step with the configuration's values, for a
    paired sample (every step then runs): a bad value is refused even where no sample of the
    sheet would use it. A refusal raises :class:`ConfigError` naming the key."""
    sample = Sample("sample", Path("/sample_R1.fq"), Path("/sample_R2.fq"), config)
    _check_commands(sample, plan_steps(sample, sample_dirs(sample, Path("/"), Path("/"))), None)


def _check_commands(sample: Sample, plans: list[StepPlan], sheet: Optional[Path]) -> None:
    """Check every command of every step of ``sample`` (of ``sheet``; None: the configuration's
    own); a refusal is blamed on the first value the user gave (sheet column, then
    configuration) without which the command would run."""
    for index, plan in enumerate(plans):
        for call_index, call in enumerate(step_calls(plan)):
            refusal = command_refusal(*call)
            if refusal is None:
                continue
            key = _culprit(sample, plan.name, index, call_index)
            column = next((c for c in sample.overrides if key in override_targets(c)), None)
            if column is not None:
                raise SampleSheetError(f"{sheet} line {sample.line}: column {column} = "
                                       f"{sample.overrides[column]!r}: {refusal}")
            if key is not None:
                raise ConfigError(f"{sample.config.sources[key]}: {refusal}")
            if sheet is None:
                raise ConfigError(f"step {plan.name}: {refusal}")
            raise SampleSheetError(f"{sheet} line {sample.line}: sample {sample.name!r}, step "
                                   f"{plan.name}: {refusal}")


def _culprit(sample: Sample, step: str, index: int, call_index: int) -> Optional[str]:
    """The ``step.param`` the user set (in the sheet, else the configuration) whose default
    makes the step's command ``call_index`` run; None if no single one does."""
    params = sample.config.params[step]
    given = [t for c in sample.overrides for t in override_targets(c)]
    given += [k for k in sample.config.sources if k not in given]
    for key in given:
        key_step, _, name = key.partition(".")
        if key_step != step or name not in params:
            continue
        reverted = {k: v for k, v in params.items() if k != name}
        if name in DEFAULT_PARAMS[step]:
            reverted[name] = DEFAULT_PARAMS[step][name]
        config = dataclasses.replace(sample.config,
                                     params={**sample.config.params, step: reverted})
        trial = dataclasses.replace(sample, config=config)
        plans = plan_steps(trial, sample_dirs(trial, Path("/"), Path("/")))
        calls = step_calls(plans[index])
        if call_index >= len(calls) or command_refusal(*calls[call_index]) is None:
            return key
    return None
