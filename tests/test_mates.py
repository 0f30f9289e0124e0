"""R1/R2 files as input (``--mate``) and output (``-o OUT1 -O OUT2 [--orphans FILE]``).

The R1/R2 form of a command gives what its interleaved form gives, split afterwards by
split-paired-reads; the interleaved form stays khmer's, byte for byte. Pairing mismatches are
one error naming both files and the record, exit 1, and leave no output.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import kmerflow
from conftest import khmer
from conftest import kmerflow as run

NORMALIZE = ("normalize-by-median", "-q", "-k", "17", "-C", "5", "-x", "1e6", "-N", "2")
#: trim-low-abund's flags beside khmer's own (-T is its temporary directory there).
TRIM_FLAGS = ("-k", "17", "-C", "2", "-x", "1e6", "-N", "2")


def split(interleaved: Path, where: Path, orphans: bool = False) -> tuple[bytes, ...]:
    """The R1, R2 (and orphans) files split-paired-reads makes of ``interleaved``."""
    names = [where / "s1", where / "s2", where / "s0"]
    extra = ["-0", names[2]] if orphans else []
    run("split-paired-reads", "-q", "-1", names[0], "-2", names[1], *extra, interleaved)
    return tuple(p.read_bytes() for p in names[: 3 if orphans else 2])


def genome_pairs(path: Path, orphans: bool = False) -> Path:
    """Read pairs at about 40x over a random genome with 1 % substitution errors, so that
    trim-low-abund trims and drops reads in both passes; every 7th pair's second mate is noise,
    trimmed away whole. With ``orphans``, single reads sit between the pairs (broken-paired)."""
    rng = random.Random(15)
    genome = "".join(rng.choice("ACGT") for _ in range(3000))

    def read(start: int) -> str:
        bases = list(genome[start:start + 100])
        for i, base in enumerate(bases):
            if rng.random() < 0.01:
                bases[i] = rng.choice("ACGT".replace(base, ""))
        return "".join(bases)

    with path.open("w") as out:
        for i in range(600):
            start = rng.randrange(2800)
            noise = "".join(rng.choice("ACGT") for _ in range(100))
            out.write(f">p{i}/1\n{read(start)}\n>p{i}/2\n{noise if i % 7 == 0 else read(start + 100)}\n")
            if orphans and i % 5 == 0:
                out.write(f">s{i}\n{read(rng.randrange(2900))}\n")
    return path


@pytest.mark.parametrize("flags", [(), ("-V",)], ids=["default", "variable-coverage"])
def test_trim_r1_r2_equals_interleaved_split(tmp_path: Path, flags: tuple) -> None:
    """Pairs of which a mate is trimmed away (in either pass) leave an orphan; R1/R2 in and out
    give what the interleaved run gives (khmer's output), split afterwards."""
    interleaved = genome_pairs(tmp_path / "pairs.fa")
    r1, r2 = tmp_path / "r1.fa", tmp_path / "r2.fa"
    run("split-paired-reads", "-q", "-1", r1, "-2", r2, interleaved)
    trim = ("trim-low-abund", "-q", *TRIM_FLAGS, *flags, "-T", tmp_path)
    run(*trim, "-o", tmp_path / "il.fa", interleaved)
    khmer("trim-low-abund", *TRIM_FLAGS, *flags, "-T", tmp_path, "-o", tmp_path / "khmer.fa", interleaved)
    assert (tmp_path / "il.fa").read_bytes() == (tmp_path / "khmer.fa").read_bytes()
    run(*trim, r1, "--mate", r2, "-o", tmp_path / "il2.fa")
    assert (tmp_path / "il2.fa").read_bytes() == (tmp_path / "il.fa").read_bytes(), "R1/R2 in, one file out"
    outs = [tmp_path / n for n in ("o1.fa", "o2.fa", "o0.fa")]
    run(*trim, r1, "--mate", r2, "-o", outs[0], "-O", outs[1], "--orphans", outs[2])
    got = tuple(p.read_bytes() for p in outs)
    assert got == split(tmp_path / "il.fa", tmp_path, orphans=True)
    assert got[0].count(b">") > 300 and got[2].count(b">") > 50, "pairs and orphans both"
    proc = run(trim[0], *trim[2:], r1, "--mate", r2, "-o", tmp_path / "d1", "-O", tmp_path / "d2")
    assert f"{got[2].count(b'>')} kept reads without a kept mate were left out".encode() in proc.stderr
    assert ((tmp_path / "d1").read_bytes(), (tmp_path / "d2").read_bytes()) == got[:2]
    assert not list(tmp_path.glob("tmp*")), "temporary directory removed"


def test_trim_broken_paired_input_to_r1_r2(tmp_path: Path) -> None:
    """An interleaved input with orphans: R1/R2 outputs are its one-file output split; without -o,
    an input with a mate gets <R1>.abundtrim and <R2>.abundtrim."""
    mixed = genome_pairs(tmp_path / "mixed.fa", orphans=True)
    trim = ("trim-low-abund", "-q", *TRIM_FLAGS, "-T", tmp_path)
    run(*trim, "-o", tmp_path / "il.fa", mixed)
    outs = [tmp_path / n for n in ("o1.fa", "o2.fa", "o0.fa")]
    run(*trim, mixed, "-o", outs[0], "-O", outs[1], "--orphans", outs[2])
    assert tuple(p.read_bytes() for p in outs) == split(tmp_path / "il.fa", tmp_path, orphans=True)
    r1, r2 = tmp_path / "r1.fa", tmp_path / "r2.fa"
    run("split-paired-reads", "-q", "-1", r1, "-2", r2, "-0", tmp_path / "single.fa", mixed)
    run(*trim, r1, "--mate", r2, cwd=tmp_path)
    run(*trim, r1, "--mate", r2, "-o", outs[0], "-O", outs[1])
    assert (tmp_path / "r1.fa.abundtrim").read_bytes() == outs[0].read_bytes()
    assert (tmp_path / "r2.fa.abundtrim").read_bytes() == outs[1].read_bytes()
    proc = run(*trim, "--ignore-pairs", mixed, "-o", outs[0], "-O", outs[1], check=False)
    assert proc.returncode == 1 and b"R1/R2 outputs need pairs" in proc.stderr


def test_extract_paired_reads_r1_r2_output(tmp_path: Path, data: Path) -> None:
    mixed = data / "paired-mixed.fa"
    run("extract-paired-reads", "-q", "-p", tmp_path / "pe", "-s", tmp_path / "se", mixed)
    proc = run("extract-paired-reads", "-p", tmp_path / "p1", "-O", tmp_path / "p2", "-s", tmp_path / "s", mixed)
    got = ((tmp_path / "p1").read_bytes(), (tmp_path / "p2").read_bytes())
    assert got == split(tmp_path / "pe", tmp_path) and got[0]
    assert (tmp_path / "s").read_bytes() == (tmp_path / "se").read_bytes()
    assert f"wrote to: {tmp_path / 'p1'}, {tmp_path / 'p2'} and {tmp_path / 's'}".encode() in proc.stderr
    proc = run("extract-paired-reads", "-q", "-p", tmp_path / "x", "-O", tmp_path / "x", mixed, check=False)
    assert proc.returncode == 1 and b"same file" in proc.stderr


def test_sample_reads_randomly_r1_r2_output(mates, tmp_path: Path, data: Path) -> None:
    _, r1, r2 = mates
    sample = ("sample-reads-randomly", "-q", "-N", "20", "-R", "7")
    run(*sample, r1, "--mate", r2, "-o", tmp_path / "one.fa")
    run(*sample, r1, "--mate", r2, "-o", tmp_path / "s1", "-O", tmp_path / "s2")
    got = ((tmp_path / "s1").read_bytes(), (tmp_path / "s2").read_bytes())
    assert got == split(tmp_path / "one.fa", tmp_path) and got[0].count(b">") == got[1].count(b">") > 0
    mixed = data / "paired-mixed.fa"
    run(*sample, "-S", "2", "--force", mixed, "-o", tmp_path / "m.fa")
    run(*sample, "-S", "2", "--force", mixed, "-o", tmp_path / "m1", "-O", tmp_path / "m2",
        "--orphans", tmp_path / "m0")
    for i in range(2):
        got = tuple((tmp_path / f"m{n}.{i}").read_bytes() for n in (1, 2, 0))
        assert got == split(tmp_path / f"m.fa.{i}", tmp_path, orphans=True) and got[0] and got[2]
    proc = run(*sample, "--force_single", r1, "-o", tmp_path / "a", "-O", tmp_path / "b", check=False)
    assert proc.returncode == 1 and b"R1/R2 outputs need pairs" in proc.stderr


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
    ("trim-low-abund", "-q", *TRIM_FLAGS, "-T", "{out}", "-o", "{out}/o1", "-O", "{out}/o2"),
    ("extract-paired-reads", "-q", "-p", "{out}/pe", "-O", "{out}/pe2", "-s", "{out}/se"),
    ("sample-reads-randomly", "-q", "-N", "100", "-o", "{out}/sample", "-O", "{out}/sample2"),
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
    trimmed = kmerflow.trim_low_abund([r1], mate=[r2], output=tmp_path / "t1", mate_output=tmp_path / "t2",
                                      ksize=17, max_tablesize=1e6, n_tables=2, tempdir=tmp_path, quiet=True)
    pairs = trimmed.summary["mates"]["pairs"]
    assert pairs > 0 and (tmp_path / "t2").read_bytes().count(b">") == pairs


@pytest.mark.parametrize("spelling", ["same", "dotted", "link"])
def test_one_file_as_both_mates_is_refused_by_every_front_end(mates, tmp_path: Path, spelling: str) -> None:
    _, r1, _ = mates
    link = tmp_path / "link.fa"
    link.symlink_to(r1)
    r2 = {"same": r1, "dotted": r1.parent / "." / r1.name, "link": link}[spelling]
    for args in (["normalize", "-q", r1, r2, "-o", tmp_path / "o1", "-O", tmp_path / "o2"],
                 [*NORMALIZE, r1, "--mate", r2, "-o", tmp_path / "o1", "-O", tmp_path / "o2"]):
        proc = run(*args, check=False)
        assert proc.returncode == 1, proc.stderr
        assert f"R2 file {r2} is the same file as R1 file {r1}" in proc.stderr.decode(), proc.stderr
        assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    with pytest.raises(kmerflow.ParameterError, match="same file as R1 file"):
        kmerflow.open_reads(r1, mate=r2)
