//! The algorithms behind each command.

pub mod sizing;
pub mod diginorm;
pub mod filter_abund;
pub mod read_filter;
pub mod trim_low_abund;
