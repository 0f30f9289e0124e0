//! A one-line progress indicator on stderr, drawn only when stderr is a terminal.
//!
//! A ticker thread redraws the line four times a second from the run's progress counters
//! ([`kmerflow_core::run::progress::Progress`]): the input bytes read so far against the
//! inputs' total size (counted by the core's readers, so every command gets it) and, for
//! commands that report them, the records handled.

use kmerflow_core::run::RunContext;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// State shared with the ticker thread.
struct Shared {
    label: &'static str,
    started: Instant,
    run: RunContext,
    /// Whether the line is on screen; the mutex also serialises drawing and erasing.
    drawn: Mutex<bool>,
    stop: AtomicBool,
}

/// The progress line of one command.
pub struct Progress {
    shared: Option<Arc<Shared>>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

/// The text of the line: bytes read (of the total when known), records when known, seconds.
pub fn line(label: &str, (read, total): (u64, u64), records: u64, secs: f64) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let mut s = format!("[kmerflow {label}] ");
    if total > 0 {
        let pct = (100.0 * read as f64 / total as f64).min(100.0);
        s += &format!("{:.1}/{:.1} MB read ({pct:.0}%)", mb(read), mb(total));
    } else {
        s += &format!("{:.1} MB read", mb(read));
    }
    if records > 0 {
        s += &format!(", {records} records");
    }
    s + &format!(", {secs:.1} s")
}

impl Shared {
    fn draw(&self) {
        let text = line(
            self.label,
            self.run.progress().snapshot(),
            self.run.progress().records(),
            self.started.elapsed().as_secs_f64(),
        );
        let mut drawn = self.drawn.lock().unwrap_or_else(|p| p.into_inner());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{text}");
        let _ = err.flush();
        *drawn = true;
    }

    fn erase(&self) {
        let mut drawn = self.drawn.lock().unwrap_or_else(|p| p.into_inner());
        if *drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            *drawn = false;
        }
    }
}

impl Progress {
    /// A progress line labelled `label` for the run `run`, shown when `wanted` and stderr is a
    /// terminal.
    pub fn new(label: &'static str, wanted: bool, run: RunContext) -> Self {
        if !(wanted && std::io::stderr().is_terminal()) {
            return Progress { shared: None, ticker: None };
        }
        let shared = Arc::new(Shared {
            label,
            started: Instant::now(),
            run,
            drawn: Mutex::new(false),
            stop: AtomicBool::new(false),
        });
        let ticking = shared.clone();
        let ticker = std::thread::Builder::new()
            .name("kmerflow-progress".into())
            .spawn(move || loop {
                std::thread::sleep(REDRAW_EVERY);
                if ticking.stop.load(Ordering::Relaxed) {
                    return;
                }
                ticking.draw();
            })
            .ok();
        Progress { shared: Some(shared), ticker }
    }

    /// Erases the line if it is drawn (the ticker draws it again later).
    pub fn clear(&mut self) {
        if let Some(s) = &self.shared {
            s.erase();
        }
    }

    /// Stops the ticker and erases the line.
    pub fn finish(&mut self) {
        if let Some(s) = &self.shared {
            s.stop.store(true, Ordering::Relaxed);
        }
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_bytes_of_total_records_and_time() {
        assert_eq!(
            line("readstats", (152_500_000, 305_000_000), 1200, 2.04),
            "[kmerflow readstats] 152.5/305.0 MB read (50%), 1200 records, 2.0 s"
        );
        assert_eq!(line("x", (2_000_000, 0), 0, 0.5), "[kmerflow x] 2.0 MB read, 0.5 s");
    }
}
