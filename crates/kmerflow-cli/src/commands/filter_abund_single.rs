//! `kmerflow filter-abund-single`: count one file, then trim its reads at low-abundance
//! k-mers (khmer's filter-abund-single.py).

use super::filter_abund::FilterArgs;
use super::normalize_by_median::CountingArgs;
use clap::Args as ClapArgs;
use kmerflow_core::ops::filter_abund;
use kmerflow_core::Result;

/// Count k-mers of a file and trim its reads at k-mers below the cutoff.
#[derive(ClapArgs, Debug, Clone)]
pub struct Args {
    #[command(flatten)]
    pub counting: CountingArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Save the countgraph to this file after filtering.
    #[arg(long = "savegraph")]
    pub savegraph: Option<String>,
    /// Input sequence file.
    pub input: String,
}

/// Runs the command.
pub fn execute(args: &Args) -> Result<()> {
    let opts = filter_abund::SingleOptions {
        input: args.input.clone(),
        table: args.counting.table_params(args.filter.force),
        savegraph: args.savegraph.clone(),
        filter: args.filter.params(),
    };
    filter_abund::run_single(&opts).map(|_| ())
}
