//! `kmerflow normalize-by-median`: khmer's digital normalization (normalize-by-median.py).

use clap::Args as ClapArgs;
use kmerflow_core::ops::diginorm;
use kmerflow_core::ops::read_filter::output_compression;
use kmerflow_core::ops::sizing::{parse_memory, TableParams};
use kmerflow_core::Result;

/// khmer's counting arguments (`-k -N -x -M -U --fp-rate --small-count`).
#[derive(ClapArgs, Debug, Clone)]
pub struct CountingArgs {
    /// k-mer size (at most 32).
    #[arg(short = 'k', long = "ksize", default_value_t = 32)]
    pub ksize: usize,
    /// Number of tables.
    #[arg(short = 'N', long = "n_tables", visible_alias = "n-tables", default_value_t = 4)]
    pub n_tables: usize,
    /// Upper bound on the size of each table.
    #[arg(short = 'x', long = "max-tablesize", visible_alias = "max_tablesize", default_value_t = 1e6)]
    pub max_tablesize: f64,
    /// Memory for all tables together (K/M/G/T suffixes, decimal).
    #[arg(short = 'M', long = "max-memory-usage", visible_alias = "max_memory_usage",
          value_parser = parse_memory_arg, conflicts_with = "max_tablesize")]
    pub max_memory: Option<f64>,
    /// Approximate number of distinct k-mers, to size the tables.
    #[arg(short = 'U', long = "unique-kmers", default_value_t = 0.0)]
    pub unique_kmers: f64,
    /// Target false-positive rate for -U sizing.
    #[arg(long = "fp-rate")]
    pub fp_rate: Option<f64>,
    /// 4-bit counters (max 15) instead of 8-bit.
    #[arg(long = "small-count")]
    pub small_count: bool,
}

fn parse_memory_arg(text: &str) -> std::result::Result<f64, String> {
    parse_memory(text).map_err(|e| e.to_string())
}

impl CountingArgs {
    /// The core's table parameters.
    pub fn table_params(&self, force: bool) -> TableParams {
        TableParams {
            ksize: self.ksize,
            n_tables: self.n_tables,
            max_tablesize: self.max_tablesize,
            max_memory: self.max_memory,
            unique_kmers: self.unique_kmers,
            fp_rate: self.fp_rate,
            small_count: self.small_count,
            force,
        }
    }
}

/// `--gzip`/`--bzip` output compression (mutually exclusive).
#[derive(ClapArgs, Debug, Clone)]
pub struct CompressionArgs {
    /// gzip-compress the output.
    #[arg(long, conflicts_with = "bzip")]
    pub gzip: bool,
    /// bzip2-compress the output.
    #[arg(long)]
    pub bzip: bool,
}

/// Parses khmer's cutoff range 0 <= C < 256.
fn parse_cutoff(text: &str) -> std::result::Result<u32, String> {
    let c: i64 = text.parse().map_err(|_| format!("invalid cutoff {text:?}"))?;
    if (0..256).contains(&c) {
        Ok(c as u32)
    } else {
        Err(format!("cutoff {c} must be in the range 0 <= C < 256"))
    }
}

/// Discard reads whose median k-mer abundance already reaches the cutoff (digital normalization).
#[derive(ClapArgs, Debug, Clone)]
pub struct Args {
    #[command(flatten)]
    pub counting: CountingArgs,
    /// Keep a bundle unless every read's median k-mer count is >= C.
    #[arg(short = 'C', long = "cutoff", default_value = "20", value_parser = parse_cutoff)]
    pub cutoff: u32,
    /// Require every read to be paired.
    #[arg(short = 'p', long = "paired", conflicts_with = "force_single")]
    pub paired: bool,
    /// Treat every read alone, ignoring pairing.
    #[arg(long = "force_single", visible_alias = "force-single")]
    pub force_single: bool,
    /// A file of unpaired reads processed after the others.
    #[arg(short = 'u', long = "unpaired-reads")]
    pub unpaired: Option<String>,
    /// Save the final countgraph to this file.
    #[arg(short = 's', long = "savegraph")]
    pub savegraph: Option<String>,
    /// Start from this saved countgraph.
    #[arg(short = 'l', long = "loadgraph")]
    pub loadgraph: Option<String>,
    /// CSV report `total,kept,f_kept`.
    #[arg(short = 'R', long = "report")]
    pub report: Option<String>,
    /// Report every this many reads.
    #[arg(long = "report-frequency", default_value_t = 100_000)]
    pub report_frequency: u64,
    /// Continue past unreadable inputs and a high false-positive rate.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Single output file (`-` = stdout) instead of `<input>.keep`.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    #[command(flatten)]
    pub compression: CompressionArgs,
    /// Worker threads (output is identical for any number).
    #[arg(short = 'T', long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Write the summary (including reads dropped for being shorter than k) as JSON.
    #[arg(long = "report-json")]
    pub report_json: Option<String>,
    /// No informational messages.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Input sequence files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
}

/// Runs the command.
pub fn execute(args: &Args) -> Result<()> {
    let opts = diginorm::Options {
        inputs: args.inputs.clone(),
        table: args.counting.table_params(args.force),
        cutoff: args.cutoff,
        paired: args.paired,
        force_single: args.force_single,
        unpaired: args.unpaired.clone(),
        savegraph: args.savegraph.clone(),
        loadgraph: args.loadgraph.clone(),
        report: args.report.clone(),
        report_frequency: args.report_frequency.max(1),
        output: args.output.clone(),
        compression: output_compression(args.compression.gzip, args.compression.bzip),
        force: args.force,
        threads: args.threads,
        quiet: args.quiet,
        report_json: args.report_json.clone(),
    };
    diginorm::run(&opts).map(|_| ())
}
