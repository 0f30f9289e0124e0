//! `kmerflow filter-abund-single`: count one file, then trim its reads at low-abundance
//! k-mers (khmer's filter-abund-single.py).

use super::counting_args::CountingArgs;
use super::filter_abund::FilterArgs;
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::filter_abund;
use kmerflow_core::Result;
use serde_json::Value;

/// Count k-mers of a file and trim its reads at k-mers below the cutoff.
#[derive(ClapArgs, Debug, Clone)]
// -V is --variable-coverage, as in khmer: the version is `--version` alone
#[command(disable_version_flag = true)]
#[command(after_help = "\
The input is read twice: once to count its k-mers, once to trim its reads (so it must be a
file, not a pipe). Reads are cut before their first k-mer whose count is below -C; with -V only
reads whose median count reaches -Z are trimmed. Identical for any -T and equal to khmer's.

Examples:
  kmerflow filter-abund-single -k 20 -M 4G -C 2 -o reads.filt.fq reads.fq.gz
  kmerflow filter-abund-single -k 20 -M 4G -V --savegraph reads.ct reads.fq.gz
  kmerflow filter-abund-single -k 20 -M 8G --local-cluster 2 -o reads.abundfilt reads.fq")]
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
    #[command(flatten)]
    /// Sharding over Dask workers (run by the Python package).
    pub sharding: ShardArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `filter-abund-single` (output is identical for any number of threads).
pub fn run(args: Args, ctx: &mut Ctx) -> Result<Value> {
    ctx.run.progress().plan_passes(2);
    let table = args.counting.resolved_params(args.filter.force, std::slice::from_ref(&args.input), false, ctx)?;
    let opts = filter_abund::SingleOptions {
        table,
        filter: args.filter.params(),
        input: args.input,
        savegraph: args.savegraph,
    };
    filter_abund::run_single(&opts, &ctx.run).and_then(|s| summary_json(&s))
}
