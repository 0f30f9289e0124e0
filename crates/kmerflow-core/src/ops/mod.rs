//! The algorithms behind each command.

pub mod pyfmt;
pub mod sizing;
