//! A run's input progress: bytes read from its input files so far, their total size, and the
//! records handled.
//!
//! The raw-byte reader under every input ([`crate::io::compress::open_input`]) adds what it
//! reads; the commands that count records add those; a front end polls [`Progress::snapshot`]
//! to draw a progress line for any command. One relaxed atomic add per read of the underlying
//! file.

use std::sync::atomic::{AtomicU64, Ordering};

/// The progress counters of one run.
#[derive(Debug, Default)]
pub struct Progress {
    read: AtomicU64,
    total: AtomicU64,
    records: AtomicU64,
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

    /// `(bytes read, total size of the inputs opened so far)`; the total is 0 when only
    /// streams of unknown size (stdin, pipes) were opened.
    pub fn snapshot(&self) -> (u64, u64) {
        (self.read.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed))
    }

    /// The records handled so far (0 for commands that do not report them).
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }
}
