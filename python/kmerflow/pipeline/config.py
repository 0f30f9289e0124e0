"""The pipeline's steps and their parameters (``kmerflow normalize`` by default, khmer's separate
steps by configuration: a TOML file or flags).

Steps, in order (each consumes the reads of the latest earlier step that writes reads):

=========== ===============================================================================
protocol    ``normalize -k 20 --target 5 R1 [R2] -o OUT [-O MATE --orphans ORPHANS]
            --hist-out HIST``: khmer's protocol (normalize to 20, trim, normalize to 5) in one
            run, tables sized from the data, no intermediate files
interleave  ``interleave-reads R1 R2`` (paired samples only)
normalize   ``normalize-by-median -k 20 -C 20 [-p] --savegraph TABLE`` (one task: order-dependent)
filter      ``filter-abund -V TABLE`` with ``normalize``'s table (may run per chunk, concatenated)
extract     ``extract-paired-reads`` (paired samples only; may run per chunk, concatenated)
renormalize ``normalize-by-median -k 20 -C 5 [-p PE -u SE]`` (one task)
histogram   ``abundance-dist-single -k 20`` of the last reads
readstats   ``readstats`` of the input and of every reads output
=========== ===============================================================================

The default is ``protocol`` and ``readstats`` (:data:`DEFAULT_STEPS`), for paired and
single-end samples alike. A value given for a step that does not run is refused.
``protocol`` replaces the khmer steps from ``interleave`` to
``histogram`` (it writes the histogram of its output itself), so it is not combined with them.

A step's parameters are keywords of its :mod:`kmerflow.commands` function (``cutoff``,
``ksize``, ``max_memory_usage``, ``target``, ...). The file names, pairing and the saved table
are set by the pipeline and cannot be given. ``shards`` (with ``local_shards``,
``batch_kmers``) runs the table of a step of :data:`SHARDED_STEPS` on shards held by the
pipeline's own cluster's workers (its task holds the client's part), as ``--scheduler`` does.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

from kmerflow import commands

#: Step name → the command function it runs.
STEP_COMMANDS: dict[str, str] = {
    "protocol": "normalize",
    "interleave": "interleave_reads",
    "normalize": "normalize_by_median",
    "filter": "filter_abund",
    "extract": "extract_paired_reads",
    "renormalize": "normalize_by_median",
    "histogram": "abundance_dist_single",
    "readstats": "readstats",
}

#: The steps in the order they run.
STEP_ORDER: tuple[str, ...] = tuple(STEP_COMMANDS)

#: The steps run when none are configured: the protocol in one run, then readstats.
DEFAULT_STEPS: tuple[str, ...] = ("protocol", "readstats")

#: The khmer steps that ``protocol`` does in one run (not combined with it).
PROTOCOL_REPLACES: tuple[str, ...] = ("interleave", "normalize", "filter", "extract",
                                      "renormalize", "histogram")

#: The steps whose reads a later step may read (their outputs are intermediates when one does).
READS_STEPS = frozenset({"protocol", "interleave", "normalize", "filter", "extract",
                         "renormalize"})

#: khmer's protocol (khmer-protocols, "digital normalization and abundance filtering"): as
#: separate steps, and in one run (``--target 5``: the first pass to 4 x 5 = 20).
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "protocol": {"ksize": 20, "target": 5},
    "interleave": {},
    "normalize": {"ksize": 20, "cutoff": 20},
    "filter": {"variable_coverage": True},
    "extract": {},
    "renormalize": {"ksize": 20, "cutoff": 5},
    "histogram": {"ksize": 20},
    "readstats": {},
}

#: Keywords the pipeline sets itself (file names, pairing, tables, reports, where a step runs)
#: or that would make a step print instead of run.
RESERVED = frozenset({
    "output", "output_dir", "output_paired", "output_single", "savegraph", "loadgraph",
    "paired", "force_single", "unpaired_reads", "report", "report_json", "quiet", "force",
    "gzip", "bzip", "csv", "threads", "html", "plots", "multiqc", "metrics",
    "mate_output", "orphans", "hist", "hist_out", "save_table",
    "scheduler", "local_cluster",
    "help", "version", "info",
})

#: The parameters that shard a step's table over the pipeline's own cluster.
SHARD_PARAMS = frozenset({"shards", "local_shards", "batch_kmers"})

#: The steps whose table may be sharded (their one task runs the command with the pipeline's
#: cluster as its ``scheduler``): the normalizations, run whole.
SHARDED_STEPS = frozenset({"protocol", "normalize", "renormalize"})

#: The ``scheduler`` the pipeline's plan gives a sharded step: its task's own cluster.
OWN_CLUSTER = "pipeline"

#: Sample-sheet columns that are shorthands for step parameters.
SHORTHANDS: dict[str, tuple[str, ...]] = {
    "cutoff": ("normalize.cutoff", "protocol.first_target"),
    "ksize": ("protocol.ksize", "normalize.ksize", "renormalize.ksize", "histogram.ksize"),
    # The steps that hash k-mers; filter reads the normalize step's table, made the same way.
    "single_strand": ("protocol.single_strand", "normalize.single_strand", "filter.single_strand",
                      "renormalize.single_strand", "histogram.single_strand"),
}


class ConfigError(ValueError):
    """An invalid step list or parameter (reported before anything runs, exit status 2)."""


@dataclass
class PipelineConfig:
    """The steps to run, their parameters, the chunking of the per-chunk steps and whether
    intermediate reads are kept."""

    steps: list[str] = field(default_factory=lambda: list(DEFAULT_STEPS))
    params: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {s: dict(p) for s, p in DEFAULT_PARAMS.items()})
    #: The most chunk tasks of a per-chunk step (``filter``, ``extract``, the histogram's
    #: counting) of one sample; the runner picks how many when the step is ready.
    chunks: int = 4
    #: ``step.param`` → where its value was given (``steps.toml [normalize] cutoff``,
    #: ``--param normalize.cutoff=5``), for messages.
    sources: dict[str, str] = field(default_factory=dict)
    #: Keep the reads that a later step of the sample reads (the khmer steps' normalize, filter
    #: and extract outputs) in ``OUTDIR/SAMPLE/``; by default they are written to the scratch
    #: folder and removed with it when the sample completes.
    keep_intermediates: bool = False

    def with_overrides(self, overrides: Mapping[str, Any]) -> PipelineConfig:
        """A copy with ``step.param`` (or shorthand) overrides applied and checked."""
        params = {s: dict(p) for s, p in self.params.items()}
        sources = dict(self.sources)
        for key, value in overrides.items():
            for target in override_targets(key):
                step, param = _split_key(target)
                if step not in self.steps:
                    if key in SHORTHANDS:  # a shorthand sets the steps that run
                        continue
                    raise ConfigError(f"column {key}: {self._not_run(step)}")
                params[step][param] = value
                sources.pop(target, None)  # the sheet's now
        new = dataclasses.replace(self, steps=list(self.steps), params=params, sources=sources)
        new.validate()
        return new

    def validate(self) -> None:
        """Raise :class:`ConfigError` for an unknown step, a step out of order, ``protocol`` with
        a step it replaces, a value given for a step that does not run, a parameter the step's
        command does not take or one the pipeline sets itself."""
        unknown = [s for s in self.steps if s not in STEP_COMMANDS]
        if unknown:
            raise ConfigError(f"unknown step(s) {', '.join(unknown)} "
                              f"(steps: {', '.join(STEP_ORDER)})")
        if not self.steps:
            raise ConfigError("no steps")
        if len(set(self.steps)) != len(self.steps) or \
                sorted(self.steps, key=STEP_ORDER.index) != self.steps:
            raise ConfigError(f"steps must be distinct and in the order {', '.join(STEP_ORDER)}")
        replaced = [s for s in PROTOCOL_REPLACES if s in self.steps]
        if "protocol" in self.steps and replaced:
            raise ConfigError(f"step protocol (kmerflow normalize: the whole protocol and the "
                              f"histogram of its output, in one run) replaces step(s) "
                              f"{', '.join(replaced)}: choose one or the other")
        if "filter" in self.steps and "normalize" not in self.steps:
            raise ConfigError("step filter needs step normalize (it filters with its table)")
        if self.chunks < 1:
            raise ConfigError("chunks must be at least 1")
        for key, where in self.sources.items():
            step = key.partition(".")[0]
            if step not in self.steps:
                raise ConfigError(f"{where}: {self._not_run(step)}")
        for step, params in self.params.items():
            if step not in STEP_COMMANDS:
                raise ConfigError(f"parameters for unknown step {step!r}")
            allowed = command_keywords(STEP_COMMANDS[step])
            for name, value in params.items():
                where = self.sources.get(f"{step}.{name}", f"{step}.{name}")
                if name in RESERVED or (name in SHARD_PARAMS and step not in SHARDED_STEPS):
                    raise ConfigError(f"{where}: set by the pipeline" if name in RESERVED else
                                      f"{where}: only steps {', '.join(sorted(SHARDED_STEPS))} run on shards")
                if name not in allowed:
                    raise ConfigError(f"{where}: not a parameter of "
                                      f"{STEP_COMMANDS[step].replace('_', '-')}")
                _check_type(step, name, value, where)


    def _not_run(self, step: str) -> str:
        """Why a value given for ``step`` is refused when the step does not run (it would be
        ignored: likely a value meant for a step the configuration left out)."""
        return (f"step {step} does not run (steps: {', '.join(self.steps)}; choose them with "
                f"--steps or steps = [...])")


def command_keywords(function: str) -> set[str]:
    """The keywords a command function accepts (its keyword-only parameters, and the flag table
    of :mod:`kmerflow.commands` where it has one)."""
    fn = getattr(commands, function)
    named = {n for n, p in inspect.signature(fn).parameters.items()
             if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return named | set(getattr(commands, "FLAGS", ()))


def _check_type(step: str, name: str, value: Any, where: str) -> None:
    """Refuse a value whose type differs from the default's (an integer for ``cutoff`` and
    ``ksize``, a boolean for a switch); other parameters are checked by the command's parser
    (:mod:`kmerflow.pipeline.preflight`)."""
    default = DEFAULT_PARAMS.get(step, {}).get(name)
    if default is None:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    else:
        ok = isinstance(value, type(default)) and not isinstance(value, bool)
    if not ok:
        raise ConfigError(f"{where}: {value!r} is not a valid value "
                          f"(expected {type(default).__name__})")


def override_targets(column: str) -> tuple[str, ...]:
    """The ``step.param`` keys a sample-sheet column sets (a shorthand's, or its own)."""
    return tuple(".".join(_split_key(key)) for key in SHORTHANDS.get(column, (column,)))


def _split_key(key: str) -> tuple[str, str]:
    step, dot, param = key.partition(".")
    if not dot or step not in STEP_COMMANDS:
        raise ConfigError(f"{key!r}: expected STEP.PARAM with STEP one of {', '.join(STEP_ORDER)}"
                          f" (or a shorthand: {', '.join(SHORTHANDS)})")
    return step, param.replace("-", "_")


def parse_value(text: str) -> Any:
    """A parameter value given as text: TOML's literal if it is one (``20``, ``true``, ``1e8``),
    else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def load_config(path: str | os.PathLike[str] | None = None, steps: Iterable[str] | None = None,
                params: Iterable[str] = (), chunks: int | None = None,
                keep_intermediates: bool | None = None) -> PipelineConfig:
    """The configuration from an optional TOML file, then ``steps``, ``STEP.PARAM=VALUE``
    strings, ``chunks`` and ``keep_intermediates`` given as flags.

    The TOML file may hold ``steps = [...]``, ``chunks = N``, ``keep_intermediates = true`` and
    one table per step
    (``[normalize]`` ``cutoff = 20`` ...), which updates that step's defaults.
    """
    config = PipelineConfig()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"{path}: {e}") from None
        for key, value in data.items():
            if key == "steps":
                config.steps = _step_list(value, path)
            elif key == "chunks":
                config.chunks = _int(value, f"{path}: chunks")
            elif key == "keep_intermediates":
                if not isinstance(value, bool):
                    raise ConfigError(f"{path}: keep_intermediates: expected true or false")
                config.keep_intermediates = value
            elif isinstance(value, dict) and key in STEP_COMMANDS:
                for name, item in value.items():
                    name = name.replace("-", "_")
                    config.params[key][name] = item
                    config.sources[f"{key}.{name}"] = f"{path} [{key}] {name}"
            else:
                raise ConfigError(f"{path}: unknown key {key!r}")
    if steps is not None:
        config.steps = _step_list(list(steps), "--steps")
    if chunks is not None:
        config.chunks = chunks
    if keep_intermediates is not None:
        config.keep_intermediates = keep_intermediates
    for item in params:
        key, eq, text = item.partition("=")
        if not eq:
            raise ConfigError(f"--param {item!r}: expected STEP.PARAM=VALUE")
        step, param = _split_key(key.strip())
        config.params[step][param] = parse_value(text.strip())
        config.sources[f"{step}.{param}"] = f"--param {item}"
    config.validate()
    return config


def _step_list(value: Any, where: object) -> list[str]:
    if isinstance(value, str):
        value = [s.strip() for s in value.split(",") if s.strip()]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ConfigError(f"{where}: steps must be a list of step names")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: expected an integer")
    return value
