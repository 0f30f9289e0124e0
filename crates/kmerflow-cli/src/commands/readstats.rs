//! `kmerflow readstats`.

use crate::common::{summary_json, CommonArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::reads::readstats::{readstats, ReadstatsOptions};
use serde_json::Value;

/// Arguments of `readstats` (khmer's readstats.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Reports the number of bases, the number of sequences and the average sequence length of each
file, then the totals. Any unreadable or malformed file is an error (exit 1).

Examples:
  kmerflow readstats test-abund-read-2.fa
  kmerflow readstats --csv *.fq.gz -o stats.csv")]
pub struct Args {
    /// Input FASTA/FASTQ files
    #[arg(required = true)]
    pub filenames: Vec<String>,
    /// Output file for the statistics (- for stdout)
    #[arg(short, long, value_name = "filename", default_value = "-")]
    pub output: String,
    /// Use the CSV format for the statistics, including column headers
    #[arg(long)]
    pub csv: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `readstats`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = ReadstatsOptions { inputs: args.filenames, output: args.output, csv: args.csv };
    summary_json(&readstats(&opts, &ctx.run)?)
}
