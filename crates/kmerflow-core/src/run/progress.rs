//! A run's input progress: bytes read from its input files so far, their total size, the
//! records handled, and the passes over the inputs.
//!
//! The raw-byte reader under every input ([`crate::io::compress::open_input`]) adds what it
//! reads; the commands that count records add those; a front end polls [`Progress::snapshot`]
//! to draw a progress line for any command. One relaxed atomic add per read of the underlying
//! file.
//!
//! An operation that reads its inputs more than once (counting, then filtering; the `-M auto`
//! pre-pass) declares its passes with [`Progress::plan_passes`] and starts each with
//! [`Progress::begin_pass`]; the snapshot then gives the current pass's bytes against that
//! pass's inputs and the fraction of the whole run. That fraction never goes back: not when a
//! pass starts, nor when a pass opens another input (a second input file, trim-low-abund's
//! set-aside reads), which raises the total it is measured against; it then holds until the
//! bytes read catch up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The progress counters of one run.
#[derive(Debug, Default)]
pub struct Progress {
    read: AtomicU64,
    total: AtomicU64,
    records: AtomicU64,
    passes: Mutex<Passes>,
}

/// The passes planned and started.
#[derive(Debug, Default)]
struct Passes {
    planned: usize,
    started: Vec<Pass>,
    /// The largest overall fraction given so far.
    overall_shown: f64,
}

/// One started pass: its name, when it began, and the bytes read and the input size counted
/// before it began.
#[derive(Debug)]
struct Pass {
    name: &'static str,
    began: Instant,
    read_before: u64,
    total_before: u64,
}

/// Where a run stands, as a progress line shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Bytes read in the current pass (all bytes when no pass was declared).
    pub read: u64,
    /// Size of the inputs opened in the current pass (0 when only streams of unknown size).
    pub total: u64,
    /// The current pass: `(number from 1, passes planned, name)`; `None` when the operation
    /// declared no passes.
    pub pass: Option<(usize, usize, &'static str)>,
    /// The fraction of the whole run done, from 0 to 1 (`None` when the size is unknown).
    pub overall: Option<f64>,
}

impl Progress {
    /// Adds an opened input of `size` bytes to the total.
    pub fn add_input_size(&self, size: u64) {
        self.total.fetch_add(size, Ordering::Relaxed);
    }

    /// Adds `n` bytes read from an input.
    #[inline]
    pub fn add_read(&self, n: u64) {
        self.read.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the number of records handled so far.
    #[inline]
    pub fn set_records(&self, n: u64) {
        self.records.store(n, Ordering::Relaxed);
    }

    /// Adds `n` passes over the inputs to those planned (an operation adds its own; the `-M
    /// auto` pre-pass adds one more).
    pub fn plan_passes(&self, n: usize) {
        self.lock().planned += n;
    }

    /// Starts the next pass, named `name` (for example "counting"): the bytes and sizes of the
    /// inputs opened from now on count for it.
    pub fn begin_pass(&self, name: &'static str) {
        let pass = Pass {
            name,
            began: Instant::now(),
            read_before: self.read.load(Ordering::Relaxed),
            total_before: self.total.load(Ordering::Relaxed),
        };
        let mut passes = self.lock();
        passes.started.push(pass);
        passes.planned = passes.planned.max(passes.started.len());
    }

    /// The passes started so far with their wall time (the last one until now).
    pub fn pass_times(&self) -> Vec<(&'static str, Duration)> {
        let passes = self.lock();
        let ends = passes.started.iter().skip(1).map(|p| p.began).chain(std::iter::once(Instant::now()));
        passes.started.iter().zip(ends).map(|(p, end)| (p.name, end.saturating_duration_since(p.began))).collect()
    }

    /// Where the run stands.
    pub fn snapshot(&self) -> Snapshot {
        let (read, total) = (self.read.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed));
        let mut passes = self.lock();
        let mut snapshot = match passes.started.last() {
            None => {
                let overall = (total > 0).then(|| (read as f64 / total as f64).min(1.0));
                Snapshot { read, total, pass: None, overall }
            }
            Some(current) => {
                let (read, total) = (read - current.read_before, total - current.total_before);
                let number = passes.started.len();
                let done_before = (number - 1) as f64;
                let overall =
                    (total > 0).then(|| (done_before + (read as f64 / total as f64).min(1.0)) / passes.planned as f64);
                Snapshot { read, total, pass: Some((number, passes.planned, current.name)), overall }
            }
        };
        if let Some(overall) = &mut snapshot.overall {
            passes.overall_shown = passes.overall_shown.max(*overall);
            *overall = passes.overall_shown;
        }
        snapshot
    }

    /// The records handled so far (0 for commands that do not report them).
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Passes> {
        self.passes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overall_progress_never_falls_when_a_pass_starts() {
        let p = Progress::default();
        p.add_input_size(100);
        p.add_read(50);
        assert_eq!(p.snapshot().overall, Some(0.5));
        let p = Progress::default();
        p.plan_passes(2);
        // Each pass reads `read` of an input of 100.
        for (number, name, read, overall) in [(1, "counting", 100, 0.5), (2, "histogram", 4, 0.52)] {
            p.begin_pass(name);
            p.add_input_size(100);
            p.add_read(read);
            let now = p.snapshot();
            assert_eq!(
                (now.read, now.total, now.pass, now.overall),
                (read, 100, Some((number, 2, name)), Some(overall))
            );
        }
        assert_eq!(p.pass_times().iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["counting", "histogram"]);
    }

    /// An input opened within a pass raises the total: the pass's own percentage falls, the
    /// overall fraction holds until the reads catch up.
    #[test]
    fn overall_progress_never_falls_when_a_pass_opens_another_input() {
        let p = Progress::default();
        p.plan_passes(2);
        p.begin_pass("trimming");
        p.add_input_size(100);
        p.add_read(100);
        assert_eq!(p.snapshot().overall, Some(0.5));
        p.add_input_size(100);
        let opened = p.snapshot();
        assert_eq!((opened.read, opened.total, opened.overall), (100, 200, Some(0.5)));
        p.add_read(60);
        assert_eq!(p.snapshot().overall, Some(0.5));
        p.add_read(40);
        assert_eq!(p.snapshot().overall, Some(0.5));
        p.begin_pass("second pass");
        p.add_input_size(50);
        p.add_read(25);
        assert_eq!(p.snapshot().overall, Some(0.75));
    }
}
