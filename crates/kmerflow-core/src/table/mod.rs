//! Counting and presence tables (Count-Min sketch, Bloom filter), HyperLogLog, file formats.
//!
//! [`KhmerTable`] is khmer's hashtable family behind one type: the hash family ([`HashKind`]) times
//! the storage ([`StorageKind`]) gives Countgraph (2-bit, byte counters), SmallCountgraph
//! (2-bit, 4-bit counters), Nodegraph (2-bit, bits), and Counttable / SmallCounttable /
//! Nodetable (Murmur). All updates take `&self` and use atomic instructions, so one table is
//! shared by all threads and threaded counting gives the same counts as one thread.
//!
//! [`CountingTable`] (`counting.rs`) is the interface of both layouts, [`KhmerTable`] and the
//! cache-line [`BlockedTable`] (`blocked.rs`); [`AnyTable`] (`any.rs`) holds either one.

mod alloc;
mod any;
mod counting;
mod fastmod;
pub mod hll;
mod hll_bias;
pub mod khmer_format;
pub mod native_format;
pub mod primes;
pub(crate) mod storage;

pub(crate) use alloc::OwnedBytes;
pub use alloc::{AllocOptions, HugePages};
pub use any::AnyTable;
pub use blocked::{BlockedHash, BlockedParams, BlockedTable, CounterWidth};
pub use counting::{CountingTable, Layout};
pub use fastmod::FastMod;

use crate::run::RunContext;
use crate::{Error, Result};

/// Largest k of a Murmur table (khmer stores k in one byte).
pub const MAX_MURMUR_K: usize = 255;
/// Largest bigcount value (khmer's `MAX_BIGCOUNT`, the u16 maximum the map saturates at).
pub const MAX_BIGCOUNT: u16 = 65535;
/// k-mers whose bins are prefetched ahead of the one being visited.
pub(crate) const PREFETCH_AHEAD: usize = 32;

/// The k-mer hash family of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKind {
    /// khmer's 2-bit canonical hash, k <= 32 (Countgraph, SmallCountgraph, Nodegraph).
    TwoBit,
    /// khmer's canonical MurmurHash3, any k (Counttable, SmallCounttable, Nodetable).
    Murmur,
}

/// The counter storage of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// 8-bit saturating counters, optional "bigcount" up to 65535 (khmer type 1).
    Byte,
    /// 4-bit saturating counters, max 15 (khmer type 7).
    Nibble,
    /// One bit per bin: a Bloom filter (khmer type 2).
    Bit,
}

/// Calls `$body` with `$C` bound to the cell type of `$storage`: one dispatch per call,
/// monomorphised loops inside (the blocked layout's `with_width!` too).
macro_rules! with_cells {
    ($storage:expr, $C:ident => $body:expr) => {
        match $storage {
            $crate::table::StorageKind::Byte => {
                type $C = ByteCells;
                $body
            }
            $crate::table::StorageKind::Nibble => {
                type $C = NibbleCells;
                $body
            }
            $crate::table::StorageKind::Bit => {
                type $C = BitCells;
                $body
            }
        }
    };
}
pub(crate) use with_cells;

mod add;
pub mod batch;
pub mod blocked;
mod owned;
mod pass;
pub use add::{add_table_files, sum_table_files};
pub use batch::{BatchLookup, BatchOutcome, BatchRules, BatchRunner, BatchTable, Decider};
pub use owned::{OwnedBatch, OwnedCounting};
pub use pass::ReadCounts;
mod khmer;
pub use khmer::KhmerTable;
pub(crate) use khmer::{bytes_for, check_parameters, hash_kmers, Table};

/// Hints the CPU to fetch the cache line of `cell` (no-op off x86-64).
#[inline(always)]
pub(crate) fn prefetch<T>(cell: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint and never faults; the address is a valid reference.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((cell as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = cell;
}

/// Calls `visit(i, place)` for every item of `items` in order, `fetch(place)` having been called
/// for the item `PREFETCH_AHEAD` later meanwhile.
#[inline(always)]
pub(crate) fn visit_prefetched(items: &[(usize, u64)], fetch: impl Fn(u64), mut visit: impl FnMut(usize, u64)) {
    items.iter().take(PREFETCH_AHEAD).for_each(|&(_, place)| fetch(place));
    for (j, &(i, place)) in items.iter().enumerate() {
        if let Some(&(_, ahead)) = items.get(j + PREFETCH_AHEAD) {
            fetch(ahead);
        }
        visit(i, place);
    }
}

/// Occupancy and uniqueness increments of some adds, summed before touching the shared counters.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    occupied: u64,
    unique: u64,
}

impl Tally {
    #[inline(always)]
    fn add(&mut self, other: Tally) {
        self.occupied += other.occupied;
        self.unique += other.unique;
    }
}

/// khmer's (counts[n/2] after sorting, float32 mean, float32 population stddev).
pub fn median_mean_stddev(counts: &mut [u32]) -> Option<(u32, f32, f32)> {
    if counts.is_empty() {
        return None;
    }
    let n = counts.len() as f32;
    let mean = counts.iter().fold(0f32, |sum, &c| sum + c as f32) / n;
    let variance = counts.iter().fold(0f32, |sum, &c| sum + (c as f32 - mean) * (c as f32 - mean)) / n;
    counts.sort_unstable();
    Some((counts[counts.len() / 2], mean, variance.sqrt()))
}

/// khmer's `median_at_least` threshold: how many of `n_kmers` k-mers must reach the cutoff,
/// `(unsigned)(0.5 + n / 2.0)`.
pub(crate) fn median_min_required(n_kmers: usize) -> usize {
    (0.5 + n_kmers as f64 / 2.0) as usize
}

/// khmer's `median_at_least` decision taken one k-mer at a time: true iff at least
/// [`median_min_required`] of the n k-mers pass the count test; false when n = 0. The answer
/// is known as soon as enough k-mers passed, or too few are left to get there.
pub(crate) struct MedianVote {
    min_req: usize,
    passed: usize,
    left: usize,
}

impl MedianVote {
    /// A vote over `n_kmers` k-mers.
    pub(crate) fn new(n_kmers: usize) -> Self {
        MedianVote { min_req: median_min_required(n_kmers), passed: 0, left: n_kmers }
    }

    /// Counts the test result of the next k-mer.
    #[inline(always)]
    pub(crate) fn cast(&mut self, passes: bool) {
        self.passed += usize::from(passes);
        self.left -= 1;
    }

    /// The answer, once the k-mers left cannot change it.
    #[inline(always)]
    pub(crate) fn decided(&self) -> Option<bool> {
        if self.min_req == 0 || self.passed + self.left < self.min_req {
            Some(false)
        } else if self.passed >= self.min_req {
            Some(true)
        } else {
            None
        }
    }

    /// The answer after every k-mer was counted (or once decided).
    pub(crate) fn result(&self) -> bool {
        self.decided() == Some(true)
    }
}

/// khmer's trim position from a read's k-mer `counts`: the longest prefix whose k-mers all
/// satisfy `keep`; 0 when the read has one k-mer or none, or its first k-mer fails.
pub(crate) fn trim_position(counts: &[u32], k: usize, seq_len: usize, keep: impl Fn(u32) -> bool) -> usize {
    match counts.iter().position(|&c| !keep(c)) {
        _ if counts.len() <= 1 => 0,
        Some(0) => 0,
        // The k-mer starting at i ends at i + k - 1: keep seq[..i + k - 1].
        Some(i) => i + k - 1,
        None => seq_len,
    }
}

#[cfg(test)]
mod tests;
