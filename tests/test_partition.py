"""Graph partitioning against khmer 3.0 (docs/khmer-compat.md §3.4-3.6, §4.10): partition-graph,
merge-partitions, annotate-partitions, extract-partitions and do-partition.

khmer numbers partitions in an order that depends on its threads, so `.part` files are compared
as the same reads with the same sequences in the same order, grouped into the same sets."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import khmer, kmerflow

PART_STEPS = ("load-graph", "partition-graph", "merge-partitions", "annotate-partitions")


def read_part(path: Path) -> tuple[list[tuple[str, str]], set[frozenset[str]]]:
    """A `.part` (or group) file as its (name, sequence) records in order and the set of its
    partitions, each the set of its read names."""
    lines = path.read_text().splitlines()
    step = 4 if lines and lines[0].startswith("@") else 2
    records, partitions = [], {}
    for i in range(0, len(lines), step):
        name, pid = lines[i][1:].rsplit("\t", 1)
        records.append((name, lines[i + 1]))
        partitions.setdefault(int(pid), set()).add(name)
    return records, {frozenset(p) for p in partitions.values()}


def pipeline(tool, where: Path, reads: Path, k: str, *partition_args: str) -> Path:
    """load-graph, partition-graph, merge-partitions, annotate-partitions with `tool` in `where`;
    returns the `.part` file."""
    where.mkdir(exist_ok=True)
    tool("load-graph", "-x", "1e7", "-N", "2", "-k", k, "g", reads, cwd=where)
    tool("partition-graph", *partition_args, "g", cwd=where)
    tool("merge-partitions", "-k", k, "g", cwd=where)
    tool("annotate-partitions", "-k", k, "g", reads, cwd=where)
    return where / f"{reads.name}.part"


def assert_same_partitions(ours: Path, theirs: Path) -> set[frozenset[str]]:
    our_records, our_sets = read_part(ours)
    their_records, their_sets = read_part(theirs)
    assert our_records == their_records
    assert our_sets == their_sets
    return our_sets


CASES = {
    # khmer's own tests: one partition at k 20, one per read at k 21
    "random-k20": ("random-20-a.fa", "20", ()),
    "random-k21": ("random-20-a.fa", "21", ()),
    "random-k20-subsets": ("random-20-a.fa", "20", ("-s", "10", "-T", "3")),
    "biglump": ("biglump-random-20-a.fa", "20", ("-s", "7")),
    "fakelump": ("fakelump.fa", "32", ()),
    "fakelump-no-big-traverse": ("fakelump.fa", "32", ("--no-big-traverse",)),
    "biglump-no-big-traverse": ("biglump-random-20-a.fa", "20", ("--no-big-traverse", "-s", "50")),
    "small": ("real-partition-small.fa", "20", ()),
    "genome-reads": ("simple-genome-reads.fa", "25", ("-s", "100", "-T", "2")),
    "noisy-reads": ("test-reads.fa", "20", ("-s", "1000", "-T", "2")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_partitions_are_khmers(tmp_path, data, case):
    name, k, args = CASES[case]
    ours = pipeline(kmerflow, tmp_path / "ours", data / name, k, *args)
    theirs = pipeline(khmer, tmp_path / "theirs", data / name, k, *args)
    assert_same_partitions(ours, theirs)
    for base in ("ours", "theirs"):
        assert not list((tmp_path / base).glob("g.subset.*"))
    assert (tmp_path / "ours/g.info").read_text() == (tmp_path / "theirs/g.info").read_text()


def test_khmer_pinned_partition_counts(tmp_path, data):
    # khmer's test_partition_graph_1 / _nojoin_k21 / test_extract_partitions
    part = pipeline(kmerflow, tmp_path / "k20", data / "random-20-a.fa", "20")
    assert len(read_part(part)[1]) == 1
    part21 = pipeline(kmerflow, tmp_path / "k21", data / "random-20-a.fa", "21")
    assert len(read_part(part21)[1]) == 99
    kmerflow("extract-partitions", "x", part, cwd=tmp_path)
    assert (tmp_path / "x.dist").read_text().splitlines()[0] == "99 1 1 99"


def test_files_cross_between_khmer_and_kmerflow(tmp_path, data):
    base = tmp_path / "base"
    base.mkdir()
    reads = base / "reads.fa"
    reads.write_bytes(b"".join((data / name).read_bytes() for name in (
        "biglump-random-20-a.fa", "real-partition-small.fa", "fakelump.fa")))
    k = "20"
    khmer("load-graph", "-x", "1e7", "-N", "2", "-k", k, "g", reads, cwd=base)
    for tool in ("ours", "theirs"):
        shutil.copytree(base, tmp_path / tool)
    kmerflow("partition-graph", "-s", "20", "g", cwd=tmp_path / "ours")
    khmer("partition-graph", "-s", "20", "g", cwd=tmp_path / "theirs")
    # swap the subset maps: each tool merges and annotates the other's
    swapped = {}
    for tool in ("ours", "theirs"):
        swapped[tool] = {p.name: p.read_bytes() for p in (tmp_path / tool).glob("g.subset.*.pmap")}
    assert swapped["ours"].keys() == swapped["theirs"].keys() and len(swapped["ours"]) > 5
    for tool, other in (("ours", "theirs"), ("theirs", "ours")):
        for name, raw in swapped[other].items():
            (tmp_path / tool / name).write_bytes(raw)
    kmerflow("merge-partitions", "-k", k, "g", cwd=tmp_path / "ours")
    khmer("merge-partitions", "-k", k, "g", cwd=tmp_path / "theirs")
    # and the merged maps too
    merged = {t: (tmp_path / t / "g.pmap.merged").read_bytes() for t in ("ours", "theirs")}
    (tmp_path / "ours/g.pmap.merged").write_bytes(merged["theirs"])
    (tmp_path / "theirs/g.pmap.merged").write_bytes(merged["ours"])
    kmerflow("annotate-partitions", "-k", k, "g", reads, cwd=tmp_path / "ours")
    khmer("annotate-partitions", "-k", k, "g", reads, cwd=tmp_path / "theirs")
    part = reads.name + ".part"
    sets = assert_same_partitions(tmp_path / "ours" / part, tmp_path / "theirs" / part)
    assert len(sets) > 1
    # our merged map: header, then records by ascending tag numbered from 2
    raw = merged["ours"]
    assert raw[:6] == b"OXLI\x04\x05" and struct.unpack_from("<IQ", raw, 6) == (20, (len(raw) - 18) // 12)
    tags = [struct.unpack_from("<QI", raw, 18 + 12 * i) for i in range((len(raw) - 18) // 12)]
    assert [t for t, _ in tags] == sorted(t for t, _ in tags) and tags[0][1] == 2


def test_partition_graph_keeps_existing_subsets_and_keep_subsets(tmp_path, data):
    reads = data / "random-20-a.fa"
    kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "g", reads, cwd=tmp_path)
    (tmp_path / "g.subset.1.pmap").write_bytes(b"kept")
    proc = kmerflow("partition-graph", "-s", "50", "g", cwd=tmp_path)
    assert "SKIPPING g.subset.1.pmap -- already exists" in proc.stderr.decode()
    assert (tmp_path / "g.subset.1.pmap").read_bytes() == b"kept"
    assert (tmp_path / "g.info").read_text() == "4 subsets total\n"
    (tmp_path / "g.subset.1.pmap").unlink()
    kmerflow("partition-graph", "-s", "50", "g", cwd=tmp_path)
    kmerflow("merge-partitions", "-k", "20", "--keep-subsets", "g", cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("g.subset.*.pmap")) == [
        f"g.subset.{i}.pmap" for i in range(4)]


def extract(tool, where: Path, parts: list[Path], *args: str) -> dict[str, bytes]:
    where.mkdir()
    tool("extract-partitions", *args, "x", *parts, cwd=where)
    return {p.name: p.read_bytes() for p in sorted(where.iterdir())}


@pytest.mark.parametrize("args", [(), ("-X", "10", "-m", "1"), ("-X", "3", "-m", "0", "-U"), ("-n",)])
def test_extract_partitions_is_khmers(tmp_path, data, args):
    # reads of several partitions (k 21: one per read) and unassigned ones (shorter than k)
    reads = tmp_path / "reads.fa"
    reads.write_bytes((data / "random-20-a.fa").read_bytes() + b">short\nACGT\n")
    part = tmp_path / "reads.fa.part"
    kmerflow("do-partition", "-x", "1e7", "-N", "2", "-k", "21", "g", reads, cwd=tmp_path)
    # khmer drops reads without a partition from .part files: add some as extract reads them
    part.write_bytes(part.read_bytes() + b">lonely\t0\nACGTACGT\n" * 3)
    ours = extract(kmerflow, tmp_path / "ours", [part], *args)
    theirs = extract(khmer, tmp_path / "theirs", [part], *args)
    assert ours.keys() == theirs.keys()
    assert ours["x.dist"] == theirs["x.dist"]
    for name in ours:
        if name != "x.dist":
            # the order of equal-size partitions follows their ids: compare the reads
            assert sorted(ours[name].splitlines()) == sorted(theirs[name].splitlines()), name


def test_extract_partitions_fastq_groups(tmp_path, data):
    k = "20"
    reads = data / "random-20-a.fq"
    kmerflow("do-partition", "-x", "1e7", "-N", "2", "-k", k, "g", reads, cwd=tmp_path)
    ours = extract(kmerflow, tmp_path / "ours", [tmp_path / "random-20-a.fq.part"], "-X", "50")
    theirs = extract(khmer, tmp_path / "theirs", [tmp_path / "random-20-a.fq.part"], "-X", "50")
    assert ours == theirs
    assert "x.group0000.fq" in ours


@pytest.mark.parametrize("args", [(), ("-s", "20", "--no-big-traverse", "-T", "2")])
def test_do_partition_is_khmers(tmp_path, data, args):
    reads = [data / "biglump-random-20-a.fa", data / "real-partition-small.fa"]
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        (tmp_path / where).mkdir()
        tool("do-partition", "-x", "1e7", "-N", "2", "-k", "20", *args, "g", *reads, cwd=tmp_path / where)
    for r in reads:
        name = r.name + ".part"
        assert_same_partitions(tmp_path / "ours" / name, tmp_path / "theirs" / name)
    assert (tmp_path / "ours/g.info").read_text() == (tmp_path / "theirs/g.info").read_text()
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == sorted(
        p.name for p in (tmp_path / "theirs").iterdir())


def test_partitioning_bad_files_fail_cleanly(tmp_path, data):
    reads = data / "random-20-a.fa"
    kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "g", reads, cwd=tmp_path)
    kmerflow("partition-graph", "g", cwd=tmp_path)
    pmap = tmp_path / "g.subset.0.pmap"
    raw = pmap.read_bytes()

    def fails(*args: str, code: int = 1) -> str:
        proc = kmerflow(*args, cwd=tmp_path, check=False)
        err = proc.stderr.decode()
        assert proc.returncode == code, err
        assert "Traceback" not in err
        return err

    assert "k-mer size 20 does not match the graph's k = 21" in fails("merge-partitions", "-k", "21", "g")
    pmap.write_bytes(raw[:-5])
    assert "g.subset.0.pmap" in fails("merge-partitions", "-k", "20", "g")
    pmap.write_bytes(raw[:-12] + raw[-12:-4] + b"\0\0\0\0")
    assert "partition id 0" in fails("merge-partitions", "-k", "20", "g")
    pmap.unlink()
    assert "no partition subsets" in fails("merge-partitions", "-k", "20", "g")
    assert "g.pmap.merged" in fails("annotate-partitions", "-k", "20", "g", str(reads))
    (tmp_path / "g.tagset").write_bytes(b"OXLI\x04\x02")
    assert "g.tagset" in fails("partition-graph", "g")
    (tmp_path / "bad.part").write_text(">no-tab\nACGT\n")
    assert "bad.part" in fails("extract-partitions", "x", "bad.part")
    assert not (tmp_path / "x.dist").exists()
    kmerflow("load-into-counting", "-x", "1e5", "-N", "1", "-k", "20", "c", reads, cwd=tmp_path)
    shutil.copy(tmp_path / "g.tagset", tmp_path / "c.tagset")
    assert "not a nodegraph" in fails("partition-graph", "c")


def khmer_stoptags(path: Path, k: int, kmers: list[str]) -> None:
    """A stop-tags file written by khmer's own Python API."""
    script = ("import khmer, sys\nng = khmer.Nodegraph(int(sys.argv[2]), 1, 1)\n"
              "for kmer in sys.argv[3:]:\n    ng.add_stop_tag(kmer)\nng.save_stop_tags(sys.argv[1])\n")
    subprocess.run(["/usr/bin/python3", "-c", script, str(path), str(k), *kmers], check=True)


