"""R1/R2 files as input (``--mate``) and output (``-o OUT1 -O OUT2 [--orphans FILE]``).

The R1/R2 form of a command gives what its interleaved form gives, split afterwards by
split-paired-reads; the interleaved form stays khmer's, byte for byte. Pairing mismatches are
one error naming both files and the record, exit 1, and leave no output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kmerflow
from conftest import khmer
from conftest import kmerflow as run

NORMALIZE = ("normalize-by-median", "-q", "-k", "17", "-C", "5", "-x", "1e6", "-N", "2")


def split(interleaved: Path, where: Path, orphans: bool = False) -> tuple[bytes, ...]:
    """The R1, R2 (and orphans) files split-paired-reads makes of ``interleaved``."""
    names = [where / "s1", where / "s2", where / "s0"]
    extra = ["-0", names[2]] if orphans else []
    run("split-paired-reads", "-q", "-1", names[0], "-2", names[1], *extra, interleaved)
    return tuple(p.read_bytes() for p in names[: 3 if orphans else 2])


@pytest.fixture
def mates(tmp_path: Path, data: Path) -> tuple[Path, Path, Path]:
    """khmer's paired test reads: the interleaved file and its R1 and R2 files."""
    interleaved = data / "test-abund-read-paired.fa"
    r1, r2 = tmp_path / "r1.fa", tmp_path / "r2.fa"
    run("split-paired-reads", "-q", "-1", r1, "-2", r2, interleaved)
    return interleaved, r1, r2


def test_normalize_r1_r2_equals_interleaved_split(mates, tmp_path: Path) -> None:
    interleaved, r1, r2 = mates
    run(*NORMALIZE, "-p", "-o", tmp_path / "il.fa", interleaved)
    khmer("normalize-by-median", "-q", "-k", "17", "-C", "5", "-x", "1e6", "-N", "2", "-p",
          "-o", tmp_path / "khmer.fa", interleaved)
    assert (tmp_path / "il.fa").read_bytes() == (tmp_path / "khmer.fa").read_bytes()
    run(*NORMALIZE, r1, "--mate", r2, "-o", tmp_path / "il2.fa")
    assert (tmp_path / "il2.fa").read_bytes() == (tmp_path / "il.fa").read_bytes(), \
        "R1/R2 in, one file out: khmer's -p output"
    run(*NORMALIZE, r1, "--mate", r2, "-o", tmp_path / "o1.fa", "-O", tmp_path / "o2.fa")
    out = ((tmp_path / "o1.fa").read_bytes(), (tmp_path / "o2.fa").read_bytes())
    assert out == split(tmp_path / "il.fa", tmp_path) and out[0].count(b">") > 0
    run(*NORMALIZE, "-p", interleaved, "-o", tmp_path / "i1.fa", "-O", tmp_path / "i2.fa")
    assert ((tmp_path / "i1.fa").read_bytes(), (tmp_path / "i2.fa").read_bytes()) == out


def test_normalize_default_names_for_r1_r2(mates, tmp_path: Path) -> None:
    _, r1, r2 = mates
    run(*NORMALIZE, r1, "--mate", r2, cwd=tmp_path)
    run(*NORMALIZE, r1, "--mate", r2, "-o", tmp_path / "a.fa", "-O", tmp_path / "b.fa")
    assert (tmp_path / "r1.fa.keep").read_bytes() == (tmp_path / "a.fa").read_bytes()
    assert (tmp_path / "r2.fa.keep").read_bytes() == (tmp_path / "b.fa").read_bytes()


def test_orphans_go_to_their_own_file_or_are_counted(tmp_path: Path, data: Path) -> None:
    """Broken-paired input: kept orphans go to --orphans, as split-paired-reads -0 would put them."""
    mixed = data / "paired-mixed.fa"
    run(*NORMALIZE, "-o", tmp_path / "il.fa", mixed)
    run(*NORMALIZE, mixed, "-o", tmp_path / "o1", "-O", tmp_path / "o2", "--orphans", tmp_path / "o0")
    out = tuple((tmp_path / n).read_bytes() for n in ("o1", "o2", "o0"))
    assert out == split(tmp_path / "il.fa", tmp_path, orphans=True) and out[2]
    proc = run(NORMALIZE[0], *NORMALIZE[2:], mixed, "-o", tmp_path / "d1", "-O", tmp_path / "d2")
    n_orphans = out[2].count(b">")
    assert f"{n_orphans} kept reads without a kept mate were left out".encode() in proc.stderr
    assert (tmp_path / "d1").read_bytes() == out[0]


