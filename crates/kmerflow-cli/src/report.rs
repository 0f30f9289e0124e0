//! The run report: one JSON document of the same shape for every command (`--report-json
//! FILE`, returned to library callers as [`crate::Outcome::report`]; schema version
//! [`SCHEMA_VERSION`], documented in docs/report-schema.md and checked against
//! docs/report-schema.json), and the resource summary line printed on stderr at the end of a run,
//! in the style of minimap2.
//!
//! Everything in the document comes from what every run has: the parsed command line (its
//! parameters, defaults included), the files the core opened and wrote
//! ([`kmerflow_core::run::files::Files`]), its passes, messages, resource use and the command's
//! summary. A new command or flag therefore appears in the report without code here. The
//! plotted data (`plots`) is read from the summary by field name: `histogram` (counts by
//! abundance) or `histograms` (name → counts), `keep_curve` (`[examined, kept]` points), `steps`
//! (`{name, reads}` in order) and `fp_rate`; commands without `steps` get reads in → reads out
//! from [`READS_IN_OUT`].

use crate::common::Settings;
use clap::ArgMatches;
use kmerflow_core::io::OutputFile;
use kmerflow_core::ops::autosize::AutoSize;
use kmerflow_core::run::files::{Dependency, Output};
use kmerflow_core::run::{Level, RunContext};
use kmerflow_core::{Error, Result};
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

/// The version of the report document's schema; raised when a field changes meaning or goes
/// away (adding fields keeps it).
pub const SCHEMA_VERSION: u32 = 1;

/// For the commands whose summary has no `steps`: the summary fields of the reads in and the
/// reads written.
pub const READS_IN_OUT: &[(&str, &str, &str)] = &[
    ("normalize-by-median", "total", "kept"),
    ("filter-abund", "reads", "written"),
    ("filter-abund-single", "reads", "written"),
    ("trim-low-abund", "reads", "reads_written"),
    ("extract-long-sequences", "records", "kept"),
];

/// The idents of the report's charts (`kmerflow.report.chart_list`), which name the PNG files
/// of `--plots DIR`: `DIR/COMMAND_CHART.png`.
pub const CHARTS: &[&str] = &["histogram", "steps", "keep_curve", "table"];

/// Every file and folder the front end writes beside the outputs of command `name`, known
/// before the run: `--metrics`, `--report-json`, the `--html` page, the `--plots` folder and
/// its PNGs, the `--multiqc` folder. The run declares them as side outputs, so that its
/// preflight checks them with its own outputs ([`kmerflow_core::run::files::preflight`]).
pub fn side_outputs(name: &str, settings: &Settings) -> Vec<Output> {
    let files =
        [("--metrics", &settings.metrics), ("--report-json", &settings.report_json), ("--html", &settings.html)];
    let files = files.into_iter().filter_map(|(flag, path)| path.as_ref().map(|p| Output::side_file(flag, p.as_str())));
    let pngs = settings.plots.iter().flat_map(|dir| {
        let folder = Output::side_folder("--plots", dir.as_str()).needing(PLOTS_DRAWABLE.get().copied());
        let png = |chart: &&str| std::path::Path::new(dir).join(format!("{name}_{chart}.png"));
        std::iter::once(folder)
            .chain(CHARTS.iter().map(move |c| Output::side_file("--plots", png(c).to_string_lossy())))
    });
    let multiqc = settings.multiqc.iter().map(|dir| Output::side_folder("--multiqc", dir.as_str()));
    files.chain(pngs).chain(multiqc).collect()
}

/// The check, set once by a front end that draws the `--plots` PNGs, that it can draw them
/// (the Python package's needs matplotlib); the run's preflight calls it ([`side_outputs`]).
static PLOTS_DRAWABLE: std::sync::OnceLock<Dependency> = std::sync::OnceLock::new();

/// Sets the check that `--plots` can be drawn (the first one set stays).
pub fn set_plots_check(check: Dependency) {
    let _ = PLOTS_DRAWABLE.set(check);
}

/// A run being measured.
pub struct Report {
    command_line: Vec<String>,
    started: Instant,
}

/// CPU seconds (user + system) and peak resident set size in bytes of this process.
pub fn usage() -> (f64, u64) {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    // ru_maxrss is in KiB on Linux.
    let maxrss = (ru.ru_maxrss.max(0) as u64) * 1024;
    (secs(ru.ru_utime) + secs(ru.ru_stime), memory_high_water().unwrap_or(maxrss))
}

/// The peak resident set size of this program's memory (`VmHWM`), in bytes. `ru_maxrss` is
/// not used when this is known: Linux carries it over `exec`, so a run started by a large
/// process (a Python test runner, a workflow engine) would report its parent's size.
fn memory_high_water() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

