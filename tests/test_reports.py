"""The run report of every command (--report-json, checked against docs/report-schema.json),
its renderings (--multiqc parsed by the real MultiQC, --html rendered by headless Chromium,
--plots as PNG) and the Python functions' RunResult.report."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from PIL import Image

import kmerflow as kf
from conftest import REPO, _in_ci, kmerflow
from kmerflow.commands import definitions
from kmerflow.report import charts, sample_name

SCHEMA = json.loads((REPO / "docs" / "report-schema.json").read_text())
TABLE = ("-k", "17", "-N", "2", "-x", "1e5")

#: One run of every command, in a directory holding reads.fa, reads.fq, paired.fq(.1/.2) and
#: the countgraph t.ct.
RUNS: dict[str, tuple[str, ...]] = {
    "abundance-dist": ("t.ct", "reads.fa", "hist.csv"),
    "abundance-dist-single": (*TABLE, "reads.fa", "hist1.csv"),
    "annotate-partitions": ("-k", "17", "pg", "reads.fa"),
    "count-median": ("t.ct", "reads.fa", "median.csv"),
    "do-partition": (*TABLE, "dp", "reads.fa"),
    "extract-long-sequences": ("-l", "50", "reads.fa", "-o", "long.fa"),
    "extract-paired-reads": ("paired.fq",),
    "extract-partitions": ("x", "reads.fa.part"),
    "fastq-to-fasta": ("reads.fq", "-o", "reads.out.fa"),
    "filter-abund": ("t.ct", "reads.fa", "-o", "filtered.fa"),
    "filter-abund-single": (*TABLE, "reads.fa", "-o", "filtered.fa"),
    "filter-stoptags": ("-k", "17", "pg.stoptags", "reads.fa"),
    "find-knots": ("-x", "1e5", "-N", "2", "pg3"),
    "interleave-reads": ("paired.fq.1", "paired.fq.2", "-o", "interleaved.fq"),
    "load-graph": (*TABLE, "graph.pt", "reads.fa"),
    "load-into-counting": (*TABLE, "t2.ct", "reads.fa"),
    "make-initial-stoptags": ("-x", "1e5", "-N", "2", "pg2"),
    "merge-partitions": ("-k", "17", "--keep-subsets", "pg"),
    "normalize": ("-k", "17", "paired.fq.1", "paired.fq.2", "-o", "n1.fq", "-O", "n2.fq", "--hist", "nh.csv",
                  "--hist-out", "nho.csv"),
    "normalize-by-median": (*TABLE, "-C", "5", "reads.fa", "-o", "keep.fa"),
    "partition-graph": ("pg2",),
    "readstats": ("reads.fa", "-o", "stats.txt"),
    "sample-reads-randomly": ("-N", "10", "reads.fa", "-o", "sample.fa"),
    "split-paired-reads": ("paired.fq", "-1", "left.fq", "-2", "right.fq"),
    "trim-low-abund": (*TABLE, "reads.fa", "-o", "trimmed.fa"),
    "unique-kmers": ("-k", "17", "reads.fa"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, data: Path) -> Path:
    where = tmp_path_factory.mktemp("reports")
    shutil.copy(data / "test-abund-read-2.fa", where / "reads.fa")
    shutil.copy(data / "test-abund-read-2.fq", where / "reads.fq")
    for name in ("paired.fq", "paired.fq.1", "paired.fq.2"):
        shutil.copy(data / name, where / name)
    kmerflow("load-into-counting", *TABLE, "t.ct", "reads.fa", cwd=where)
    for graph in ("pg", "pg2", "pg3"):
        kmerflow("load-graph", *TABLE, graph, "reads.fa", cwd=where)
    for graph in ("pg", "pg3"):
        kmerflow("partition-graph", graph, cwd=where)
    kmerflow("merge-partitions", "-k", "17", "--keep-subsets", "pg", cwd=where)
    kmerflow("annotate-partitions", "-k", "17", "pg", "reads.fa", cwd=where)
    # a stop-tags file (khmer's format) of one k-mer
    (where / "pg.stoptags").write_bytes(b"OXLI\x04\x04" + struct.pack("<IQQ", 17, 1, 12345))
    return where


def test_every_command_has_a_report_run() -> None:
    assert sorted(RUNS) == sorted(c for c in definitions() if c != "pipeline")


@pytest.mark.parametrize("command", sorted(RUNS))
def test_every_command_writes_a_valid_report(command: str, workdir: Path) -> None:
    report_path = workdir / f"{command}.report.json"
    kmerflow(command, *RUNS[command], "--report-json", report_path.name, cwd=workdir)
    report = json.loads(report_path.read_text())
    jsonschema.validate(report, SCHEMA)
    assert report["command"] == command
    assert report["command_line"] == ["kmerflow", command, *RUNS[command], "--report-json", report_path.name]
    assert report["parameters"]["report_json"] == report_path.name
    assert report["inputs"], "no input recorded"
    for entry in report["inputs"]:
        assert entry["bytes"] == os.path.getsize(workdir / entry["path"]), entry
    for entry in report["outputs"]:
        assert entry["bytes"] == os.path.getsize(workdir / entry["path"]), entry
    assert report["timings"]["wall_s"] > 0 and report["memory"]["peak_rss_bytes"] > 1 << 20


def test_report_holds_parameters_files_counters_and_plots(tmp_path: Path, data: Path) -> None:
    shutil.copy(data / "test-abund-read-2.fa", tmp_path / "reads.fa")
    kmerflow("normalize-by-median", *TABLE, "-C", "5", "reads.fa", "-o", "keep.fa", "--report-json", "r.json",
             cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    params = report["parameters"]
    assert (params["ksize"], params["cutoff"], params["n_tables"], params["max_tablesize"]) == (17, 5, 2, 1e5)
    assert params["inputs"] == ["reads.fa"] and params["paired"] is False and params["savegraph"] is None
    assert report["inputs"] == [{"path": "reads.fa", "bytes": os.path.getsize(tmp_path / "reads.fa"),
                                 "compression": "plain", "opened": 1}]
    assert [o["path"] for o in report["outputs"]] == ["keep.fa"]
    counters = report["counters"]
    kept = (tmp_path / "keep.fa").read_text().count(">")
    assert counters["kept"] == kept and counters["total"] >= kept
    plots = report["plots"]
    assert plots["steps"] == [{"name": "input", "reads": counters["total"]},
                              {"name": "normalize-by-median", "reads": kept}]
    assert plots["keep_curve"][-1] == [counters["total"], kept]
    assert plots["table"]["fp_rate"] == counters["fp_rate"]
    assert [p["name"] for p in report["timings"]["passes"]] == ["normalizing"]


def test_two_passes_and_the_histogram_are_reported(tmp_path: Path, data: Path) -> None:
    shutil.copy(data / "test-abund-read-2.fa", tmp_path / "reads.fa")
    kmerflow("abundance-dist-single", *TABLE, "reads.fa", "hist.csv", "--report-json", "r.json", cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    assert [p["name"] for p in report["timings"]["passes"]] == ["counting", "histogram"]
    assert report["inputs"][0]["opened"] == 2
    rows = [line.split(",") for line in (tmp_path / "hist.csv").read_text().splitlines()[1:]]
    expected = [[int(r[0]), int(r[1])] for r in rows if int(r[1]) > 0]
    assert report["plots"]["histograms"] == {"reads": expected}
    assert "histogram" not in report["summary"]


def test_report_path_naming_an_input_is_refused_before_the_run(tmp_path: Path, data: Path) -> None:
    shutil.copy(data / "test-abund-read-2.fa", tmp_path / "reads.fa")
    before = (tmp_path / "reads.fa").read_bytes()
    proc = kmerflow("normalize-by-median", *TABLE, "reads.fa", "-o", "keep.fa", "--report-json", "reads.fa",
                    cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "--report-json reads.fa is the same file as input reads.fa" in proc.stderr.decode()
    assert (tmp_path / "reads.fa").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reads.fa"]


def test_run_result_exposes_the_same_report(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "keep.fa"
    result = kf.normalize_by_median([data / "test-abund-read-2.fa"], ksize=17, n_tables=2, max_tablesize=1e5,
                                    cutoff=5, output=out, report_json=tmp_path / "r.json")
    jsonschema.validate(result.report, SCHEMA)
    written = json.loads((tmp_path / "r.json").read_text())
    for key in ("parameters", "inputs", "outputs", "counters", "plots", "summary", "warnings"):
        assert result.report[key] == written[key], key
    assert result.report["counters"]["kept"] == result.summary["kept"]
    assert result.to_dict()["report"] == result.report
    kf.normalize_by_median([data / "test-abund-read-2.fa"], ksize=17, n_tables=2, max_tablesize=1e5, cutoff=5,
                           output=out, multiqc=tmp_path / "mqc")
    assert sorted(p.name for p in (tmp_path / "mqc").iterdir()) == [
        f"test-abund-read-2.kmerflow_normalize_by_median_{s}_mqc.json"
        for s in ("counters", "keep_curve", "stats", "steps")]


def _run_two_samples(tmp_path: Path, data: Path, *flags: str) -> None:
    for name in ("alpha", "beta"):
        shutil.copy(data / "test-abund-read-2.fa", tmp_path / f"{name}.fa")
        kmerflow("normalize-by-median", *TABLE, "-C", "5" if name == "alpha" else "3", f"{name}.fa",
                 "-o", f"{name}.keep.fa", *flags, cwd=tmp_path)
        kmerflow("abundance-dist-single", *TABLE, f"{name}.fa", f"{name}.hist", *flags, cwd=tmp_path)


def test_multiqc_parses_the_custom_content(tmp_path: Path, data: Path) -> None:
    _run_two_samples(tmp_path, data, "--multiqc", "mqc", "--report-json", "last.json")
    out = tmp_path / "multiqc"
    proc = subprocess.run([sys.executable, "-m", "multiqc", str(tmp_path / "mqc"), "-o", str(out),
                           "--no-ansi", "--quiet"], capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()
    parsed = json.loads((out / "multiqc_data" / "multiqc_data.json").read_text())
    general: dict[str, dict] = {}
    for section in parsed["report_general_stats_data"].values():
        for sample, values in section.items():
            general.setdefault(sample, {}).update(values)
    kept = {name: (tmp_path / f"{name}.keep.fa").read_text().count(">") for name in ("alpha", "beta")}
    for name in ("alpha", "beta"):
        values = general[name]
        assert values["kmerflow_normalize_by_median_stats_reads_out"] == kept[name], values
        assert values["kmerflow_normalize_by_median_stats_reads_in"] > kept[name]
    plots = parsed["report_plot_data"]
    hist = plots["kmerflow_abundance_dist_single_histogram_plot"]["datasets"][0]["lines"]
    assert sorted(line["name"] for line in hist) == ["alpha", "beta"]
    last = json.loads((tmp_path / "last.json").read_text())
    by_name = {line["name"]: {int(a): c for a, c in line["pairs"]} for line in hist}
    assert by_name["beta"] == {a: c for a, c in last["plots"]["histograms"]["reads"] if a <= 200}
    table = (out / "multiqc_data" / "multiqc_kmerflow_normalize_by_median_counters.txt").read_text()
    assert table.splitlines()[0].startswith("Sample") and "alpha" in table and "beta" in table


def _png_pixels_vary(path: Path) -> bool:
    """True when the PNG has pixels of more than one colour."""
    with Image.open(path) as image:
        low, high = image.convert("L").getextrema()
    return low != high


def _chromium() -> str:
    """The headless browser (CI installs it; elsewhere the test is skipped without it)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if _in_ci():
            raise AssertionError("chromium is not installed; .ci/run must install it")
        pytest.skip("chromium (Debian package) is not installed")
    return chromium


