//! A one-line progress indicator on stderr, drawn only when stderr is a terminal and redrawn
//! at most four times a second.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Minimum time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// The progress line of one command.
pub struct Progress {
    label: &'static str,
    enabled: bool,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    /// A progress line labelled `label`, shown when `wanted` and stderr is a terminal.
    pub fn new(label: &'static str, wanted: bool) -> Self {
        Progress {
            label,
            enabled: wanted && std::io::stderr().is_terminal(),
            started: Instant::now(),
            last_draw: None,
        }
    }

    /// Reports that `records` records have been handled.
    pub fn update(&mut self, records: u64) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self.last_draw.is_some_and(|t| now - t < REDRAW_EVERY) {
            return;
        }
        self.last_draw = Some(now);
        let secs = (now - self.started).as_secs_f64();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K[kmerflow {}] {records} records, {secs:.1} s", self.label);
        let _ = err.flush();
    }

    /// Erases the line if it was drawn.
    pub fn clear(&mut self) {
        if self.last_draw.take().is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}