impl Report {
    /// Starts measuring the command line `argv`.
    pub fn start(argv: &[OsString]) -> Self {
        let args = argv.iter().skip(1).map(|a| a.to_string_lossy().into_owned());
        let command_line = std::iter::once("kmerflow".to_string()).chain(args).collect();
        Report { command_line, started: Instant::now() }
    }

    /// Measures the command line `argv` of a run that began `elapsed` ago (a run carried out
    /// elsewhere, reported here: [`crate::sharded::finish`]).
    pub fn started_before(argv: &[OsString], elapsed: std::time::Duration) -> Self {
        Report::start(argv).begun_before(elapsed)
    }

    /// This measure with its clock started `elapsed` earlier.
    pub fn begun_before(self, elapsed: std::time::Duration) -> Self {
        Report { started: self.started.checked_sub(elapsed).unwrap_or(self.started), ..self }
    }

    /// The summary line.
    pub fn line(&self) -> String {
        let (cpu, rss) = usage();
        format!(
            "[kmerflow] Version: {}; CMD: {}; Real time: {:.3} sec; CPU: {:.3} sec; Peak RSS: {:.3} GB",
            kmerflow_core::VERSION,
            self.command_line.join(" "),
            self.started.elapsed().as_secs_f64(),
            cpu,
            rss as f64 / (1u64 << 30) as f64
        )
    }

    /// The report document of command `name` run within `run` with `parameters` (see
    /// [`parameters`]), which returned `summary`, its table sized as `table_sizing` says when
    /// it was sized automatically.
    pub fn document(
        &self,
        name: &str,
        parameters: Value,
        run: &RunContext,
        summary: &Value,
        table_sizing: Option<&AutoSize>,
    ) -> Value {
        let (cpu, rss) = usage();
        let inputs: Vec<Value> = run
            .files()
            .inputs()
            .into_iter()
            // Temporary files the run read back and removed (trim-low-abund's second pass).
            .filter(|i| i.path == "-" || std::path::Path::new(&i.path).exists())
            .map(|i| json!({"path": i.path, "bytes": i.bytes, "compression": i.compression, "opened": i.opened}))
            .collect();
        let outputs: Vec<Value> =
            run.files().outputs().into_iter().map(|path| json!({"bytes": file_size(&path), "path": path})).collect();
        let passes: Vec<Value> = run
            .progress()
            .pass_times()
            .into_iter()
            .map(|(pass, wall)| json!({"name": pass, "wall_s": wall.as_secs_f64()}))
            .collect();
        let warnings: Vec<String> =
            run.messages().into_iter().filter(|m| m.level >= Level::Warning).map(|m| m.text).collect();
        let plots = plots(name, summary, &parameters);
        let mut details = summary.clone();
        if let Some(map) = details.as_object_mut() {
            // Plotted sparsely under `plots`; the dense array has 65535 entries.
            map.remove("histogram");
        }
        json!({
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "kmerflow", "version": kmerflow_core::VERSION},
            "command": name,
            "command_line": self.command_line,
            "parameters": parameters,
            "table_sizing": table_sizing.map(sizing_json),
            "threads": run.threads(),
            "inputs": inputs,
            "outputs": outputs,
            "counters": counters(summary),
            "timings": {"wall_s": self.started.elapsed().as_secs_f64(), "cpu_s": cpu, "passes": passes},
            "memory": {"peak_rss_bytes": rss},
            "warnings": warnings,
            "plots": plots,
            "summary": details,
        })
    }
}

/// The report's `table_sizing`: the size an automatically sized table got.
pub(crate) fn sizing_json(s: &AutoSize) -> Value {
    json!({
        "distinct_kmers": s.distinct_kmers.round() as u64,
        "estimated": s.estimated,
        "prepass_s": s.prepass_seconds,
        "target_fp_rate": s.fp_rate,
        "memory_cap_bytes": s.cap.round() as u64,
        "memory_bytes": s.memory.round() as u64,
        "n_tables": s.n_tables,
        "tablesize": s.tablesize,
        "expected_fp_rate": s.expected_fp_rate,
    })
}

/// Writes the report `document` as JSON to `path` (`-` = stdout), which the run's preflight
/// checked with its other outputs ([`side_outputs`]).
pub fn write(path: &str, document: &Value) -> Result<()> {
    let mut text = serde_json::to_vec_pretty(document).map_err(|e| Error::invalid(e.to_string()))?;
    text.push(b'\n');
    let mut out = OutputFile::create(path)?;
    out.write_all(&text).map_err(|e| Error::io(path, e))?;
    out.finish()
}

