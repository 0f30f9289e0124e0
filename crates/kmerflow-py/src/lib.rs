//! `kmerflow._core`: thin PyO3 bindings over kmerflow-core.

use pyo3::prelude::*;

/// Runs the kmerflow command line with `argv` (program name first); returns the exit code.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| kmerflow_cli::run(argv.into_iter().map(Into::into).collect()))
}

/// The native module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", kmerflow_core::VERSION)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    Ok(())
}
