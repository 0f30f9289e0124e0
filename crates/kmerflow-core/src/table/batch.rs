//! Exact batched decisions in three phases (look up, decide, apply) for the commands that
//! decide read by read whether to count a read (normalize-by-median, trim-low-abund).
//!
//! Read by read, each decision reads counts that include every earlier counted read, so one
//! thread looks up, decides and updates in turn and one core's memory parallelism bounds the
//! run. The same decisions are made batch by batch (`n` k-mers of `P` counters each; position
//! `q = p * n + o` is probe `p` of k-mer `o`):
//!
//! 1. **look up** ([`BatchTable::lookup_owned`], in parallel by owner): every position's counter
//!    value as the table stood before the batch (its *base*), and its *slot*: the first position
//!    of the batch with the same counter, so that positions sharing a counter share one delta;
//! 2. **decide** ([`Decider`], one thread, input order, batch-sized arrays only): a position
//!    reads `base + D[slot]`, where the delta `D` holds the increments made by earlier counted
//!    reads of the batch (saturating); a k-mer's count is the minimum over its probes, then its
//!    bigcount when all are saturated; counting a read adds one to each of its deltas below
//!    saturation and tallies `n_occupied`, `n_unique_kmers` and bigcount increments by the
//!    rules of the sequential add;
//! 3. **apply** ([`BatchTable::apply_owned`], in parallel by owner): every counter with a delta
//!    becomes `base + D`; then the statistics and the bigcount increments are recorded.
//!
//! Owners are those of counting ([`super::OwnedCounting`]): khmer's table `t` belongs to owner
//! `t mod owners`, the blocked layout's line `l` to owner `l mod owners`. The counters,
//! statistics and decisions are exactly those of the read-by-read run, for any number of owners.
//!
//! On a table in this process, a [`BatchRunner`] decides on the table itself ([`InTable`]):
//! phase 1 has nothing to look up and phase 3 nothing to apply but the statistics, while phase
//! 2 reads and counts the live counters as their only writer, prefetching the counters of the
//! k-mers ahead, so that each line is loaded once, as read by read. The simulated counters
//! (base + delta, the phases above) are those of tables held elsewhere (shards), and of
//! [`look_up`], [`decide`] and [`apply`]; the rules ([`Decider`]) are the same.

use super::alloc::advise_huge_pages_inside;
use super::pass::AHEAD_LINES;
use super::storage::{BitCells, ByteCells, Cells, NibbleCells};
use super::{prefetch, KhmerTable, MedianVote, ReadCounts, StorageKind};
use crate::{Error, Result};
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};

/// One owner's map from the counters of a batch to their first position (the slot), with
/// open addressing so that the entry of a counter can be prefetched with the counter itself,
/// and emptied in constant time (entries of an earlier use carry an older epoch), on huge pages
/// when large. A general hash map here cost 58% of the samples of two-thread normalization.
#[derive(Default)]
pub struct SeenCounters {
    entries: Vec<SeenEntry>,
    mask: usize,
    epoch: u32,
}

#[derive(Clone, Copy, Default)]
struct SeenEntry {
    counter: u64,
    first: u32,
    epoch: u32,
}