/// The size of output `path` when it is a regular file.
fn file_size(path: &str) -> Option<u64> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// Every argument of the parsed subcommand `sub` of `cmd` by clap id, as given or defaulted:
/// switches as booleans, values as numbers when they read as numbers, else as text; arguments
/// that take several values as lists; unset options as `null`.
pub fn parameters(cmd: &clap::Command, sub: &ArgMatches) -> Value {
    let mut out = Map::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version" | "info") {
            continue;
        }
        let raw: Vec<Value> = match sub.try_get_raw(id) {
            Ok(Some(values)) => values.map(|v| scalar(&v.to_string_lossy())).collect(),
            _ => Vec::new(),
        };
        let many = matches!(arg.get_action(), clap::ArgAction::Append)
            || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let value = match (many, raw.len()) {
            (true, _) => Value::Array(raw),
            (false, 0) => Value::Null,
            (false, _) => raw.into_iter().next().unwrap_or(Value::Null),
        };
        out.insert(id.to_string(), value);
    }
    Value::Object(out)
}

/// A parameter's text as JSON: `true`/`false`, a number, or the text.
fn scalar(text: &str) -> Value {
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => text
            .parse::<i64>()
            .map(Value::from)
            .ok()
            .or_else(|| text.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from))
            .unwrap_or_else(|| Value::String(text.to_string())),
    }
}

/// Above this estimated false-positive rate a table's counts are noticeably inflated: the run
/// warns on the terminal (as its HTML report and MultiQC's General Statistics do).
pub const FP_WARNING: f64 = 0.2;

/// Warns, within `run`, about each table of `summary` (an `fp_rate` anywhere in it, named by
/// the objects holding it: `first_pass.table.fp_rate` is the first pass table's; a top-level
/// `fp_rate` beside nested ones repeats one of them) whose estimated false-positive rate is
/// above [`FP_WARNING`].
pub fn warn_full_tables(summary: &Value, run: &RunContext) {
    let Value::Object(numbers) = counters(summary) else { return };
    let rates: Vec<(&str, f64)> = numbers
        .iter()
        .filter_map(|(name, value)| Some((name.strip_suffix("fp_rate")?, value.as_f64()?)))
        .filter(|(path, _)| path.is_empty() || path.ends_with('.'))
        .collect();
    let nested = rates.iter().any(|(path, _)| !path.is_empty());
    for (path, fp) in rates {
        if fp <= FP_WARNING || (nested && path.is_empty()) {
            continue;
        }
        let words = path.replace(['.', '_'], " ");
        let words = words.trim_end().trim_end_matches("table").trim_end();
        let table = if words.is_empty() { "the table".to_string() } else { format!("the {words} table") };
        run.warning(format!(
            "WARNING: {table}'s estimated false-positive rate is {fp:.3}, above {FP_WARNING}: its counts are \
             inflated; give it more memory (-M, or -M auto)"
        ));
    }
}

