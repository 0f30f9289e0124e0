//! The interface of a k-mer counting table, shared by both layouts.
//!
//! [`CountingTable`] holds the operations each layout implements in its own way (hashing, the
//! prefetching update and lookup loops, statistics, files): [`super::KhmerTable`] (khmer's
//! prime-sized tables) and [`super::BlockedTable`] (one cache line a k-mer) implement them, and
//! [`super::AnyTable`] (either one, chosen at run time) by dispatch. What the layouts share is
//! written once here as default methods over those primitives: counting one sequence, the
//! counts, median and abundance trimming of a sequence. Hashes are layout specific: pass only
//! hashes from the same table's [`CountingTable::kmer_hashes`].

use super::{median_mean_stddev, trim_position};
use crate::run::RunContext;
use crate::{Error, Result};
use std::cell::Cell;

/// The table layout of a command (`--layout khmer|blocked`); reports name it in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// khmer's prime-sized tables, file-compatible with khmer (the default).
    #[default]
    Khmer,
    /// All counters of a k-mer in one cache line, kmerflow's own file format.
    Blocked,
}

impl std::str::FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "khmer" => Ok(Self::Khmer),
            "blocked" => Ok(Self::Blocked),
            _ => Err(Error::invalid(format!("unknown table layout '{s}' (expected khmer or blocked)"))),
        }
    }
}

thread_local! {
    /// The k-mer hashes of the sequence a default method works on (taken out of the cell while
    /// in use, so a nested call simply starts a buffer of its own).
    static HASHES: Cell<Vec<u64>> = const { Cell::new(Vec::new()) };
}

/// Calls `f` with the hashes of the k-mers of `seq` in a per-thread buffer.
fn with_kmer_hashes<T: CountingTable + ?Sized, R>(table: &T, seq: &[u8], f: impl FnOnce(&[u64]) -> R) -> R {
    let mut hashes = HASHES.take();
    hashes.clear();
    table.kmer_hashes(seq, &mut hashes);
    let result = f(&hashes);
    HASHES.set(hashes);
    result
}

/// A k-mer counting table (Count-Min sketch or, with 1-bit counters, Bloom filter); see the
/// module documentation. Updates through `&self` are atomic (threads may share the table);
/// the `_exclusive` ones take `&mut self` and use plain loads and stores.
pub trait CountingTable: Sync {
    /// k.
    fn ksize(&self) -> usize;
    /// True for counters, false for presence bits (a nodegraph, 1-bit counters).
    fn holds_counts(&self) -> bool;
    /// Appends the hash of every k-mer of `seq` (in order) to `out`; `seq` is used as given
    /// (the caller cleans it); a sequence shorter than k yields nothing.
    fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>);
    /// Adds one hashed k-mer; true when it was new (some counter was zero). Thread-safe.
    fn add_hash(&self, hash: u64) -> bool;
    /// Count of one hashed k-mer (0/1 for presence bits).
    fn get_hash(&self, hash: u64) -> u32;
    /// Adds each hash once, in order (the same as [`CountingTable::add_hash`] on each), with the
    /// memory of the hashes ahead prefetched. Thread-safe.
    fn add_hashes(&self, hashes: &[u64]);
    /// [`CountingTable::add_hashes`] for a single writer (plain loads and stores).
    fn add_hashes_exclusive(&mut self, hashes: &[u64]);
    /// Appends the count of each hash to `out` (the same as [`CountingTable::get_hash`] on each).
    fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>);
    /// Counts every k-mer of every sequence (the same as [`CountingTable::consume`] on each, in
    /// order) with one prefetch pipeline across all of them; returns the number of k-mers.
    /// Thread-safe.
    fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64;
    /// [`CountingTable::consume_many`] for a single writer (plain loads and stores).
    fn consume_many_exclusive<'a>(&mut self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64;
    /// Whether the upper median of the counts of the k-mers with these hashes (in read order)
    /// is >= `cutoff` (khmer's `median_at_least`, deciding as soon as the answer is known).
    fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool;
    /// Occupied bins of table 0 (khmer) / non-zero counters (blocked).
    fn n_occupied(&self) -> u64;
    /// Adds that found a zero counter (khmer's `n_unique_kmers`; may vary with the thread
    /// interleaving).
    fn n_unique_kmers(&self) -> u64;
    /// Saves in the layout's own file format within the run `ctx` (a write to a stalled FIFO
    /// gives up when the run is cancelled).
    fn save_in(&self, path: &str, ctx: &RunContext) -> Result<()>;

    /// [`CountingTable::save_in`] outside any run.
    fn save(&self, path: &str) -> Result<()> {
        self.save_in(path, &RunContext::new())
    }

    /// Counts every k-mer of `seq`; returns the number of k-mers. Thread-safe.
    fn consume(&self, seq: &[u8]) -> u64 {
        self.consume_many([seq])
    }

    /// [`CountingTable::consume`] for a single writer: the same counts, updated with plain
    /// loads and stores instead of atomic read-modify-writes (`&mut` proves no one else writes).
    fn consume_exclusive(&mut self, seq: &[u8]) -> u64 {
        self.consume_many_exclusive([seq])
    }

    /// Appends the count of every k-mer of `seq` to `out`.
    fn kmer_counts(&self, seq: &[u8], out: &mut Vec<u32>) {
        with_kmer_hashes(self, seq, |hashes| self.counts_for_hashes(hashes, out));
    }

    /// khmer's `get_median_count`: (upper median, float32 mean, float32 population stddev) of
    /// the k-mer counts of `seq`; `None` when `seq` has no k-mer.
    fn median_count(&self, seq: &[u8]) -> Option<(u32, f32, f32)> {
        let mut counts = Vec::new();
        self.kmer_counts(seq, &mut counts);
        median_mean_stddev(&mut counts)
    }

    /// khmer's `median_at_least(seq, cutoff)` (the diginorm test): true as soon as
    /// `(unsigned)(0.5 + n/2.0)` of the n k-mers have count >= `cutoff`, i.e. iff the upper
    /// median is >= `cutoff`. False when `seq` has no k-mer.
    fn median_at_least(&self, seq: &[u8], cutoff: u32) -> bool {
        with_kmer_hashes(self, seq, |hashes| self.median_at_least_hashes(hashes, cutoff))
    }

    /// khmer's `trim_on_abundance`: length of the longest prefix whose k-mers all have count
    /// >= `cutoff` (0 when `seq` has exactly one k-mer or none).
    fn trim_on_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
        trim_where(self, seq, |count| count >= cutoff)
    }

    /// khmer's `trim_below_abundance`: the same rule keeping k-mers with count <= `cutoff`
    /// (it cuts at the first k-mer *above* the cutoff; observed with khmer 3.0).
    fn trim_below_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
        trim_where(self, seq, |count| count <= cutoff)
    }
}

/// The longest prefix of `seq` whose k-mers' counts all satisfy `keep` (see
/// [`trim_position`]).
fn trim_where<T: CountingTable + ?Sized>(table: &T, seq: &[u8], keep: impl Fn(u32) -> bool) -> usize {
    let mut counts = Vec::new();
    table.kmer_counts(seq, &mut counts);
    trim_position(&counts, table.ksize(), seq.len(), keep)
}
