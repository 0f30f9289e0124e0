//! Running kmerflow commands from Python: the console script and `kmerflow.commands`.

use crate::errors::command_error;
use crate::interrupt::interruptible_with;
use kmerflow_core::run::{Level, Message, RunContext};
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

/// Runs one command given as its argv (without the program name) in-process, GIL released,
/// printing nothing; returns `(summary, report)`: the command's summary and its run report as
/// JSON text. Each message of the run is passed to `on_message(level, text)` (`"info"`,
/// `"warning"` or `"error"`) on the calling thread while the run goes on; an exception from it
/// stops the run and is raised. A failure on a named file raises `kmerflow.KmerflowIOError` (a
/// missing input: `FileNotFoundError`), any other failure `kmerflow.CommandError` with the
/// command's error message and exit code; Ctrl-C raises `KeyboardInterrupt`.
#[pyfunction]
pub fn run_command(py: Python<'_>, argv: Vec<OsString>, on_message: Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let full: Vec<OsString> = std::iter::once(OsString::from("kmerflow")).chain(argv).collect();
    let outcome = interruptible_with(py, forwarder(&on_message), |ctx| kmerflow_cli::execute_with(full, ctx))?
        .map_err(command_error)?;
    Ok((outcome.summary.to_string(), outcome.report.to_string()))
}

/// A message handler calling `on_message(level, text)` (`"info"`, `"warning"` or `"error"`).
pub(crate) fn forwarder<'a>(on_message: &'a Bound<'_, PyAny>) -> impl FnMut(Python<'_>, &Message) -> PyResult<()> + 'a {
    let level = |l: Level| match l {
        Level::Info => "info",
        Level::Warning => "warning",
        Level::Error => "error",
    };
    move |_py, m| on_message.call1((level(m.level), m.text.as_str())).map(drop)
}

/// The definitions of every command (`kmerflow_cli::spec`): a list of dicts `{"name", "about",
/// "args"}`, each argument a dict `{"id", "long", "positional", "takes_value", "repeatable",
/// "required", "help", "default"}` (`default`: the value taken when the argument is not given, or
/// `None`). `kmerflow.commands` builds the command functions' keywords and their docs from it.
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
                    d.set_item("default", a.default)?;
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

/// Checks a command line (`argv`, program name first) as its run would, running nothing
/// (`kmerflow_cli::check`): returns `None`, or raises `kmerflow.CommandError` (exit status 2)
/// with the usage error the run would give.
#[pyfunction]
pub fn check_command(py: Python<'_>, argv: Vec<OsString>) -> PyResult<()> {
    py.detach(|| kmerflow_cli::check(argv)).map_err(command_error)
}

/// Whether the command line `argv` (program name first) asks for a sharded run
/// (`kmerflow_cli::sharded::requested`): the parser decides, so that every spelling it accepts
/// (`--local-clus 2`, `--sched=ADDRESS`) picks the sharded front end.
#[pyfunction]
pub fn shard_requested(argv: Vec<OsString>) -> bool {
    kmerflow_cli::sharded::requested(&argv)
}

/// The run of a sharded command line (`argv`, program name first) as JSON text
/// (`kmerflow_cli::sharded::Plan`, made by `plan`; read by `kmerflow.distributed.plan`):
/// parsed and checked with the command definitions, the table sized as the native command
/// sizes it; `None` for a help, version or `--info` request (printed). Raises `kmerflow.CommandError` (exit status 2 for a usage error, 1 for an input
/// that cannot be read while sizing) with the message to print.
#[pyfunction]
pub fn shard_plan(py: Python<'_>, argv: Vec<OsString>) -> PyResult<Option<String>> {
    let plan = py.detach(|| kmerflow_cli::sharded::plan(argv)).map_err(command_error)?;
    Ok(plan.map(|p| serde_json::to_string(&p).expect("a plan serializes")))
}

