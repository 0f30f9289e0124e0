//! The algorithms behind each command.
//!
//! Each command is a library function taking an options struct and returning a summary, so
//! that the CLI only maps flags to options and the Python bindings can call the same code.

pub mod diginorm;
pub mod filter_abund;
pub mod read_filter;
pub mod reads;
pub mod sizing;
pub mod trim_low_abund;
