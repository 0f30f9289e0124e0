//! The terminal side of a command-line run: messages printed on stderr as the core emits them
//! (informational ones unless `-q`), kept in order with the progress line, and the resource
//! line at the end ([`Terminal`], for one-process and sharded runs alike).

use crate::progress::Progress;
use crate::report::Report;
use kmerflow_core::run::{CancelToken, Level, Message, RunContext};
use std::ffi::OsString;
use std::sync::{Arc, Mutex};

/// Where a command-line run prints.
pub struct Console {
    quiet: bool,
    /// The progress line while one is shown; also serialises printing.
    progress: Mutex<Option<Progress>>,
}

impl Console {
    /// A console; `quiet` (`-q`) hides informational messages and the progress line.
    pub fn new(quiet: bool) -> Self {
        Console { quiet, progress: Mutex::new(None) }
    }

    /// True when `-q` was given.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Prints `message` unless it is informational and the console is quiet.
    pub fn show(&self, message: &Message) {
        if message.level != Level::Info || !self.quiet {
            self.print(&message.text);
        }
    }

    /// Prints one line (or several) on stderr above the progress line, which is erased first
    /// and drawn again below.
    pub fn print(&self, text: &str) {
        let progress = self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match progress.as_ref() {
            Some(p) => p.print_above(text),
            None => eprintln!("{text}"),
        }
    }

    /// Starts the progress line of command `name`, from the counters of `run` (only on a
    /// terminal, and not when quiet).
    pub fn start_progress(&self, name: &'static str, run: &RunContext) {
        let line = Progress::new(name, !self.quiet, run.clone());
        *self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(line);
    }

    /// Stops and erases the progress line, if one was drawn.
    pub fn finish_progress(&self) {
        let line = self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(mut line) = line {
            line.finish();
        }
    }
}

/// A command-line run as the terminal shows it: its context, whose messages are printed as they
/// come (informational ones unless `-q`) above the progress line, and the resource line of a
/// successful run. The one-process command line and a sharded run's front end (whose steps
/// read in contexts sharing this one's progress counters) print through it.
pub struct Terminal {
    console: Arc<Console>,
    run: RunContext,
    report: Report,
}

impl Terminal {
    /// The terminal of the command line `argv` (program name first), quiet with `-q`, its run
    /// stopped through `cancel`; the run's clock starts now.
    pub fn new(argv: &[OsString], quiet: bool, cancel: CancelToken) -> Self {
        let console = Arc::new(Console::new(quiet));
        let shown = console.clone();
        let run = RunContext::build(cancel, Some(Box::new(move |m: &Message| shown.show(m))));
        Terminal { console, run, report: Report::start(argv) }
    }

    /// This terminal with its run's clock started `elapsed` earlier (a sharded run's front end,
    /// which plans the run, `-M auto` sizing pass included, before it makes the terminal).
    pub fn begun_before(self, elapsed: std::time::Duration) -> Self {
        Terminal { report: self.report.begun_before(elapsed), ..self }
    }

    /// The run's context (its messages are printed).
    pub fn run(&self) -> &RunContext {
        &self.run
    }

    /// Where the run prints.
    pub fn console(&self) -> &Arc<Console> {
        &self.console
    }

    /// Stops the progress line and prints the resource line (not when quiet): the end of a
    /// successful run.
    pub fn finish(&self) {
        self.console.finish_progress();
        if !self.console.quiet() {
            self.console.print(&self.report.line());
        }
    }
}
