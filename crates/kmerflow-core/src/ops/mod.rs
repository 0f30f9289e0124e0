//! The algorithms behind each command.

pub mod sizing;
