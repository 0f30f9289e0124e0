//! The subcommands and their dispatch.
//!
//! Each command lives in its own module exposing `Args` (clap derive, with a `common` field
//! holding [`crate::common::CommonArgs`] or a variant with a `settings()` method) and
//! `run(args, &mut Ctx) -> kmerflow_core::Result<serde_json::Value>`, which maps the flags to the
//! options of a `kmerflow_core::ops` function, runs it within the run context and returns its
//! summary. To add a command, add its module and one line to the
//! `commands!` list below: its name (khmer's script name without `.py`), the variant and the
//! module; the line's doc comment is the command's one-line description. The command then has
//! the shared flags of `CommonArgs` (`-q`, `-T`, `--metrics`, `--report-json`, `--html`,
//! `--plots`, `--multiqc`) and its run report (see [`crate::report`]) with nothing more to write;
//! a command reading its inputs more than once plans its passes
//! (`ctx.run.progress().plan_passes(n)`) before sizing its table and the core operation begins
//! each (`begin_pass`).

pub mod abundance_dist;
pub mod abundance_dist_single;
pub mod annotate_partitions;
pub mod count_median;
pub mod counting_args;
pub mod do_partition;
pub mod extract_long_sequences;
pub mod extract_paired_reads;
pub mod extract_partitions;
pub mod fastq_to_fasta;
pub mod filter_abund;
pub mod filter_abund_single;
pub mod filter_stoptags;
pub mod find_knots;
pub mod interleave_reads;
pub mod load_graph;
pub mod load_into_counting;
pub mod make_initial_stoptags;
pub mod mate_args;
pub mod merge_partitions;
pub mod normalize;
pub mod normalize_by_median;
pub mod partition_args;
pub mod partition_graph;
pub mod readstats;
pub mod sample_reads_randomly;
pub mod shard_args;
pub mod split_paired_reads;
pub mod trim_low_abund;
pub mod unique_kmers;

use crate::common::{Ctx, Settings};
use clap::Subcommand;

/// Declares the [`Command`] enum and its dispatch from one list of `Variant(module)` lines.
macro_rules! commands {
    ($($(#[doc = $doc:literal])* $name:literal => $variant:ident($module:ident),)*) => {
        /// A kmerflow subcommand with its parsed arguments.
        #[derive(Debug, Subcommand)]
        pub enum Command {
            $($(#[doc = $doc])* #[command(name = $name)] $variant($module::Args),)*
        }

        impl Command {
            /// The settings shared by all commands (`-q`, threads).
            pub fn settings(&self) -> Settings {
                match self {
                    $(Command::$variant(a) => a.common.settings(),)*
                }
            }

            /// Runs the command; returns its summary as JSON.
            pub fn run(self, ctx: &mut Ctx) -> kmerflow_core::Result<serde_json::Value> {
                match self {
                    $(Command::$variant(a) => $module::run(a, ctx),)*
                }
            }

            /// The command's name as typed on the command line.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Command::$variant(_) => $name,)*
                }
            }
        }
    };
}

commands! {
    /// Calculate the abundance distribution of k-mers in reads, using a saved countgraph
    "abundance-dist" => AbundanceDist(abundance_dist),
    /// Count the k-mers of reads and calculate their abundance distribution in one run
    "abundance-dist-single" => AbundanceDistSingle(abundance_dist_single),
    /// Annotate reads with the partition of their first tagged k-mer (from merge-partitions)
    "annotate-partitions" => AnnotatePartitions(annotate_partitions),
    /// Per-read median, mean and standard deviation of k-mer counts in a countgraph
    "count-median" => CountMedian(count_median),
    /// Load, partition, merge and annotate in one run
    "do-partition" => DoPartition(do_partition),
    /// Extract sequences at least a given length (default 200 bp)
    "extract-long-sequences" => ExtractLongSequences(extract_long_sequences),
    /// Take a mixture of reads and split them into pairs and orphans
    "extract-paired-reads" => ExtractPairedReads(extract_paired_reads),
    /// Group partition-annotated reads into files by partition size
    "extract-partitions" => ExtractPartitions(extract_partitions),
    /// Convert FASTQ to FASTA, dropping reads that contain N
    "fastq-to-fasta" => FastqToFasta(fastq_to_fasta),
    /// Trim reads at low-abundance k-mers of a saved countgraph
    "filter-abund" => FilterAbund(filter_abund),
    /// Count k-mers of one file, then trim its reads at low-abundance k-mers
    "filter-abund-single" => FilterAbundSingle(filter_abund_single),
    /// Trim reads at stop tags
    "filter-stoptags" => FilterStoptags(filter_stoptags),
    /// Find the highly connected k-mers (knots) of the largest partitions and save them as stop tags
    "find-knots" => FindKnots(find_knots),
    /// Produce an interleaved file from R1/R2 paired files
    "interleave-reads" => InterleaveReads(interleave_reads),
    /// Load sequences into a nodegraph (presence table) and build its tagset
    "load-graph" => LoadGraph(load_graph),
    /// Build a countgraph of k-mer counts from reads and save it
    "load-into-counting" => LoadIntoCounting(load_into_counting),
    /// Find an initial set of highly connected k-mers (stop tags) from a sample of the graph's tags
    "make-initial-stoptags" => MakeInitialStoptags(make_initial_stoptags),
    /// Merge the subset partition maps of partition-graph into one
    "merge-partitions" => MergePartitions(merge_partitions),
    /// The normalization protocol in one run: normalize, trim errors, normalize again (R1/R2 in and out)
    "normalize" => Normalize(normalize),
    /// Digital normalization: drop reads whose median k-mer count already reaches the cutoff
    "normalize-by-median" => NormalizeByMedian(normalize_by_median),
    /// Partition the tags of a nodegraph into subset partition maps
    "partition-graph" => PartitionGraph(partition_graph),
    /// Display summary statistics for one or more FASTA/FASTQ files
    "readstats" => Readstats(readstats),
    /// Uniformly subsample reads (or pairs) with reservoir sampling
    "sample-reads-randomly" => SampleReadsRandomly(sample_reads_randomly),
    /// Split interleaved reads into two files, left and right
    "split-paired-reads" => SplitPairedReads(split_paired_reads),
    /// Trim low-abundance k-mers from reads in two streaming passes
    "trim-low-abund" => TrimLowAbund(trim_low_abund),
    /// Estimate the number of distinct k-mers with HyperLogLog
    "unique-kmers" => UniqueKmers(unique_kmers),
}
