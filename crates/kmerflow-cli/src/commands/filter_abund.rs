//! `kmerflow filter-abund`: trim reads at low-abundance k-mers of a saved countgraph
//! (khmer's filter-abund.py).

use super::counting_args::StrandArgs;
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::filter_abund::{self, FilterParams};
use kmerflow_core::Result;
use serde_json::Value;

/// The trimming flags shared by filter-abund and filter-abund-single.
#[derive(ClapArgs, Debug, Clone)]
pub struct FilterArgs {
    /// Cut each read before its first k-mer with a count below C.
    #[arg(short = 'C', long = "cutoff", default_value_t = 2, value_parser = crate::flags::cutoff, allow_negative_numbers = true)]
    pub cutoff: u32,
    /// Only trim reads whose median k-mer count is at least -Z.
    #[arg(short = 'V', long = "variable-coverage")]
    pub variable_coverage: bool,
    /// Median coverage from which reads are trimmed with -V.
    #[arg(short = 'Z', long = "normalize-to", default_value_t = 20, allow_negative_numbers = true)]
    pub normalize_to: u32,
    /// Single output file (`-` = stdout) instead of `<input>.abundfilt`.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    #[command(flatten)]
    pub compression: CompressionArgs,
    /// Overwrite/continue where khmer would refuse.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
}

impl FilterArgs {
    /// The core's trimming parameters.
    pub fn params(&self) -> FilterParams {
        FilterParams {
            cutoff: self.cutoff,
            variable_coverage: self.variable_coverage,
            normalize_to: self.normalize_to,
            output: self.output.clone(),
            compression: self.compression.compression(),
        }
    }
}

/// Trim reads at k-mers whose count in a saved countgraph is below the cutoff.
#[derive(ClapArgs, Debug, Clone)]
// -V is --variable-coverage, as in khmer: the version is `--version` alone
#[command(disable_version_flag = true)]
#[command(after_help = "\
Each read is cut before its first k-mer whose count is below -C; reads left shorter than k are
dropped. With -V, only reads whose median count reaches -Z are trimmed (khmer's rule for
variable-coverage data such as metagenomes and transcriptomes). Outputs are identical for any
-T and equal to khmer's.

Examples:
  kmerflow load-into-counting -k 20 -M 4G reads.ct reads.fq.gz
  kmerflow filter-abund -C 2 -o reads.filt.fq reads.ct reads.fq.gz
  kmerflow filter-abund -V -Z 20 -C 2 reads.ct a.fq.gz b.fq.gz   # a.fq.gz.abundfilt, ...")]
pub struct Args {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The countgraph (from load-into-counting).
    pub graph: String,
    /// Input sequence files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    /// `--single-strand`: the countgraph's k-mers are hashed as read.
    pub strand: StrandArgs,
    #[command(flatten)]
    /// Sharding over Dask workers (run by the Python package).
    pub sharding: ShardArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `filter-abund` (output is identical for any number of threads).
pub fn run(args: Args, ctx: &mut Ctx) -> Result<Value> {
    let filter = args.filter.params();
    let opts = filter_abund::Options { graph: args.graph, inputs: args.inputs, filter, strand: args.strand.strand() };
    filter_abund::run(&opts, &ctx.run).and_then(|s| summary_json(&s))
}
