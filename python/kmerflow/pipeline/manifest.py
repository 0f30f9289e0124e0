"""The per-sample manifest: what each completed step wrote (size, SHA-256) and from what.

A step is reused on a rerun when its record's fingerprint (command, parameters, the checksums of
the files it read) matches and its kept outputs still have the recorded size and checksum. The
manifest is rewritten under a temporary name and renamed after each step.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from kmerflow.pipeline.plan import SampleDirs, StepPlan
from kmerflow.pipeline.tasks import file_record

_VERSION = 1


class Manifest:
    """The manifest of one sample (``OUTDIR/SAMPLE/SAMPLE.manifest.json``)."""

    def __init__(self, path: Path, sample: str, dirs: SampleDirs) -> None:
        self.path = path
        self.dirs = dirs
        self.data: dict[str, Any] = {"version": _VERSION, "sample": sample, "complete": False,
                                     "steps": {}}
        try:
            loaded = json.loads(path.read_text())
            if loaded.get("version") == _VERSION and loaded.get("sample") == sample:
                self.data = loaded
        except (OSError, ValueError):
            pass

    @property
    def steps(self) -> dict[str, Any]:
        """Step name → its record (fingerprint, outputs, summary, seconds)."""
        return self.data["steps"]

    def fingerprint(self, plan: StepPlan) -> str:
        """What the step's result depends on: command, arguments and the files it reads (their
        recorded checksums, or size and modification time for the sample's own reads)."""
        inputs: dict[str, str | None] = {}
        for path, producer in plan.inputs.items():
            if producer is None:
                st = path.stat()
                inputs[str(path)] = f"{st.st_size}:{st.st_mtime_ns}"
            else:
                record = self.steps.get(producer, {}).get("outputs", {})
                inputs[self._portable(path)] = next(
                    (r["sha256"] for r in record.values() if r["path"] == str(path)), None)
        text = json.dumps({"step": plan.name, "function": plan.function,
                           "positional": plan.positional, "options": plan.options,
                           "inputs": inputs}, sort_keys=True, default=self._portable)
        return hashlib.sha256(text.encode()).hexdigest()

    def _portable(self, value: Any) -> str:
        """A path with the output and scratch folders replaced by placeholders."""
        text = os.fspath(value)
        for placeholder, base in (("{scratch}", self.dirs.scratch), ("{out}", self.dirs.out)):
            if text.startswith(str(base) + os.sep):
                return placeholder + text[len(str(base)):]
        return text

    def reusable(self, plan: StepPlan) -> bool:
        """Whether the step's record matches and its kept outputs are intact."""
        record = self.steps.get(plan.name)
        if record is None or record.get("fingerprint") != self.fingerprint(plan):
            return False
        return all(self.intact(plan.name, path) for role, path in plan.outputs.items()
                   if role not in plan.scratch_roles)

    def intact(self, step: str, path: Path) -> bool:
        """Whether ``path``, an output of ``step``, has the size and checksum its record
        holds."""
        saved = next((r for r in self.steps.get(step, {}).get("outputs", {}).values()
                      if r["path"] == str(path)), None)
        return saved is not None and path.is_file() and path.stat().st_size == saved["size"] \
            and file_record(path)["sha256"] == saved["sha256"]

    def record(self, plan: StepPlan, result: dict[str, Any], seconds: float) -> None:
        """Store a completed step (its fingerprint is taken before its outputs are recorded,
        from the records of the steps it read) and save."""
        fingerprint = self.fingerprint(plan)
        self.steps[plan.name] = {"fingerprint": fingerprint, "outputs": result["outputs"],
                                 "summary": result.get("summary", {}), "seconds": seconds}
        self.save()

    def set_complete(self, complete: bool) -> None:
        """Mark the sample complete (or not) and save."""
        self.data["complete"] = complete
        self.save()

    def save(self) -> None:
        """Write the manifest under a temporary name and rename it into place."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True, default=str))
        os.replace(tmp, self.path)


def resume_index(plans: list[StepPlan], manifest: Manifest) -> int:
    """Index of the first step to run (``len(plans)`` when all are complete): the first step
    that is not reusable, moved back to the producer of any scratch file a later step needs
    that is gone or differs from its record (a truncated intermediate)."""
    names = [p.name for p in plans]
    start = next((i for i, p in enumerate(plans) if not manifest.reusable(p)), len(plans))
    moved = True
    while moved:
        moved = False
        for plan in plans[start:]:
            for path, producer in plan.inputs.items():
                if producer is not None and names.index(producer) < start \
                        and not manifest.intact(producer, path):
                    start, moved = names.index(producer), True
    return start
