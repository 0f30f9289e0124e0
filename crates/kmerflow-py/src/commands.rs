//! Running kmerflow commands from Python: the console script and `kmerflow.commands`.

use crate::errors::command_error;
use crate::interrupt::interruptible_in;
use kmerflow_core::run::{Level, RunContext};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::OsString;

/// Runs the kmerflow command line with `argv` (program name first), GIL released; returns the
/// exit code and, when the run succeeded and was given `--html`, `--plots` or `--multiqc`, its
/// report as JSON text for the `kmerflow` console script to render.
#[pyfunction]
pub fn cli_main(py: Python<'_>, argv: Vec<OsString>) -> (i32, Option<String>) {
    let (code, report) = py.detach(|| kmerflow_cli::run_rendering(argv, true));
    (code, report.map(|r| r.to_string()))
}

/// What [`run_command`] returns: the summary, the messages and the report.
type CommandOutput = (String, Vec<(String, String)>, String);

/// Runs one command given as its argv (without the program name) in-process, GIL released;
/// returns `(summary, messages, report)`: the command's summary as JSON text, its messages as
/// `(level, text)` pairs (`"info"`, `"warning"` or `"error"`) and the run report as JSON text,
/// printing nothing. Raises
/// `kmerflow.CommandError` (a `KmerflowError`) with the command's error message and exit code
/// when it fails, `KeyboardInterrupt` when Ctrl-C stops it.
#[pyfunction]
pub fn run_command(py: Python<'_>, argv: Vec<OsString>) -> PyResult<CommandOutput> {
    let full: Vec<OsString> = std::iter::once(OsString::from("kmerflow")).chain(argv).collect();
    let outcome = interruptible_in(py, &RunContext::new(), |ctx| kmerflow_cli::execute_with(full, ctx))?
        .map_err(|e| command_error(e.code, e.message.trim_end().to_owned()))?;
    let level = |l: Level| match l {
        Level::Info => "info",
        Level::Warning => "warning",
        Level::Error => "error",
    };
    let messages = outcome.messages.into_iter().map(|m| (level(m.level).to_owned(), m.text)).collect();
    Ok((outcome.summary.to_string(), messages, outcome.report.to_string()))
}

/// The definitions of every command (`kmerflow_cli::spec`): a list of dicts `{"name", "about",
/// "args"}`, each argument a dict `{"id", "long", "positional", "takes_value", "repeatable",
/// "required", "help"}`. `kmerflow.commands` builds the command functions' keywords from it.
#[pyfunction]
pub fn command_specs(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    kmerflow_cli::spec::command_specs()
        .into_iter()
        .map(|cmd| {
            let args = cmd
                .args
                .into_iter()
                .map(|a| {
                    let d = PyDict::new(py);
                    d.set_item("id", a.id)?;
                    d.set_item("long", a.long)?;
                    d.set_item("positional", a.positional)?;
                    d.set_item("takes_value", a.takes_value)?;
                    d.set_item("repeatable", a.repeatable)?;
                    d.set_item("required", a.required)?;
                    d.set_item("help", a.help)?;
                    Ok(d)
                })
                .collect::<PyResult<Vec<_>>>()?;
            let d = PyDict::new(py);
            d.set_item("name", cmd.name)?;
            d.set_item("about", cmd.about)?;
            d.set_item("args", args)?;
            Ok(d)
        })
        .collect()
}

/// Registers the functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(run_command, m)?)?;
    m.add_function(wrap_pyfunction!(command_specs, m)?)?;
    Ok(())
}
