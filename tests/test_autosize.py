"""Tables that size themselves: -M auto (HyperLogLog pre-pass), -U alone, the memory cap, and the
-M named by the checks before and after counting."""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
from pathlib import Path

import pytest

from conftest import kmerflow

K = 20
COMP = str.maketrans("ACGT", "TGCA")


def make_reads(path: Path, genome_len: int, seed: int, coverage: int = 8, length: int = 100) -> int:
    """Reads with 1 % substitution errors from a random genome; returns the distinct canonical
    k-mers they hold."""
    rng = random.Random(seed)
    genome = "".join(rng.choice("ACGT") for _ in range(genome_len))
    distinct: set[str] = set()
    with path.open("w") as out:
        for i in range(genome_len * coverage // length):
            start = rng.randrange(genome_len - length)
            read = list(genome[start:start + length])
            for j in range(length):
                if rng.random() < 0.01:
                    read[j] = rng.choice("ACGT")
            seq = "".join(read)
            out.write(f">r{i}\n{seq}\n")
            for j in range(length - K + 1):
                kmer = seq[j:j + K]
                distinct.add(min(kmer, kmer.translate(COMP)[::-1]))
    return len(distinct)


@pytest.fixture(scope="module", params=[20_000, 80_000, 300_000], ids=["small", "medium", "large"])
def reads(request, tmp_path_factory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("autosize") / "reads.fa"
    return path, make_reads(path, request.param, seed=request.param)


def chosen(stderr: bytes) -> tuple[float, float]:
    """The distinct k-mers and -M of the 'table sized automatically' line."""
    m = re.search(r"about (\d+) distinct k-mers .*-M (\S+) for a false-positive rate", stderr.decode())
    assert m, stderr.decode()
    return float(m.group(1)), m.group(2)


def size_of(memory: str) -> float:
    """A -M value with a decimal K/M/G suffix, in bytes."""
    scale = {"K": 1e3, "M": 1e6, "G": 1e9}.get(memory[-1])
    return float(memory[:-1]) * scale if scale else float(memory)


def fp_of(report: Path) -> float:
    return json.loads(report.read_text())["counters"]["fp_rate"]


@pytest.mark.parametrize("rate", ["0.1", "0.02"])
def test_auto_size_meets_the_rate(tmp_path, reads, rate):
    path, distinct = reads
    report = tmp_path / "r.json"
    proc = kmerflow("load-into-counting", "-k", K, "-M", "auto", "--fp-rate", rate, "--report-json", report,
                    tmp_path / "t.ct", path)
    estimated, memory = chosen(proc.stderr)
    assert abs(estimated - distinct) <= 0.05 * distinct, (estimated, distinct)
    # The HyperLogLog error (1 %) moves the rate by about 2.6 %; the table is not oversized either.
    assert float(rate) * 0.8 <= fp_of(report) <= float(rate) * 1.1, (fp_of(report), memory)
    # One byte per counter in the table file: the size chosen is the size used.
    assert (tmp_path / "t.ct").stat().st_size == pytest.approx(size_of(memory), rel=0.01)
    # The report gives the size chosen and the rate it is expected to give.
    sizing = json.loads(report.read_text())["table_sizing"]
    assert (sizing["distinct_kmers"], sizing["estimated"], sizing["n_tables"]) == (estimated, True, 4)
    assert sizing["memory_bytes"] == pytest.approx(size_of(memory), rel=0.01)
    assert sizing["tablesize"] == sizing["memory_bytes"] // 4
    assert (tmp_path / "t.ct").stat().st_size == pytest.approx(4 * sizing["tablesize"], rel=1e-3)
    # Sized for the estimate plus two standard errors of the pre-pass (1.6 %): 4 % under the target.
    assert float(rate) * 0.95 <= sizing["expected_fp_rate"] <= float(rate) * 0.97
    assert sizing["target_fp_rate"] == float(rate)


@pytest.mark.parametrize("rate", ["0.1", "0.02"])
def test_normalize_sizes_its_blocked_table_for_the_rate(tmp_path, reads, rate):
    """normalize's default layout: the blocked table -M auto picks meets the rate too (its rate
    is modelled as that of N tables sharing its counters, so the memory is the same)."""
    path, distinct = reads
    report = tmp_path / "r.json"
    # One pass to a target no read reaches: the table counts every k-mer of the input.
    proc = kmerflow("normalize", "-k", K, "--fp-rate", rate, "--passes", "1", "--target", "255", "--min-depth", "0",
                    "--report-json", report, "-o", tmp_path / "out.fa", path)
    estimated, memory = chosen(proc.stderr)
    table = json.loads(report.read_text())["summary"]["first_pass"]["table"]
    assert table["layout"] == "blocked" and table["sized_for_kmers"] == estimated
    assert table["bytes"] == pytest.approx(size_of(memory), rel=0.01)
    assert float(rate) * 0.8 <= table["fp_rate"] <= float(rate) * 1.1, (table, distinct)


def test_unique_kmers_alone_sizes_the_table(tmp_path, reads):
    path, distinct = reads
    report = tmp_path / "r.json"
    proc = kmerflow("load-into-counting", "-k", K, "-U", distinct, "--report-json", report, tmp_path / "t.ct", path)
    assert "given with -U" in proc.stderr.decode()
    assert 0.08 <= fp_of(report) <= 0.105
    sizing = json.loads(report.read_text())["table_sizing"]
    assert (sizing["distinct_kmers"], sizing["estimated"], sizing["prepass_s"]) == (distinct, False, 0)
    # With -x, khmer's rules: the given table (it only warns when that is too small).
    fixed = kmerflow("load-into-counting", "-k", K, "-U", distinct, "-x", "1e6", "--report-json", report,
                     tmp_path / "x.ct", path)
    stderr = fixed.stderr.decode()
    assert "sized automatically" not in stderr
    assert json.loads(report.read_text())["table_sizing"] is None
    assert "set memory ceiling automatically" in stderr or "Recommended tablesize" in stderr, stderr


def test_a_table_above_the_cap_is_refused_before_counting(tmp_path, reads):
    path, distinct = reads
    out = tmp_path / "out.fa"
    proc = kmerflow("normalize-by-median", "-k", K, "-M", "auto", "--memory-cap", "10K", "-o", out, path,
                    check=False)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    m = re.search(r"needs -M (\S+), above the memory cap of 10.0K", lines[0])
    assert m, lines
    assert not out.exists()
    # The -M it names reaches the rate.
    report = tmp_path / "r.json"
    kmerflow("load-into-counting", "-k", K, "-M", m.group(1), "--report-json", report, tmp_path / "t.ct", path)
    assert fp_of(report) <= 0.11


def test_stdin_cannot_be_read_twice_with_m_auto(tmp_path, reads):
    path, _ = reads
    proc = kmerflow("normalize-by-median", "-k", K, "-M", "auto", "-o", tmp_path / "o.fa", "-",
                    stdin=path.read_bytes(), check=False)
    assert proc.returncode == 1 and "give -U" in proc.stderr.decode()


def test_a_failed_normalization_leaves_no_output(tmp_path, reads):
    path, distinct = reads
    out = tmp_path / "out.fa"
    # Tables of a quarter of the distinct k-mers: nearly full, above normalize-by-median's 0.8.
    proc = kmerflow("normalize-by-median", "-k", K, "-x", str(distinct // 4), "-o", out, path, check=False)
    assert proc.returncode == 1
    assert re.search(r"increase it with at least -M \S+ \(or -M auto\)", proc.stderr.decode()), proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_failed_rate_names_the_memory_and_leaves_no_output(tmp_path, reads):
    path, distinct = reads
    out = tmp_path / "out.fa"
    # Tables of half the distinct k-mers: a rate near 0.56, above filter-abund's 0.2.
    proc = kmerflow("filter-abund-single", "-k", K, "-x", str(distinct // 2), "-o", out, path, check=False)
    assert proc.returncode == 1
    m = re.search(r"increase it with (at least )?-M (\S+) \(or -M auto\)", proc.stderr.decode())
    assert m, proc.stderr.decode()
    assert not out.exists()
    # A run stopped before its last read names a lower bound, "at least" (the k-mers counted
    # before the stop); after the whole input, the -M named reaches the rate (counted again by
    # load-into-counting, which reports it).
    n_reads = path.read_text().count(">")
    stopped = re.search(r"stopped at read (\d+):", proc.stderr.decode())
    assert bool(m.group(1)) == bool(stopped)
    if stopped:
        assert int(stopped.group(1)) <= n_reads
        return
    report = tmp_path / "r.json"
    kmerflow("load-into-counting", "-k", K, "-M", m.group(2), "--report-json", report, tmp_path / "t.ct", path)
    assert fp_of(report) <= 0.11


N_RANDOM_READS = 30_000
# A table of 1e3 counters is over every ceiling within the first hundred reads, so a run stops
# at its first check, made once a piece of the input is counted: the owner-thread commands count
# slices of 2**19 k-mers (the first ends within read 2**19 // 81 + 1), the others batches of
# the reader's 1 MiB chunks. A check of what was handed to the counters, not what they counted,
# stops one piece or more later (later still on a loaded machine).
FIRST_SLICE_READS = 2**19 // (100 - K + 1) + 1


@pytest.fixture(scope="module")
def random_reads(tmp_path_factory) -> Path:
    """Reads of random sequence: every k-mer new, far too many for a table of 1e3 counters."""
    rng = random.Random(27)
    path = tmp_path_factory.mktemp("random") / "random.fa"
    path.write_text("".join(f">r{i}\n{''.join(rng.choices('ACGT', k=100))}\n" for i in range(N_RANDOM_READS)))
    return path


def stopped_at(message: str, path: Path) -> int:
    """The read a run over the false-positive ceiling stopped at (from its one error line)."""
    m = re.search(rf"{re.escape(str(path))}: stopped at read (\d+): \*\* ERROR: the graph structure is too small .*"
                  r"increase it with at least -M \S+ \(or -M auto\), or use --force", message)
    assert m, message
    return int(m.group(1))


def first_batch_reads(path: Path) -> int:
    """The reads of the first batch of `path` (those starting in its first MiB)."""
    return path.read_bytes()[:1 << 20].count(b">")


@pytest.mark.parametrize("command", ["normalize-by-median", "load-into-counting", "filter-abund-single",
                                     "trim-low-abund", "load-graph", "load-graph-no-tags", "do-partition",
                                     "normalize"])
def test_a_table_over_the_ceiling_stops_the_run_early(tmp_path, random_reads, command):
    """The false-positive check runs after every piece counted: a table far too small stops the
    run at its first piece (see FIRST_SLICE_READS), with more threads than cores too, naming -M,
    exit 1, and no output (temporaries included) is left."""
    out = tmp_path / "out"
    out.mkdir()
    args = {"normalize-by-median": ["-x", "1e3", "-o", out / "o.fa"],
            "load-into-counting": ["-x", "1e3", out / "t.ct"],
            "filter-abund-single": ["-x", "1e3", "-o", out / "o.fa"],
            "trim-low-abund": ["-x", "1e3", "-T", out, "-o", out / "o.fa"],
            "load-graph": ["-x", "1e3", out / "g"],
            "load-graph-no-tags": ["-x", "1e3", "--no-build-tagset", out / "g"],
            "do-partition": ["-x", "1e3", out / "dp"],
            "normalize": ["-M", "1e4", "-o", out / "o.fa"]}[command]
    proc = kmerflow(command.removesuffix("-no-tags"), "-k", K, "--threads", 4, *args, random_reads, check=False)
    assert proc.returncode == 1, proc.stderr.decode()
    by_slices = command in ("load-into-counting", "filter-abund-single", "load-graph", "load-graph-no-tags",
                            "do-partition")
    first_piece = FIRST_SLICE_READS if by_slices else first_batch_reads(random_reads)
    assert stopped_at(proc.stderr.decode(), random_reads) <= first_piece
    assert proc.stderr.decode().count("error:") == 1
    assert list(out.iterdir()) == []


def test_force_goes_on_past_the_ceiling(tmp_path, random_reads):
    """With -f the run reads everything and warns at the end, as khmer."""
    out = tmp_path / "o.fa"
    proc = kmerflow("normalize-by-median", "-k", K, "-x", "1e3", "-f", "-o", out, random_reads)
    assert f"of {N_RANDOM_READS} or" in proc.stderr.decode()
    assert "going on because of --force" in proc.stderr.decode() and out.exists()


def test_python_functions_stop_early_too(tmp_path, random_reads):
    import kmerflow as kf
    out = tmp_path / "o.fa"
    with pytest.raises(kf.CommandError) as info:
        kf.normalize_by_median([random_reads], ksize=K, max_tablesize=1000, output=out)
    assert info.value.code == 1
    assert stopped_at(str(info.value), random_reads) <= first_batch_reads(random_reads)
    assert not out.exists()
    graph = tmp_path / "t.ct"
    with pytest.raises(kf.CommandError) as info:
        kf.load_into_counting(graph, [random_reads], ksize=K, max_tablesize=1000, threads=4)
    assert info.value.code == 1
    assert stopped_at(str(info.value), random_reads) <= FIRST_SLICE_READS
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("auto", [["-M", "auto"], []], ids=["M-auto", "by-default"])
@pytest.mark.parametrize("command", ["abundance-dist-single", "filter-abund-single", "trim-low-abund",
                                     "normalize-by-median", "load-into-counting", "load-graph", "do-partition"])
def test_every_counting_command_sizes_itself(tmp_path, command, auto):
    """With -M auto, and by default (none of -M/-x/-U), one line tells the size chosen; by
    default it also names the -x that gives khmer's table."""
    path = tmp_path / "reads.fa"
    make_reads(path, 10_000, seed=7)
    args = {"abundance-dist-single": [path, tmp_path / "hist"],
            "filter-abund-single": ["-o", tmp_path / "o.fa", path],
            "trim-low-abund": ["-o", tmp_path / "o.fa", path],
            "normalize-by-median": ["-o", tmp_path / "o.fa", path],
            "load-into-counting": [tmp_path / "t.ct", path],
            "load-graph": [tmp_path / "g", path],
            "do-partition": [tmp_path / "dp", path]}[command]
    report = tmp_path / "r.json"
    proc = kmerflow(command, "-k", K, *auto, "--report-json", report, *args)
    lines = [line for line in proc.stderr.decode().splitlines() if "sized automatically" in line]
    assert len(lines) == 1, proc.stderr.decode()
    assert ("-x 1e6 gives khmer's default table" in lines[0]) == (not auto), lines[0]
    assert json.loads(report.read_text())["table_sizing"]["estimated"] is True


def test_a_nodegraph_is_sized_for_a_rate_of_0_01(tmp_path, reads):
    """load-graph's presence bits get the memory for khmer's nodegraph target, 0.01 (an eighth of
    a counting table's bytes for as many counters)."""
    path, _ = reads
    proc = kmerflow("load-graph", "-k", K, "-n", tmp_path / "g", path)
    line = next(line for line in proc.stderr.decode().splitlines() if "sized automatically" in line)
    assert "for a false-positive rate of 0.01 " in line, line
    kmers, memory = chosen(proc.stderr)
    per_table = kmers / -math.log(1 - 0.01 ** 0.25)
    assert size_of(memory) == pytest.approx(max(4 * per_table / 8, 65536), rel=0.03)
    fp = float(re.search(r"false positive rate estimated to be ([0-9.]+)", proc.stderr.decode()).group(1))
    assert fp <= 0.015


def test_a_default_table_read_from_stdin_or_a_fifo_is_khmers(tmp_path, reads):
    """Without -M/-x/-U an input read once (stdin, a FIFO) gets khmer's default table, told in
    one line: the outputs are those of -x 1e6."""
    path, _ = reads
    kmerflow("load-into-counting", "-k", K, "-x", "1e6", tmp_path / "khmer.ct", path)
    proc = kmerflow("load-into-counting", "-k", K, tmp_path / "stdin.ct", "-", stdin=path.read_bytes())
    assert "- can be read only once, so the table is khmer's default (4 tables of 1e6 counters)" \
        in proc.stderr.decode()
    assert "sized automatically" not in proc.stderr.decode()
    fifo = tmp_path / "reads.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()))
    writer.start()
    try:
        proc = kmerflow("load-into-counting", "-k", K, tmp_path / "fifo.ct", fifo)
    finally:
        writer.join(timeout=60)
    assert f"{fifo} can be read only once" in proc.stderr.decode()
    expected = (tmp_path / "khmer.ct").read_bytes()
    assert (tmp_path / "stdin.ct").read_bytes() == expected
    assert (tmp_path / "fifo.ct").read_bytes() == expected


def test_a_few_kmers_get_a_table_that_passes_the_rate_check(tmp_path: Path, data: Path) -> None:
    """With k 8 khmer's test-abund-read-2.fa has about a hundred distinct k-mers: the table is
    not sized down to 4 x 131 counters, whose smallest prime (107) failed the false-positive
    check."""
    proc = kmerflow("load-into-counting", "-k", "8", "-M", "auto", tmp_path / "t.ct",
                    data / "test-abund-read-2.fa")
    assert chosen(proc.stderr)[1] == "65.6K", proc.stderr.decode()
    assert (tmp_path / "t.ct").exists()


def test_force_skips_an_unreadable_input_when_sizing_from_the_data(tmp_path):
    """-f without -M/-x: the pre-pass leaves out the input the command skips (khmer's
    test_normalize_by_median_force), so the run goes on with the good file's reads."""
    good, bad, out = tmp_path / "good.fa", tmp_path / "bad.fq", tmp_path / "o.fa"
    make_reads(good, 2000, seed=5)
    bad.write_text("@r1\nACGTACGTACGTACGTACGTACGT\n+\nIII\n")
    proc = kmerflow("normalize-by-median", "-k", K, "-f", "-o", out, good, bad, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "table sized automatically" in err and str(bad) in err
    assert out.read_text().count(">") > 0
    refused = kmerflow("normalize-by-median", "-k", K, "-o", tmp_path / "o2.fa", good, bad, check=False)
    assert refused.returncode == 1 and str(bad) in refused.stderr.decode()
