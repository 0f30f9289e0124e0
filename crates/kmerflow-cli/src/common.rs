//! Options and services shared by every command: `-q`, `-T/--threads`, `--metrics`,
//! `--gzip/--bzip`, the per-run context with the progress indicator.

use crate::progress::Progress;
use clap::Args;
use kmerflow_core::io::Compression;

/// The settings every command has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Suppress informational messages and the resource summary.
    pub quiet: bool,
    /// Worker threads; `None` = all available cores.
    pub threads: Option<usize>,
    /// Where to write the run's metrics as JSON.
    pub metrics: Option<String>,
}

/// `-q/--quiet`, `-T/--threads` and `--metrics`, flattened into every command's arguments. A
/// command where khmer uses `-T` for something else drops the short flag with
/// `#[command(mut_arg("threads", |a| a.short(None)))]`.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Do not print informational messages or the resource summary
    #[arg(short, long)]
    pub quiet: bool,
    /// Number of worker threads [default: all available cores]
    #[arg(short = 'T', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Write per-stage timings, byte and record counts and throughput as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<String>,
    /// Print the publications to cite for this command and exit
    #[arg(long)]
    pub info: bool,
}

impl CommonArgs {
    /// The settings these flags give.
    pub fn settings(&self) -> Settings {
        Settings { quiet: self.quiet, threads: self.threads.map(|t| t as usize), metrics: self.metrics.clone() }
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

/// What a running command gets: its settings, a place for messages and the progress line.
pub struct Ctx {
    /// `-q` was given.
    pub quiet: bool,
    /// Worker threads to use.
    pub threads: usize,
    /// Where to write the metrics JSON (`--metrics`).
    pub metrics: Option<String>,
    progress: Progress,
}

impl Ctx {
    /// The context of command `name` with `settings`; also sets the threads used for
    /// parallel (de)compression ([`kmerflow_core::io::set_threads`]).
    pub fn new(settings: Settings, name: &'static str) -> Self {
        let threads = settings.threads.unwrap_or_else(kmerflow_core::pipeline::available_threads);
        kmerflow_core::io::set_threads(threads);
        Ctx {
            quiet: settings.quiet,
            threads,
            metrics: settings.metrics,
            progress: Progress::new(name, !settings.quiet),
        }
    }

    /// Prints an informational (data-like) line on stderr unless `-q`.
    pub fn info(&mut self, message: impl std::fmt::Display) {
        if !self.quiet {
            self.progress.clear();
            eprintln!("{message}");
        }
    }

    /// The callback reporting records handled so far to the progress line.
    pub fn progress(&mut self) -> impl FnMut(u64) + '_ {
        |n| self.progress.update(n)
    }

    /// Stops the progress line and removes it, if one was drawn.
    pub fn finish_progress(&mut self) {
        self.progress.finish();
    }
}