def test_filter_stoptags_is_khmers(tmp_path, data):
    reads = tmp_path / "t.fq"
    written = [("a desc", "CGCAGGCTGGATTCTAGAGGCAGAGGTGAGCTATAAG"), ("b", "CGCAGGCTGGATTCTAGAGGCAGAGGTGAGNTATAAG"),
               ("c", "ACGTACGTACGTACGTACGTAC"), ("d x", "cgcaggctggattctagaggcagaggtgag"),
               ("e", "AAAGCTGGATTCTAGAGGCAGAG"), ("f", "ACGT")]
    reads.write_text("".join(f"@{n}\n{s}\n+\n{'I' * len(s)}\n" for n, s in written))
    fasta = tmp_path / "r.fa"
    fasta.write_bytes((data / "random-20-a.fa").read_bytes())
    khmer_stoptags(tmp_path / "st", 20, ["GCTGGATTCTAGAGGCAGAG", "ACGTACGTACGTACGTACGT",
                                         "TGAGCCAGCCCAGCCACTCG", "GGTCCGGTAAATAATTCGCA"])
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        (tmp_path / where).mkdir()
        tool("filter-stoptags", "-k", "20", tmp_path / "st", reads, fasta, cwd=tmp_path / where)
    for name, step in (("t.fq.stopfilt", 4), ("r.fa.stopfilt", 2)):
        # khmer's threads write the reads in any order; ours keep the input order
        ours, theirs = (records(tmp_path / where / name, step) for where in ("ours", "theirs"))
        assert ours and sorted(ours) == sorted(theirs)
    # a, d and e are kept (b has an N, c is cut below k, f is shorter than k)
    assert [r[0] for r in records(tmp_path / "ours/t.fq.stopfilt", 4)] == ["@a desc", "@d x", "@e"]


