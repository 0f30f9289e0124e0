//! One prefetch pipeline over the k-mers of many reads, for a single writer that decides
//! read by read whether to count it (digital normalization), on either table layout.
//!
//! The decision of a read depends on the counts left by every earlier read, but the loads of
//! its counters do not: they can be issued long before. [`KmerPass`] is given the reads' k-mer
//! ranges up front and prefetches by reads, not k-mers: it keeps the counters (one line per
//! table of the khmer layout, one line of the blocked layout) of the next reads' k-mers on their
//! way, a span of [`AHEAD_LINES`] lines' worth of k-mers ahead of the one being looked at, across
//! read boundaries, so that the loads of a core run in parallel while the reads are decided one
//! after another.
//! Of a read it prefetches the k-mers its look-up will read ([`Lookahead`]): all of them for
//! the counts of every k-mer, the first half and a few for a median vote, which mostly stops
//! there; the rest of a read that is counted is prefetched as it is counted. Counting a read
//! increments its counters with plain stores, since the pass holds the table exclusively.

use super::{median_min_required, MedianVote, Tally};
use std::ops::Range;

/// Prefetch span, in counter lines: the planned k-mers among the next `AHEAD_LINES / lines per
/// k-mer` are prefetched (about a read with the blocked layout, so the next read's vote; a
/// quarter of a read with khmer's four tables): enough misses in flight for a core
/// (`bench/floor.rs`: a random update costs its least from 32-128 ahead on), few enough to stay
/// in the first-level cache until they are read.
pub(crate) const AHEAD_LINES: usize = 128;
/// k-mers of a read prefetched beyond those a median vote needs at the least, for votes that
/// go on a little longer.
const VOTE_SLACK: usize = 4;
/// Distance of the prefetches of the rest of a read while it is counted.
const ADD_AHEAD: usize = 16;

/// A table a [`KmerPass`] can drive: prefetching, reading and counting a k-mer.
pub trait PassTable {
    /// Number of cache lines holding one k-mer's counters.
    fn lines_per_kmer(&self) -> usize;
    /// Prefetches the counters of the k-mer `hash`.
    fn prefetch_kmer(&self, hash: u64);
    /// Count of the k-mer `hash`.
    fn count_of(&self, hash: u64) -> u32;
    /// Counts the k-mer `hash` (single writer).
    fn add_exclusive(&mut self, hash: u64) -> Tally;
    /// Adds the tally of `kmers` k-mers counted by [`PassTable::add_exclusive`] to the table's
    /// statistics.
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

/// Which k-mers of each read a [`KmerPass`] prefetches ahead (a hint: any use is correct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookahead {
    /// Every k-mer (the reads' counts are read whole).
    Whole,
    /// Those a median vote reads when it stops as early as it can, and [`VOTE_SLACK`] more.
    Vote,
}

impl Lookahead {
    /// Number of k-mers prefetched ahead of a read of `n` k-mers.
    #[inline(always)]
    fn prefix(self, n: usize) -> usize {
        match self {
            Lookahead::Whole => n,
            Lookahead::Vote => {
                let needed = median_min_required(n);
                (needed.max(n + 1 - needed) + VOTE_SLACK).min(n)
            }
        }
    }
}

/// A pass over the concatenated k-mer hashes of many reads (see the module documentation).
/// Reads are given as ranges of indices into the hashes; they are looked at in order.
pub struct KmerPass<'a, T: PassTable> {
    table: &'a mut T,
    hashes: &'a [u64],
    /// The reads in order (ranges of `hashes`), whose k-mers are prefetched.
    reads: &'a [Range<usize>],
    lookahead: Lookahead,
    /// k-mers (of `hashes`) prefetched ahead of the one looked at.
    ahead: usize,
    /// The next k-mer to prefetch: `next`, of read `next_read` (whose k-mers to prefetch end
    /// at `planned_end`).
    next_read: usize,
    next: usize,
    planned_end: usize,
}

impl<'a, T: PassTable> KmerPass<'a, T> {
    /// Starts a pass of `table` over `hashes`, whose reads (in order, not overlapping) are
    /// `reads`; `lookahead` says which k-mers of a read are prefetched.
    pub fn new(table: &'a mut T, hashes: &'a [u64], reads: &'a [Range<usize>], lookahead: Lookahead) -> Self {
        let ahead = AHEAD_LINES / table.lines_per_kmer().max(1);
        let mut pass = KmerPass { table, hashes, reads, lookahead, ahead, next_read: 0, next: 0, planned_end: 0 };
        pass.plan_read(0);
        pass
    }

    /// Makes read `r` the next to prefetch, from its start; false past the last read.
    #[inline(always)]
    fn plan_read(&mut self, r: usize) -> bool {
        self.next_read = r;
        match self.reads.get(r) {
            Some(read) => {
                self.next = read.start;
                self.planned_end = read.start + self.lookahead.prefix(read.len());
                true
            }
            None => false,
        }
    }

    /// Prefetches the planned k-mers (by [`Lookahead`]) of the reads until `ahead` k-mers past
    /// k-mer `i`, in `hashes`' numbering, skipping those before `i`.
    #[inline(always)]
    fn prepare(&mut self, i: usize) {
        if self.next < i {
            while self.reads.get(self.next_read).is_some_and(|r| r.end <= i) {
                self.next_read += 1;
            }
            if !self.plan_read(self.next_read) {
                return;
            }
            self.next = self.next.max(i);
        }
        let target = i + self.ahead;
        while self.next < target {
            if self.next < self.planned_end {
                self.table.prefetch_kmer(self.hashes[self.next]);
                self.next += 1;
            } else if !self.plan_read(self.next_read + 1) {
                return;
            }
        }
    }
}

impl<T: PassTable> ReadCounts for KmerPass<'_, T> {
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>) {
        for i in kmers {
            self.prepare(i);
            out.push(self.table.count_of(self.hashes[i]));
        }
    }

    /// Stops as soon as the answer is known either way.
    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
        let mut vote = MedianVote::new(kmers.len());
        for i in kmers {
            if let Some(answer) = vote.decided() {
                return answer;
            }
            self.prepare(i);
            vote.cast(self.table.count_of(self.hashes[i]) >= cutoff);
        }
        vote.result()
    }

    /// Prefetches the k-mers past the planned ones [`ADD_AHEAD`] ahead as it counts.
    fn add(&mut self, kmers: Range<usize>) {
        let planned_end = kmers.start + self.lookahead.prefix(kmers.len());
        let first_unplanned = planned_end.max(kmers.start + ADD_AHEAD);
        (planned_end..first_unplanned.min(kmers.end)).for_each(|j| self.table.prefetch_kmer(self.hashes[j]));
        let mut total = Tally::default();
        for i in kmers.clone() {
            let ahead = i + ADD_AHEAD;
            if ahead >= first_unplanned && ahead < kmers.end {
                self.table.prefetch_kmer(self.hashes[ahead]);
            }
            self.prepare(i);
            total.add(self.table.add_exclusive(self.hashes[i]));
        }
        self.table.record_adds(total, kmers.len() as u64);
    }
}
