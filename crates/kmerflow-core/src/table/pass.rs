//! The read-level operations of the commands that decide read by read whether to count a
//! read (digital normalization, trim-low-abund's first pass), whatever holds the table
//! ([`ReadCounts`], implemented by [`super::Decider`]).
//!
//! The decision of a read depends on the counts left by every earlier read, but the loads of
//! its counters do not: they can be issued long before. The deciding thread keeps the counters
//! of the k-mers ahead on their way ([`AHEAD_LINES`]), so that the loads of a core run in
//! parallel while the reads are decided one after another.

use std::ops::Range;

/// Prefetch span, in counter lines: the counters of the next `AHEAD_LINES / lines per k-mer`
/// k-mers are prefetched (about a read with the blocked layout, a quarter of a read with
/// khmer's four tables): enough misses in flight for a core (`bench/floor.rs`: a random update
/// costs its least from 32-128 ahead on), few enough to stay in the first-level cache until
/// they are read.
pub(crate) const AHEAD_LINES: usize = 128;

/// The read-level operations of the commands that decide read by read whether to count a read:
/// the counts of a read's k-mers as the table stands after every earlier counted read, and
/// counting a read. Reads (ranges of k-mer indices into one batch) are given in input order.
/// Implemented by [`super::Decider`].
pub trait ReadCounts {
    /// Appends the count of each k-mer of `kmers` to `out`.
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>);
    /// khmer's `median_at_least`: true iff at least `(unsigned)(0.5 + n/2.0)` of the n k-mers
    /// have count >= `cutoff` (false without k-mers).
    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool;
    /// Counts the k-mers `kmers`, the same as consuming the read.
    fn add(&mut self, kmers: Range<usize>);

    /// khmer's normalize-by-median rule, the one of every run (one process, batched, sharded):
    /// a bundle (a read, or a pair: `reads()` gives the k-mers of each of its reads) is
    /// discarded when every one of its reads already has an upper-median count of at least
    /// `cutoff` ([`ReadCounts::median_at_least`]), else kept and its reads counted. Returns
    /// whether the bundle is kept.
    fn keep_bundle<I: Iterator<Item = Range<usize>>>(&mut self, reads: impl Fn() -> I, cutoff: u32) -> bool
    where
        Self: Sized,
    {
        let keep = !reads().all(|read| self.median_at_least(read, cutoff));
        if keep {
            reads().for_each(|read| self.add(read));
        }
        keep
    }
}

/// The counts of a run reached through a reference (a rule given `&mut dyn ReadCounts`).
impl<R: ReadCounts + ?Sized> ReadCounts for &mut R {
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>) {
        (**self).counts(kmers, out)
    }

    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
        (**self).median_at_least(kmers, cutoff)
    }

    fn add(&mut self, kmers: Range<usize>) {
        (**self).add(kmers)
    }
}
