//! The `kmerflow` command line: one subcommand per khmer script, shared conventions
//! (help with examples, `-q`, `-T/--threads`, `--metrics FILE.json`, the run report of
//! [`report`] (`--report-json FILE`), progress on a terminal, a resource summary line on
//! stderr, exit codes 0 success / 1 data or I/O error / 2 usage error /
//! 130 and 143 interrupted by SIGINT and SIGTERM).
//!
//! Entry points:
//! - [`execute_with`]: parses and runs a command line within a caller's
//!   [`RunContext`] and returns the command's typed summary (as JSON) and messages, printing
//!   nothing (for programs embedding kmerflow: the Python package, workflow engines);
//! - [`execute`]: the same with a fresh context whose messages are printed on stderr as on
//!   the command line (with the progress line and the resource summary);
//! - [`run`]: the executable's entry point: [`execute`] with SIGINT/SIGTERM cancelling the run,
//!   printing any error and returning the exit code.

pub mod commands;
pub mod common;
pub mod console;
pub mod flags;
pub mod info;
pub mod metrics;
pub mod progress;
pub mod report;
pub mod sharded;
pub mod signals;
pub mod spec;

use clap::{CommandFactory, FromArgMatches, Parser};
use commands::Command;
use common::{Ctx, Settings};
use console::{Console, Terminal};
use kmerflow_core::run::{CancelToken, Message, RunContext};
use serde_json::Value;
use std::ffi::OsString;
use std::sync::Arc;

/// Exit code of a data or I/O error.
pub const EXIT_DATA: i32 = 1;
/// Exit code of a usage error.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of a run interrupted by SIGINT (Ctrl-C) or cancelled by its caller.
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit code of a run ended by SIGTERM.
pub const EXIT_TERMINATED: i32 = 143;

/// kmerflow: fast k-mer counting and read preprocessing, compatible with khmer.
#[derive(Debug, Parser)]
#[command(name = "kmerflow", version, propagate_version = true, max_term_width = 100, infer_long_args = true)]
#[command(after_help = "Run `kmerflow <command> --help` for a command's options and examples.\n\n\
    Many samples: `kmerflow pipeline SAMPLESHEET -o OUTDIR` runs khmer's protocol per sample on Dask\n\
    (installed Python package with the `dask` extra; `kmerflow pipeline --help`).")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The command-line definition: clap's derive output with every subcommand printing its version
/// as `kmerflow VERSION` (clap would say `kmerflow-SUBCOMMAND VERSION`), and a long-only
/// `--version` where khmer's `-V` means something else. Help texts head their usage line
/// `usage:`, as khmer's scripts (argparse) do.
fn cli_command() -> clap::Command {
    const HELP_TEMPLATE: &str = "{before-help}{about-with-newline}\nusage: {usage}\n\n{all-args}{after-help}";
    Cli::command().help_template(HELP_TEMPLATE).subcommand(pipeline_command()).mut_subcommands(|sub| {
        let sub = sub.display_name("kmerflow").help_template(HELP_TEMPLATE);
        if sub.get_arguments().any(|a| a.get_short() == Some('V')) {
            sub.arg(clap::Arg::new("version").long("version").action(clap::ArgAction::Version).help("Print version"))
        } else {
            sub
        }
    })
}

/// The name of the multi-sample pipeline, which the Python package's `kmerflow` runs.
const PIPELINE: &str = "pipeline";

/// `kmerflow pipeline` as this executable knows it: listed in `kmerflow --help` and `kmerflow
/// help pipeline`, refused with a pointer to the Python package's `kmerflow` (see [`parse`]).
fn pipeline_command() -> clap::Command {
    clap::Command::new(PIPELINE)
        .about("Many samples: khmer's protocol per sample on a Dask cluster, resumable, with reports")
        .after_help(
            "Run by the kmerflow Python package with the `dask` extra (pip install 'kmerflow[dask]'); \
             its `kmerflow pipeline --help` gives the options.\n\n\
             Examples:\n  kmerflow pipeline samples.tsv -o results --local-cluster 4",
        )
        .arg(clap::Arg::new("args").num_args(0..).trailing_var_arg(true).allow_hyphen_values(true))
}

