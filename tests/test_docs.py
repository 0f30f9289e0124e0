"""The documentation's examples run: every ```sh / ```bash / ```console command and ```python
snippet of README.md and docs/*.md, page by page in a fresh directory holding a copy of
``examples/`` (the bundled reads the examples use), in the order the page shows them, so that a
block may use the files an earlier block of its page wrote.

A block that cannot run here (it installs packages, needs a remote scheduler, ...) is preceded by
``<!-- no-test: REASON -->`` on the line just before its fence; it is reported as skipped with
that reason. In ``console`` blocks, the lines starting with ``$ `` are the commands (the others
are their output). Each block must exit 0.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("sh", "bash", "console")
FENCE = re.compile(r"^```(\w*)\s*$")
NO_TEST = re.compile(r"^<!--\s*no-test:\s*(.*?)\s*-->\s*$")
#: The longest a block may run (a pipeline or a LocalCluster start included).
BLOCK_TIMEOUT_S = 180


@dataclass
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    skip: Optional[str]  # the no-test reason, if any

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order (every language), with their no-test reasons."""
    lines = page.read_text().split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = NO_TEST.match(before)
        found.append(Block(page, start + 1, lang, "\n".join(body) + "\n",
                           marker.group(1) if marker else None))
        i += 1
    return found


def runnable(block: Block) -> bool:
    return block.lang in SHELL or block.lang == "python"


def console_commands(code: str) -> str:
    """The commands of a console block: its ``$ `` lines with their ``\\`` continuations."""
    commands, continuing = [], False
    for line in code.split("\n"):
        if line.startswith("$ ") or continuing:
            commands.append(line[2:] if line.startswith("$ ") and not continuing else line)
            continuing = line.endswith("\\")
    return "\n".join(commands) + "\n"


def environment(bin_dir: Path) -> dict[str, str]:
    """The examples' environment: ``kmerflow`` runs this checkout's package (the one the tests
    import) and the tools of this Python's environment (``multiqc``) are on the PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env["PATH"]])
    package = str(Path(__import__("kmerflow").__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package, env.get("PYTHONPATH")]))
    env.pop("KMERFLOW_PROGRESS_MS", None)
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> None:
    """Runs one block in ``cwd``; fails the test with its location and output if it fails."""
    if block.lang == "python":
        argv = [sys.executable, "-c", block.code]
    else:
        code = console_commands(block.code) if block.lang == "console" else block.code
        argv = ["bash", "-euo", "pipefail", "-c", code]
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the {block.lang} block ran over {BLOCK_TIMEOUT_S} s")
    if proc.returncode != 0:
        pytest.fail(f"{block.where}: the {block.lang} block exited {proc.returncode}\n"
                    f"--- block ---\n{block.code}--- stderr (end) ---\n{proc.stderr[-3000:]}"
                    f"--- stdout (end) ---\n{proc.stdout[-1500:]}")


#: The pages with at least one example that runs here.
PAGES_WITH_EXAMPLES = [p for p in PAGES if any(runnable(b) and not b.skip for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    todo = [b for b in blocks(page) if runnable(b)]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kmerflow"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kmerflow "$@"\n')
    wrapper.chmod(0o755)
    env = environment(bin_dir)
    for block in todo:
        if block.skip is None:
            run_block(block, tmp_path, env)


def test_every_no_test_marker_gives_a_reason_and_precedes_a_block() -> None:
    for page in PAGES:
        lines = page.read_text().split("\n")
        for i, line in enumerate(lines):
            if "no-test" not in line or not line.startswith("<!--"):
                continue
            where = f"{page.relative_to(ROOT)}:{i + 1}"
            m = NO_TEST.match(line)
            assert m and m.group(1), f"{where}: a no-test marker needs a reason"
            following = next((x for x in lines[i + 1:] if x.strip()), "")
            assert FENCE.match(following), f"{where}: the marker is not followed by a code block"


#: The most examples the pages may mark ``no-test`` (installing, the test suite itself, remote
#: schedulers and clusters, khmer's own scripts, a fragment): a new one needs a good reason.
MAX_NOT_RUN = 10


def test_only_a_few_examples_are_not_run() -> None:
    shown = [b for page in PAGES for b in blocks(page) if runnable(b)]
    skipped = [b.where for b in shown if b.skip]
    assert len(shown) - len(skipped) >= 20, "the pages lost their examples"
    assert len(skipped) <= MAX_NOT_RUN, f"too many examples are not run: {skipped}"


def anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation but ``-`` dropped,
    spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_links_between_pages_resolve() -> None:
    link = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")
    for page in [*PAGES, ROOT / "CONTRIBUTING.md", ROOT / "ARCHITECTURE.md",
                 ROOT / "bench" / "results" / "README.md"]:
        for target, fragment in link.findall(page.read_text()):
            if "://" in target:
                continue
            where = f"{page.relative_to(ROOT)}: {target}#{fragment}"
            path = page.parent / target if target else page
            assert path.exists(), f"{where}: no such file"
            if fragment and path.suffix == ".md":
                headings = [anchor(line.lstrip("#")) for line in path.read_text().split("\n")
                            if line.startswith("#")]
                assert fragment in headings, f"{where}: no such heading"


def test_a_failing_example_is_reported_with_its_place(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n```sh\nkmerflow no-such-command\n```\n")
    (block,) = blocks(page)
    assert (block.line, block.lang, block.skip) == (3, "sh", None)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "kmerflow").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kmerflow "$@"\n')
    (bin_dir / "kmerflow").chmod(0o755)
    block.page = ROOT / "page.md"  # as a page of the repository would be named
    with pytest.raises(pytest.fail.Exception, match=r"page\.md:3: the sh block exited 2"):
        run_block(block, tmp_path, environment(bin_dir))
