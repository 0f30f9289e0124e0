//! A one-line progress indicator on stderr, drawn only when stderr is a terminal.
//!
//! A ticker thread redraws the line four times a second from the run's progress counters
//! ([`kmerflow_core::run::progress::Progress`]): the input bytes read in the current pass
//! against that pass's inputs, the pass (`pass 2/2 histogram`) and the fraction of the whole
//! run when the command reads its inputs more than once, and the records handled.
//!
//! The line never reaches the scrollback: it is cut to the terminal's width (a wrapped line
//! could not be erased), and every other line printed during the run goes through
//! [`Progress::print_above`], which erases it, prints and redraws it under one lock, so that the
//! ticker cannot draw between the erase and the print. Every writer takes stderr's lock, then
//! the line's ([`Shared::lock`]): a thread printing above the line while the ticker redraws it
//! waits for the redraw (taken the other way round, each would hold the lock the other wants).

use kmerflow_core::run::progress::Snapshot;
use kmerflow_core::run::RunContext;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Time between two redraws (`KMERFLOW_PROGRESS_MS` sets another, in milliseconds).
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// State shared with the ticker thread.
struct Shared {
    label: &'static str,
    started: Instant,
    run: RunContext,
    /// Whether the line is on screen (locked with stderr: [`Shared::lock`]).
    drawn: Mutex<bool>,
    stop: AtomicBool,
}

/// The progress line of one command.
pub struct Progress {
    shared: Option<Arc<Shared>>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

/// The text of the line: the pass when the run makes several, bytes read (of the total
/// when known), the overall fraction across passes, records when known, seconds.
pub fn line(label: &str, progress: &Snapshot, records: u64, secs: f64) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let mut s = format!("[kmerflow {label}] ");
    if let Some((number, planned @ 2.., name)) = progress.pass {
        s += &format!("pass {number}/{planned} {name}: ");
    }
    if progress.total > 0 {
        let pct = (100.0 * progress.read as f64 / progress.total as f64).min(100.0);
        s += &format!("{:.1}/{:.1} MB read ({pct:.0}%)", mb(progress.read), mb(progress.total));
    } else {
        s += &format!("{:.1} MB read", mb(progress.read));
    }
    if let (Some((_, 2.., _)), Some(overall)) = (progress.pass, progress.overall) {
        s += &format!(", overall {:.0}%", 100.0 * overall);
    }
    if records > 0 {
        s += &format!(", {records} records");
    }
    s + &format!(", {secs:.1} s")
}

/// `text` cut to fewer than `width` characters (so that the terminal does not wrap it).
fn fit(text: &str, width: usize) -> &str {
    match text.char_indices().nth(width.saturating_sub(1)) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// The width of the terminal on stderr (80 when it cannot be told).
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ only writes into the zeroed struct we pass.
    let ws = unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) != 0 {
            return 80;
        }
        ws
    };
    if ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        80
    }
}

impl Shared {
    /// Locks stderr, then whether the line is drawn: the one order every writer takes them in.
    fn lock(&self) -> (std::io::StderrLock<'static>, MutexGuard<'_, bool>) {
        let err = std::io::stderr().lock();
        (err, self.drawn.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Draws the line (the caller holds the lock: `drawn`).
    fn draw(&self, drawn: &mut bool, err: &mut impl Write) {
        let progress = self.run.progress();
        let text = line(self.label, &progress.snapshot(), progress.records(), self.started.elapsed().as_secs_f64());
        let _ = write!(err, "\r\x1b[K{}", fit(&text, terminal_width()));
        let _ = err.flush();
        *drawn = true;
    }

    /// Erases the line if drawn (the caller holds the lock: `drawn`).
    fn erase(drawn: &mut bool, err: &mut impl Write) {
        if *drawn {
            let _ = write!(err, "\r\x1b[K");
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
        let every = std::env::var("KMERFLOW_PROGRESS_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(REDRAW_EVERY, Duration::from_millis);
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
                std::thread::sleep(every);
                let (mut err, mut drawn) = ticking.lock();
                if ticking.stop.load(Ordering::Relaxed) {
                    return;
                }
                ticking.draw(&mut drawn, &mut err);
            })
            .ok();
        Progress { shared: Some(shared), ticker }
    }

    /// Prints `text` and a newline on stderr: the line, if drawn, is erased first and drawn
    /// again under it, with no chance for the ticker to draw in between.
    pub fn print_above(&self, text: &str) {
        match &self.shared {
            Some(s) => {
                let (mut err, mut drawn) = s.lock();
                let was_drawn = *drawn;
                Shared::erase(&mut drawn, &mut err);
                let _ = writeln!(err, "{text}");
                if was_drawn && !s.stop.load(Ordering::Relaxed) {
                    s.draw(&mut drawn, &mut err);
                }
            }
            None => eprintln!("{text}"),
        }
    }

    /// Stops the ticker and erases the line.
    pub fn finish(&mut self) {
        if let Some(s) = &self.shared {
            let (mut err, mut drawn) = s.lock();
            s.stop.store(true, Ordering::Relaxed);
            Shared::erase(&mut drawn, &mut err);
        }
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(read: u64, total: u64, pass: Option<(usize, usize, &'static str)>, overall: f64) -> Snapshot {
        Snapshot { read, total, pass, overall: Some(overall) }
    }

    #[test]
    fn line_shows_bytes_of_total_records_and_time() {
        assert_eq!(
            line("readstats", &snapshot(152_500_000, 305_000_000, None, 0.5), 1200, 2.04),
            "[kmerflow readstats] 152.5/305.0 MB read (50%), 1200 records, 2.0 s"
        );
        assert_eq!(line("x", &snapshot(2_000_000, 0, None, 0.0), 0, 0.5), "[kmerflow x] 2.0 MB read, 0.5 s");
    }

    #[test]
    fn line_shows_the_pass_and_the_overall_fraction() {
        let second = snapshot(2_000_000, 50_000_000, Some((2, 2, "histogram")), 0.52);
        assert_eq!(
            line("abundance-dist-single", &second, 0, 3.0),
            "[kmerflow abundance-dist-single] pass 2/2 histogram: 2.0/50.0 MB read (4%), overall 52%, 3.0 s"
        );
        let only = snapshot(1_000_000, 2_000_000, Some((1, 1, "counting")), 0.5);
        assert_eq!(line("x", &only, 0, 1.0), "[kmerflow x] 1.0/2.0 MB read (50%), 1.0 s");
    }

    #[test]
    fn a_long_line_is_cut_to_the_width() {
        assert_eq!(fit("abcdef", 4), "abc");
        assert_eq!(fit("abc", 80), "abc");
        assert_eq!(fit("ééé", 3), "éé");
    }
}