/// A failed command line: the exit code and the message to show (one line for data errors,
/// clap's usage text for usage errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// 1 for data or I/O errors, 2 for usage errors, 130/143 when interrupted.
    pub code: i32,
    /// What went wrong, ready to print.
    pub message: String,
    /// The file and OS error when the command failed on a named file (a missing input, a
    /// refused output), for front ends that raise a typed error (Python's `FileNotFoundError`).
    pub file: Option<FileFailure>,
}

/// The OS error of a command that failed on a named file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFailure {
    /// The file.
    pub path: String,
    /// The kind of the error.
    pub kind: std::io::ErrorKind,
    /// The OS error number, when the error came from the OS.
    pub os_code: Option<i32>,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// What a successful command returns.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    /// The command's typed summary as JSON (`null` for help, version and `--info` requests and
    /// for a run ended quietly by a closed output pipe).
    pub summary: serde_json::Value,
    /// The messages the run emitted, in order.
    pub messages: Vec<Message>,
    /// The run report ([`report::Report::document`]; `null` where the summary is).
    pub report: serde_json::Value,
}

/// A parsed command line: the command and its arguments as clap matched them (for the
/// report's parameters).
struct Parsed {
    cli: Cli,
    parameters: serde_json::Value,
}

/// Parses `argv`; `None` when it was a help or version request (printed on stdout; a command's
/// adds [`info::pointer`] on stderr) or an `--info` request (the citation notice, on stderr).
fn parse(argv: &[OsString]) -> Result<Option<Parsed>, CliError> {
    let usage = |e: clap::Error| CliError { code: EXIT_USAGE, message: e.render().to_string(), file: None };
    let is_command = |c: &str| c != PIPELINE && cli_command().find_subcommand(c).is_some();
    if let Some(command) = info::requested(argv, is_command) {
        eprint!("{}", info::notice(&command));
        return Ok(None);
    }
    let matches = match cli_command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => {
            // --help / --version: print to stdout; a closed stdout is not an error.
            let _ = e.print();
            if let Some(command) = info::command_of(argv, is_command) {
                eprint!("{}", info::pointer(command));
            }
            return Ok(None);
        }
        Err(e) => return Err(usage(e)),
    };
    if matches.subcommand_name() == Some(PIPELINE) {
        let message = "kmerflow pipeline: error: the pipeline runs on Dask in the kmerflow Python package \
                       (pip install 'kmerflow[dask]'; then `kmerflow pipeline ...` or `python -m kmerflow pipeline ...`); \
                       this executable runs one command in one process\n";
        return Err(CliError { code: EXIT_USAGE, message: message.to_string(), file: None });
    }
    let mut parameters = serde_json::Value::Null;
    if let Some((command, sub)) = matches.subcommand() {
        if sub.get_flag("info") {
            eprint!("{}", info::notice(command));
            return Ok(None);
        }
        flags::check_khmer_ksize(command, sub).map_err(usage)?;
        flags::check_table_memory(command, sub).map_err(usage)?;
        if let Some(cmd) = cli_command().find_subcommand(command) {
            parameters = report::parameters(cmd, sub);
        }
    }
    let cli = Cli::from_arg_matches(&matches).map_err(usage)?;
    Ok(Some(Parsed { cli, parameters }))
}

/// Checks `argv` (program name first) as a run of it would check its command line, without
/// running anything: the usage error the run would fail with (exit 2; clap's value parsers, the
/// khmer layout's k-mer size; for a sharded command line, what the Python package's sharded run
/// refuses before its cluster starts: [`sharded::check`]). Front ends that build command lines
/// (the Python pipeline) refuse bad parameters with it before they start. A help, version or
/// `--info` request is printed as by a run.
pub fn check(argv: Vec<OsString>) -> Result<(), CliError> {
    match parse(&argv)? {
        Some(parsed) => sharded::check(&parsed.cli.command, &argv),
        None => Ok(()),
    }
}

