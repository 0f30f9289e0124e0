//! The terminal side of a command-line run: messages printed on stderr as the core emits them
//! (informational ones unless `-q`), kept in order with the progress line.

use crate::progress::Progress;
use kmerflow_core::run::{Level, Message, RunContext};
use std::sync::Mutex;

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
