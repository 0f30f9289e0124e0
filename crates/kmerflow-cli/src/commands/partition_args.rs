//! The flags that the partitioning commands (partition-graph, merge-partitions,
//! annotate-partitions, extract-partitions, do-partition, make-initial-stoptags, find-knots,
//! filter-stoptags) share, each declared once and flattened into their `Args`.

use super::counting_args::{self, CountingArgs};
use crate::flags;
use kmerflow_core::ops::partition;
use kmerflow_core::ops::sizing::{self, TableParams};

/// khmer's `-f/--force` where it changes nothing (merge-partitions, annotate-partitions,
/// extract-partitions, filter-stoptags).
#[derive(clap::Args, Debug, Clone)]
pub struct CompatForceArgs {
    /// Accepted for khmer compatibility.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
}

/// `-k` of the commands reading partition maps or stop tags (the files' k must match). Its
/// help names the partition maps; a command reading other files says so with
/// `#[command(mut_arg("ksize", |a| a.help(...)))]`.
#[derive(clap::Args, Debug, Clone)]
pub struct KsizeArgs {
    /// k-mer size of the partition maps.
    #[arg(short = 'k', long = "ksize", default_value_t = sizing::DEFAULT_K, value_parser = flags::positive,
          allow_negative_numbers = true)]
    pub ksize: usize,
}

/// How partition-graph and do-partition split the tags: `-s` and `--no-big-traverse`.
#[derive(clap::Args, Debug, Clone)]
pub struct SubsetArgs {
    /// Number of tags per subset (usually 1e5-1e6 is good).
    #[arg(short = 's', long = "subset-size", default_value_t = partition::DEFAULT_SUBSET_SIZE as f64,
          value_parser = flags::tablesize)]
    pub subset_size: f64,
    /// Truncate graph joins at big traversals (more than 200 k-mers).
    #[arg(long = "no-big-traverse")]
    pub no_big_traverse: bool,
}

impl SubsetArgs {
    /// The number of tags per subset.
    pub fn subset_size(&self) -> u64 {
        self.subset_size as u64
    }
}

/// `--keep-subsets` of merge-partitions and do-partition.
#[derive(clap::Args, Debug, Clone)]
pub struct KeepSubsetsArgs {
    /// Keep the individual subset maps.
    #[arg(long = "keep-subsets")]
    pub keep_subsets: bool,
}

/// The countgraph of walked k-mers of make-initial-stoptags and find-knots: they read no
/// reads, so their table is khmer's default unless sized by the flags (help to match).
#[derive(clap::Args, Debug, Clone)]
#[command(mut_args(counting_args::fixed_size_help))]
pub struct KnotTableArgs {
    #[command(flatten)]
    /// Sizing of the countgraph (its -k is not used).
    pub counting: CountingArgs,
}

/// `-f` of make-initial-stoptags and find-knots.
#[derive(clap::Args, Debug, Clone)]
pub struct KnotForceArgs {
    /// Continue past sizing limits and a graph over the 0.15 false-positive ceiling.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
}

impl KnotTableArgs {
    /// The countgraph's parameters (`force`: past the sizing limits).
    pub fn params(&self, force: &KnotForceArgs) -> TableParams {
        self.counting.fixed_params(force.force)
    }
}
