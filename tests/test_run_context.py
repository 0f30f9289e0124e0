"""Two runs in one Python process are independent: two commands with different threads and
``--metrics`` files, run at once from two Python threads, give the same outputs and metrics as
when each runs alone."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

from kmerflow._core import run_command


def _reads(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    acgt = bytes.maketrans(bytes(range(256)), b"ACGT" * 64)
    with open(path, "wb") as out:
        for i in range(n):
            out.write(b"@r%d\n%s\n+\n%s\n" % (i, rng.randbytes(80).translate(acgt), b"I" * 80))


def _deterministic(metrics: Path) -> dict:
    """The parts of a metrics document that do not depend on timing."""
    doc = json.loads(metrics.read_text())
    return {
        "command": doc["command"],
        "threads": doc["threads"],
        "inputs": [(i["path"], i["bytes_compressed"], i["bytes_decompressed"]) for i in doc["inputs"]],
        "pipelines": [(p["label"], p["threads"], p["records"]) for p in doc["pipelines"]],
        "counters": doc["counters"],
        "totals": doc["totals"],
    }


def test_two_python_threads_run_commands_independently(tmp_path: Path):
    _reads(tmp_path / "a.fq", 20_000, 1)
    _reads(tmp_path / "b.fq", 15_000, 2)
    p = lambda name: str(tmp_path / name)  # noqa: E731
    jobs = {
        "normalize": ([
            "normalize-by-median", "-q", "-T", "1", "-k", "17", "-C", "3", "-M", "4e6", "-o", p("a.keep"),
            "--metrics", p("a.json"), p("a.fq")], [p("a.keep")], p("a.json")),
        "count": ([
            "load-into-counting", "-q", "-T", "3", "-k", "21", "-M", "40e6", "--metrics", p("b.json"),
            p("b.ct"), p("b.fq"), p("a.fq")], [p("b.ct"), p("b.ct.info")], p("b.json")),
    }

    def results() -> dict:
        return {name: ([Path(o).read_bytes() for o in outs], _deterministic(Path(m)))
                for name, (_, outs, m) in jobs.items()}

    for argv, _, _ in jobs.values():
        run_command(argv, lambda level, text: None)
    alone = results()
    assert alone["normalize"][1]["threads"] == 1 and alone["count"][1]["threads"] == 3
    for _, outs, metrics in jobs.values():
        for path in [*outs, metrics]:
            Path(path).unlink()

    errors: list[BaseException] = []

    def run(argv: list[str]) -> None:
        try:
            run_command(argv, lambda level, text: None)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(argv,)) for argv, _, _ in jobs.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results() == alone
