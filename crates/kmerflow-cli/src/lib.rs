//! The `kmerflow` command line: one subcommand per khmer script, shared conventions
//! (help with examples, `-q`, progress on a terminal, a resource summary line on stderr,
//! exit codes 0 success / 1 data or I/O error / 2 usage error).

use std::ffi::OsString;

/// Runs the command line `argv` (program name first) and returns the process exit code.
pub fn run(argv: Vec<OsString>) -> i32 {
    let _ = argv;
    println!("kmerflow {}", kmerflow_core::VERSION);
    0
}
