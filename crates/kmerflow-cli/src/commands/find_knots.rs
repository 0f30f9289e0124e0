//! `kmerflow find-knots`: find the highly connected k-mers of the largest partitions (khmer's
//! find-knots.py).

use super::partition_args::{KnotForceArgs, KnotTableArgs};
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::partition::knots;
use serde_json::Value;

/// Arguments of `find-knots`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Reads BASE, BASE.tagset, BASE.stoptags when it exists and every BASE.subset.N.pmap of
partition-graph. For each map in turn: repartitions its largest partition, merges it into the
maps so far and repartitions their largest partition, saves the stop tags found (with those
loaded) to BASE.stoptags and renames the map BASE.subset.N.pmap.processed, so that an
interrupted run continues with the maps left. The countgraph flags size the table counting
the walks.

Examples:
  kmerflow load-graph -k 20 reads reads.fa
  kmerflow partition-graph reads
  kmerflow find-knots -x 2e8 -N 4 reads
  kmerflow filter-stoptags -k 20 reads.stoptags reads.fa")]
pub struct Args {
    #[command(flatten)]
    pub table: KnotTableArgs,
    #[command(flatten)]
    pub force: KnotForceArgs,
    /// Base name of the input and output files.
    pub graphbase: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `find-knots`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let summary = knots::find_knots(&args.graphbase, &args.table.params(&args.force), args.force.force, &ctx.run)?;
    report(&summary, ctx);
    summary_json(&summary)
}

/// Tells what a knot search did (unless `-q`).
pub fn report(summary: &knots::KnotsSummary, ctx: &mut Ctx) {
    for (map, done) in &summary.repartitions {
        match done {
            Some(done) => ctx.info(format_args!(
                "{map}: largest partition of {} tags, {} big walks; next largest size {}",
                done.tags, done.big_walks, done.next_largest
            )),
            None => ctx.info(format_args!("{map}: no partition to repartition")),
        }
    }
    ctx.info(format_args!("wrote {} stop tags to {}", summary.stop_tags, summary.output));
}