/// Parses and runs `argv` (program name first) within `run`, whose threads are set from `-T`
/// (all cores by default) and whose messages, progress counters, metrics and cancellation the
/// command uses. Nothing is printed except help and version requests (on stdout) and `--info`
/// (on stderr); `--metrics` files are written. A closed output pipe ends quietly and succeeds;
/// a cancelled run fails with [`EXIT_INTERRUPTED`] (or the code stored in the cancel token's
/// flag, see [`run`]).
pub fn execute_with(argv: Vec<OsString>, run: &RunContext) -> Result<Outcome, CliError> {
    match parse(&argv)? {
        Some(parsed) => match sharded::refusal(&parsed.cli.command) {
            Some(refused) => Err(refused),
            None => execute_cli(parsed, &argv, run, None),
        },
        None => Ok(Outcome { summary: serde_json::Value::Null, messages: Vec::new(), report: serde_json::Value::Null }),
    }
}

/// Parses and runs `argv` (program name first) as the command line does: messages on stderr
/// (informational ones unless `-q`), the progress line on a terminal, the resource summary
/// line; `cancel` stops the run. Returns the run report when the command line asks for it to
/// be rendered (`--html`, `--plots`, `--multiqc`), which only a caller that `renders` can do
/// (anywhere else those flags are refused before the run).
fn execute_printing(argv: Vec<OsString>, cancel: CancelToken, renders: bool) -> Result<Option<Value>, CliError> {
    let Some(parsed) = parse(&argv)? else { return Ok(None) };
    if let Some(refused) = sharded::refusal(&parsed.cli.command) {
        return Err(refused);
    }
    let settings = parsed.cli.command.settings();
    if settings.renders && !renders {
        return Err(CliError {
            code: EXIT_USAGE,
            message: format!(
                "kmerflow {}: --html, --plots and --multiqc are made by the kmerflow Python package's command                  (pip install kmerflow); this executable writes --report-json",
                parsed.cli.command.name()
            ),
            file: None,
        });
    }
    let terminal = Terminal::new(&argv, settings.quiet, cancel);
    let outcome = execute_cli(parsed, &argv, terminal.run(), Some(terminal.console()))?;
    terminal.finish();
    Ok(settings.renders.then_some(outcome.report))
}

/// Declares the files of command `name`'s run that are not the command's own, before the run
/// (one-process or sharded): `--metrics`, `--report-json`, `--html`, `--plots` and
/// `--multiqc` as side outputs of `run`, which the command's preflight checks with its own
/// outputs and their dependencies ([`kmerflow_core::run::files::preflight`]).
pub(crate) fn declare_run_files(name: &str, settings: &Settings, run: &RunContext) {
    for output in report::side_outputs(name, settings) {
        run.add_side_output(output);
    }
}

/// Runs the parsed command line (given as `argv`) within `run`, showing progress on `console`
/// when there is one; writes `--metrics` and `--report-json`.
fn execute_cli(
    parsed: Parsed,
    argv: &[OsString],
    run: &RunContext,
    console: Option<&Arc<Console>>,
) -> Result<Outcome, CliError> {
    let Parsed { cli, parameters } = parsed;
    let name = cli.command.name();
    let settings = cli.command.settings();
    let failed = |e| run_failure(name, run, e);
    if settings.metrics.is_some() && !kmerflow_core::run::metrics::ENABLED {
        return Err(failed(kmerflow_core::Error::invalid(
            "--metrics: metrics are not compiled in (build with the `metrics` feature)",
        )));
    }
    declare_run_files(name, &settings, run);
    run.set_threads(settings.threads.unwrap_or_else(kmerflow_core::pipeline::available_threads));
    if let Some(console) = console {
        console.start_progress(name, run);
    }
    let mut ctx = Ctx { run: run.clone(), metrics: settings.metrics, console: console.cloned(), table_sizing: None };
    let started = std::time::Instant::now();
    let report = report::Report::start(argv);
    let result = cli.command.run(&mut ctx);
    if let Some(console) = console {
        console.finish_progress();
    }
    let summary = match result {
        Ok(summary) => summary,
        Err(e) if e.is_broken_pipe() => {
            return Ok(Outcome { summary: Value::Null, messages: run.messages(), report: Value::Null })
        }
        Err(e) => return Err(failed(e)),
    };
    report::warn_full_tables(&summary, run);
    if let Some(path) = &ctx.metrics {
        metrics::write(path, name, argv, run, started).map_err(failed)?;
    }
    let document = report.document(name, parameters, run, &summary, ctx.table_sizing.as_ref());
    if let Some(path) = &settings.report_json {
        report::write(path, &document).map_err(failed)?;
    }
    Ok(Outcome { summary, messages: run.messages(), report: document })
}

