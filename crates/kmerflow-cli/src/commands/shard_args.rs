//! `--scheduler`, `--local-cluster`, `--shards`, `--local-shards`, `--batch-kmers`: the table
//! of a counting command sharded over Dask workers. Declared here so that every front end
//! parses and checks them alike and `--help` shows them; the run itself is the Python
//! package's (`kmerflow.distributed`), so this executable refuses them (see
//! [`crate::sharded`]).

use crate::flags;
use clap::Args;

/// The heading of the flags in `--help`.
const HEADING: &str = "Sharded over Dask (the kmerflow Python package: pip install 'kmerflow[dask]')";

/// k-mers per message to every shard when `--batch-kmers` is not given.
pub const DEFAULT_BATCH_KMERS: usize = 131_072;

/// Where the shards live: one running Dask scheduler or a LocalCluster started for the run.
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize)]
#[group(id = "dask_cluster", multiple = false)]
pub struct ClusterArgs {
    /// Hold the table on the workers of this running Dask scheduler: tcp://HOST:PORT, a
    /// scheduler file, or `local` (a LocalCluster of one single-thread worker per core); run
    /// by the Python package's `kmerflow` command
    #[arg(long, value_name = "ADDRESS", help_heading = HEADING)]
    pub scheduler: Option<String>,
    /// Hold the table on a LocalCluster of N single-thread workers started for the run
    #[arg(long = "local-cluster", value_name = "N", value_parser = flags::positive, help_heading = HEADING, allow_negative_numbers = true)]
    pub local_cluster: Option<usize>,
}

/// The sharding flags of a counting command (the plan's `cluster`, [`crate::sharded::Plan`]).
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ShardArgs {
    #[command(flatten)]
    #[serde(flatten)]
    /// The cluster.
    pub cluster: ClusterArgs,
    /// Cut the table into N shards (contiguous ranges of counters) [default: one per worker,
    /// plus --local-shards]
    #[arg(long, value_name = "N", value_parser = flags::positive, requires = "dask_cluster", help_heading = HEADING, allow_negative_numbers = true)]
    pub shards: Option<usize>,
    /// Hold the first N shards in this process rather than on workers
    #[arg(long = "local-shards", value_name = "N", default_value_t = 0, requires = "dask_cluster",
          help_heading = HEADING, allow_negative_numbers = true)]
    pub local_shards: usize,
    /// k-mers per message to every shard
    #[arg(long = "batch-kmers", value_name = "N", default_value_t = DEFAULT_BATCH_KMERS, value_parser = flags::positive,
          requires = "dask_cluster", help_heading = HEADING, allow_negative_numbers = true)]
    pub batch_kmers: usize,
}

impl ShardArgs {
    /// Whether the command line asks for a sharded run.
    pub fn requested(&self) -> bool {
        self.cluster.scheduler.is_some() || self.cluster.local_cluster.is_some()
    }
}
