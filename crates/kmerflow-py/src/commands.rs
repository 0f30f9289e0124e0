//! Running kmerflow commands from Python: the console script and `kmerflow.commands`.

use crate::errors::command_error;
use pyo3::prelude::*;
use std::ffi::OsString;

/// Runs the kmerflow command line with `argv` (program name first), GIL released; returns the
/// exit code (used by the `kmerflow` console script).
#[pyfunction]
pub fn cli_main(py: Python<'_>, argv: Vec<OsString>) -> i32 {
    py.detach(|| kmerflow_cli::run(argv))
}

/// Runs one command given as its argv (without the program name), GIL released; raises
/// `kmerflow.CommandError` (a `KmerflowError`) with the command's error message and exit code
/// when it fails. Informational messages still go to stderr, as on the command line.
#[pyfunction]
pub fn run_command(py: Python<'_>, argv: Vec<OsString>) -> PyResult<()> {
    let full: Vec<OsString> = std::iter::once(OsString::from("kmerflow")).chain(argv).collect();
    py.detach(|| kmerflow_cli::execute(full)).map_err(|e| command_error(e.code, e.message.trim_end().to_owned()))
}

/// Registers the functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(run_command, m)?)?;
    Ok(())
}