/// The error of the run of command `name` within `run` that failed with `e`. Once cancelled,
/// whatever error ends the run (a decoder's, a closed pipe's) is the interruption's.
pub(crate) fn run_failure(name: &str, run: &RunContext, e: kmerflow_core::Error) -> CliError {
    match e {
        _ if e.is_cancelled() || run.cancel_token().is_cancelled() => CliError {
            code: match run.cancel_token().reason() {
                r @ 2.. => i32::try_from(r).unwrap_or(EXIT_INTERRUPTED),
                _ => EXIT_INTERRUPTED,
            },
            message: format!("kmerflow {name}: interrupted"),
            file: None,
        },
        e => {
            let file = match &e {
                kmerflow_core::Error::Io { path, source } => {
                    Some(FileFailure { path: path.clone(), kind: source.kind(), os_code: source.raw_os_error() })
                }
                _ => None,
            };
            CliError { code: EXIT_DATA, message: format!("kmerflow {name}: error: {e}"), file }
        }
    }
}

/// Parses and runs `argv` (program name first), printing as the command line does (see
/// [`execute_printing`]); returns the error to print and the exit code on failure.
pub fn execute(argv: Vec<OsString>) -> Result<(), CliError> {
    execute_printing(argv, CancelToken::new(), false).map(|_| ())
}

/// Runs `argv` (program name first) as the `kmerflow` executable: SIGINT and SIGTERM cancel
/// the run (temporary files are removed, exit 130 / 143), any error is printed on stderr, and
/// the exit code is returned. `--html`, `--plots` and `--multiqc` are refused (see
/// [`run_rendering`]).
pub fn run(argv: Vec<OsString>) -> i32 {
    run_rendering(argv, false).0
}

