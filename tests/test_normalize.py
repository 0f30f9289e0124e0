"""kmerflow normalize: the protocol in one command equals the chain of khmer 3.0 commands it
replaces (--layout khmer); the default blocked layout; R1/R2 in and out equal the interleaved run;
histograms; no intermediate files; errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import kmerflow
from conftest import khmer
from conftest import kmerflow as run_kmerflow

#: Fixed table sizes, so that khmer's commands and ours count into identical tables.
TABLE = ["-k", "20", "-N", "4", "-x", "2e5"]
#: khmer's tables (kmerflow normalize's default is the blocked layout).
KHMER_LAYOUT = ["--layout", "khmer"]


def write_pairs(directory: Path, seed: int = 7, genome_len: int = 4000, pairs: int = 1500,
                error_rate: float = 0.01) -> tuple[Path, Path, Path]:
    """Simulated pairs over a random genome (100 bp reads, 300 bp fragments, errors and a few
    N), as interleaved FASTQ and as R1/R2 files. Returns (interleaved, r1, r2)."""
    rng = random.Random(seed)
    genome = "".join(rng.choice("ACGT") for _ in range(genome_len))
    comp = str.maketrans("ACGT", "TGCA")

    def read(start: int, reverse: bool) -> str:
        seq = genome[start:start + 100]
        if reverse:
            seq = seq.translate(comp)[::-1]
        bases = [rng.choice("ACGT".replace(b, "")) if rng.random() < error_rate else b for b in seq]
        if rng.random() < 0.02:
            bases[rng.randrange(100)] = "N"
        return "".join(bases)

    il, r1, r2 = (directory / n for n in ("il.fq", "r1.fq", "r2.fq"))
    with il.open("w") as fi, r1.open("w") as f1, r2.open("w") as f2:
        for i in range(pairs):
            start = rng.randrange(genome_len - 300)
            mates = (read(start, False), read(start + 200, True))
            for n, (seq, out) in enumerate(zip(mates, (f1, f2), strict=True), 1):
                record = f"@p{i}/{n}\n{seq}\n+\n{'I' * len(seq)}\n"
                fi.write(record)
                out.write(record)
    return il, r1, r2


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> tuple[Path, Path, Path]:
    return write_pairs(tmp_path_factory.mktemp("reads"))


def khmer_chain(tmp: Path, il: Path, target: int, first: int, min_depth: int, passes: int) -> Path:
    """khmer's protocol by hand: normalize-by-median, filter-abund -V, (extract-paired-reads,
    normalize-by-median -p PE -u SE)."""
    c1 = first if passes == 2 else target
    khmer("normalize-by-median", "-p", *TABLE, "-C", c1, "-s", tmp / "t1.ct", "-o", tmp / "n1.fq", il)
    khmer("filter-abund", "-C", min_depth, "-V", "-Z", c1, "-o", tmp / "f.fq", tmp / "t1.ct", tmp / "n1.fq")
    if passes == 1:
        return tmp / "f.fq"
    khmer("extract-paired-reads", "-p", tmp / "f.pe", "-s", tmp / "f.se", tmp / "f.fq")
    singles = ["-u", tmp / "f.se"] if (tmp / "f.se").stat().st_size else []
    khmer("normalize-by-median", "-p", *TABLE, "-C", target, *singles, "-o", tmp / "out.fq", tmp / "f.pe")
    return tmp / "out.fq"


def records(path: Path) -> list[tuple[str, ...]]:
    lines = path.read_text().splitlines()
    return [tuple(lines[i:i + 4]) for i in range(0, len(lines), 4)]


@pytest.mark.parametrize("target,first,min_depth,passes", [
    (5, 20, 2, 2),   # khmer's protocol: -C 20, filter-abund -V, -C 5
    (4, 10, 3, 2),
    (10, 10, 2, 1),
])
def test_equals_the_khmer_chain(tmp_path, reads, target, first, min_depth, passes):
    il = reads[0]
    (tmp_path / "khmer").mkdir()
    expected = khmer_chain(tmp_path / "khmer", il, target, first, min_depth, passes)
    report = tmp_path / "report.json"
    flags = ["--first-target", first] if first != 4 * target else []
    run_kmerflow("normalize", il, "-o", tmp_path / "out.fq", *TABLE, *KHMER_LAYOUT, "--target", target, *flags,
                 "--min-depth", min_depth, "--passes", passes, "--report-json", report)
    out = (tmp_path / "out.fq").read_bytes()
    assert out == expected.read_bytes()
    summary = json.loads(report.read_text())["summary"]
    assert summary["reads_in"] == 3000 and summary["pairs_in"] == 1500
    # The data exercise every step: the first pass drops reads, the trimming cuts some.
    assert summary["first_pass"]["kept"] < summary["reads_in"]
    assert summary["trim"]["truncated"] > 0 and summary["trim"]["removed"] > 0
    assert summary["reads_out"] == out.count(b"\n") // 4
    if passes == 2:
        assert summary["second_pass"]["kept"] == summary["reads_out"] < summary["first_pass"]["kept"]


@pytest.mark.parametrize("layout", ["blocked", "khmer"])
def test_r1_r2_equal_the_interleaved_run_split(tmp_path, reads, layout):
    il, r1, r2 = reads
    run_kmerflow("normalize", il, "-o", tmp_path / "il.fq", "--target", "5", "--layout", layout)
    run_kmerflow("normalize", r1, r2, "-o", tmp_path / "o1.fq", "-O", tmp_path / "o2.fq",
                 "--orphans", tmp_path / "o0.fq", "--target", "5", "--layout", layout)
    interleaved = records(tmp_path / "il.fq")
    pairs, singles = [], []
    i = 0
    while i < len(interleaved):
        a = interleaved[i]
        b = interleaved[i + 1] if i + 1 < len(interleaved) else None
        if b is not None and a[0][:-2] == b[0][:-2]:
            pairs.append((a, b))
            i += 2
        else:
            singles.append(a)
            i += 1
    assert pairs and singles
    assert records(tmp_path / "o1.fq") == [a for a, _ in pairs]
    assert records(tmp_path / "o2.fq") == [b for _, b in pairs]
    assert records(tmp_path / "o0.fq") == singles
    # Without --orphans, the orphans are counted, not written.
    proc = run_kmerflow("normalize", r1, r2, "-o", tmp_path / "p1.fq", "-O", tmp_path / "p2.fq",
                        "--target", "5", "--layout", layout, "--report-json", tmp_path / "r.json")
    assert (tmp_path / "p1.fq").read_bytes() == (tmp_path / "o1.fq").read_bytes()
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["orphans_dropped"] == len(singles)
    assert b"--orphans" in proc.stderr


def test_histograms_are_abundance_dist_singles(tmp_path, reads):
    il = reads[0]
    run_kmerflow("normalize", il, "-o", tmp_path / "out.fq", *TABLE, *KHMER_LAYOUT, "--target", "5",
                 "--hist", tmp_path / "in.csv", "--hist-out", tmp_path / "out.csv",
                 "--report-json", tmp_path / "r.json")
    for reads_file, ours in ((il, "in.csv"), (tmp_path / "out.fq", "out.csv")):
        theirs = tmp_path / f"khmer-{ours}"
        khmer("abundance-dist-single", *TABLE, "-z", reads_file, theirs)
        assert (tmp_path / ours).read_bytes() == theirs.read_bytes(), ours
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    before, after = summary["histograms"]["input"], summary["histograms"]["output"]
    # Normalization removes most of the deep k-mers; the error trimming most of the count-1 ones.
    assert sum(before) > sum(after) > 0 and before[1] > 2 * after[1]


def test_blocked_histograms_have_khmers_shape(tmp_path, reads):
    """The default layout's histograms count every distinct k-mer once, at about khmer's counts."""
    il = reads[0]
    hists = {}
    for layout in ("blocked", "khmer"):
        report = tmp_path / f"{layout}.json"
        run_kmerflow("normalize", il, "-o", tmp_path / f"{layout}.fq", *TABLE, "--layout", layout, "--target", "5",
                     "--hist", tmp_path / f"{layout}-in.csv", "--hist-out", tmp_path / f"{layout}-out.csv",
                     "--report-json", report)
        hists[layout] = json.loads(report.read_text())["summary"]["histograms"]
    blocked, khmers = hists["blocked"], hists["khmer"]
    for name in ("input", "output"):
        # Distinct k-mers (at the tracking filter's accuracy) and the error k-mers seen once.
        assert sum(blocked[name]) == pytest.approx(sum(khmers[name]), rel=0.01), name
        assert blocked[name][1] == pytest.approx(khmers[name][1], rel=0.02), name
        assert len(blocked[name]) == pytest.approx(len(khmers[name]), abs=3), name
    before, after = blocked["input"], blocked["output"]
    assert sum(before) > sum(after) > 0 and before[1] > 2 * after[1]
    lines = (tmp_path / "blocked-in.csv").read_text().splitlines()
    assert lines[0] == "abundance,count,cumulative,cumulative_fraction"
    assert [int(line.split(",")[1]) for line in lines[1:]] == [n for n in before if n]


def without_seconds(value):
    """A report's summary without its timings."""
    if isinstance(value, dict):
        return {k: without_seconds(v) for k, v in value.items() if not k.endswith("seconds")}
    return value


