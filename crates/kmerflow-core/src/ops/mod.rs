//! The algorithms behind each command.
//!
//! Each command is a library function taking an options struct and returning a summary, so
//! that the CLI only maps flags to options and the Python bindings can call the same code.

pub mod reads;
