//! `kmerflow count-median`: per-read k-mer count median, mean and standard deviation (khmer's
//! count-median.py).

use clap::Args;
use kmerflow_core::ops::count_median;

/// Arguments of `count-median`.
#[derive(Args, Debug, Clone)]
pub struct CountMedianArgs {
    /// Accepted for khmer compatibility (inputs are always checked).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Saved countgraph.
    pub graph: String,
    /// Reads.
    pub input: String,
    /// Output CSV (`-` for stdout).
    pub output: String,
}

/// Runs the command.
pub fn execute(args: &CountMedianArgs) -> kmerflow_core::Result<()> {
    let opts = count_median::Options {
        graph: args.graph.clone(),
        input: args.input.clone(),
        output: args.output.clone(),
    };
    let summary = count_median::run(&opts)?;
    eprintln!("{} reads; {} shorter than k skipped", summary.reads, summary.short_reads);
    Ok(())
}