/// [`run`] for a front end that renders reports (the Python package's `kmerflow` command):
/// with `renders`, a successful run given `--html`, `--plots` or `--multiqc` also returns its
/// report, for the caller to render.
pub fn run_rendering(argv: Vec<OsString>, renders: bool) -> (i32, Option<Value>) {
    let cancel = CancelToken::new();
    let _signals = signals::Handlers::install(&cancel);
    match execute_printing(argv, cancel, renders) {
        Ok(report) => (0, report),
        Err(e) => {
            eprintln!("{}", e.message.trim_end());
            (e.code, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<OsString> {
        std::iter::once("kmerflow").chain(args.iter().copied()).map(OsString::from).collect()
    }

    #[test]
    fn command_definitions_are_consistent() {
        cli_command().debug_assert();
    }

    #[test]
    fn every_subcommand_prints_the_same_version() {
        let mut cmd = cli_command();
        let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
        for name in names {
            let err = cmd.try_get_matches_from_mut(["kmerflow", &name, "--version"]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion, "{name}");
            assert_eq!(err.to_string(), format!("kmerflow {}\n", env!("CARGO_PKG_VERSION")), "{name}");
        }
    }

    #[test]
    fn every_subcommand_has_examples_in_its_help() {
        for sub in cli_command().get_subcommands() {
            let help = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(help.contains("Examples:\n  kmerflow "), "{} --help has no examples", sub.get_name());
        }
    }

    #[test]
    fn version_and_help_succeed() {
        assert_eq!(execute(argv(&["--version"])), Ok(()));
        assert_eq!(
            execute_with(argv(&["fastq-to-fasta", "--help"]), &RunContext::new()).unwrap().summary,
            serde_json::Value::Null
        );
    }

    #[test]
    fn usage_errors_exit_2() {
        for args in [&["no-such-command"][..], &["fastq-to-fasta"], &["readstats", "x", "--bogus"]] {
            let err = execute(argv(args)).unwrap_err();
            assert_eq!(err.code, EXIT_USAGE, "{args:?}");
        }
        let err = execute(argv(&["fastq-to-fasta", "x.fq", "--gzip", "--bzip"])).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
    }

    #[test]
    fn negative_values_are_read_and_refused_by_range() {
        for args in [&["normalize-by-median", "-C", "-1", "x.fq"][..], &["filter-abund", "-C", "-1", "t", "x.fq"]] {
            let err = execute(argv(args)).unwrap_err();
            assert_eq!(err.code, EXIT_USAGE, "{args:?}");
            assert!(err.message.contains("-1 is not in the range 0 <= C < 256"), "{}", err.message);
        }
        let err = execute(argv(&["sample-reads-randomly", "-N", "-5", "x.fq"])).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
    }

    #[test]
    fn a_memory_too_small_for_one_entry_a_table_is_a_usage_error() {
        let err = execute(argv(&["load-into-counting", "-M", "1", "t.ct", "x.fq"])).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
        assert!(
            err.message.contains("--max-memory-usage") && err.message.contains("at least 4 bytes"),
            "{}",
            err.message
        );
        // abundance-dist-single keeps room for its tracking filter: 4 bytes give 4 tables < 1 entry.
        let err = execute(argv(&["abundance-dist-single", "-M", "4", "x.fq", "h"])).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
        // A nodegraph holds 8 entries a byte: -M 1 with one table is 8 entries, a file error later.
        let err = execute(argv(&["load-graph", "-M", "1", "-N", "1", "g", "/nonexistent/x.fq"])).unwrap_err();
        assert_eq!(err.code, EXIT_DATA);
    }

    /// A small FASTQ file in a temporary directory.
    fn fastq(dir: &std::path::Path) -> String {
        let path = dir.join("in.fq");
        std::fs::write(&path, "@a\nACGT\n+\nIIII\n@b\nGGN\n+\nIII\n").unwrap();
        path.to_str().unwrap().to_string()
    }

    #[test]
    fn the_outcome_carries_the_report_and_renders_are_refused_here() {
        let dir = tempfile::tempdir().unwrap();
        let input = fastq(dir.path());
        let out = dir.path().join("out.fa");
        let out = out.to_str().unwrap();
        let outcome = execute_with(argv(&["fastq-to-fasta", &input, "-o", out]), &RunContext::new()).unwrap();
        let report = &outcome.report;
        assert_eq!(report["schema_version"], report::SCHEMA_VERSION);
        assert_eq!(report["command"], "fastq-to-fasta");
        assert_eq!(report["parameters"]["output"], out);
        assert_eq!(report["inputs"][0]["bytes"], 28);
        assert_eq!(report["outputs"][0]["path"], out);
        assert_eq!(report["summary"], outcome.summary);
        let err = execute(argv(&["fastq-to-fasta", &input, "-o", out, "--html", "r.html"])).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
        assert!(err.message.contains("Python package"), "{}", err.message);
    }

    #[cfg(feature = "metrics")]
    #[test]
    fn metrics_json_is_written_on_success() {
        let dir = tempfile::tempdir().unwrap();
        let input = fastq(dir.path());
        let json = dir.path().join("m.json");
        let out = dir.path().join("out.fa");
        let args = [
            "fastq-to-fasta",
            "-q",
            "-T",
            "2",
            &input,
            "-o",
            out.to_str().unwrap(),
            "--metrics",
            json.to_str().unwrap(),
        ];
        execute(argv(&args)).unwrap();
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(m["command"], "fastq-to-fasta");
        assert_eq!(m["threads"], 2);
        let input_entry = m["inputs"].as_array().unwrap().iter().find(|i| i["path"] == input.as_str()).unwrap();
        assert_eq!(input_entry["bytes_decompressed"], 28);
        assert!(m["pipelines"].as_array().unwrap().iter().any(|p| p["records"] == 2));
        assert!(m["throughput"]["decompressed_mb_per_s"].as_f64().unwrap() > 0.0);
    }

    #[cfg(not(feature = "metrics"))]
    #[test]
    fn metrics_flag_says_they_are_not_compiled_in() {
        let dir = tempfile::tempdir().unwrap();
        let input = fastq(dir.path());
        let err = execute(argv(&["readstats", "-q", &input, "--metrics", "m.json"])).unwrap_err();
        assert_eq!(err.code, EXIT_DATA);
        assert!(err.message.contains("metrics are not compiled in"), "{}", err.message);
    }
}