@pytest.mark.parametrize("layout", ["blocked", "khmer"])
def test_one_thread_and_two_give_the_same_run(tmp_path, reads, layout):
    """With two threads the input histogram is counted beside the first pass: nothing changes."""
    _, r1, r2 = reads
    runs = {}
    for threads in ("1", "2"):
        out = tmp_path / threads
        out.mkdir()
        run_kmerflow("normalize", "-T", threads, r1, r2, "-o", out / "o1.fq", "-O", out / "o2.fq", "--target", "5",
                     "--layout", layout, "--hist", out / "in.csv", "--hist-out", out / "out.csv",
                     "--report-json", out / "r.json")
        files = [(out / name).read_bytes() for name in ("o1.fq", "o2.fq", "in.csv", "out.csv")]
        runs[threads] = files, without_seconds(json.loads((out / "r.json").read_text())["summary"])
    assert runs["1"] == runs["2"]
    assert runs["2"][1]["histograms"]["input"] and runs["2"][1]["pairs_out"] > 0


def test_an_error_beside_the_first_pass_is_one_error_and_no_output(tmp_path, reads):
    _, r1, r2 = reads
    bad = tmp_path / "bad.fq"
    bad.write_text(r2.read_text() + "@x/2\nACGT\n+\n")
    proc = run_kmerflow("normalize", "-T", "2", r1, bad, "-o", tmp_path / "o1.fq", "-O", tmp_path / "o2.fq",
                        "--hist", tmp_path / "in.csv", check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert err.count(str(bad)) == 1 and "rror" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.fq"]


def test_the_default_layout_is_blocked(tmp_path, reads):
    _, r1, r2 = reads
    outputs = {}
    for name, flags in (("default", []), ("blocked", ["--layout", "blocked"]), ("khmer", KHMER_LAYOUT)):
        report = tmp_path / f"{name}.json"
        run_kmerflow("normalize", r1, r2, "-o", tmp_path / f"{name}-1.fq", "-O", tmp_path / f"{name}-2.fq",
                     "--target", "5", "--hist", tmp_path / f"{name}.csv", "--report-json", report, *flags)
        summary = json.loads(report.read_text())["summary"]
        layouts = {summary["first_pass"]["table"]["layout"], summary["second_pass"]["table"]["layout"]}
        assert layouts == {"khmer" if name == "khmer" else "blocked"}
        outputs[name] = [(tmp_path / f"{name}{end}").read_bytes() for end in ("-1.fq", "-2.fq", ".csv")]
    assert outputs["default"] == outputs["blocked"]
    # Same steps, other counts: the outputs are close but not the same.
    assert outputs["blocked"] != outputs["khmer"]
    sizes = [len(records(tmp_path / f"{name}-1.fq")) for name in ("blocked", "khmer")]
    assert sizes[0] == pytest.approx(sizes[1], rel=0.05)


def test_nothing_but_the_outputs_is_written(tmp_path, reads, monkeypatch):
    _, r1, r2 = reads
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    out = tmp_path / "out"
    out.mkdir()
    run_kmerflow("normalize", r1, r2, "-o", out / "a.fq.gz", "-O", out / "b.fq.gz", cwd=out)
    assert sorted(p.name for p in out.iterdir()) == ["a.fq.gz", "b.fq.gz"]
    assert list(scratch.iterdir()) == []
    run_kmerflow("normalize", r1, r2, "-o", out / "a.fq", "--save-table", out / "t.ct", cwd=out)
    assert sorted(p.name for p in out.iterdir()) == ["a.fq", "a.fq.gz", "b.fq.gz", "t.ct"]


@pytest.mark.parametrize("layout", ["blocked", "khmer"])
def test_tables_are_sized_automatically(tmp_path, reads, layout):
    run_kmerflow("normalize", reads[0], "-o", tmp_path / "out.fq", "--layout", layout,
                 "--report-json", tmp_path / "r.json")
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    first, second = summary["first_pass"]["table"], summary["second_pass"]["table"]
    assert first["layout"] == second["layout"] == layout
    assert first["sized_for_kmers"] > 0 and first["fp_rate"] <= 0.1
    assert second["sized_for_kmers"] == first["unique_kmers"] and second["fp_rate"] <= 0.1
    assert second["bytes"] <= first["bytes"]


@pytest.mark.parametrize("case", ["missing", "counts", "truncated", "stdin"])
def test_bad_input_is_one_error_and_no_output(tmp_path, reads, case):
    _, r1, r2 = reads
    bad = tmp_path / "bad.fq"
    if case == "missing":
        inputs = [tmp_path / "nope.fq"]
    elif case == "counts":
        bad.write_text("".join(r2.read_text().splitlines(keepends=True)[:-8]))
        inputs = [r1, bad]
    elif case == "truncated":
        bad.write_text(r1.read_text() + "@x/1\nACGT\n+\n")
        inputs = [bad]
    else:
        inputs = ["-"]
    proc = run_kmerflow("normalize", *inputs, "-o", tmp_path / "out.fq", check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert str(inputs[-1]) in err or "stdin" in err or "-" in err, err
    assert not (tmp_path / "out.fq").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["bad.fq"] if bad.exists() else [])


def test_k_above_32_counts_in_blocked_tables(tmp_path, reads):
    """khmer's k <= 32 is its layout's limit: the default blocked tables take -k 33 (a run of
    its own, not k 32's); khmer's layout refuses it as a usage error, writing nothing."""
    _, r1, r2 = reads
    for k in ("32", "33"):
        run_kmerflow("normalize", r1, r2, "-k", k, "--target", "5", "-o", tmp_path / f"k{k}.fq")
    assert records(tmp_path / "k33.fq") and (tmp_path / "k33.fq").read_bytes() != (tmp_path / "k32.fq").read_bytes()
    proc = run_kmerflow("normalize", r1, r2, "-k", "33", *KHMER_LAYOUT, "-o", tmp_path / "khmer.fq", check=False)
    assert proc.returncode == 2 and "--layout blocked" in proc.stderr.decode()
    assert not (tmp_path / "khmer.fq").exists()


def test_an_empty_orphans_file_is_not_counted_for_the_output_histogram(tmp_path):
    """Pairs that all keep both mates leave --orphans empty: the output histogram counts only
    the outputs holding reads, so no run warns about its own output as an empty input."""
    rng = random.Random(5)
    genome = "".join(rng.choices("ACGT", k=3000))
    with (tmp_path / "r1.fq").open("w") as r1, (tmp_path / "r2.fq").open("w") as r2:
        for i in range(2000):
            start = rng.randrange(2800)
            for out, seq in ((r1, genome[start:start + 100]), (r2, genome[start + 100:start + 200])):
                out.write(f"@p{i}\n{seq}\n+\n{'I' * len(seq)}\n")
    out = tmp_path / "out"
    out.mkdir()
    proc = run_kmerflow("normalize", tmp_path / "r1.fq", tmp_path / "r2.fq", "-o", out / "1.fq", "-O", out / "2.fq",
                        "--orphans", out / "o.fq", "--hist-out", out / "h.csv")
    assert (out / "o.fq").stat().st_size == 0 and (out / "1.fq").stat().st_size > 0
    assert "is empty" not in proc.stderr.decode(), proc.stderr.decode()
    assert (out / "h.csv").read_text().count("\n") > 1


def test_usage_errors(tmp_path, reads):
    for args in (["--passes", "3"], ["--target", "300"], ["--orphans", "s.fq"]):
        proc = run_kmerflow("normalize", reads[0], "-o", tmp_path / "o.fq", *args, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
    proc = run_kmerflow("normalize", reads[0], "-o", reads[0], check=False)
    assert proc.returncode != 0 and not list(tmp_path.iterdir())


def test_python_function(tmp_path, reads):
    _, r1, r2 = reads
    with pytest.warns(kmerflow.KmerflowWarning, match="--orphans"):
        result = kmerflow.normalize([r1, r2], output=tmp_path / "a.fq", mate_output=tmp_path / "b.fq", target=5)
    assert result.command == "normalize"
    assert result.summary["pairs_out"] == len(records(tmp_path / "a.fq")) == len(records(tmp_path / "b.fq"))
    assert result.summary["second_pass"]["cutoff"] == 5 and result.summary["first_pass"]["cutoff"] == 20
