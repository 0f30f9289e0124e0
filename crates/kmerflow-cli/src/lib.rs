//! The `kmerflow` command line: one subcommand per khmer script, shared conventions
//! (help with examples, `-q`, `-T/--threads`, `--metrics FILE.json`, progress on a terminal, a
//! resource summary line on stderr, exit codes 0 success / 1 data or I/O error / 2 usage error).
//!
//! [`execute`] parses and runs a command line and returns a [`CliError`] (the Python
//! bindings turn it into an exception); [`run`] is the executable's entry point, printing the
//! error and returning the exit code.

pub mod commands;
pub mod common;
pub mod flags;
pub mod info;
pub mod metrics;
pub mod progress;
pub mod report;

use clap::{CommandFactory, FromArgMatches, Parser};
use commands::Command;
use common::Ctx;
use std::ffi::OsString;

/// Exit code of a data or I/O error.
pub const EXIT_DATA: i32 = 1;
/// Exit code of a usage error.
pub const EXIT_USAGE: i32 = 2;

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
/// `--version` where khmer's `-V` means something else.
fn cli_command() -> clap::Command {
    Cli::command().mut_subcommands(|sub| {
        let sub = sub.display_name("kmerflow");
        if sub.get_arguments().any(|a| a.get_short() == Some('V')) {
            sub.arg(clap::Arg::new("version").long("version").action(clap::ArgAction::Version).help("Print version"))
        } else {
            sub
        }
    })
}

/// A failed command line: the exit code and the message to show (one line for data errors,
/// clap's usage text for usage errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// 1 for data or I/O errors, 2 for usage errors.
    pub code: i32,
    /// What went wrong, ready to print.
    pub message: String,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// Parses and runs `argv` (program name first). Help and version requests print to stdout and
/// succeed; a closed output pipe ends quietly and succeeds.
pub fn execute(argv: Vec<OsString>) -> Result<(), CliError> {
    let usage = |e: clap::Error| CliError { code: EXIT_USAGE, message: e.render().to_string() };
    if let Some(command) = info::requested(&argv, |c| cli_command().find_subcommand(c).is_some()) {
        eprint!("{}", info::notice(&command));
        return Ok(());
    }
    let matches = match cli_command().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => {
            // --help / --version: print to stdout; a closed stdout is not an error.
            let _ = e.print();
            return Ok(());
        }
        Err(e) => return Err(usage(e)),
    };
    if let Some((command, sub)) = matches.subcommand() {
        if sub.get_flag("info") {
            eprint!("{}", info::notice(command));
            return Ok(());
        }
        flags::check_khmer_ksize(command, sub).map_err(usage)?;
    }
    let cli = Cli::from_arg_matches(&matches).map_err(usage)?;
    let name = cli.command.name();
    let data_error =
        |e: kmerflow_core::Error| CliError { code: EXIT_DATA, message: format!("kmerflow {name}: error: {e}") };
    let mut ctx = Ctx::new(cli.command.settings(), name);
    if ctx.metrics.is_some() && !kmerflow_core::pipeline::metrics::ENABLED {
        ctx.finish_progress();
        return Err(data_error(kmerflow_core::Error::invalid(
            "--metrics: metrics are not compiled in (build with the `metrics` feature)",
        )));
    }
    if ctx.metrics.is_some() {
        // Only this run is reported (an embedding process may run several commands).
        kmerflow_core::pipeline::metrics::clear();
    }
    let report = report::Report::start(&argv);
    let started = std::time::Instant::now();
    match cli.command.run(&mut ctx) {
        Ok(()) => {
            ctx.finish_progress();
            if let Some(path) = &ctx.metrics {
                metrics::write(path, name, &argv, ctx.threads, started).map_err(data_error)?;
            }
            if !ctx.quiet {
                eprintln!("{}", report.line());
            }
            Ok(())
        }
        Err(e) if e.is_broken_pipe() => {
            ctx.finish_progress();
            Ok(())
        }
        Err(e) => {
            ctx.finish_progress();
            Err(data_error(e))
        }
    }
}

/// Runs `argv` (program name first), prints any error on stderr and returns the exit code.
pub fn run(argv: Vec<OsString>) -> i32 {
    match execute(argv) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{}", e.message.trim_end());
            e.code
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
        assert_eq!(execute(argv(&["fastq-to-fasta", "--help"])), Ok(()));
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

    /// A small FASTQ file in a temporary directory.
    fn fastq(dir: &std::path::Path) -> String {
        let path = dir.join("in.fq");
        std::fs::write(&path, "@a\nACGT\n+\nIIII\n@b\nGGN\n+\nIII\n").unwrap();
        path.to_str().unwrap().to_string()
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