impl SeenCounters {
    /// Empties the map for up to `n` counters.
    pub(crate) fn start(&mut self, n: usize) {
        let capacity = (2 * n).next_power_of_two().max(16);
        if self.entries.len() < capacity {
            let mut entries = Vec::with_capacity(capacity);
            advise_huge_pages_inside(entries.spare_capacity_mut());
            entries.resize(capacity, SeenEntry::default());
            (self.entries, self.epoch) = (entries, 0);
        }
        self.mask = capacity - 1;
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.entries.fill(SeenEntry::default());
            self.epoch = 1;
        }
    }

    #[inline(always)]
    fn index(&self, counter: u64) -> usize {
        (counter.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & self.mask
    }

    /// Prefetches the entry where `counter` is looked for first.
    #[inline(always)]
    pub(crate) fn prefetch(&self, counter: u64) {
        prefetch(&self.entries[self.index(counter)]);
    }

    /// The first position of `counter`, if it was seen.
    #[inline(always)]
    pub(crate) fn get(&self, counter: u64) -> Option<u32> {
        let mut i = self.index(counter);
        loop {
            let entry = &self.entries[i];
            if entry.epoch != self.epoch {
                return None;
            }
            if entry.counter == counter {
                return Some(entry.first);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The first position of `counter`, which is `q` if the counter was not seen before.
    #[inline(always)]
    pub(crate) fn first(&mut self, counter: u64, q: u32) -> u32 {
        let mut i = self.index(counter);
        loop {
            let entry = &mut self.entries[i];
            if entry.epoch != self.epoch {
                *entry = SeenEntry { counter, first: q, epoch: self.epoch };
                return q;
            }
            if entry.counter == counter {
                return entry.first;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// The counting rules that phase 2 needs of a table, wherever its counters are held (in this
/// process, or in shards elsewhere: [`crate::shards::khmer`]).
pub trait BatchRules: Sync {
    /// Counters of one k-mer (`P`: tables of khmer's layout, probes of the blocked layout).
    fn batch_probes(&self) -> usize;
    /// Largest value of a counter.
    fn counter_max(&self) -> u8;
    /// Probes whose counters leaving zero count as newly occupied (khmer: table 0 only).
    fn occupancy_probes(&self) -> usize;
    /// Whether saturated k-mers have bigcount values.
    fn batch_uses_bigcount(&self) -> bool;
    /// The bigcount value of a k-mer, if it has one.
    fn bigcount_of(&self, hash: u64) -> Option<u16>;
}

/// A table whose reads can be decided batch by batch (see the module documentation).
pub trait BatchTable: BatchRules {
    /// Number of owners among `threads` threads (at least 1).
    fn batch_owners(&self, threads: usize) -> usize;
    /// Phase 1 for the counters `owner` (of `owners`) owns: fills their base and slot in
    /// `lookup`; `seen` is the owner's scratch map.
    fn lookup_owned(&self, hashes: &[u64], lookup: &BatchLookup, owner: usize, owners: usize, seen: &mut SeenCounters);
    /// Phase 3 for the counters `owner` owns: sets each counter with a non-zero `delta` to
    /// `base + delta` (plain stores: the owner is their only writer).
    fn apply_owned(&self, hashes: &[u64], lookup: &BatchLookup, delta: &[u8], owner: usize, owners: usize);
    /// Records the statistics and bigcount increments of a decided batch (after phase 3).
    fn record_outcome(&self, outcome: &BatchOutcome);
    /// Number of cache lines holding one k-mer's counters ([`InTable`] prefetches by lines).
    fn counter_lines(&self) -> usize;
    /// Prefetches the counters of the k-mer `hash` ([`InTable`]).
    fn prefetch_counters(&self, hash: u64);
    /// The least of the counters of the k-mer `hash` (phase 2 on the table itself, [`InTable`]).
    fn least_in_place(&self, hash: u64) -> u8;
    /// Adds one to each counter of the k-mer `hash` below its maximum, as their only writer,
    /// writing each counter's value before to `previous` (one per probe; [`InTable`]).
    fn add_in_place(&self, hash: u64, previous: &mut [u8]);
}

/// Phase 1's result: base and slot of every position of a batch.
#[derive(Default)]
pub struct BatchLookup {
    n: usize,
    probes: usize,
    base: Vec<AtomicU8>,
    slot: Vec<AtomicU32>,
}

impl BatchLookup {
    /// Prepares for `n` k-mers of `probes` counters (every position is then written by its owner).
    fn reset(&mut self, n: usize, probes: usize) -> Result<()> {
        let len = n.checked_mul(probes).filter(|&len| len <= u32::MAX as usize);
        let len = len.ok_or_else(|| Error::invalid(format!("a batch of {n} k-mers is too large")))?;
        (self.n, self.probes) = (n, probes);
        if self.base.len() < len {
            self.base.resize_with(len, AtomicU8::default);
            self.slot.resize_with(len, AtomicU32::default);
        }
        Ok(())
    }

    /// A lookup from its arrays (`base` and `slot` of `n * probes` positions, probe-major),
    /// for look-ups made elsewhere (by shards). Every slot must be an earlier or the same position.
    pub fn from_arrays(n: usize, probes: usize, base: &[u8], slot: &[u32]) -> Result<Self> {
        let len = n * probes;
        if base.len() != len || slot.len() != len {
            return Err(Error::invalid(format!(
                "a lookup of {n} k-mers x {probes} probes needs {len} bases and slots"
            )));
        }
        if slot.iter().enumerate().any(|(q, &s)| s as usize > q || slot[s as usize] != s) {
            return Err(Error::invalid("every slot must be the first position of its counter"));
        }
        Ok(BatchLookup {
            n,
            probes,
            base: base.iter().map(|&b| AtomicU8::new(b)).collect(),
            slot: slot.iter().map(|&s| AtomicU32::new(s)).collect(),
        })
    }

    /// Number of k-mers.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True for a batch without k-mers.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Counters per k-mer.
    pub fn probes(&self) -> usize {
        self.probes
    }

    /// The base of every position (probe-major).
    pub fn bases(&self) -> Vec<u8> {
        self.base[..self.n * self.probes].iter().map(|b| b.load(Relaxed)).collect()
    }

    /// The slot of every position (probe-major).
    pub fn slots(&self) -> Vec<u32> {
        self.slot[..self.n * self.probes].iter().map(|s| s.load(Relaxed)).collect()
    }

    /// Records position `q`: its counter holds `base`; `first` is its slot.
    #[inline(always)]
    pub(super) fn put(&self, q: usize, base: u8, first: u32) {
        self.base[q].store(base, Relaxed);
        self.slot[q].store(first, Relaxed);
    }

    /// The base of position `q`.
    #[inline(always)]
    pub(super) fn base_at(&self, q: usize) -> u8 {
        self.base[q].load(Relaxed)
    }

    #[inline(always)]
    fn slot_at(&self, q: usize) -> usize {
        self.slot[q].load(Relaxed) as usize
    }
}

/// What the counted reads of a batch change besides the counters (phase 2 for phase 3).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Counters that left zero (khmer: of table 0; `n_occupied`).
    pub occupied: u64,
    /// k-mers counted while some counter was zero (`n_unique_kmers`).
    pub unique: u64,
    /// k-mers counted.
    pub added: u64,
    /// The hash of every bigcount increment, in order.
    pub bigcounts: Vec<u64>,
}

/// Where phase 2 reads the value of a position and counts on it.
pub trait Positions {
    /// The value of position `q` as the read-by-read run would see it now.
    fn value(&self, q: usize) -> u8;
    /// Adds one to position `q` unless it holds `max`, and returns its value before.
    fn add_one(&mut self, q: usize, max: u8) -> u8;
    /// Called before k-mer `o` is read or counted (in non-decreasing order of `o`): a chance
    /// to prefetch what the next k-mers read.
    #[inline(always)]
    fn ahead(&self, _o: usize) {}
}

/// How phase 2 reads and counts the counters of a batch's k-mers (`n` k-mers of `probes`
/// counters each): on [`Positions`] (any of them), or in a table itself ([`InTable`]).
pub trait BatchCounters {
    /// Called before k-mer `o` is read or counted (in non-decreasing order of `o`).
    fn ahead(&self, o: usize);
    /// The least value of k-mer `o`'s counters as the read-by-read run would see it now.
    fn least(&self, o: usize, n: usize, probes: usize) -> u8;
    /// Adds one to each counter of k-mer `o` unless it holds `max`, writing each counter's
    /// value before to `previous` (one per probe).
    fn add_kmer(&mut self, o: usize, n: usize, max: u8, previous: &mut [u8]);
}

/// A k-mer's counters are its positions `p * n + o`.
impl<P: Positions> BatchCounters for P {
    #[inline(always)]
    fn ahead(&self, o: usize) {
        Positions::ahead(self, o)
    }

    #[inline(always)]
    fn least(&self, o: usize, n: usize, probes: usize) -> u8 {
        (0..probes).map(|p| self.value(p * n + o)).min().unwrap_or(0)
    }

    #[inline(always)]
    fn add_kmer(&mut self, o: usize, n: usize, max: u8, previous: &mut [u8]) {
        for (p, before) in previous.iter_mut().enumerate() {
            *before = self.add_one(p * n + o, max);
        }
    }
}

/// The simulated counters of phase 2: a position reads its base plus the delta at its slot.
pub struct Simulated<'a> {
    lookup: &'a BatchLookup,
    delta: &'a mut [u8],
}

impl Positions for Simulated<'_> {
    #[inline(always)]
    fn value(&self, q: usize) -> u8 {
        self.lookup.base_at(q) + self.delta[self.lookup.slot_at(q)]
    }

    #[inline(always)]
    fn add_one(&mut self, q: usize, max: u8) -> u8 {
        let slot = self.lookup.slot_at(q);
        let previous = self.lookup.base_at(q) + self.delta[slot];
        self.delta[slot] += u8::from(previous < max);
        previous
    }
}

/// The counters of a table in this process, read and counted in place by phase 2, their only
/// writer while a batch is decided: the counters of the k-mers [`AHEAD_LINES`] lines ahead of
/// the one decided are prefetched (see the module documentation).
pub struct InTable<'a, T: ?Sized> {
    table: &'a T,
    hashes: &'a [u64],
    /// k-mers prefetched ahead of the one decided.
    distance: usize,
    /// End of the k-mers prefetched so far.
    ready: Cell<usize>,
}

impl<'a, T: BatchTable + ?Sized> InTable<'a, T> {
    /// The counters of the k-mers `hashes` in `table`.
    pub fn new(table: &'a T, hashes: &'a [u64]) -> Self {
        let distance = AHEAD_LINES / table.counter_lines().max(1);
        InTable { table, hashes, distance, ready: Cell::new(0) }
    }
}

impl<T: BatchTable + ?Sized> BatchCounters for InTable<'_, T> {
    #[inline(always)]
    fn ahead(&self, o: usize) {
        let end = (o + 1 + self.distance).min(self.hashes.len());
        for k in self.ready.get().max(o)..end {
            self.table.prefetch_counters(self.hashes[k]);
        }
        self.ready.set(self.ready.get().max(end));
    }

    #[inline(always)]
    fn least(&self, o: usize, _n: usize, _probes: usize) -> u8 {
        self.table.least_in_place(self.hashes[o])
    }

    #[inline(always)]
    fn add_kmer(&mut self, o: usize, _n: usize, _max: u8, previous: &mut [u8]) {
        self.table.add_in_place(self.hashes[o], previous)
    }
}

/// Phase 2 over one batch: counts and adds on the batch's [`BatchCounters`] (by default the
/// simulated counters, see the module documentation). Reads must be decided in input order.
pub struct Decider<'a, T: BatchRules + ?Sized, P: BatchCounters = Simulated<'a>> {
    table: &'a T,
    hashes: &'a [u64],
    positions: P,
    /// The values before of the counters of the k-mer counted last (one per probe).
    previous: Vec<u8>,
    /// k-mers of the batch and counters per k-mer.
    n: usize,
    probes: usize,
    outcome: &'a mut BatchOutcome,
    /// Bigcount values reached inside the batch.
    big: &'a mut FxHashMap<u64, u16>,
    max: u8,
    /// Index of the batch's first k-mer in the caller's k-mer numbering.
    offset: usize,
}

impl<'a, T: BatchRules + ?Sized, P: BatchCounters> Decider<'a, T, P> {
    /// Phase 2 of the k-mers `hashes` on `positions`, the outcome recorded in `outcome` and
    /// the bigcounts reached in `big` (empty).
    fn new(
        table: &'a T,
        hashes: &'a [u64],
        positions: P,
        outcome: &'a mut BatchOutcome,
        big: &'a mut FxHashMap<u64, u16>,
    ) -> Self {
        let (n, probes, max) = (hashes.len(), table.batch_probes(), table.counter_max());
        let previous = vec![0; probes];
        Decider { table, hashes, positions, previous, n, probes, outcome, big, max, offset: 0 }
    }

    /// The batch's indices of the caller's k-mers `kmers`.
    #[inline(always)]
    fn local(&self, kmers: Range<usize>) -> Range<usize> {
        kmers.start - self.offset..kmers.end - self.offset
    }

    /// The bigcount value of `hash` as the batch has it so far.
    fn bigcount(&self, hash: u64) -> Option<u16> {
        self.big.get(&hash).copied().or_else(|| self.table.bigcount_of(hash))
    }

    /// Count of k-mer `o` of the batch (minimum over probes, then bigcount), as the read-by-read
    /// run would see it now.
    #[inline]
    pub fn count(&self, o: usize) -> u32 {
        self.positions.ahead(o);
        let min = self.positions.least(o, self.n, self.probes);
        if min == self.max && self.table.batch_uses_bigcount() {
            if let Some(big) = self.bigcount(self.hashes[o]) {
                return u32::from(big);
            }
        }
        u32::from(min)
    }
}

impl<T: BatchRules + ?Sized, P: BatchCounters> ReadCounts for Decider<'_, T, P> {
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>) {
        out.extend(self.local(kmers).map(|o| self.count(o)));
    }

    /// Stops as soon as the answer is known.
    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
        let mut vote = MedianVote::new(kmers.len());
        for o in self.local(kmers) {
            if vote.decided().is_some() {
                break;
            }
            vote.cast(self.count(o) >= cutoff);
        }
        vote.result()
    }

    /// Counts on the batch's counters, by the rules of the sequential add.
    fn add(&mut self, kmers: Range<usize>) {
        let (n, occupancy) = (self.n, self.table.occupancy_probes());
        let bigcount = self.table.batch_uses_bigcount();
        self.outcome.added += kmers.len() as u64;
        for o in self.local(kmers) {
            self.positions.ahead(o);
            self.positions.add_kmer(o, n, self.max, &mut self.previous);
            let (mut any_zero, mut all_full) = (false, true);
            for (p, &previous) in self.previous.iter().enumerate() {
                if previous == 0 {
                    any_zero = true;
                    self.outcome.occupied += u64::from(p < occupancy);
                }
                all_full &= previous == self.max;
            }
            self.outcome.unique += u64::from(any_zero);
            if all_full && bigcount {
                let hash = self.hashes[o];
                let next = match self.bigcount(hash).unwrap_or(0) {
                    0 => 256,
                    big => big.saturating_add(1),
                };
                self.big.insert(hash, next);
                self.outcome.bigcounts.push(hash);
            }
        }
    }
}

