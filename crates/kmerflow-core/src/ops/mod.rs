//! The algorithms behind each command.

pub mod pyfmt;
pub mod sizing;
pub mod count;
pub mod abundance_dist;
pub mod count_median;
pub mod unique_kmers;
pub mod load_graph;
