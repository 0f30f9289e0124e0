"""kmerflow's MultiQC files as the real MultiQC reads them: the custom content of single commands
(``--multiqc``), of ``normalize`` on R1/R2 files and of the pipeline, gathered in one directory
and parsed by one ``multiqc`` run, asserting on its ``multiqc_data.json``: General Statistics
columns, numeric histogram axes, reads after each step side by side, every pass's keep curve,
samples named without the mate marker."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

from conftest import REPO, kmerflow
from kmerflow.pipeline import run as run_pipeline

EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The runs' reports, outputs and MultiQC's parse of their MultiQC files."""
    where = tmp_path_factory.mktemp("multiqc")
    mqc = where / "mqc"
    kmerflow("normalize", EXAMPLES / "demo_R1.fq.gz", EXAMPLES / "demo_R2.fq.gz", "-o", "d_R1.fq",
             "-O", "d_R2.fq", "--hist", "in.csv", "--hist-out", "out.csv", "--report-json", "demo.json",
             "--multiqc", mqc, cwd=where)
    kmerflow("normalize-by-median", "-k", "20", "-C", "20", "-M", "1M", EXAMPLES / "reads.fq.gz",
             "-o", "reads.keep.fq", "--report-json", "nbm.json", "--multiqc", mqc, cwd=where)
    kmerflow("abundance-dist-single", "-k", "20", "-M", "1M", EXAMPLES / "reads.fq.gz", "reads.hist",
             "--report-json", "ads.json", "--multiqc", mqc, cwd=where)
    shutil.copy(EXAMPLES / "reads.fq.gz", where / "full.fq.gz")  # a table too small for it
    kmerflow("normalize-by-median", "-k", "20", "-C", "20", "-N", "4", "-x", "3e4", "full.fq.gz", "-o", "full.keep.fq",
             "--report-json", "full.json", "--multiqc", mqc, cwd=where)
    result = run_pipeline(EXAMPLES / "samples.tsv", where / "results", local_cluster=1, log=lambda _: None,
                          steps=["interleave", "normalize", "filter", "extract", "renormalize", "histogram",
                                 "readstats"])
    assert set(result.status.values()) == {"done"}
    for produced in (where / "results").glob("*_mqc.*"):
        shutil.copy(produced, mqc)
    out = where / "multiqc"
    proc = subprocess.run([sys.executable, "-m", "multiqc", str(mqc), "-o", str(out), "--no-ansi", "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "multiqc_data" / "multiqc_data.json").read_text())
    general: dict[str, dict[str, float]] = {}
    for section in data["report_general_stats_data"].values():
        for sample, values in section.items():
            general.setdefault(sample, {}).update(values)
    reports = {name: json.loads((where / f"{name}.json").read_text()) for name in ("demo", "nbm", "ads", "full")}
    return {"where": where, "general": general, "plots": data["report_plot_data"], "reports": reports,
            "headers": data["report_general_stats_headers"], "html": (out / "multiqc_report.html").read_text()}


def _lines(parsed: dict[str, Any], plot: str) -> dict[str, list[list[float]]]:
    return {line["name"]: line["pairs"] for line in parsed["plots"][plot]["datasets"][0]["lines"]}


def test_general_statistics_of_normalize_name_the_sample_without_r1(parsed: dict[str, Any]) -> None:
    summary = parsed["reports"]["demo"]["summary"]
    assert not any("_R1" in sample for sample in parsed["general"])
    stats = {k.removeprefix("kmerflow_normalize_stats_"): v for k, v in parsed["general"]["demo"].items()
             if k.startswith("kmerflow_normalize_stats_")}
    highest = max(summary["first_pass"]["table"]["fp_rate"], summary["second_pass"]["table"]["fp_rate"])
    assert stats == {"reads_in": 6000, "reads_out": summary["reads_out"], "pairs_in": 3000,
                     "pairs_out": summary["pairs_out"],
                     "percent_kept": round(100 * summary["reads_out"] / 6000, 2),
                     "fp_rate": pytest.approx(highest)}
    assert summary["pairs_out"] * 2 <= summary["reads_out"] < 6000
    titles = {h["title"] for section in parsed["headers"].values() for h in section.values()}
    assert {"Reads in", "Reads out", "Pairs in", "Pairs out", "% kept", "FP rate"} <= titles


def test_general_statistics_of_a_single_command_count_its_output(parsed: dict[str, Any]) -> None:
    written = (parsed["where"] / "reads.keep.fq").read_text().count("\n") // 4
    stats = parsed["general"]["reads"]
    assert stats["kmerflow_normalize_by_median_stats_reads_out"] == written
    assert stats["kmerflow_normalize_by_median_stats_reads_in"] == 4000
    assert stats["kmerflow_normalize_by_median_stats_fp_rate"] == pytest.approx(
        parsed["reports"]["nbm"]["summary"]["fp_rate"])


def test_histogram_x_values_are_numbers_in_order(parsed: dict[str, Any]) -> None:
    for plot in ("kmerflow_abundance_dist_single_histogram_plot", "kmerflow_normalize_histogram_plot",
                 "kmerflow_histogram_plot"):
        lines = _lines(parsed, plot)
        assert lines, plot
        for name, pairs in lines.items():
            xs = [x for x, _ in pairs]
            assert all(isinstance(x, (int, float)) for x in xs), (plot, name, xs[:5])
            assert xs == sorted(xs) and len(xs) > 10, (plot, name, xs[:12])
    expected = [[a, c] for a, c in parsed["reports"]["ads"]["plots"]["histograms"]["reads"] if 0 < a <= 200]
    assert _lines(parsed, "kmerflow_abundance_dist_single_histogram_plot")["reads"] == expected


def test_reads_after_each_step_are_side_by_side_not_stacked(parsed: dict[str, Any]) -> None:
    plot = parsed["plots"]["kmerflow_normalize_steps_plot"]
    assert plot["pconfig"]["stacking"] == "group"
    bars = {cat["name"]: cat["data"] for cat in plot["datasets"][0]["cats"]}
    steps = parsed["reports"]["demo"]["plots"]["steps"]
    assert bars == {s["name"]: [s["reads"]] for s in steps}


def test_the_pipeline_reports_every_sample_and_every_pass(parsed: dict[str, Any]) -> None:
    demo, single = parsed["general"]["demo"], parsed["general"]["single"]
    prefix = "kmerflow_pipeline_stats_"
    assert demo[prefix + "reads_in"] == 6000 and demo[prefix + "pairs_in"] == 3000
    assert single[prefix + "reads_in"] == 4000 and prefix + "pairs_in" not in single
    for stats in (demo, single):
        assert 0 < stats[prefix + "reads_out"] < stats[prefix + "reads_in"]
        kept = stats[prefix + "reads_out"] / stats[prefix + "reads_in"]
        assert stats[prefix + "percent_kept"] == round(100 * kept, 2)
        assert 0 <= stats[prefix + "fp_rate"] < 0.2
    curves = _lines(parsed, "kmerflow_keep_curve_plot")
    assert sorted(curves) == ["demo normalize", "demo renormalize", "single normalize", "single renormalize"]
    summary = json.loads((parsed["where"] / "results" / "demo" / "demo.summary.json").read_text())
    assert curves["demo renormalize"] == summary["keep_curves"]["renormalize"]


def test_a_table_above_the_limit_is_flagged_in_general_statistics(parsed: dict[str, Any]) -> None:
    fp = parsed["reports"]["full"]["summary"]["fp_rate"]
    assert fp > 0.2
    assert parsed["general"]["full"]["kmerflow_normalize_by_median_stats_fp_rate"] == pytest.approx(fp)
    flagged = re.findall(r"background-color:#d9534f\">([0-9.]+)<", parsed["html"])
    assert flagged == [f"{fp:.3f}"], flagged
