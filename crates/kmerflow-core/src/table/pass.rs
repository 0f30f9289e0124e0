//! One prefetch pipeline over the k-mers of many reads, for a single writer that decides
//! read by read whether to count it (digital normalization), on either table layout.
//!
//! The hashes of a whole batch are laid end to end; [`KmerPass`] locates each k-mer's counters
//! once (its "probes": one bin per table of the khmer layout, one line of the blocked layout),
//! when it prefetches them, a fixed distance ahead of the k-mer being looked at, and runs on
//! across read boundaries, so that the counters of the next read are on their way while the
//! current read is decided. Counting a read increments the counters at the probes already
//! located (their cache lines were just read), with plain stores, since the pass holds the
//! table exclusively.

use super::{MedianVote, Tally, PREFETCH_AHEAD};
use std::ops::Range;

/// A table a [`KmerPass`] can drive: where a k-mer's counters are, and reading and counting a
/// k-mer whose counters are known.
pub trait PassTable {
    /// Number of probe values of one k-mer.
    fn probes_per_kmer(&self) -> usize;
    /// Appends the probes of `hash` to `out` and prefetches their cache lines.
    fn locate(&self, hash: u64, out: &mut Vec<u64>);
    /// Count of the k-mer `hash` whose probes are `probes`.
    fn count_at(&self, hash: u64, probes: &[u64]) -> u32;
    /// Counts the k-mer `hash` whose probes are `probes` (single writer).
    fn add_at(&mut self, hash: u64, probes: &[u64]) -> Tally;
    /// Adds the tally of `kmers` k-mers counted by [`PassTable::add_at`] to the table's statistics.
    fn record_adds(&mut self, tally: Tally, kmers: u64);
}

/// The read-level operations of the commands that decide read by read whether to count a read:
/// the counts of a read's k-mers as the table stands after every earlier counted read, and
/// counting a read. Reads (ranges of k-mer indices into one batch) are given in input order.
/// Implemented by the read-by-read [`KmerPass`] and by the batched [`super::Decider`].
pub trait ReadCounts {
    /// Appends the count of each k-mer of `kmers` to `out`.
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>);
    /// khmer's `median_at_least`: true iff at least `(unsigned)(0.5 + n/2.0)` of the n k-mers
    /// have count >= `cutoff` (false without k-mers).
    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool;
    /// Counts the k-mers `kmers`, the same as consuming the read.
    fn add(&mut self, kmers: Range<usize>);
}

/// A pass over the concatenated k-mer hashes of many reads (see the module documentation).
/// Reads are given as ranges of indices into the hashes; they are looked at in order.
pub struct KmerPass<'a, T: PassTable> {
    table: &'a mut T,
    hashes: &'a [u64],
    /// Probes of k-mers `0..ready`, hash-major (`stride` per k-mer).
    probes: &'a mut Vec<u64>,
    stride: usize,
    ready: usize,
}

impl<'a, T: PassTable> KmerPass<'a, T> {
    /// Starts a pass of `table` over `hashes`; `probes` is scratch space reused between passes.
    pub fn new(table: &'a mut T, hashes: &'a [u64], probes: &'a mut Vec<u64>) -> Self {
        let stride = table.probes_per_kmer();
        probes.clear();
        probes.reserve(hashes.len() * stride);
        KmerPass { table, hashes, probes, stride, ready: 0 }
    }

    /// Locates and prefetches every k-mer up to `end + PREFETCH_AHEAD`.
    #[inline(always)]
    fn prepare(&mut self, end: usize) {
        let target = (end + PREFETCH_AHEAD).min(self.hashes.len());
        while self.ready < target {
            self.table.locate(self.hashes[self.ready], self.probes);
            self.ready += 1;
        }
    }

    /// The probes of k-mer `i` (located).
    #[inline(always)]
    fn probes_of(&self, i: usize) -> &[u64] {
        &self.probes[i * self.stride..(i + 1) * self.stride]
    }
}

impl<T: PassTable> ReadCounts for KmerPass<'_, T> {
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>) {
        for i in kmers {
            self.prepare(i + 1);
            out.push(self.table.count_at(self.hashes[i], self.probes_of(i)));
        }
    }

    /// Stops as soon as the answer is known either way.
    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
        let mut vote = MedianVote::new(kmers.len());
        for i in kmers {
            if let Some(answer) = vote.decided() {
                return answer;
            }
            self.prepare(i + 1);
            vote.cast(self.table.count_at(self.hashes[i], self.probes_of(i)) >= cutoff);
        }
        vote.result()
    }

    fn add(&mut self, kmers: Range<usize>) {
        let mut total = Tally::default();
        let n = kmers.len() as u64;
        for i in kmers {
            self.prepare(i + 1);
            let (start, end) = (i * self.stride, (i + 1) * self.stride);
            total.add(self.table.add_at(self.hashes[i], &self.probes[start..end]));
        }
        self.table.record_adds(total, n);
    }
}