def records(path: Path, step: int) -> list[tuple[str, ...]]:
    """The records of a FASTA (step 2) or FASTQ (step 4) file as tuples of their lines."""
    lines = path.read_text().splitlines()
    return [tuple(lines[i:i + step]) for i in range(0, len(lines), step)]


def test_partition_graph_with_khmers_stoptags(tmp_path, data):
    # the stop tags cut random-20-a's lump: the partitions are khmer's
    reads = data / "random-20-a.fa"
    seqs = [line for line in reads.read_text().splitlines() if not line.startswith(">")]
    stops = [s[30:50] for s in seqs[:40:3]]
    khmer_stoptags(tmp_path / "st", 20, stops)
    parts = {}
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        w = tmp_path / where
        w.mkdir()
        tool("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "g", reads, cwd=w)
        tool("partition-graph", "-S", tmp_path / "st", "-s", "30", "g", cwd=w)
        tool("merge-partitions", "-k", "20", "g", cwd=w)
        tool("annotate-partitions", "-k", "20", "g", reads, cwd=w)
        parts[where] = w / "random-20-a.fa.part"
    sets = assert_same_partitions(parts["ours"], parts["theirs"])
    assert len(sets) > 1


def test_subset_maps_do_not_depend_on_threads(tmp_path, data):
    # the traversals run on threads, their joins in tag order: the same bytes with any -T
    reads = data / "test-reads.fa"
    maps = {}
    for threads in ("1", "3"):
        where = tmp_path / threads
        where.mkdir()
        kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "g", reads, cwd=where)
        kmerflow("partition-graph", "-T", threads, "-s", "3000", "g", cwd=where)
        maps[threads] = {p.name: p.read_bytes() for p in where.glob("g.subset.*.pmap")}
    assert len(maps["1"]) > 1 and maps["1"] == maps["3"]