/// Whether `ends` (the end offsets of consecutive spans) never decrease and end at most at
/// `limit`.
pub fn ends_in_order(ends: &[u64], limit: usize) -> bool {
    !ends.windows(2).any(|w| w[0] > w[1]) && ends.last().is_none_or(|&e| e as usize <= limit)
}

/// The spans `ends[i-1] .. ends[i]` (the first from 0) of `ends` checked by [`ends_in_order`].
pub fn spans(ends: &[u64]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    ends.iter().map(move |&end| {
        let span = start..end as usize;
        start = end as usize;
        span
    })
}

/// Decides batch after batch on a table in this process ([`InTable`]), reusing its buffers:
/// the engine of one-process normalize-by-median, `normalize` and trim-low-abund.
#[derive(Default)]
pub struct BatchRunner {
    outcome: BatchOutcome,
    big: FxHashMap<u64, u16>,
}

impl BatchRunner {
    /// Decides the batch of the k-mers `kmers` of `hashes` on `table` itself: calls `decide`
    /// with the batch's [`Decider`] (reads given as ranges of indices into `hashes`), then
    /// records the batch's statistics and bigcounts in `table`. The caller must be the table's
    /// only writer meanwhile.
    pub fn run<T: BatchTable + ?Sized, R>(
        &mut self,
        table: &T,
        hashes: &[u64],
        kmers: Range<usize>,
        decide: impl FnOnce(&mut Decider<'_, T, InTable<'_, T>>) -> R,
    ) -> R {
        let (offset, hashes) = (kmers.start, &hashes[kmers]);
        self.outcome = BatchOutcome::default();
        self.big.clear();
        let counters = InTable::new(table, hashes);
        let mut decider = Decider::new(table, hashes, counters, &mut self.outcome, &mut self.big);
        decider.offset = offset;
        let result = decide(&mut decider);
        table.record_outcome(&self.outcome);
        result
    }
}

