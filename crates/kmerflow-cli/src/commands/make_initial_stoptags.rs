//! `kmerflow make-initial-stoptags`: find an initial set of highly connected k-mers (khmer's
//! make-initial-stoptags.py).

use super::partition_args::{KnotForceArgs, KnotTableArgs};
use crate::common::{summary_json, CommonArgs, Ctx};
use crate::flags;
use kmerflow_core::ops::partition::knots;
use serde_json::Value;

/// Arguments of `make-initial-stoptags`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Reads BASE and BASE.tagset (as load-graph writes them), partitions the first -s tags, walks
from every tag of the largest partition and writes the k-mers that many big walks cross to
BASE.stoptags (with those of -S). The countgraph flags size the table counting the walks.

Examples:
  kmerflow load-graph -k 20 reads reads.fa
  kmerflow make-initial-stoptags reads
  kmerflow partition-graph -S reads.stoptags reads")]
pub struct Args {
    #[command(flatten)]
    pub table: KnotTableArgs,
    /// Number of tags to partition before looking for highly connected k-mers.
    #[arg(short = 's', long = "subset-size", default_value_t = knots::DEFAULT_INITIAL_SUBSET_SIZE as f64,
          value_parser = flags::tablesize)]
    pub subset_size: f64,
    /// Start from the stop tags in this file (they are written out too).
    #[arg(short = 'S', long = "stoptags", value_name = "FILE")]
    pub stoptags: Option<String>,
    #[command(flatten)]
    pub force: KnotForceArgs,
    /// Base name of the nodegraph and tagset (writes BASE.stoptags).
    pub graphbase: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `make-initial-stoptags`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = knots::InitialOptions {
        base: args.graphbase,
        stoptags: args.stoptags,
        subset_size: args.subset_size as u64,
        force: args.force.force,
    };
    let summary = knots::make_initial_stoptags(&opts, &args.table.params(&args.force), &ctx.run)?;
    super::find_knots::report(&summary, ctx);
    summary_json(&summary)
}