def _screenshot(chromium: str, page: Path, shot: Path, height: int) -> None:
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                           f"--window-size=1200,{height}", page.as_uri()],
                          capture_output=True, timeout=120, cwd=page.parent,
                          env={**os.environ, "HOME": str(page.parent)})
    assert shot.is_file() and shot.stat().st_size > 0, proc.stderr.decode(errors="replace")


def test_html_report_renders_in_headless_chromium(tmp_path: Path, data: Path) -> None:
    chromium = _chromium()
    shutil.copy(data / "test-abund-read-2.fa", tmp_path / "reads.fa")
    kmerflow("normalize-by-median", *TABLE, "-C", "5", "reads.fa", "-o", "keep.fa", "--html", "report.html",
             "--plots", "png", cwd=tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") == 3 and "<script" not in page and "src=" not in page
    assert "Normalization keep curve" in page and "reads.fa" in page
    shot = tmp_path / "shot.png"
    _screenshot(chromium, tmp_path / "report.html", shot, 1600)
    assert _png_pixels_vary(shot)
    pngs = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert pngs == ["normalize-by-median_keep_curve.png", "normalize-by-median_steps.png",
                    "normalize-by-median_table.png"]
    assert all(_png_pixels_vary(tmp_path / "png" / p) for p in pngs)


def _sections(page: str) -> dict[str, str]:
    """The page's sections by their <h2> title."""
    return {part.split("</h2>")[0]: part.split("</h2>", 1)[1] for part in page.split("<h2>")[1:]}


def test_html_report_puts_the_headline_first_and_warns_of_a_full_table(tmp_path: Path) -> None:
    """The numbers a user wants come first (reads in and out, % kept, the table's
    false-positive rate, flagged above 0.2), every number is formatted, axes tick at round
    values, no two legend entries share a colour; the top of the page, as headless Chromium
    draws it, shows the red warning."""
    chromium = _chromium()
    kmerflow("normalize-by-median", "-k", "20", "-C", "20", "-N", "4", "-x", "3e4", REPO / "examples" / "reads.fq.gz",
             "-o", "keep.fq", "--html", "report.html", "--report-json", "r.json", cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    page = (tmp_path / "report.html").read_text()
    kept = (tmp_path / "keep.fq").read_text().count("\n") // 4
    fp = report["summary"]["fp_rate"]
    assert fp > 0.2
    cards = dict((label, value) for value, label in
                 re.findall(r"<div class='v'>([^<]*)</div><div class='l'>([^<]*)</div>", page))
    assert cards["reads in"] == "4,000" and cards["reads out"] == f"{kept:,}"
    assert cards["kept"] == f"{100 * kept / 4000:.1f} %"
    assert cards["false-positive rate"] == f"{fp:.3f}" and "class='card bad'" in page
    assert page.index("class='cards'") < page.index("<svg")
    assert f"estimated false-positive rate is {fp:.3f}, above 0.2" in page
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    assert cells and not [c for c in cells if re.search(r"\d\.\d{5,}", c)], cells
    sections = _sections(page)
    steps = sections["Reads after each step"]
    ticks = re.findall(r"text-anchor='end'>([^<]*)</text>", steps)
    assert ticks == ["0", "1k", "2k", "3k", "4k"], ticks
    for title, section in sections.items():
        fills = re.findall(r"<rect x='[^']*' y='[^']*' width='10' height='10' fill='([^']*)'/>", section)
        assert len(fills) == len(set(fills)), (title, fills)
    assert len(re.findall(r"width='10' height='10'", steps)) == 2  # input, kept
    shot = tmp_path / "top.png"
    _screenshot(chromium, tmp_path / "report.html", shot, 700)
    with Image.open(shot) as image:
        rgb = np.asarray(image.convert("RGB")).astype(int)
    red = int(((rgb[..., 0] > 150) & (rgb[..., 1] < 60) & (rgb[..., 2] < 60)).sum())
    assert red > 200, "the warning is not drawn in red near the top of the page"


def test_chart_ticks_are_round() -> None:
    assert charts.nice_ticks(96) == [0, 20, 40, 60, 80, 100]
    assert charts.nice_ticks(196) == [0, 50, 100, 150, 200]
    assert charts.nice_ticks(0.097) == [0, 0.02, 0.04, 0.06, 0.08, 0.1]
    assert charts.nice_ticks(0) == [0, 0.2, 0.4, 0.6, 0.8, 1]
    assert charts.log_ticks(57_689) == [0, 1, 2, 3, 4, 5]
    assert charts.log_ticks(1e9) == [0, 2, 4, 6, 8, 10]


@pytest.mark.parametrize(("first_input", "sample"), [
    ("kp_R1.fq.gz", "kp"), ("kp_R2.fastq", "kp"), ("s_1.fq", "s"), ("lane_R1_001.fastq.gz", "lane"),
    ("paired.fq.1", "paired"), ("reads.fa", "reads"), ("test-abund-read-2.fa", "test-abund-read-2"),
    ("R1.fq", "R1")])
def test_sample_names_drop_the_mate_marker(first_input: str, sample: str) -> None:
    assert sample_name({"command": "normalize", "inputs": [{"path": f"dir/{first_input}"}]}) == sample


@pytest.mark.parametrize("command,table,size", [
    ("normalize-by-median", "the table", ["-x", "3e4"]),
    ("normalize", "the first pass table", ["-M", "2e5", "--passes", "1"]),
])
def test_a_table_above_0_2_is_warned_about_on_the_terminal_and_in_the_report(tmp_path: Path, command: str,
                                                                            table: str, size: list[str]) -> None:
    """Past 0.2 the counts are inflated: one warning line a table on the terminal, kept in the
    report's warnings; a table below 0.2 gets none."""
    reads = REPO / "examples" / "reads.fq.gz"
    proc = kmerflow(command, "-k", "20", *size, reads, "-o", "keep.fq", "--report-json", "r.json", cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    summary = report["summary"]
    fp = summary["first_pass"]["table"]["fp_rate"] if command == "normalize" else summary["fp_rate"]
    assert fp > 0.2
    line = f"WARNING: {table}'s estimated false-positive rate is {fp:.3f}, above 0.2: its counts are inflated"
    assert proc.stderr.decode().count(line) == 1, proc.stderr.decode()
    assert [w for w in report["warnings"] if w.startswith(line)]
    proc = kmerflow(command, "-k", "20", reads, "-o", "big.fq", cwd=tmp_path)
    assert "above 0.2" not in proc.stderr.decode()