def load_graph_both(tmp_path: Path, reads: Path, k: str, *partition_args: str) -> dict[str, Path]:
    """load-graph (and partition-graph with `partition_args`, if any) by both tools, in
    tmp_path/ours and tmp_path/theirs; the graphs are identical."""
    places = {}
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        w = tmp_path / where
        w.mkdir()
        tool("load-graph", "-x", "1e7", "-N", "2", "-k", k, "g", reads, cwd=w)
        if partition_args:
            tool("partition-graph", *partition_args, "g", cwd=w)
        places[where] = w
    return places


@pytest.mark.parametrize("reads, k, table", [
    ("biglump-random-20-a.fa", "20", ("-x", "1e6", "-N", "4", "-s", "1000")),
    # a countgraph so small its counts collide: khmer's order of walks matters, and is kept
    ("biglump-random-20-a.fa", "20", ("-x", "1e3", "-N", "2")),
    ("test-reads.fa", "25", ("-x", "1e6", "-N", "2", "-s", "300")),
    ("random-20-a.fa", "20", ()),
])
def test_make_initial_stoptags_is_khmers(tmp_path, data, reads, k, table):
    places = load_graph_both(tmp_path, data / reads, k)
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        tool("make-initial-stoptags", *table, "g", cwd=places[where])
    ours, theirs = ((places[w] / "g.stoptags").read_bytes() for w in ("ours", "theirs"))
    assert ours == theirs
    if reads == "biglump-random-20-a.fa":
        assert struct.unpack("<Q", ours[10:18])[0] > 100


def test_make_initial_stoptags_keeps_given_stoptags(tmp_path, data):
    reads = data / "biglump-random-20-a.fa"
    seqs = [line for line in reads.read_text().splitlines() if not line.startswith(">")]
    khmer_stoptags(tmp_path / "st", 20, [s[10:30] for s in seqs[:60:7]])
    places = load_graph_both(tmp_path, reads, "20")
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        tool("make-initial-stoptags", "-x", "1e6", "-N", "4", "-S", tmp_path / "st", "g", cwd=places[where])
    ours = (places["ours"] / "g.stoptags").read_bytes()
    assert ours == (places["theirs"] / "g.stoptags").read_bytes()
    given = (tmp_path / "st").read_bytes()[18:]
    tags = {ours[i:i + 8] for i in range(18, len(ours), 8)}
    assert {given[i:i + 8] for i in range(0, len(given), 8)} < tags


