//! Options and services shared by every command: `-q`, `-T/--threads`, `--metrics`, the
//! report flags, `--gzip/--bzip`, and what a running command gets.

use crate::console::Console;
use clap::Args;
use kmerflow_core::io::Compression;
use kmerflow_core::ops::autosize::AutoSize;
use kmerflow_core::run::{RunContext, MAX_THREADS};
use std::sync::Arc;

/// The settings every command has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Suppress informational messages and the resource summary.
    pub quiet: bool,
    /// Worker threads; `None` = all available cores.
    pub threads: Option<usize>,
    /// Where to write the run's metrics as JSON.
    pub metrics: Option<String>,
    /// Where to write the run's report as JSON (`--report-json`).
    pub report_json: Option<String>,
    /// Whether the report is also to be rendered (`--html`, `--plots` or `--multiqc`), which
    /// the Python package's `kmerflow` command does.
    pub renders: bool,
    /// The HTML page to render (`--html`).
    pub html: Option<String>,
    /// The directory of the PNG plots to render (`--plots`).
    pub plots: Option<String>,
    /// The directory of the MultiQC files to render (`--multiqc`).
    pub multiqc: Option<String>,
}

/// `-q/--quiet`, `-T/--threads`, `--metrics`, `--info` and the report flags (`--report-json`,
/// `--html`, `--plots`, `--multiqc`), flattened into every command's arguments. A command where
/// khmer uses `-T` for something else drops the short flag with
/// `#[command(mut_arg("threads", |a| a.short(None)))]`.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Do not print informational messages or the resource summary
    #[arg(short, long)]
    pub quiet: bool,
    /// Number of worker threads, 1 to 1024 [default: all available cores]
    #[arg(short = 'T', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_THREADS as i64), allow_negative_numbers = true)]
    pub threads: Option<u32>,
    /// Write per-stage timings, byte and record counts and throughput as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<String>,
    /// Write the run's report as JSON to FILE: parameters, inputs and outputs with sizes,
    /// counts, timings, peak memory, warnings (docs/report-schema.md)
    #[arg(long = "report-json", value_name = "FILE")]
    pub report_json: Option<String>,
    /// Write the report as one self-contained HTML page with plots to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
    /// Write the report's plots as PNG files into DIR (needs matplotlib: kmerflow[report])
    #[arg(long, value_name = "DIR")]
    pub plots: Option<String>,
    /// Write MultiQC custom-content files (*_mqc.json) of the report into DIR
    #[arg(long, value_name = "DIR")]
    pub multiqc: Option<String>,
    /// Print the publications to cite for this command and exit
    #[arg(long)]
    pub info: bool,
}

impl CommonArgs {
    /// The settings these flags give.
    pub fn settings(&self) -> Settings {
        Settings {
            quiet: self.quiet,
            threads: self.threads.map(|t| t as usize),
            metrics: self.metrics.clone(),
            report_json: self.report_json.clone(),
            renders: self.html.is_some() || self.plots.is_some() || self.multiqc.is_some(),
            html: self.html.clone(),
            plots: self.plots.clone(),
            multiqc: self.multiqc.clone(),
        }
    }
}

/// khmer's mutually exclusive `--gzip` / `--bzip` output compression flags.
#[derive(Debug, Clone, Args)]
#[group(id = "compression", multiple = false)]
pub struct CompressionArgs {
    /// Compress output using gzip (without this, outputs named *.gz, *.bz2, *.xz or *.zst are
    /// compressed accordingly)
    #[arg(long)]
    pub gzip: bool,
    /// Compress output using bzip2
    #[arg(long)]
    pub bzip: bool,
}

impl CompressionArgs {
    /// The explicit compression, `None` to choose by the output name's extension.
    pub fn compression(&self) -> Option<Compression> {
        if self.gzip {
            Some(Compression::Gzip)
        } else if self.bzip {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }
}

/// The output flags of the read-file commands: khmer's `-f/--force` (accepted; outputs are
/// always replaced) and `--gzip`/`--bzip`.
#[derive(Debug, Clone, Args)]
pub struct ReadOutputArgs {
    /// Accepted for khmer compatibility (outputs are always replaced)
    #[arg(short, long)]
    pub force: bool,
    #[command(flatten)]
    pub compression: CompressionArgs,
}

/// The read files that a command takes as its last arguments, at least one. A command that
/// says more of them changes the help with `#[command(mut_arg("inputs", |a| a.help(...)))]`.
#[derive(Debug, Clone, Args)]
pub struct ReadFilesArgs {
    /// Read files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
}

/// What a running command gets: the run's context (threads, messages, progress, cancellation),
/// where to write `--metrics`, and the console when the command line prints; the command leaves
/// here how its table was sized automatically, for the report.
pub struct Ctx {
    /// The run's context, handed to the core's operations.
    pub run: RunContext,
    /// Where to write the metrics JSON (`--metrics`).
    pub metrics: Option<String>,
    /// The terminal the command line speaks to (`None` when called as a library).
    pub console: Option<Arc<Console>>,
    /// How the command's table was sized by `-M auto` or `-U` alone (the report's
    /// `table_sizing`).
    pub table_sizing: Option<AutoSize>,
}

impl Ctx {
    /// Emits an informational message (shown by the console unless `-q`).
    pub fn info(&self, message: impl std::fmt::Display) {
        self.run.info(message.to_string());
    }

    /// Prints one of the command's results on stderr, even with `-q` (khmer prints
    /// unique-kmers' estimates so); as a library, the results are in the summary only.
    pub fn result(&self, line: impl std::fmt::Display) {
        if let Some(console) = &self.console {
            console.print(&line.to_string());
        }
    }
}

/// A command's summary as JSON (what [`crate::execute_with`] returns).
pub fn summary_json(summary: &impl serde::Serialize) -> kmerflow_core::Result<serde_json::Value> {
    serde_json::to_value(summary).map_err(|e| kmerflow_core::Error::invalid(format!("cannot encode the summary: {e}")))
}