def _bad_mates(tmp_path: Path, r1: Path, r2: Path) -> dict[str, Path]:
    renamed = tmp_path / "renamed.fa"
    text = r2.read_text().splitlines(keepends=True)
    text[4] = ">other/2\n"
    renamed.write_text("".join(text))
    short = tmp_path / "short.fa"
    short.write_text("".join(r2.read_text().splitlines(keepends=True)[:4]))
    return {"names": renamed, "counts": short}


@pytest.mark.parametrize("kind, where", [("names", "record 3 (line 5)"), ("counts", "record 3 (line 5)")])
@pytest.mark.parametrize("command", [
    NORMALIZE,
    ("extract-paired-reads", "-q", "-p", "{out}/pe", "-s", "{out}/se"),
    ("sample-reads-randomly", "-q", "-N", "100", "-o", "{out}/sample"),
])
def test_mismatched_mates_are_one_error_and_leave_nothing(mates, tmp_path: Path, kind: str,
                                                         where: str, command: tuple) -> None:
    _, r1, r2 = mates
    bad = _bad_mates(tmp_path, r1, r2)[kind]
    out = tmp_path / "out"
    out.mkdir()
    args = [a.format(out=out) for a in command]
    if command is NORMALIZE:
        args += ["-o", out / "o1", "-O", out / "o2"]
    proc = run(*args, r1, "--mate", bad, check=False)
    message = proc.stderr.decode().strip().splitlines()[-1]
    assert proc.returncode == 1, message
    assert message.count("error:") == 1 and str(r1) in message and str(bad) in message, message
    assert where in message, message
    assert ("not mates by name" if kind == "names" else "no mate") in message, message
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("outputs", [
    ("-o", "{r1}", "-O", "{o}"), ("-o", "{o}", "-O", "{r2}"), ("-o", "{o}", "-O", "{o}"),
    ("-o", "{o}", "-O", "{o2}", "--orphans", "{r2}"),
])
def test_outputs_may_not_be_inputs_or_each_other(mates, tmp_path: Path, outputs: tuple) -> None:
    _, r1, r2 = mates
    before = {p: p.read_bytes() for p in (r1, r2)}
    names = {"r1": r1, "r2": r2, "o": tmp_path / "o", "o2": tmp_path / "o2"}
    args = [a.format(**names) for a in outputs]
    proc = run(*NORMALIZE, r1, "--mate", r2, *args, check=False)
    assert proc.returncode == 1 and b"same file" in proc.stderr, proc.stderr
    assert {p: p.read_bytes() for p in (r1, r2)} == before
    assert not (tmp_path / "o").exists() and not (tmp_path / "o2").exists()


def test_usage_of_the_mate_flags(mates, tmp_path: Path) -> None:
    _, r1, r2 = mates
    assert run(*NORMALIZE, r1, "-O", tmp_path / "x", check=False).returncode == 2, "-O needs -o"
    assert run(*NORMALIZE, r1, "--mate", r2, "--mate", r2, check=False).returncode == 1
    proc = run(*NORMALIZE, "--force_single", r1, "-o", tmp_path / "a", "-O", tmp_path / "b", check=False)
    assert proc.returncode == 1 and b"R1/R2 outputs need pairs" in proc.stderr


def test_python_keywords(mates, tmp_path: Path) -> None:
    _, r1, r2 = mates
    result = kmerflow.normalize_by_median([r1], mate=[r2], output=tmp_path / "a", mate_output=tmp_path / "b",
                                          ksize=17, cutoff=5, max_tablesize=1e6, n_tables=2, quiet=True)
    assert result.summary["mates"]["pairs"] * 2 == result.summary["kept"] > 0
    assert (tmp_path / "a").read_bytes().count(b">") == result.summary["mates"]["pairs"]
