//! The algorithms behind each command.