/// The summary's numbers, nested objects flattened with dotted names (`tally.reads`); lists
/// are left to `summary` and `plots`.
fn counters(summary: &Value) -> Value {
    fn walk(prefix: &str, value: &Value, out: &mut Map<String, Value>) {
        match value {
            Value::Number(_) => {
                out.insert(prefix.to_string(), value.clone());
            }
            Value::Object(map) => {
                for (key, v) in map {
                    let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                    walk(&name, v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Map::new();
    walk("", summary, &mut out);
    Value::Object(out)
}

/// The data the plots show, read from the summary (see the module documentation).
fn plots(name: &str, summary: &Value, parameters: &Value) -> Value {
    let sparse = |dense: &Value| -> Option<Value> {
        let counts = dense.as_array()?;
        let points = counts
            .iter()
            .enumerate()
            .filter_map(|(abundance, c)| c.as_u64().filter(|&c| c > 0).map(|c| json!([abundance, c])));
        Some(Value::Array(points.collect()))
    };
    let mut histograms = Map::new();
    if let Some(points) = sparse(&summary["histogram"]) {
        histograms.insert("reads".into(), points);
    }
    if let Some(named) = summary["histograms"].as_object() {
        for (key, dense) in named {
            if let Some(points) = sparse(dense) {
                histograms.insert(key.clone(), points);
            }
        }
    }
    let steps = match &summary["steps"] {
        Value::Array(steps) => Value::Array(steps.clone()),
        _ => READS_IN_OUT
            .iter()
            .find(|(command, _, _)| *command == name)
            .map(|(_, reads_in, reads_out)| {
                json!([{"name": "input", "reads": summary[reads_in]}, {"name": name, "reads": summary[reads_out]}])
            })
            .unwrap_or_else(|| json!([])),
    };
    // The geometric mean of the tables' occupancies is the N-th root of their product, the
    // false-positive rate.
    let table = summary["fp_rate"].as_f64().map(|fp| {
        let n = parameters["n_tables"].as_f64().filter(|n| *n >= 1.0).unwrap_or(1.0);
        json!({"fp_rate": fp, "n_tables": n as u64, "occupancy": fp.powf(1.0 / n)})
    });
    json!({
        "histograms": histograms,
        "keep_curve": summary.get("keep_curve").cloned().unwrap_or_else(|| json!([])),
        "steps": steps,
        "table": table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line_names_version_and_command() {
        let r = Report::start(&["/x/kmerflow".into(), "readstats".into(), "a.fq".into()]);
        let line = r.line();
        assert!(line.starts_with("[kmerflow] Version: 0.1.0; CMD: kmerflow readstats a.fq; Real time: "), "{line}");
        assert!(line.ends_with(" GB"));
        assert!(usage().1 > 0);
    }

    #[test]
    fn side_outputs_are_every_flagged_file_and_folder() {
        let settings = Settings {
            html: Some("r.html".into()),
            plots: Some("p".into()),
            multiqc: Some("m".into()),
            report_json: Some("r.json".into()),
            ..Settings::default()
        };
        let named: Vec<String> = side_outputs("readstats", &settings)
            .into_iter()
            .map(|o| format!("{} {} {:?}", o.flag.unwrap_or_default(), o.path, o.kind))
            .collect();
        assert_eq!(
            named,
            [
                "--report-json r.json File",
                "--html r.html File",
                "--plots p Folder",
                "--plots p/readstats_histogram.png File",
                "--plots p/readstats_steps.png File",
                "--plots p/readstats_keep_curve.png File",
                "--plots p/readstats_table.png File",
                "--multiqc m Folder",
            ]
        );
        assert!(side_outputs("readstats", &Settings::default()).is_empty());
    }

    #[test]
    fn counters_are_the_summarys_numbers() {
        let summary = json!({"kept": 3, "fp_rate": 0.5, "tally": {"reads": 4}, "files": ["a"], "histogram": [0, 2]});
        assert_eq!(counters(&summary), json!({"kept": 3, "fp_rate": 0.5, "tally.reads": 4}));
    }

    #[test]
    fn plots_come_from_the_summary() {
        let summary =
            json!({"total": 10, "kept": 4, "fp_rate": 0.01, "histogram": [0, 5, 0, 1], "keep_curve": [[10, 4]]});
        let p = plots("normalize-by-median", &summary, &json!({"n_tables": 2}));
        assert_eq!(p["histograms"]["reads"], json!([[1, 5], [3, 1]]));
        assert_eq!(p["steps"], json!([{"name": "input", "reads": 10}, {"name": "normalize-by-median", "reads": 4}]));
        assert_eq!(p["keep_curve"], json!([[10, 4]]));
        assert!((p["table"]["occupancy"].as_f64().unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(plots("readstats", &json!([]), &json!({}))["table"], Value::Null);
    }

    #[test]
    fn tables_above_the_warning_rate_are_warned_about() {
        let run = RunContext::new();
        let summary = json!({"fp_rate": 0.5, "first_pass": {"table": {"fp_rate": 0.3}}, "second_pass": {"table": {"fp_rate": 0.1}},
                             "target_fp_rate": 0.9});
        warn_full_tables(&summary, &run);
        let texts: Vec<String> = run.messages().into_iter().map(|m| m.text).collect();
        assert_eq!(texts.len(), 1, "{texts:?}");
        assert!(
            texts[0].starts_with("WARNING: the first pass table's estimated false-positive rate is 0.300, above 0.2")
        );
        let run = RunContext::new();
        warn_full_tables(&json!({"fp_rate": 0.5, "kept": 3}), &run);
        let texts: Vec<String> = run.messages().into_iter().map(|m| m.text).collect();
        assert_eq!(texts.len(), 1, "{texts:?}");
        assert!(texts[0].starts_with("WARNING: the table's estimated false-positive rate is 0.500, above 0.2"));
    }

    #[test]
    fn parameter_text_becomes_json() {
        assert_eq!(scalar("20"), json!(20));
        assert_eq!(scalar("1e6"), json!(1e6));
        assert_eq!(scalar("2G"), json!("2G"));
        assert_eq!(scalar("true"), json!(true));
        assert_eq!(scalar("nan"), json!("nan"));
    }
}