/// Phase 1 alone, with the owners of `threads` threads (for look-ups made apart from the
/// decisions, as by a shard of a table).
pub fn look_up<T: BatchTable + ?Sized>(table: &T, hashes: &[u64], threads: usize) -> Result<BatchLookup> {
    let owners = table.batch_owners(threads);
    let mut lookup = BatchLookup::default();
    lookup.reset(hashes.len(), table.batch_probes())?;
    let mut seen: Vec<SeenCounters> = (0..owners).map(|_| SeenCounters::default()).collect();
    by_owners(owners, &mut seen, |owner, seen| table.lookup_owned(hashes, &lookup, owner, owners, seen));
    Ok(lookup)
}

/// Phase 2 alone: calls `decide` with the [`Decider`] of `lookup` (made from `hashes`); returns
/// its result, the deltas (per position) and the outcome, for [`apply`].
pub fn decide<T: BatchRules + ?Sized, R>(
    table: &T,
    hashes: &[u64],
    lookup: &BatchLookup,
    decide: impl FnOnce(&mut Decider<'_, T>) -> R,
) -> Result<(R, Vec<u8>, BatchOutcome)> {
    if hashes.len() != lookup.n || lookup.probes != table.batch_probes() {
        return Err(Error::invalid("the lookup was not made for these hashes and this table"));
    }
    let (mut delta, mut outcome, mut big) =
        (vec![0; lookup.n * lookup.probes], BatchOutcome::default(), FxHashMap::default());
    let positions = Simulated { lookup, delta: &mut delta };
    let result = decide(&mut Decider::new(table, hashes, positions, &mut outcome, &mut big));
    Ok((result, delta, outcome))
}

/// Phase 2 on `positions` (of the k-mers `hashes`): calls `decide` with their [`Decider`];
/// returns its result, the positions and the outcome.
pub fn decide_on<T: BatchRules + ?Sized, P: Positions, R>(
    table: &T,
    hashes: &[u64],
    positions: P,
    decide: impl FnOnce(&mut Decider<'_, T, P>) -> R,
) -> (R, P, BatchOutcome) {
    let (mut outcome, mut big) = (BatchOutcome::default(), FxHashMap::default());
    let mut decider = Decider::new(table, hashes, positions, &mut outcome, &mut big);
    let result = decide(&mut decider);
    let positions = decider.positions;
    (result, positions, outcome)
}

/// Phase 3 alone, with the owners of `threads` threads: the counters of `lookup` (made from
/// `hashes`) with a delta become base + delta, then `outcome` is recorded. Deltas that would
/// take a counter past its maximum are refused before anything is changed.
pub fn apply<T: BatchTable + ?Sized>(
    table: &T,
    hashes: &[u64],
    lookup: &BatchLookup,
    delta: &[u8],
    outcome: &BatchOutcome,
    threads: usize,
) -> Result<()> {
    let len = lookup.n * lookup.probes;
    if hashes.len() != lookup.n || lookup.probes != table.batch_probes() || delta.len() != len {
        return Err(Error::invalid("the lookup and deltas were not made for these hashes and this table"));
    }
    let max = table.counter_max();
    if (0..len).any(|q| delta[q] > max - lookup.base_at(q).min(max)) {
        return Err(Error::invalid(format!("a delta takes a counter past its maximum {max}")));
    }
    let owners = table.batch_owners(threads);
    let mut seen: Vec<SeenCounters> = (0..owners).map(|_| SeenCounters::default()).collect();
    by_owners(owners, &mut seen, |owner, _| table.apply_owned(hashes, lookup, delta, owner, owners));
    table.record_outcome(outcome);
    Ok(())
}

/// Runs `f(owner, owner's scratch)` for every owner, owners 1.. on scoped threads and owner 0 on
/// the calling thread. A panic of an owner reaches the caller.
fn by_owners(owners: usize, seen: &mut [SeenCounters], f: impl Fn(usize, &mut SeenCounters) + Sync) {
    let (first, rest) = seen.split_first_mut().expect("at least one owner");
    if owners == 1 {
        return f(0, first);
    }
    let f = &f;
    std::thread::scope(|scope| {
        for (i, seen) in rest.iter_mut().enumerate() {
            scope.spawn(move || f(i + 1, seen));
        }
        f(0, first);
    });
}

impl BatchRules for KhmerTable {
    fn batch_probes(&self) -> usize {
        self.n_tables()
    }

    fn counter_max(&self) -> u8 {
        with_cells!(self.storage, C => C::MAX)
    }

    fn occupancy_probes(&self) -> usize {
        1
    }

    fn batch_uses_bigcount(&self) -> bool {
        self.storage == StorageKind::Byte && self.use_bigcount
    }

    fn bigcount_of(&self, hash: u64) -> Option<u16> {
        self.bigcounts.lock().unwrap_or_else(|e| e.into_inner()).get(&hash).copied()
    }
}

impl BatchTable for KhmerTable {
    fn batch_owners(&self, threads: usize) -> usize {
        threads.clamp(1, self.n_tables())
    }

    fn lookup_owned(&self, hashes: &[u64], lookup: &BatchLookup, owner: usize, owners: usize, seen: &mut SeenCounters) {
        let n = hashes.len();
        with_cells!(self.storage, C => {
            for t in (owner..self.n_tables()).step_by(owners) {
                seen.start(n);
                // `seen` is read and written in turns by the two closures, never at once.
                let seen = std::cell::RefCell::new(&mut *seen);
                self.tables[t].visit_bins_ahead::<C>(
                    hashes,
                    |bin| seen.borrow().prefetch(bin),
                    |o, mem, bin| {
                        let q = t * n + o;
                        lookup.put(q, C::count(mem, bin), seen.borrow_mut().first(bin, q as u32));
                    },
                );
            }
        })
    }

    fn apply_owned(&self, hashes: &[u64], lookup: &BatchLookup, delta: &[u8], owner: usize, owners: usize) {
        let n = hashes.len();
        with_cells!(self.storage, C => {
            for t in (owner..self.n_tables()).step_by(owners) {
                let delta = &delta[t * n..(t + 1) * n];
                self.tables[t].visit_bins_where::<C>(hashes, |o| delta[o] > 0, |o, mem, bin| {
                    C::set_exclusive(mem, bin, lookup.base_at(t * n + o) + delta[o]);
                });
            }
        })
    }

    fn record_outcome(&self, outcome: &BatchOutcome) {
        self.occupied.fetch_add(outcome.occupied, Relaxed);
        self.unique.fetch_add(outcome.unique, Relaxed);
        outcome.bigcounts.iter().for_each(|&hash| self.bump_bigcount(hash));
    }

    fn counter_lines(&self) -> usize {
        self.n_tables()
    }

    #[inline(always)]
    fn prefetch_counters(&self, hash: u64) {
        with_cells!(self.storage, C => {
            for table in &self.tables {
                prefetch(&table.mem.atomics()[C::byte_of(table.modulus.rem(hash))]);
            }
        })
    }

    #[inline(always)]
    fn least_in_place(&self, hash: u64) -> u8 {
        with_cells!(self.storage, C => self.least::<C>(|t| self.tables[t].modulus.rem(hash)))
    }

    #[inline(always)]
    fn add_in_place(&self, hash: u64, previous: &mut [u8]) {
        with_cells!(self.storage, C => {
            self.increment_bins::<C, true>(|t| self.tables[t].modulus.rem(hash), |t, before| previous[t] = before)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{median_min_required, BlockedTable, CounterWidth, CountingTable};
    use rand::{Rng, SeedableRng};

    /// Reads of k-mer hashes drawn from `distinct` values (repeats make counters collide and
    /// saturate).
    fn reads(seed: u64, n_reads: usize, distinct: u64) -> Vec<Vec<u64>> {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let pool: Vec<u64> = (0..distinct).map(|_| rng.random()).collect();
        (0..n_reads)
            .map(|_| {
                let len = rng.random_range(0..40);
                (0..len).map(|_| pool[rng.random_range(0..pool.len())]).collect()
            })
            .collect()
    }

    /// Diginorm's rule on a read's counts (keep unless the median reached `cutoff`).
    fn keeps(counts: &[u32], cutoff: u32) -> bool {
        let passed = counts.iter().filter(|&&c| c >= cutoff).count();
        counts.is_empty() || passed < median_min_required(counts.len())
    }

    /// Each read's counts and decision, read by read on the table itself.
    fn sequential(table: &impl CountingTable, reads: &[Vec<u64>], cutoff: u32) -> Vec<(Vec<u32>, bool)> {
        reads
            .iter()
            .map(|read| {
                let counts: Vec<u32> = read.iter().map(|&h| table.get_hash(h)).collect();
                let keep = keeps(&counts, cutoff);
                if keep {
                    read.iter().for_each(|&h| {
                        table.add_hash(h);
                    });
                }
                (counts, keep)
            })
            .collect()
    }

    /// The same batch by batch, `piece` k-mers a batch: on the table itself ([`BatchRunner`])
    /// without `threads`, else through the three phases on simulated counters with `threads`
    /// threads ([`look_up`], [`decide`], [`apply`]). With `votes`, reads are decided by their
    /// median vote alone, as normalize-by-median does (a vote stops as soon as its answer is
    /// known), and their counts are left empty.
    fn batched<T: BatchTable>(
        table: &T,
        reads: &[Vec<u64>],
        cutoff: u32,
        threads: Option<usize>,
        piece: usize,
        votes: bool,
    ) -> Vec<(Vec<u32>, bool)> {
        let hashes: Vec<u64> = reads.concat();
        let mut ranges = Vec::new();
        reads.iter().fold(0, |start, r| {
            ranges.push(start..start + r.len());
            start + r.len()
        });
        let mut runner = BatchRunner::default();
        let mut result = Vec::new();
        let mut first = 0;
        while first < ranges.len() {
            let mut last = first;
            while last + 1 < ranges.len() && ranges[last + 1].end - ranges[first].start <= piece {
                last += 1;
            }
            let kmers = ranges[first].start..ranges[last].end;
            let decide_reads = |d: &mut dyn FnMut(Range<usize>, &mut Vec<u32>) -> bool| {
                let mut decided = Vec::new();
                for range in &ranges[first..=last] {
                    let mut counts = Vec::new();
                    let keep = d(range.clone(), &mut counts);
                    decided.push((counts, keep));
                }
                decided
            };
            let decided = match threads {
                None => runner.run(table, &hashes, kmers, |d| {
                    decide_reads(&mut |read, counts| decide_read(d, read, cutoff, votes, counts))
                }),
                Some(threads) => {
                    let (offset, batch) = (kmers.start, &hashes[kmers]);
                    let lookup = look_up(table, batch, threads).unwrap();
                    let (decided, delta, outcome) = decide(table, batch, &lookup, |d| {
                        decide_reads(&mut |read: Range<usize>, counts| {
                            decide_read(d, read.start - offset..read.end - offset, cutoff, votes, counts)
                        })
                    })
                    .unwrap();
                    apply(table, batch, &lookup, &delta, &outcome, threads).unwrap();
                    decided
                }
            };
            result.extend(decided);
            first = last + 1;
        }
        result
    }

    /// Decides one read as normalize-by-median (by its vote alone with `votes`) or from its
    /// counts (appended to `counts`, the vote checked against them); counts it when kept.
    fn decide_read(
        d: &mut impl ReadCounts,
        read: Range<usize>,
        cutoff: u32,
        votes: bool,
        counts: &mut Vec<u32>,
    ) -> bool {
        let keep = if votes {
            !d.median_at_least(read.clone(), cutoff)
        } else {
            d.counts(read.clone(), counts);
            let keep = keeps(counts, cutoff);
            assert_eq!(!keep, d.median_at_least(read.clone(), cutoff));
            keep
        };
        if keep {
            d.add(read);
        }
        keep
    }

    /// The decisions of `expected` with the counts left out where `votes` left them out.
    fn as_decided(expected: &[(Vec<u32>, bool)], votes: bool) -> Vec<(Vec<u32>, bool)> {
        expected.iter().map(|(counts, keep)| (if votes { Vec::new() } else { counts.clone() }, *keep)).collect()
    }

    /// Engines (in the table, or simulated with 1-3 threads), k-mers a batch, and whether reads
    /// are decided by their votes alone.
    fn runs() -> impl Iterator<Item = (Option<usize>, usize, bool)> {
        [None, Some(1), Some(2), Some(3)].into_iter().flat_map(|threads| {
            [1, 40, 100_000].into_iter().flat_map(move |piece| [false, true].map(|votes| (threads, piece, votes)))
        })
    }

    #[test]
    fn the_seen_map_keeps_first_positions_when_grown_onto_huge_pages_and_empties_per_use() {
        let mut seen = SeenCounters::default();
        for n in [10, 300_000] {
            seen.start(2 * n);
            for q in 0..2 * n as u32 {
                assert_eq!(seen.first(u64::from(q % n as u32) * 7919, q), q % n as u32);
            }
            assert_eq!((seen.get(7919 * (n as u64 - 1)), seen.get(1)), (Some(n as u32 - 1), None));
            seen.start(n);
            assert_eq!(seen.get(0), None);
        }
    }

    fn ktable(storage: StorageKind, bigcount: bool) -> KhmerTable {
        let mut t = KhmerTable::with_sizes(20, crate::table::HashKind::TwoBit, storage, vec![97, 89, 83]).unwrap();
        if bigcount {
            t.set_use_bigcount(true).unwrap();
        }
        t
    }

    fn assert_same_ktables(a: &KhmerTable, b: &KhmerTable, hashes: &[u64]) {
        assert_eq!(a.raw_tables(), b.raw_tables());
        assert_eq!(a.n_occupied(), b.n_occupied());
        assert_eq!(a.n_unique_kmers(), b.n_unique_kmers());
        for &h in hashes {
            assert_eq!(a.get_hash(h), b.get_hash(h));
        }
    }

    #[test]
    fn khmer_layout_matches_read_by_read_with_collisions_and_bigcount() {
        for (storage, bigcount, cutoff) in
            [(StorageKind::Byte, true, 400), (StorageKind::Byte, false, 200), (StorageKind::Nibble, false, 12)]
        {
            let reads = reads(7, 3000, 150);
            let expected_table = ktable(storage, bigcount);
            let expected = sequential(&expected_table, &reads, cutoff);
            assert!(bigcount <= expected.iter().any(|(counts, _)| counts.iter().any(|&c| c > 255)));
            assert!(expected.iter().any(|(_, keep)| !keep) && expected.iter().any(|(_, keep)| *keep));
            for (threads, piece, votes) in runs() {
                let table = ktable(storage, bigcount);
                let decided = batched(&table, &reads, cutoff, threads, piece, votes);
                assert_eq!(decided, as_decided(&expected, votes), "{storage:?} -T{threads:?} {piece} {votes}");
                assert_same_ktables(&table, &expected_table, &reads.concat());
            }
        }
    }

    #[test]
    fn blocked_layout_matches_read_by_read() {
        for (width, cutoff) in [(CounterWidth::Bits8, 100), (CounterWidth::Bits4, 10)] {
            let reads = reads(11, 2000, 400);
            let expected_table = BlockedTable::new(20, 3 * 64, width, 4).unwrap();
            let expected = sequential(&expected_table, &reads, cutoff);
            for (threads, piece, votes) in runs() {
                let table = BlockedTable::new(20, 3 * 64, width, 4).unwrap();
                let decided = batched(&table, &reads, cutoff, threads, piece, votes);
                assert_eq!(decided, as_decided(&expected, votes), "{width:?} -T{threads:?} {piece} {votes}");
                assert_eq!(table.raw_bytes(), expected_table.raw_bytes());
                assert_eq!(table.occupancy(), expected_table.occupancy());
            }
        }
    }

    #[test]
    fn lookup_arrays_round_trip_and_are_checked() {
        let table = ktable(StorageKind::Byte, false);
        let hashes = [5u64, 102, 5, 9];
        table.add_hash(5);
        let lookup = look_up(&table, &hashes, 2).unwrap();
        let (bases, slots) = (lookup.bases(), lookup.slots());
        // k-mer 2 repeats k-mer 0; 102 = 5 + 97 shares its bin in table 0 only.
        assert_eq!(&slots[..4], &[0, 0, 0, 3]);
        assert_eq!(&slots[4..8], &[4, 5, 4, 7]);
        assert_eq!(&bases[..4], &[1, 1, 1, 0]);
        let copy = BatchLookup::from_arrays(4, 3, &bases, &slots).unwrap();
        assert_eq!((copy.bases(), copy.slots()), (bases.clone(), slots.clone()));
        let mut bad = slots.clone();
        bad[1] = 2;
        assert!(BatchLookup::from_arrays(4, 3, &bases, &bad).is_err());
        assert!(BatchLookup::from_arrays(4, 2, &bases, &slots).is_err());
    }
}