@pytest.mark.parametrize("command", ["make-initial-stoptags", "find-knots"])
def test_knot_commands_help_tells_their_fixed_table(tmp_path, data, command):
    # they read no reads, so their countgraph is khmer's default (see the "random-20-a.fa" case
    # above), not sized from the data as load-graph's help says of its table
    text = " ".join(kmerflow(command, "--help").stdout.decode().split())
    assert "sized from the data" not in text
    assert "the table is khmer's default, -N tables of 1e6 counters; `auto` is refused" in text
    load_graph_both(tmp_path, data / "random-20-a.fa", "20", "-T", "1")  # find-knots needs a subset map
    proc = kmerflow(command, "-M", "auto", "g", cwd=tmp_path / "ours", check=False)
    assert proc.returncode != 0 and b"-M auto is not supported by this command" in proc.stderr
    assert not (tmp_path / "ours" / "g.stoptags").exists()


@pytest.mark.parametrize("initial", [False, True])
def test_find_knots_is_khmers(tmp_path, data, initial):
    # one subset map: khmer's own order of maps does not come into it
    places = load_graph_both(tmp_path, data / "biglump-random-20-a.fa", "20", "-s", "1e5")
    for tool, where in ((kmerflow, "ours"), (khmer, "theirs")):
        if initial:
            tool("make-initial-stoptags", "-x", "1e5", "-N", "2", "-s", "100", "g", cwd=places[where])
        proc = tool("find-knots", "-x", "1e6", "-N", "2", "g", cwd=places[where])
        assert not (places[where] / "g.subset.0.pmap").exists()
        assert (places[where] / "g.subset.0.pmap.processed").exists()
        # both say that the stop tags found start from those of g.stoptags
        said = b"loading stoptags" in proc.stderr and b"will include the already-loaded set" in proc.stderr
        assert said == initial
    assert (places["ours"] / "g.stoptags").read_bytes() == (places["theirs"] / "g.stoptags").read_bytes()
    # the run is done: a second one finds no map left
    proc = kmerflow("find-knots", "g", cwd=places["ours"], check=False)
    assert proc.returncode == 1 and b"no partition subsets" in proc.stderr


KHMER_FIND_KNOTS = """\
import glob, sys, khmer
graph = khmer.Nodegraph.load(sys.argv[1])
graph.load_tagset(sys.argv[1] + '.tagset')
counting = khmer.Countgraph(graph.ksize(), int(float(sys.argv[2])), int(sys.argv[3]))
for path in sorted(glob.glob(sys.argv[1] + '.subset.*.pmap'), key=lambda p: int(p.split('.')[-2])):
    subset = khmer.SubsetPartition.load(path, graph)
    graph.repartition_largest_partition(counting, 40, 200, 2, subs=subset)
    graph.merge_subset(subset)
    graph.repartition_largest_partition(counting, 40, 200, 2)
graph.save_stop_tags(sys.argv[1] + '.stoptags')
"""


@pytest.mark.parametrize("table", [("1e6", "2"), ("1e3", "2")])
def test_find_knots_over_many_maps_is_khmers_algorithm(tmp_path, data, table):
    # find-knots.py takes the maps in directory order; kmerflow by ascending N. khmer's own
    # calls, given the maps in that order, find the same stop tags.
    reads = data / "biglump-random-20-a.fa"
    places = load_graph_both(tmp_path, reads, "20", "-s", "50")
    assert len(list(places["theirs"].glob("g.subset.*.pmap"))) == 4
    kmerflow("find-knots", "-x", table[0], "-N", table[1], "g", cwd=places["ours"])
    subprocess.run(["/usr/bin/python3", "-c", KHMER_FIND_KNOTS, "g", *table], cwd=places["theirs"], check=True)
    ours = (places["ours"] / "g.stoptags").read_bytes()
    assert ours == (places["theirs"] / "g.stoptags").read_bytes()
    assert len(ours) > 18 + 8 * 100


def test_knots_cut_the_lump(tmp_path, data):
    # khmer's protocol: the stop tags of find-knots split biglump's lump when partitioning again
    reads = data / "biglump-random-20-a.fa"
    kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "g", reads, cwd=tmp_path)
    sizes = []
    for stoptags in ((), ("-S", "g.stoptags")):
        kmerflow("partition-graph", *stoptags, "g", cwd=tmp_path)
        kmerflow("merge-partitions", "-k", "20", "--keep-subsets", "g", cwd=tmp_path)
        kmerflow("annotate-partitions", "-k", "20", "g", reads, cwd=tmp_path)
        sizes.append(len(read_part(tmp_path / "biglump-random-20-a.fa.part")[1]))
        if not stoptags:
            kmerflow("find-knots", "-x", "1e6", "-N", "2", "g", cwd=tmp_path)
    assert sizes[0] == 1 and sizes[1] > 1, sizes


