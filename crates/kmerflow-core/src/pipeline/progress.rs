//! Process-wide input progress: bytes read from input files so far and their total size.
//!
//! The raw-byte reader under every input ([`crate::io::compress::open_input`]) adds what it
//! reads; a front end polls [`snapshot`] to draw a progress line for any command. Always
//! compiled (one relaxed atomic add per read of the underlying file).

use std::sync::atomic::{AtomicU64, Ordering};

static READ: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// Adds an opened input of `size` bytes to the total.
pub fn add_input_size(size: u64) {
    TOTAL.fetch_add(size, Ordering::Relaxed);
}

/// Adds `n` bytes read from an input.
#[inline]
pub fn add_read(n: u64) {
    READ.fetch_add(n, Ordering::Relaxed);
}

/// `(bytes read, total size of the inputs opened so far)`; the total is 0 when only
/// streams of unknown size (stdin, pipes) were opened.
pub fn snapshot() -> (u64, u64) {
    (READ.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed))
}
