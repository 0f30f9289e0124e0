//! The algorithms behind each command.

pub mod pyfmt;
pub mod sizing;
pub mod count;
pub mod abundance_dist;
