//! The algorithms behind each command.
//!
//! Each command is a library function taking an options struct and returning a summary, so
//! that the CLI only maps flags to options and the Python bindings can call the same code.

pub mod abundance_dist;
pub mod autosize;
pub mod count;
pub mod count_median;
pub mod diginorm;
pub mod filter_abund;
pub mod kmer_slices;
pub mod load_graph;
pub mod memory;
pub mod normalize;
pub mod partition;
pub mod pyfmt;
pub mod read_filter;
pub mod reads;
pub mod sizing;
pub mod stream;
pub mod trim_low_abund;
pub mod unique_kmers;

/// The format of a command's machine-readable summary side file (load-into-counting's
/// `OUT.info.json|tsv`, trim-low-abund's `--summary-info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryFormat {
    /// `<name>.info.json`.
    Json,
    /// `<name>.info.tsv`.
    Tsv,
}
