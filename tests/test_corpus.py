"""The malformed-input corpus: every case of every ``tests/corpus/cases/<family>.json``.

A family file is a JSON list of cases; each case sets up a fresh directory (``setup``), runs the
installed ``kmerflow`` there with ``args`` (and ``stdin``), and states what a careful user expects:
the exit status, for a failure ONE error line (``kmerflow CMD: error: ...``, or clap's
``error: ...`` for usage errors) matching ``message`` and naming ``names_file`` (and a record or
line number when ``record`` is true), and what became of each path (``outputs``). For every case
the runner also checks that stderr holds no traceback or panic, that the run ends within
``timeout`` seconds (else it is a hang), that no file appears that the case does not expect
(no temporary or partial file left behind, in the case directory or in ``$TMPDIR``), and that
every file set up before the run and not named in ``outputs`` is unchanged.

Setup actions (paths relative to the case directory, sources relative to tests/corpus/files/):
``copy SRC DST``, ``write DST TEXT``, ``write_hex DST HEX``, ``gen FUNCTION DST [ARGS...]``
(a generator of make_corpus.py), ``fifo PATH`` (the runner drains it while kmerflow runs),
``fifo_feed PATH TEXT`` (a FIFO the runner writes TEXT into, for inputs), ``fifo_feed_file PATH
SRC`` (the same with the bytes of SRC, a file set up before it), ``symlink TARGET LINK``,
``hardlink TARGET LINK``,
``chmod PATH OCTAL``, ``mkdir PATH``. In ``outputs`` the name ``<stdout>`` stands for kmerflow's
standard output, and besides ``{"equals": TEXT}`` an output may be given as ``{"sha256": HEX}``.

For a case expected to succeed (exit 0), ``message`` is searched in any stderr line (a warning).
``memory_limit_mb`` caps the run's address space (``ulimit -v``), so that a case feeding a
decompression bomb to code without a bound fails instead of taking the machine's memory;
``cgroup_memory_mb`` runs it in a new cgroup with that memory limit (tests/cgroups.py; the case
is skipped, saying why, where a cgroup cannot be made).
``"xfail": "reason"`` marks a case whose correct expectation today's code does not meet: strict,
so the case fails loudly once the code is fixed and the key must be removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
import make_corpus  # noqa: E402  (the generators live beside the corpus files)
from cgroups import memory_cgroup  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES = CORPUS / "cases"
FILES = CORPUS / "files"

KNOWN_KEYS = {"name", "why", "setup", "args", "stdin", "exit", "message", "names_file", "record",
              "outputs", "timeout", "memory_limit_mb", "cgroup_memory_mb", "xfail"}
OUTPUT_STATES = {"absent", "unchanged", "empty", "exists"}
#: An error line: ``kmerflow CMD: error: ...`` from a command, ``error: ...`` from the parser of flags.
ERROR_LINE = re.compile(r"^(kmerflow [\w-]+: )?error: ")
#: Words that only a crash prints.
CRASH_TEXT = re.compile(r"Traceback \(most recent call last\)|panicked at|RUST_BACKTRACE|stack backtrace"
                        r"|Segmentation fault|core dumped")
#: A record or line number in an error line.
RECORD_TEXT = re.compile(r"\b(record|line)s? \d+")


def _load_cases() -> list:
    params = []
    for family_file in sorted(CASES.glob("*.json")):
        family = family_file.stem
        cases = json.loads(family_file.read_text())
        assert isinstance(cases, list), f"{family_file}: not a JSON list"
        seen = set()
        for case in cases:
            unknown = set(case) - KNOWN_KEYS
            assert not unknown, f"{family_file}: case {case.get('name')}: unknown keys {sorted(unknown)}"
            assert case["name"] not in seen, f"{family_file}: duplicate case {case['name']}"
            seen.add(case["name"])
            marks = []
            if "xfail" in case:
                marks.append(pytest.mark.xfail(reason=case["xfail"], strict=True))
            params.append(pytest.param(case, id=f"{family}/{case['name']}", marks=marks))
    return params


def _kmerflow_command() -> list[str]:
    exe = shutil.which("kmerflow")
    return [exe] if exe else [sys.executable, "-m", "kmerflow"]


@dataclass
class FifoPump:
    """A thread on one FIFO: drains it (an output of kmerflow) or feeds it (an input)."""

    path: Path
    feed: bytes | None = None
    data: bytearray = field(default_factory=bytearray)
    done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._feed if self.feed is not None else self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        # Non-blocking open: it succeeds with no writer, so the thread never hangs on a FIFO that
        # kmerflow never opens; reads see EOF until a writer comes, so read until told to stop.
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    self.data += chunk
                elif self.done.is_set():
                    return
                else:
                    time.sleep(0.01)
        finally:
            os.close(fd)

    def _feed(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY)  # blocks until a reader opens it
        except OSError:
            return
        try:
            os.write(fd, self.feed)
        except OSError as e:
            if e.errno != errno.EPIPE:
                raise
        finally:
            os.close(fd)

    def stop(self) -> None:
        self.done.set()
        if self.feed is not None and self.thread.is_alive():
            # kmerflow never opened the input: open the read end so that the writer returns.
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
                self.thread.join(2)
                os.close(fd)
            except OSError:
                pass
        self.thread.join(5)


def _setup(case: dict, root: Path) -> list[FifoPump]:
    pumps = []
    for action, *params in case.get("setup", []):
        if action == "copy":
            src, dst = params
            shutil.copyfile(FILES / src, root / dst)
        elif action == "write":
            dst, text = params
            (root / dst).write_bytes(text.encode())
        elif action == "write_hex":
            dst, hexdata = params
            (root / dst).write_bytes(bytes.fromhex(hexdata))
        elif action == "gen":
            function, dst, *extra = params
            getattr(make_corpus, function)(root / dst, *extra)
        elif action == "fifo":
            (path,) = params
            os.mkfifo(root / path)
            pumps.append(FifoPump(root / path))
        elif action == "fifo_feed":
            path, text = params
            os.mkfifo(root / path)
            pumps.append(FifoPump(root / path, feed=text.encode()))
        elif action == "fifo_feed_file":
            path, src = params
            os.mkfifo(root / path)
            pumps.append(FifoPump(root / path, feed=(root / src).read_bytes()))
        elif action == "symlink":
            target, link = params
            os.symlink(target, root / link)
        elif action == "hardlink":
            target, link = params
            os.link(root / target, root / link)
        elif action == "chmod":
            path, mode = params
            os.chmod(root / path, int(mode, 8), follow_symlinks=False)
        elif action == "mkdir":
            (path,) = params
            (root / path).mkdir(parents=True)
        else:
            raise AssertionError(f"unknown setup action {action!r}")
    return pumps


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ROOT with its kind, mode and (for regular files) content digest."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                state[rel] = ("file", stat.S_IMODE(st.st_mode), digest)
            elif stat.S_ISLNK(st.st_mode):
                state[rel] = ("symlink", os.readlink(path))
            else:
                state[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return state


def _check_stderr(case: dict, returncode: int, stderr: str) -> None:
    crash = CRASH_TEXT.search(stderr)
    assert not crash, f"crash text {crash.group(0)!r} in stderr"
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if ERROR_LINE.match(line)]
    if returncode == 0:
        assert not errors, f"error line from a successful run: {errors}"
        if "message" in case:
            assert any(re.search(case["message"], line) for line in lines), \
                f"no stderr line matches {case['message']!r}"
        return
    assert len(errors) == 1, f"expected exactly one error line, found {len(errors)}"
    line = errors[0]
    if returncode != 2:  # clap follows its error line with usage text; commands end with theirs
        assert line == lines[-1], f"the error line is not the last line of stderr (last: {lines[-1]!r})"
    if "message" in case:
        assert re.search(case["message"], line), f"error line does not match {case['message']!r}: {line!r}"
    if "names_file" in case:
        assert case["names_file"] in line, f"error line does not name {case['names_file']!r}: {line!r}"
    if case.get("record"):
        assert RECORD_TEXT.search(line), f"error line names no record or line number: {line!r}"


STDOUT = "<stdout>"


def _check_outputs(case: dict, root: Path, before: dict, after: dict, pumps: list[FifoPump], stdout: bytes) -> None:
    outputs = dict(case.get("outputs", {}))
    drained = {str(p.path.relative_to(root)): bytes(p.data) for p in pumps if p.feed is None}
    if STDOUT in outputs:
        _check_stdout(outputs.pop(STDOUT), stdout)
    for path, expected in outputs.items():
        full = root / path
        if expected == "absent":
            assert not os.path.lexists(full), f"{path} exists, expected absent"
        elif expected == "unchanged":
            assert after.get(path) == before.get(path), f"{path} changed: {before.get(path)} -> {after.get(path)}"
        elif expected in ("exists", "empty") or isinstance(expected, dict):
            assert os.path.lexists(full), f"{path} is missing"
            content = drained[path] if path in drained else (full.read_bytes() if full.is_file() else None)
            if expected == "empty":
                assert content == b"", f"{path} is not empty ({len(content or b'')} bytes)"
            elif isinstance(expected, dict):
                _check_content(path, expected, content)
        else:
            raise AssertionError(f"{path}: unknown expectation {expected!r}")
    allowed_new = {p for p, e in outputs.items() if e != "absent" and e != "unchanged"}
    new = sorted(p for p in after if p not in before and p not in allowed_new
                 and not any(p.startswith(a + "/") for a in allowed_new))
    assert not new, f"files left behind: {new}"
    changed = sorted(p for p in before if p not in outputs and after.get(p) != before[p])
    assert not changed, f"input files changed or removed: {changed}"


def _check_content(path: str, expected: dict, content: bytes | None) -> None:
    """``{"equals": TEXT}`` or ``{"sha256": HEX}`` (for outputs too long to spell out)."""
    assert content is not None, f"{path} is not a regular file or drained FIFO"
    if set(expected) == {"equals"}:
        assert content.decode(errors="replace") == expected["equals"], f"{path} differs: {content[:400]!r}"
    elif set(expected) == {"sha256"}:
        digest = hashlib.sha256(content).hexdigest()
        assert digest == expected["sha256"], \
            f"{path} differs ({len(content)} bytes, sha256 {digest}): {content[:200]!r}"
    else:
        raise AssertionError(f"{path}: unknown expectation {expected}")


def _check_stdout(expected: str | dict, stdout: bytes) -> None:
    if expected == "empty":
        assert stdout == b"", f"stdout is not empty ({len(stdout)} bytes)"
    elif expected == "exists":
        assert stdout, "stdout is empty"
    elif isinstance(expected, dict):
        _check_content(STDOUT, expected, stdout)
    else:
        raise AssertionError(f"{STDOUT}: unknown expectation {expected!r}")


@pytest.mark.parametrize("case", _load_cases())
def test_case(case: dict, tmp_path: Path) -> None:
    in_cgroup = contextlib.ExitStack()
    move_in = None
    if "cgroup_memory_mb" in case:
        move_in = in_cgroup.enter_context(memory_cgroup(case["cgroup_memory_mb"] << 20))
    root = tmp_path / "case"
    scratch = tmp_path / "tmpdir"  # $TMPDIR of the run: must be empty afterwards
    root.mkdir()
    scratch.mkdir()
    pumps = _setup(case, root)
    before = _snapshot(root)
    for pump in pumps:
        pump.start()
    env = dict(os.environ, TMPDIR=str(scratch), RUST_BACKTRACE="0")
    stdin = case.get("stdin")
    limit = case.get("memory_limit_mb")

    def before_exec() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit << 20, limit << 20))
        if move_in:
            move_in()

    with in_cgroup:
        proc = subprocess.Popen([*_kmerflow_command(), *case["args"]], cwd=root, env=env,
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                preexec_fn=before_exec if limit or move_in else None)
        timeout = case.get("timeout", 30)
        try:
            out, err = proc.communicate(stdin.encode() if stdin is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"hang: kmerflow {' '.join(case['args'])} ran past {timeout} s")
        finally:
            for pump in pumps:
                pump.stop()
    stderr = err.decode(errors="replace")
    assert proc.returncode == case["exit"], \
        f"exit {proc.returncode}, expected {case['exit']}; stderr:\n{stderr}"
    _check_stderr(case, proc.returncode, stderr)
    _check_outputs(case, root, before, _snapshot(root), pumps, out)
    leftovers = sorted(os.listdir(scratch))
    assert not leftovers, f"left in $TMPDIR: {leftovers}"