KHMER_MARKS = """\
import khmer, sys
ng = khmer.Nodegraph(20, 1e5, 2)
ng.load_stop_tags(sys.argv[1])
ng.load_tagset(sys.argv[2])
print(sorted(ng.get_stop_tags()), sorted(ng.get_tagset()))
print(ng.trim_on_stoptags(sys.argv[3]))
ng.save_stop_tags(sys.argv[1] + '.khmer')
ng.save_tagset(sys.argv[2] + '.khmer')
"""


def test_graph_tags_and_stop_tags_are_khmers(tmp_path, data):
    import kmerflow as kf

    ng = kf.Nodegraph(20, 1e5, 2)
    ng.add_stop_tag("GCTGGATTCTAGAGGCAGAG")
    ng.add_stop_tag(ng.hash("ACGTACGTACGTACGTACGT"))
    ng.add_tag("TTTTTGGGGGCCCCCAAAAA")
    # canonical k-mers (the reverse hash), by ascending hash
    assert ng.get_stop_tags() == ["ACGTACGTACGTACGTACGT", "CTCTGCCTCTAGAATCCAGC"]
    assert ng.n_tags() == 1
    seq = "CGCAGGCTGGATTCTAGAGGCAGAGGTGAG"
    assert ng.trim_on_stoptags(seq) == ("CGCAGGCTGGATTCTAGAGGCAG", 23)
    ng.save_stop_tags(tmp_path / "st")
    ng.save_tagset(tmp_path / "ts")
    # khmer reads our files, finds the same marks and trims alike; its files are ours
    out = subprocess.run(["/usr/bin/python3", "-c", KHMER_MARKS, tmp_path / "st", tmp_path / "ts", seq],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    assert out[0] == f"{sorted(ng.get_stop_tags())} {sorted(ng.get_tagset())}"
    assert out[1] == str(("CGCAGGCTGGATTCTAGAGGCAG", 23))
    assert (tmp_path / "st.khmer").read_bytes() == (tmp_path / "st").read_bytes()
    assert (tmp_path / "ts.khmer").read_bytes() == (tmp_path / "ts").read_bytes()
    # khmer's files load; load_stop_tags adds unless clear_tags, load_tagset replaces
    other = kf.Nodegraph(20, 1e5, 2)
    other.add_stop_tag("TTTTTTTTTTTTTTTTTTTT")
    other.load_stop_tags(tmp_path / "st.khmer")
    assert len(other.get_stop_tags()) == 3
    other.load_stop_tags(tmp_path / "st.khmer", clear_tags=True)
    other.add_tag("AAAAACCCCCAAAAACCCCC")
    other.load_tagset(tmp_path / "ts.khmer")
    assert (other.get_stop_tags(), other.get_tagset()) == (ng.get_stop_tags(), ng.get_tagset())
    with pytest.raises(ValueError, match="k-mer size 20 does not match"):
        kf.Nodegraph(21, 1e5, 2).load_stop_tags(tmp_path / "st")
    with pytest.raises(ValueError, match="2-bit graphs"):
        kf.Nodetable(20, 1e5, 2).add_stop_tag("GCTGGATTCTAGAGGCAGAG")


KHMER_TAGGING = """\
import khmer, sys
ng = khmer.Nodegraph(20, 1e6, 2)
print(ng.consume_seqfile_and_tag(sys.argv[1]))
ng.save_tagset(sys.argv[2])
"""


def test_consume_seqfile_and_tag_is_khmers(tmp_path, data):
    import kmerflow as kf

    reads = data / "test-reads.fa"
    out = subprocess.run(["/usr/bin/python3", "-c", KHMER_TAGGING, reads, tmp_path / "theirs.tagset"],
                         check=True, capture_output=True, text=True).stdout.strip()
    ng = kf.Nodegraph(20, 1e6, 2)
    assert str(ng.consume_seqfile_and_tag(reads)) == out
    assert ng.n_tags() > 1000
    ng.save_tagset(tmp_path / "ours.tagset")
    assert (tmp_path / "ours.tagset").read_bytes() == (tmp_path / "theirs.tagset").read_bytes()
    with pytest.raises(FileNotFoundError):
        ng.consume_seqfile_and_tag(tmp_path / "missing.fa")
    assert ng.n_tags() > 1000  # a failed call keeps the tags


KHMER_PMAP = """\
import khmer, sys
ng = khmer.Nodegraph.load(sys.argv[1])
ng.load_tagset(sys.argv[1] + '.tagset')
ng.load_partitionmap(sys.argv[1] + '.pmap.merged')
print(ng.count_partitions())
print(ng.output_partitions(sys.argv[2], sys.argv[3]))
"""


@pytest.mark.parametrize("reads, k, args", [("biglump-random-20-a.fa", "20", ("-s", "7")),
                                            ("random-20-a.fa", "21", ())])
def test_graph_partition_map_is_khmers(tmp_path, data, reads, k, args):
    import kmerflow as kf

    kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", k, "g", data / reads, cwd=tmp_path)
    kmerflow("partition-graph", *args, "g", cwd=tmp_path)
    kmerflow("merge-partitions", "-k", k, "--keep-subsets", "g", cwd=tmp_path)
    out = subprocess.run(["/usr/bin/python3", "-c", KHMER_PMAP, "g", data / reads, "theirs.part"], cwd=tmp_path,
                         check=True, capture_output=True, text=True).stdout.splitlines()
    ng = kf.Nodegraph.load(tmp_path / "g")
    ng.load_tagset(tmp_path / "g.tagset")
    ng.load_partitionmap(tmp_path / "g.pmap.merged")
    assert str(ng.count_partitions()) == out[0]
    assert str(ng.output_partitions(data / reads, tmp_path / "ours.part")) == out[1]
    assert_same_partitions(tmp_path / "ours.part", tmp_path / "theirs.part")
    ng.save_partitionmap(tmp_path / "saved.pmap")
    assert (tmp_path / "saved.pmap").read_bytes() == (tmp_path / "g.pmap.merged").read_bytes()
    # the subset maps merged one by one give the merged map
    ng.load_partitionmap(tmp_path / "g.subset.0.pmap")
    for subset in sorted(tmp_path.glob("g.subset.*.pmap"))[1:]:
        ng.merge_subset_from_disk(subset)
    ng.save_partitionmap(tmp_path / "remerged.pmap")
    assert (tmp_path / "remerged.pmap").read_bytes() == (tmp_path / "g.pmap.merged").read_bytes()


KHMER_SUBSETS = """\
import khmer, sys
ng = khmer.Nodegraph.load(sys.argv[1])
ng.load_tagset(sys.argv[1] + '.tagset')
ng.add_stop_tag(sys.argv[2])
for break_on, big in ((False, False), (True, False), (False, True)):
    subset = ng.do_subset_partition(0, 0, break_on, big)
    print(subset.count_partitions()[:2])
ng.merge_subset(subset)
print(ng.count_partitions())
tags = sorted(ng.get_tagset(), key=ng.hash)
print(ng.do_subset_partition(tags[0], tags[1]).count_partitions()[:2])
"""


def test_do_subset_partition_is_khmers(tmp_path, data):
    import kmerflow as kf

    reads = data / "biglump-random-20-a.fa"
    kmerflow("load-graph", "-x", "1e7", "-N", "2", "-k", "20", "g", reads, cwd=tmp_path)
    kmerflow("partition-graph", "-s", "1e6", "g", cwd=tmp_path)
    stop = reads.read_text().splitlines()[1][30:50]
    out = subprocess.run(["/usr/bin/python3", "-c", KHMER_SUBSETS, "g", stop], cwd=tmp_path,
                         check=True, capture_output=True, text=True).stdout.splitlines()
    ng = kf.Nodegraph.load(tmp_path / "g")
    ng.load_tagset(tmp_path / "g.tagset")
    ng.add_stop_tag(stop)
    counts = []
    for break_on, big in ((False, False), (True, False), (False, True)):
        subset = ng.do_subset_partition(0, 0, break_on, big)
        counts.append(subset.count_partitions())
    assert [str(c) for c in counts] == out[:3]
    assert counts[0] != counts[2]  # --no-big-traverse breaks the lump
    ng.merge_subset(subset)
    assert str(ng.count_partitions()) == out[3]
    # the whole tagset as one subset is partition-graph's one subset map
    ng.do_subset_partition().save_partitionmap(tmp_path / "subset.pmap")
    assert (tmp_path / "subset.pmap").read_bytes() == (tmp_path / "g.subset.0.pmap").read_bytes()
    # khmer's bounds: from a tag up to (not including) another
    tags = ng.get_tagset()
    assert str(ng.do_subset_partition(tags[0], tags[1]).count_partitions()) == out[4]


KHMER_REPARTITION = """\
import khmer, sys
k, size, rounds = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
ng = khmer.Nodegraph(k, size, 4)
ng.consume_seqfile_and_tag(sys.argv[1])
ng.merge_subset(ng.do_subset_partition(0, 0))
counts = khmer.Countgraph(k, size, 4)
for _ in range(rounds):
    print(ng.repartition_largest_partition(counts, 40, 82, 1), ng.count_partitions())
ng.save_stop_tags('theirs.stoptags')
subset = ng.do_subset_partition(0, 0)
print(ng.repartition_largest_partition(counts, 40, 82, 1, subs=subset), subset.count_partitions()[:2],
      ng.count_partitions())
ng.save_stop_tags('theirs-subs.stoptags')
"""


def repartitioned(reads: Path, k: int, size: float, rounds: int, where: Path) -> list[str]:
    """KHMER_REPARTITION with kmerflow's API: what it prints; the stop tags saved in `where`."""
    import kmerflow as kf

    ng = kf.Nodegraph(k, size, 4)
    ng.consume_seqfile_and_tag(reads)
    ng.merge_subset(ng.do_subset_partition(0, 0))
    counts = kf.Countgraph(k, size, 4)
    said = [f"{ng.repartition_largest_partition(counts, 40, 82, 1)} {ng.count_partitions()}" for _ in range(rounds)]
    ng.save_stop_tags(where / "ours.stoptags")
    subset = ng.do_subset_partition(0, 0)
    before = ng.count_partitions()
    said.append(f"{ng.repartition_largest_partition(counts, 40, 82, 1, subs=subset)} "
                f"{subset.count_partitions()} {ng.count_partitions()}")
    assert ng.count_partitions() == before  # with subs, the graph's own map is left alone
    ng.save_stop_tags(where / "ours-subs.stoptags")
    return said


# fakelump's first repartitioning leaves two largest partitions of 102 tags, of which khmer
# takes the one of highest id and kmerflow the one holding the smallest tag
# (docs/differences-from-khmer.md): one round there.
@pytest.mark.parametrize("reads, k, rounds", [("fakelump.fa", 32, 1), ("biglump-random-20-a.fa", 20, 3)])
def test_repartition_largest_partition_is_khmers(tmp_path, data, reads, k, rounds):
    # the walks of khmer's test_fakelump_repartitioning: 40 steps, big from 82 k-mers, k-mers
    # reached more than once are stop tags
    ours = repartitioned(data / reads, k, 1e5, rounds, tmp_path)
    theirs = subprocess.run(["/usr/bin/python3", "-c", KHMER_REPARTITION, data / reads, str(k), "1e5", str(rounds)],
                            cwd=tmp_path, check=True, capture_output=True, text=True).stdout.splitlines()
    assert ours == theirs
    for name in ("", "-subs"):
        assert (tmp_path / f"ours{name}.stoptags").read_bytes() == (tmp_path / f"theirs{name}.stoptags").read_bytes()


def test_repartitioning_stop_tags_split_fakelump(tmp_path, data):
    # khmer's test_fakelump_repartitioning: the stop tags found split the lump in 6
    import kmerflow as kf

    assert repartitioned(data / "fakelump.fa", 32, 1e5, 1, tmp_path)[0] == "0 (6, 11)"
    ng = kf.Nodegraph(32, 1e5, 4)
    ng.consume_seqfile_and_tag(data / "fakelump.fa")
    ng.load_stop_tags(tmp_path / "ours.stoptags")
    ng.merge_subset(ng.do_subset_partition(0, 0, True))
    assert ng.count_partitions()[0] == 6


def test_repartition_largest_partition_refuses_what_khmer_aborts_on(tmp_path, data):
    import kmerflow as kf

    ng = kf.Nodegraph(32, 1e5, 4)
    ng.consume_seqfile_and_tag(data / "fakelump.fa")
    counts = kf.Countgraph(32, 1e5, 4)
    # no partition yet (khmer aborts the process)
    with pytest.raises(ValueError, match="no partition to repartition"):
        ng.repartition_largest_partition(counts, 40, 82, 1)
    with pytest.raises(ValueError, match="no partition to repartition"):
        ng.repartition_largest_partition(counts, 40, 82, 1, subs=kf.Nodegraph(32, 1e5, 4).do_subset_partition())
    assert (ng.get_stop_tags(), counts.n_unique_kmers()) == ([], 0)
    ng.merge_subset(ng.do_subset_partition())
    with pytest.raises(TypeError):
        ng.repartition_largest_partition(kf.Nodegraph(32, 1e5, 4), 40, 82, 1)
    with pytest.raises(ValueError, match=r"graph's k-mer size \(32\)"):
        ng.repartition_largest_partition(kf.Countgraph(31, 1e5, 4), 40, 82, 1)
    with pytest.raises(ValueError, match=r"graph's k-mer size \(32\)"):
        ng.repartition_largest_partition(counts, 40, 82, 1, subs=kf.Nodegraph(31, 1e5, 4).do_subset_partition())
    with pytest.raises(OverflowError):
        ng.repartition_largest_partition(counts, -1, 82, 1)
    with pytest.raises(ValueError, match="2-bit graphs"):
        kf.Nodetable(32, 1e5, 4).repartition_largest_partition(counts, 40, 82, 1)
    assert ng.count_partitions() == (1, 0) and ng.get_stop_tags() == []