/// Finishes a sharded run (`kmerflow_cli::sharded::finish`): writes load-into-counting's
/// `OUT.info` (and `-s` file) and `--report-json` from `summary` (JSON text, the native
/// command's fields) and `table_sizing` (JSON text, the plan's), having written `outputs`
/// besides the saved table; returns the run report as JSON text.
#[pyfunction]
pub fn shard_finish(
    py: Python<'_>,
    argv: Vec<OsString>,
    summary: &str,
    table_sizing: &str,
    outputs: Vec<String>,
    wall_s: f64,
) -> PyResult<String> {
    let json = |what: &str, text: &str| -> PyResult<serde_json::Value> {
        serde_json::from_str(text)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("{what} is not JSON: {e}")))
    };
    let (summary, table_sizing) = (json("summary", summary)?, json("table_sizing", table_sizing)?);
    let report = py
        .detach(|| kmerflow_cli::sharded::finish(argv, summary, table_sizing, &outputs, wall_s))
        .map_err(command_error)?;
    Ok(report.to_string())
}

/// The terminal of a sharded command line (`kmerflow_cli::sharded::terminal`): the run's
/// messages printed as the one-process command line prints them (informational ones unless
/// `-q`), its progress line on a terminal (fed by the reads of the sharded runs given it), and
/// the resource line at the end.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct ShardTerminal(kmerflow_cli::console::Terminal);

impl ShardTerminal {
    /// The context whose progress counters the progress line shows.
    pub(crate) fn run(&self) -> &RunContext {
        self.0.run()
    }
}

#[pymethods]
impl ShardTerminal {
    /// The terminal of the sharded command line `argv` (program name first); its progress line
    /// starts now, its clock `elapsed` seconds ago (when the run began: its plan, `-M auto`
    /// included). Raises `kmerflow.CommandError` for a command line that is not a run (usage
    /// error, help request).
    #[new]
    #[pyo3(signature = (argv, elapsed = 0.0))]
    fn new(argv: Vec<OsString>, elapsed: f64) -> PyResult<Self> {
        let elapsed = std::time::Duration::from_secs_f64(elapsed.max(0.0));
        match kmerflow_cli::sharded::terminal(&argv, elapsed).map_err(command_error)? {
            Some(terminal) => Ok(ShardTerminal(terminal)),
            None => Err(pyo3::exceptions::PyValueError::new_err("the command line asks for no run")),
        }
    }

    /// Prints a message of the run (`level`: `"info"`, `"warning"` or `"error"`) above the
    /// progress line; informational ones not under `-q`.
    fn say(&self, level: &str, text: &str) -> PyResult<()> {
        let level = match level {
            "info" => Level::Info,
            "warning" => Level::Warning,
            "error" => Level::Error,
            other => return Err(pyo3::exceptions::PyValueError::new_err(format!("no message level {other:?}"))),
        };
        self.0.console().show(&Message::new(level, text));
        Ok(())
    }

    /// Ends a successful run: erases the progress line and prints the resource line (not
    /// under `-q`).
    fn finish(&self) {
        self.0.finish();
    }

    /// Erases the progress line (a failed run: its error is printed next).
    fn stop(&self) {
        self.0.console().finish_progress();
    }
}

/// Whether matplotlib, which draws the `--plots` PNGs, can be imported (checked by a run's
/// preflight, before anything is read).
fn plots_drawable() -> Result<(), String> {
    let found = Python::attach(|py| -> PyResult<bool> {
        Ok(!py.import("importlib.util")?.call_method1("find_spec", ("matplotlib",))?.is_none())
    });
    match found {
        Ok(true) => Ok(()),
        _ => Err("needs matplotlib, which is not installed: pip install 'kmerflow[report]'".into()),
    }
}

/// Registers the functions on the module, `REPORT_CHARTS` (the idents of the report's charts,
/// `kmerflow_cli::report::CHARTS`, which name the PNG files of `--plots DIR`) and the check
/// that those can be drawn.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    kmerflow_cli::report::set_plots_check(plots_drawable);
    m.add("REPORT_CHARTS", kmerflow_cli::report::CHARTS.to_vec())?;
    add_functions!(m, cli_main, run_command, command_specs, check_command, shard_requested, shard_plan, shard_finish);
    m.add_class::<ShardTerminal>()?;
    Ok(())
}
