//! `kmerflow load-graph`: build a nodegraph and tagset (khmer's load-graph.py).

use super::counting_args::{GraphArgs, RunArgs};
use clap::Args;
use kmerflow_core::ops::load_graph;

/// Arguments of `load-graph`.
#[derive(Args, Debug, Clone)]
pub struct LoadGraphArgs {
    #[command(flatten)]
    /// Table sizing.
    pub graph: GraphArgs,
    #[command(flatten)]
    /// Threads, force, quiet, report.
    pub run: RunArgs,
    /// Do not build the tagset.
    #[arg(short = 'n', long = "no-build-tagset")]
    pub no_build_tagset: bool,
    /// The nodegraph file (also writes OUT.tagset and OUT.info).
    pub output: String,
    /// Read files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
}

/// Runs the command.
pub fn execute(args: &LoadGraphArgs) -> kmerflow_core::Result<()> {
    let opts = load_graph::Options {
        params: args.graph.params(args.run.force),
        output: args.output.clone(),
        inputs: args.inputs.clone(),
        build_tagset: !args.no_build_tagset,
        threads: args.run.threads,
    };
    let summary = load_graph::run(&opts)?;
    args.run.sizing_messages(&summary.messages);
    args.run.info(&format!("Total number of unique k-mers: {}", summary.unique_kmers));
    args.run.info(&format!("false positive rate estimated to be {:.3}", summary.fp_rate));
    args.run.report(
        summary.tally,
        &[("unique_kmers", summary.unique_kmers.into()), ("tags", summary.tags.into())],
    )
}
