//! Whole inputs through a sharded table of either layout: the client's side of counting and of
//! the decisions in input order (normalize-by-median, trim-low-abund's first pass), batch by
//! batch, with only the remote shards' messages left to the caller (who sends them to Dask
//! workers and hands back the answers).
//!
//! A run reads bundles natively ([`BundleBatches`], from a [`BundleSource`]: a file read with
//! khmer's pairing and length filter, or reads made in the run; about `batch_kmers` k-mers per
//! batch), hashes them, turns hashes into counters and routes them; the shards held in this
//! process answer at once, the others through one message per shard per batch. Counting
//! ([`ShardedCount`]) adds in input order and records the statistics from the previous values;
//! the decisions ([`ShardedKeep`]) are made in this process by the caller's rule, reading
//! and counting the local shards' counters in place read by read and the remote ones' through
//! their looked-up values and in-batch deltas, each remote shard's updates sent with a later
//! batch's look-ups (one message per shard and batch, the next batch sent before this one is
//! decided), and each decided batch is returned with its records as read. Look-ups alone ([`Lookups`]) return each
//! batch's counts to a caller that decides from them (filtering, histograms). Every result is
//! that of the one-process table with the same sizes.

use super::drive::Shards;
use super::in_flight::InFlight;
use super::khmer::{first_positions, Sections, Updates, PREFETCH_AHEAD};
use super::wire;
use super::{ShardKernel, ShardLayout, ShardRouting};
use crate::io::{write_record, BundleBatch, Record};
use crate::kmer::clean::{clean_parser, clean_screed};
use crate::kmer::twobit;
use crate::table::batch::{self, spans, Positions, SeenCounters};
use crate::table::blocked::OccupancyStats;
use crate::table::{prefetch, ReadCounts};
use crate::{Error, Result};
use std::cell::Cell;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// A batch of bundles: the canonical hashes of their reads end to end, where each read's and
/// each bundle's k-mers end, and (when kept for output) every read as read.
#[derive(Debug, Default)]
pub struct HashedBundles {
    /// k-mer hashes of every read, end to end.
    pub hashes: Vec<u64>,
    /// Read `i` holds hashes `read_ends[i-1] .. read_ends[i]`.
    pub read_ends: Vec<u64>,
    /// Bundle `b` holds reads `bundle_ends[b-1] .. bundle_ends[b]`.
    pub bundle_ends: Vec<u64>,
    /// Unless cleaned by [`Cleaning::Parser`]: every read's name, sequence and qualities.
    records: RecordStore,
}

/// Records kept as read: their fields end to end and where each record's fields lie.
#[derive(Debug, Default)]
struct RecordStore {
    bytes: Vec<u8>,
    /// Record `i`'s name, sequence and qualities (empty for FASTA) end at `ends[i]`.
    ends: Vec<[usize; 3]>,
    fasta: Vec<bool>,
}

impl RecordStore {
    fn push(&mut self, record: &Record<'_>) {
        self.bytes.extend_from_slice(record.name);
        let name = self.bytes.len();
        self.bytes.extend_from_slice(record.seq);
        let seq = self.bytes.len();
        self.bytes.extend_from_slice(record.qual.unwrap_or_default());
        self.ends.push([name, seq, self.bytes.len()]);
        self.fasta.push(record.qual.is_none());
    }

    fn get(&self, i: usize) -> Record<'_> {
        let start = if i == 0 { 0 } else { self.ends[i - 1][2] };
        let [name, seq, qual] = self.ends[i];
        let qual = (!self.fasta[i]).then(|| &self.bytes[seq..qual]);
        Record { name: &self.bytes[start..name], seq: &self.bytes[name..seq], qual }
    }
}

impl HashedBundles {
    /// Read `i` of the batch as read (batches made with records kept, see [`Cleaning`]).
    pub fn record(&self, i: usize) -> Record<'_> {
        self.records.get(i)
    }

    /// The k-mers of each read, as ranges of `hashes`.
    pub fn reads(&self) -> Vec<Range<usize>> {
        spans(&self.read_ends).collect()
    }

    /// The records of the bundles with `keep[b]`: a read, and its mate in a pair.
    pub fn kept<'a>(&'a self, keep: &'a [bool]) -> impl Iterator<Item = (Record<'a>, Option<Record<'a>>)> + 'a {
        let bundles = spans(&self.bundle_ends).zip(keep).filter(|(_, &kept)| kept);
        bundles.map(|(reads, _)| (self.record(reads.start), (reads.len() == 2).then(|| self.record(reads.start + 1))))
    }

    /// Appends the records of the bundles with `keep[b]` to `out`, as read.
    pub fn write_kept(&self, keep: &[bool], out: &mut Vec<u8>) {
        for (first, second) in self.kept(keep) {
            std::iter::once(first).chain(second).for_each(|record| write_record(out, &record));
        }
    }
}

/// How the reads of a batch are cleaned before hashing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleaning {
    /// khmer's C++ parser (counting).
    Parser,
    /// screed's rule (normalize-by-median), each record kept as read for output.
    ScreedWithRecords,
    /// khmer's C++ parser, each record kept as read (filter-abund, trim-low-abund: the reads
    /// are trimmed, see [`HashedBundles::record`]).
    ParserWithRecords,
}

/// How the k-mers of a cleaned read are hashed: appends their hashes to the vector.
pub type ReadHasher = Box<dyn Fn(&[u8], &mut Vec<u64>) + Send + Sync>;

/// Where a run's bundles come from: a file's [`PairedReader`], or batches made in this process
/// (the trimmed reads of `normalize`'s second pass).
pub type BundleSource = Box<dyn Iterator<Item = Result<BundleBatch>> + Send>;

/// The bundles of a [`BundleSource`] in batches of at least `batch_kmers` k-mers (the last one
/// smaller); a bundle is never split.
pub struct BundleBatches {
    source: BundleSource,
    current: Option<(BundleBatch, usize)>,
    hasher: ReadHasher,
    batch_kmers: usize,
    cleaning: Cleaning,
    clean: Vec<u8>,
    /// Reads dropped so far for being shorter than the reader's minimum length.
    pub short_dropped: u64,
}

impl BundleBatches {
    /// Batches of the bundles of `source`, hashed with khmer's canonical 2-bit hash of k `k`
    /// (checked by the table).
    pub fn new(source: BundleSource, k: usize, batch_kmers: usize, cleaning: Cleaning) -> Self {
        Self::with_hasher(
            source,
            Box::new(move |seq, out| twobit::canonical_hashes(seq, k, out)),
            batch_kmers,
            cleaning,
        )
    }

    /// Batches of the bundles of `source`, each read's k-mers hashed by `hasher`.
    pub fn with_hasher(source: BundleSource, hasher: ReadHasher, batch_kmers: usize, cleaning: Cleaning) -> Self {
        BundleBatches {
            source,
            current: None,
            hasher,
            batch_kmers: batch_kmers.max(1),
            cleaning,
            clean: Vec::new(),
            short_dropped: 0,
        }
    }

    /// The next batch, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<HashedBundles>> {
        let mut out = HashedBundles::default();
        while out.hashes.len() < self.batch_kmers {
            if self.current.as_ref().is_none_or(|(b, next)| *next == b.bundles.len()) {
                // A batch may hold no bundle (all its reads too short).
                match self.source.next().transpose()? {
                    Some(batch) => {
                        self.short_dropped += batch.n_short_dropped;
                        self.current = Some((batch, 0));
                    }
                    None => {
                        self.current = None;
                        break;
                    }
                }
                continue;
            }
            let (batch, next) = self.current.as_mut().expect("a batch was read");
            let bundle = batch.bundles[*next];
            *next += 1;
            for i in std::iter::once(bundle.first).chain(bundle.second) {
                let record = batch.batch.get(i);
                match self.cleaning {
                    Cleaning::ScreedWithRecords => clean_screed(record.seq, &mut self.clean),
                    Cleaning::Parser | Cleaning::ParserWithRecords => clean_parser(record.seq, &mut self.clean),
                }
                if self.cleaning != Cleaning::Parser {
                    out.records.push(&record);
                }
                (self.hasher)(&self.clean, &mut out.hashes);
                out.read_ends.push(out.hashes.len() as u64);
            }
            out.bundle_ends.push(out.read_ends.len() as u64);
        }
        Ok((!out.bundle_ends.is_empty()).then_some(out))
    }
}

/// A batch routed to the shards: the counter of each position and the shard of each, the
/// keys that messages name (the counters, or the k-mer hashes when the layout routes by
/// k-mer, [`ShardRouting::BY_KMER`]), the slot of each remote position (its counter's first
/// remote position, for normalization; empty otherwise), the input index of each key of the
/// shards (the remote ones', the local ones' unless the batch is normalized), shard after
/// shard in input order (the remote shards' first, in shard order, so that their answers go
/// back to input order, then the local ones'; the messages and the local shards read the keys
/// through them), and every position's value as it arrives. The buffers of a batch done with
/// are used again for a later one.
pub struct Routed<R> {
    counters: Vec<u64>,
    owners: Vec<u32>,
    slots: Vec<u32>,
    /// Normalizing: the remote counters' first positions (their slots), kept with the batch
    /// so that the updates of the batch decided while it waits find their slots
    /// ([`Routed::add_deltas`]).
    seen: SeenCounters,
    sections: Sections,
    /// Keys of the batch (positions, or k-mers when routed by k-mer).
    keys: usize,
    /// `sections.order[..remote_len]` are the positions of the remote shards' keys.
    remote_len: usize,
    values: Vec<u8>,
    local_done: bool,
    remote_shards: Vec<usize>,
    /// A counting batch not routed ([`Purpose::CountStraight`]), counted from its hashes.
    straight: bool,
    routing: std::marker::PhantomData<R>,
}

impl<R> Default for Routed<R> {
    fn default() -> Self {
        Routed {
            counters: Vec::new(),
            owners: Vec::new(),
            slots: Vec::new(),
            seen: SeenCounters::default(),
            sections: Sections::default(),
            keys: 0,
            remote_len: 0,
            values: Vec::new(),
            local_done: false,
            remote_shards: Vec::new(),
            straight: false,
            routing: std::marker::PhantomData,
        }
    }
}

impl<R: ShardRouting> Routed<R> {
    /// `hashes` routed to the shards for look-ups (see [`Routed::route`]).
    fn new(map: &R, hashes: &[u64], remote: &[bool]) -> Result<Self> {
        let mut routed = Routed::default();
        routed.route(map, hashes, remote, Purpose::LookUp)?;
        Ok(routed)
    }

    /// Values a key has: all of its k-mer's counters when routed by k-mer, else one.
    fn per_key(&self) -> usize {
        if R::BY_KMER {
            self.counters.len() / self.keys.max(1)
        } else {
            1
        }
    }

    /// Routes `hashes` to the shards in place of the batch held, `remote[s]` when shard `s` is
    /// remote, for `purpose`. Normalizing (which reads the local shards in place read by read),
    /// the remote positions get their slots (kept in `seen`) and the local shards no positions;
    /// otherwise each local shard's positions are sorted out for [`Routed::local`] and
    /// [`ShardLayout::count_here`] (and, counting, a layout routing by k-mer computes no
    /// counters: counting adds k-mers). A batch counted straight is not routed:
    /// [`Routed::count_here`] counts it from its hashes.
    fn route(&mut self, map: &R, hashes: &[u64], remote: &[bool], purpose: Purpose) -> Result<()> {
        let keep = purpose == Purpose::Keep;
        self.straight = purpose == Purpose::CountStraight;
        if self.straight {
            // Every position's value before its add, from which the layout records the batch.
            self.values.clear();
            self.values.resize(hashes.len() * map.probes(), 0);
            (self.keys, self.remote_len, self.local_done) = (hashes.len(), 0, false);
            self.remote_shards.clear();
            self.sections.split(&[], map.shards(), &[]);
            return Ok(());
        }
        map.positions(hashes, purpose == Purpose::Count, &mut self.counters, &mut self.owners)?;
        self.keys = if R::BY_KMER { hashes.len() } else { self.counters.len() };
        self.remote_shards.clear();
        self.remote_shards.extend((0..remote.len()).filter(|&s| remote[s]));
        let local_shards = (0..remote.len()).filter(|&s| !remote[s] && !keep);
        let wanted: Vec<usize> = self.remote_shards.iter().copied().chain(local_shards).collect();
        // The messages and the local shards read the keys through their positions.
        self.sections.split(&self.owners[..self.keys], map.shards(), &wanted);
        self.remote_len = self.remote_shards.iter().map(|&s| self.sections.lens[s]).sum();
        self.slots.clear();
        if keep {
            let (mut slots, mut seen) = (std::mem::take(&mut self.slots), std::mem::take(&mut self.seen));
            slots.resize(self.counters.len(), 0);
            first_positions(&mut seen, &self.counters, self.remote_positions(), &mut slots);
            (self.slots, self.seen) = (slots, seen);
        }
        self.values.clear();
        self.values.resize(self.counters.len(), 0);
        self.local_done = false;
        Ok(())
    }

    /// The positions of the remote shards' counters: for each probe (one when routed by
    /// counter), the remote keys shard after shard.
    fn remote_positions(&self) -> impl ExactSizeIterator<Item = usize> + Clone + '_ {
        let (order, keys, len) = (&self.sections.order[..self.remote_len], self.keys, self.remote_len.max(1));
        (0..self.per_key() * self.remote_len).map(move |j| j / len * keys + order[j % len] as usize)
    }

    /// Sets the value of every position held by a local shard to `f(shard, counter)`, in input
    /// order within each shard (once per batch; looked-up batches: with [`Purpose::LookUp`]).
    /// Routed by k-mer, each probe's positions of the shard's k-mers in turn.
    fn local<K: ShardKernel>(&mut self, local: &mut [Option<&mut K>], f: impl Fn(&mut K, u64) -> u8 + Sync) {
        if std::mem::replace(&mut self.local_done, true) {
            return;
        }
        // Each position is written by the one group holding its shard.
        let (per, keys, counters) = (self.per_key(), self.keys, &self.counters);
        let values = atomic_bytes(&mut self.values);
        let sections = &self.sections;
        on_halves(local, |group| {
            for (s, shard) in group.iter_mut().enumerate() {
                let Some(shard) = shard.as_deref_mut() else { continue };
                let order = sections.positions(s);
                if !R::BY_KMER {
                    drive(shard, counters, order, values, &f);
                    continue;
                }
                for p in 0..per {
                    // Fits: a batch's positions are refused past u32 by the routing.
                    let positions: Vec<u32> = order.iter().map(|&o| (p * keys) as u32 + o).collect();
                    drive(shard, counters, &positions, values, &f);
                }
            }
        });
    }

    /// Adds each local shard's part of a counting batch of `hashes` on a table of `map`
    /// ([`ShardLayout::count_here`], or [`ShardLayout::count_straight`] when the batch was not
    /// routed; once per batch) and returns their tallies.
    fn count_here<C: ShardLayout<Routing = R>>(
        &mut self,
        map: &R,
        hashes: &[u64],
        local: &mut [Option<&mut C::Shard>],
    ) -> Result<Vec<C::Tally>> {
        let values = atomic_bytes(&mut self.values);
        if self.straight {
            let [first, second] = on_halves(local, |group| C::count_straight(map, group, hashes, values));
            return Ok(first?.into_iter().chain(second?).collect());
        }
        let (sections, keys) = (&self.sections, if R::BY_KMER { hashes } else { &self.counters });
        let [first, second] = on_halves(local, |group| {
            let held = group.iter_mut().enumerate().filter_map(|(s, shard)| Some((s, shard.as_deref_mut()?)));
            held.map(|(s, shard)| C::count_here(shard, keys, sections.positions(s), values)).collect::<Result<Vec<_>>>()
        });
        Ok(first?.into_iter().chain(second?).collect())
    }

    /// Adds the remote shards' answers (in shard order; each the values of its keys,
    /// probe-major when routed by k-mer) to the values of their positions (zero, or what
    /// [`Routed::add_deltas`] set).
    pub fn put(&mut self, remote: &[&[u8]]) -> Result<()> {
        let per = self.per_key();
        let lens = self.remote_shards.iter().map(|&s| self.sections.lens[s] * per);
        if remote.len() != self.remote_shards.len() || lens.zip(remote).any(|(n, a)| n != a.len()) {
            return Err(Error::invalid("the remote shards' answers do not match their messages"));
        }
        let mut at = 0;
        for (&s, answer) in self.remote_shards.iter().zip(remote) {
            let order = &self.sections.order[at..at + self.sections.lens[s]];
            for (p, values) in answer.chunks(order.len().max(1)).enumerate() {
                for (&i, &v) in order.iter().zip(values) {
                    let value = &mut self.values[p * self.keys + i as usize];
                    *value = value
                        .checked_add(v)
                        .ok_or_else(|| Error::invalid("a remote shard answered a value too large"))?;
                }
            }
            at += order.len();
        }
        Ok(())
    }

    /// The number of remote shards (of messages sent).
    pub fn remote_shards(&self) -> usize {
        self.remote_shards.len()
    }

    /// Every position's value (probe-major).
    pub fn values(&self) -> &[u8] {
        &self.values
    }

    /// Sets the value of each remote counter of this batch that `updates` holds (at its slot,
    /// before the answers are added) to its delta there: `updates` are the remote updates of
    /// the batch decided after this one was looked up, (counters, deltas) shard after shard,
    /// each counter once. One look-up in the batch's own [`Routed::seen`] per update.
    fn add_deltas<'u>(&mut self, updates: impl Iterator<Item = (&'u [u64], &'u [u8])>) {
        for (counters, deltas) in updates {
            for (j, (&c, &d)) in counters.iter().zip(deltas).enumerate() {
                if let Some(&ahead) = counters.get(j + UPDATES_AHEAD) {
                    self.seen.prefetch(ahead);
                }
                if let Some(slot) = self.seen.get(c) {
                    self.values[slot as usize] = d;
                }
            }
        }
    }

    /// The remote shards' messages of `kind` (in shard order), each with the updates `apply`
    /// holds for it (taken: sent once) and its keys of the batch of `hashes`, encoded straight
    /// from the batch through the shard's positions.
    fn messages(&self, kind: Kind, hashes: &[u64], apply: &mut [Updates]) -> Vec<Vec<u8>> {
        let keys = if R::BY_KMER { hashes } else { &self.counters };
        self.remote_shards
            .iter()
            .map(|&s| {
                let positions = self.sections.positions(s).iter().map(|&q| keys[q as usize]);
                wire::encode(kind, &std::mem::take(&mut apply[s]), positions)
            })
            .collect()
    }
}

/// Runs `work` on each of two groups of the local shards of about equal size (a shard whose
/// middle lies in the second half of the local counters goes second; the other shards are
/// `None` in each group), the second on a thread of its own when the machine has two cores.
fn on_halves<K: ShardKernel, T: Send>(
    local: &mut [Option<&mut K>],
    work: impl Fn(&mut [Option<&mut K>]) -> T + Sync,
) -> [T; 2] {
    let held: u64 = local.iter().flatten().map(|s| s.held()).sum();
    let (mut first, mut second) = (Vec::with_capacity(local.len()), Vec::with_capacity(local.len()));
    let mut so_far = 0;
    for shard in local.iter_mut().map(|s| s.as_deref_mut()) {
        let size = shard.as_ref().map_or(0, |s| s.held());
        let goes_second = 2 * so_far + size > held;
        so_far += size;
        let (mine, other) = if goes_second { (&mut second, &mut first) } else { (&mut first, &mut second) };
        mine.push(shard);
        other.push(None);
    }
    if parallel() && second.iter().any(Option::is_some) {
        std::thread::scope(|scope| {
            let other = scope.spawn(|| work(&mut second));
            let mine = work(&mut first);
            // The work only stops early by panicking: the panic goes on to the caller.
            [mine, other.join().unwrap_or_else(|p| std::panic::resume_unwind(p))]
        })
    } else {
        [work(&mut first), work(&mut second)]
    }
}

/// Sets `values[q]` to `f(shard, counters[q])` for each of the shard's `positions` `q`, in
/// order, the cells prefetched ahead.
pub(crate) fn drive<K: ShardKernel>(
    shard: &mut K,
    counters: &[u64],
    positions: &[u32],
    values: &[AtomicU8],
    f: &(impl Fn(&mut K, u64) -> u8 + Sync),
) {
    for (j, &q) in positions.iter().enumerate() {
        if let Some(&ahead) = positions.get(j + PREFETCH_AHEAD) {
            shard.prefetch(counters[ahead as usize]);
        }
        values[q as usize].store(f(shard, counters[q as usize]), Relaxed);
    }
}

/// `bytes` as atomics, so that threads may each set their own positions of it.
fn atomic_bytes(bytes: &mut [u8]) -> &[AtomicU8] {
    // SAFETY: AtomicU8 has the size and alignment of u8, and the exclusive borrow of `bytes`
    // lasts as long as the atomics' shared one.
    unsafe { &*(bytes as *mut [u8] as *const [AtomicU8]) }
}

/// Whether the local shards are worth two threads (the machine has at least two cores).
fn parallel() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// Checks that `given` shards are as many as `map`'s.
fn check_shards(map: &impl ShardRouting, given: usize) -> Result<()> {
    if given != map.shards() {
        return Err(Error::invalid(format!("{given} shards given for a table of {}", map.shards())));
    }
    Ok(())
}

/// What a batch is routed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// Counting: the local shards add their parts, a layout routing by k-mer needs no counters.
    Count,
    /// Counting with every shard local on a layout that counts straight
    /// ([`ShardLayout::COUNTS_STRAIGHT`]): no routing, the shards add from the hashes.
    CountStraight,
    /// Look-ups: every position's value, the local shards read through their parts.
    LookUp,
    /// Keep decisions (normalize-by-median, `normalize`'s passes, trim-low-abund's first
    /// pass): the local shards read in place, the remote positions given slots.
    Keep,
}

/// What the reading thread hands over: the next batch (`None` at the end of the input) and the
/// reads dropped so far for being too short.
type Prepared<R> = Result<(Option<(HashedBundles, Routed<R>)>, u64)>;

/// A batch sent: the batch, its routing and its messages to the remote shards.
type Sent<R> = (HashedBundles, Routed<R>, Vec<Vec<u8>>);

/// The batches of a [`BundleBatches`] read, hashed and routed by a thread of their own, one
/// batch ahead of the caller (who works on the shards meanwhile); the routings the caller is
/// done with go back to the thread ([`RoutedBatches::recycle`]), whose next batches reuse their
/// buffers (fresh ones cost page faults).
///
/// What the client holds beyond its shards grows with the batches alive at once, each about
/// 100 bytes a k-mer: the one read ahead (kept by the thread until the caller takes it; a
/// queue would hold one more), the caller's (two in a normalization, see [`InFlight`]) and
/// one spare.
struct RoutedBatches<R> {
    batches: crossbeam_channel::Receiver<Prepared<R>>,
    spares: crossbeam_channel::Sender<Routed<R>>,
    remote: Vec<bool>,
    shards: usize,
    /// The kind of the remote shards' messages ([`Kind::Add`] counting).
    kind: Kind,
    short_dropped: u64,
    ended: bool,
}

impl<R: ShardRouting> RoutedBatches<R> {
    /// Starts reading `batches` for a table of `map` whose shard `s` is remote when `remote[s]`,
    /// routed for `purpose`.
    fn new(mut batches: BundleBatches, map: &R, remote: Vec<bool>, purpose: Purpose) -> Result<Self> {
        check_shards(map, remote.len())?;
        let (send, receive) = crossbeam_channel::bounded(0);
        let (spares, spare) = crossbeam_channel::bounded(1);
        let (map, mask) = (map.clone(), remote.clone());
        std::thread::Builder::new()
            .name("kmerflow-shard-read".into())
            .spawn(move || loop {
                let next = batches.next_batch().and_then(|batch| match batch {
                    Some(batch) => {
                        let mut routed: Routed<R> = spare.try_recv().unwrap_or_default();
                        routed.route(&map, &batch.hashes, &mask, purpose).map(|()| Some((batch, routed)))
                    }
                    None => Ok(None),
                });
                let last = !matches!(next, Ok(Some(_)));
                // The caller dropped the run: nothing more to read.
                if send.send(next.map(|b| (b, batches.short_dropped))).is_err() || last {
                    return;
                }
            })
            .map_err(|e| Error::invalid(format!("cannot start the reading thread: {e}")))?;
        let kind = match purpose {
            Purpose::Count | Purpose::CountStraight => Kind::Add,
            Purpose::LookUp | Purpose::Keep => Kind::Step,
        };
        let shards = remote.len();
        Ok(RoutedBatches { batches: receive, spares, shards, remote, kind, short_dropped: 0, ended: false })
    }

    /// Hands a batch's routing back once done with, for a later batch to reuse its buffers.
    fn recycle(&self, routed: Routed<R>) {
        // Dropped when the thread holds enough spares or has ended.
        let _ = self.spares.try_send(routed);
    }

    /// Refuses `local` unless it holds exactly the shards that are not remote.
    fn check<K>(&self, local: &[Option<&mut K>]) -> Result<()> {
        if local.len() != self.shards || local.iter().zip(&self.remote).any(|(l, &r)| l.is_none() != r) {
            return Err(Error::invalid("the shards given are not those the run was started with"));
        }
        Ok(())
    }

    /// Reads the next batch once the previous one is done (`busy` false) and returns it with
    /// one message per remote shard (in shard order, each with its updates taken from
    /// `unsent`); `None` at the end of the input.
    fn send<K>(&mut self, local: &[Option<&mut K>], busy: bool, unsent: &mut [Updates]) -> Result<Option<Sent<R>>> {
        self.check(local)?;
        if busy {
            return Err(Error::invalid("the previous batch was not finished"));
        }
        let Some((batch, routed)) = self.next()? else { return Ok(None) };
        let messages = routed.messages(self.kind, &batch.hashes, unsent);
        Ok(Some((batch, routed, messages)))
    }

    /// The next batch, `None` at the end of the input.
    fn next(&mut self) -> Result<Option<(HashedBundles, Routed<R>)>> {
        if self.ended {
            return Ok(None);
        }
        let next = self.batches.recv().map_err(|_| Error::invalid("the reading thread stopped"))?;
        self.ended = !matches!(next, Ok((Some(_), _)));
        let (batch, short) = next?;
        self.short_dropped = short;
        Ok(batch)
    }
}

/// One message to a remote shard as the shard decodes it ([`wire::decode`]): the updates to
/// apply first, then the keys (counters, or k-mer hashes when the layout routes by k-mer) whose
/// values it returns, or that it adds when counting.
#[derive(Debug, Default)]
pub struct Message {
    /// Counter updates from earlier batches (normalization; empty when counting).
    pub apply: Updates,
    /// The keys of this batch held by the shard, in input order.
    pub keys: Vec<u64>,
}

/// Counting a file on a sharded table of either layout, a batch at a time:
/// [`ShardedCount::send`] reads the next batch and returns the remote shards' messages (their
/// `add`); [`ShardedCount::local`] adds the batch's keys held by the local shards (while the
/// remote ones work); [`ShardedCount::record`] takes the remote answers and records the batch.
/// `local[s]` is shard `s` when it is held in this process.
pub struct ShardedCount<C: ShardLayout> {
    batches: RoutedBatches<C::Routing>,
    map: C::Routing,
    waiting: Option<Counting<C>>,
    /// Reads, k-mers and reads without a k-mer (shorter than k) counted so far.
    pub totals: (u64, u64, u64),
}

/// A counting batch sent: its hashes, its routing and, once the local shards added their
/// parts, their tallies.
struct Counting<C: ShardLayout> {
    hashes: Vec<u64>,
    routed: Routed<C::Routing>,
    here: Option<Vec<C::Tally>>,
}

impl<C: ShardLayout> ShardedCount<C> {
    /// Counting the bundles of `batches` (made with [`Cleaning::Parser`]) on `client`'s table,
    /// whose shard `s` is remote when `remote[s]` (else given as `local[s]` to each call); the
    /// batches are read and routed ahead by a thread of the run.
    pub fn new(batches: BundleBatches, client: &C, remote: Vec<bool>) -> Result<Self> {
        let purpose = match C::COUNTS_STRAIGHT && !remote.contains(&true) {
            true => Purpose::CountStraight,
            false => Purpose::Count,
        };
        let batches = RoutedBatches::new(batches, client.routing(), remote, purpose)?;
        Ok(ShardedCount { batches, map: client.routing().clone(), waiting: None, totals: (0, 0, 0) })
    }

    /// Reads, hashes and routes the next batch and returns one message per remote shard, in
    /// shard order; `None` at the end of the input.
    pub fn send(&mut self, local: &[Option<&mut C::Shard>]) -> Result<Option<Vec<Vec<u8>>>> {
        let mut no_updates = vec![Updates::default(); self.batches.shards];
        let Some((batch, routed, messages)) = self.batches.send(local, self.waiting.is_some(), &mut no_updates)? else {
            return Ok(None);
        };
        self.totals.0 += batch.read_ends.len() as u64;
        self.totals.1 += batch.hashes.len() as u64;
        self.totals.2 += spans(&batch.read_ends).filter(|read| read.is_empty()).count() as u64;
        self.waiting = Some(Counting { hashes: batch.hashes, routed, here: None });
        Ok(Some(messages))
    }

    /// Adds the keys of the batch sent last held by the local shards (once).
    pub fn local(&mut self, local: &mut [Option<&mut C::Shard>]) -> Result<()> {
        self.batches.check(local)?;
        let batch = self.waiting.as_mut().ok_or_else(|| Error::invalid("no batch is waiting"))?;
        if batch.here.is_none() {
            batch.here = Some(batch.routed.count_here::<C>(&self.map, &batch.hashes, local)?);
        }
        Ok(())
    }

    /// Records the batch sent last, given the remote shards' answers to their messages (in
    /// shard order).
    pub fn record(&mut self, client: &C, local: &mut [Option<&mut C::Shard>], remote: &[&C::Added]) -> Result<()> {
        self.local(local)?;
        let batch = self.waiting.as_mut().expect("checked by local");
        let here = batch.here.as_deref().expect("counted by local");
        // On an error the batch stays waiting, its local adds done, for the right answers.
        client.record_count(&batch.hashes, here, remote, &mut batch.routed)?;
        let batch = self.waiting.take().expect("checked by local");
        self.batches.recycle(batch.routed);
        Ok(())
    }
}

/// The decisions of an input's reads in input order on a sharded table of either layout, a
/// batch at a time (normalize-by-median, `normalize`'s passes, trim-low-abund's first pass):
/// [`ShardedKeep::send`] reads the next batch and returns the remote shards' messages
/// (the updates not sent yet, then this batch's look-ups); [`ShardedKeep::decide`] takes
/// the remote answers of the oldest batch sent, decides it (phase 2) by the caller's rule,
/// counting the reads it counts on the local shards at once, and keeps the remote updates for
/// the next messages. [`ShardedKeep::unsent`] gives the updates not yet sent at the end.
///
/// Up to two batches may wait ([`InFlight`]): the next batch is sent before the one answered
/// is decided, so that its round trip overlaps the decisions.
pub struct ShardedKeep<C: ShardLayout> {
    batches: RoutedBatches<C::Routing>,
    waiting: InFlight<(HashedBundles, Routed<C::Routing>)>,
    unsent: Vec<Updates>,
    /// The deltas of the batch decided last ([`InPlace`]), the buffer kept for the next.
    delta: Vec<u8>,
}

impl<C: ShardLayout> ShardedKeep<C> {
    /// Deciding the bundles of `batches` on `client`'s table, `remote` as for
    /// [`ShardedCount::new`].
    pub fn new(batches: BundleBatches, client: &C, remote: Vec<bool>) -> Result<Self> {
        let unsent = vec![Updates::default(); remote.len()];
        let batches = RoutedBatches::new(batches, client.routing(), remote, Purpose::Keep)?;
        Ok(ShardedKeep { batches, waiting: InFlight::default(), unsent, delta: Vec::new() })
    }

    /// Reads, hashes and routes the next batch and returns one message per remote shard, in
    /// shard order; `None` at the end of the input. At most two batches may wait.
    pub fn send(&mut self, local: &[Option<&mut C::Shard>]) -> Result<Option<Vec<Vec<u8>>>> {
        let busy = self.waiting.full();
        let Some((batch, routed, messages)) = self.batches.send(local, busy, &mut self.unsent)? else {
            return Ok(None);
        };
        self.waiting.push((batch, routed));
        Ok(Some(messages))
    }

    /// Reads dropped for being shorter than the reader's minimum length, so far.
    pub fn short_dropped(&self) -> u64 {
        self.batches.short_dropped
    }

    /// Decides the oldest batch sent given the remote shards' answers to its messages (in
    /// shard order) by `rule`, which reads and counts the batch's reads (its `reads()`, in
    /// input order) through the [`ReadCounts`] as the read-by-read run does; records the
    /// outcome, counts on the local shards at once, keeps the remote shards' updates for the
    /// next messages and returns the batch. The answers may lack the updates of the batch
    /// decided last (when the batch was sent before it was decided), never earlier ones.
    pub fn decide(
        &mut self,
        client: &C,
        local: &mut [Option<&mut C::Shard>],
        remote: &[&[u8]],
        rule: impl FnOnce(&mut dyn ReadCounts, &HashedBundles),
    ) -> Result<HashedBundles> {
        self.batches.check(local)?;
        let (_, routed) = self.waiting.front_mut().ok_or_else(|| Error::invalid("no batch is waiting"))?;
        routed.put(remote)?;
        let (batch, routed) = self.waiting.pop().expect("checked above");
        let delta = std::mem::take(&mut self.delta);
        let positions = InPlace::new(local, &routed, client.routing().probes(), delta);
        let ((), positions, outcome) = batch::decide_on(client, &batch.hashes, positions, |d| rule(d, &batch));
        client.record_outcome(&outcome);
        let before: Vec<usize> = self.unsent.iter().map(|u| u.counters.len()).collect();
        positions.remote_updates(&mut self.unsent);
        // The batch sent before this one was decided (its answers lack these updates) gets
        // them now, while its round trip is still under way.
        if let Some((_, next)) = self.waiting.overtaken() {
            next.add_deltas(self.unsent.iter().zip(&before).map(|(u, &from)| (&u.counters[from..], &u.deltas[from..])));
        }
        self.delta = positions.delta;
        self.batches.recycle(routed);
        Ok(batch)
    }

    /// The updates not sent yet, one per shard (empty for the local shards): at the end, those
    /// of the last two batches when the last was sent before the one ahead of it was decided
    /// (a counter may then appear twice).
    pub fn unsent(&mut self) -> Vec<Updates> {
        let shards = self.unsent.len();
        std::mem::replace(&mut self.unsent, vec![Updates::default(); shards])
    }
}

/// How many updates ahead [`Routed::add_deltas`] prefetches their entries: its loop is short
/// and the batch's map large, so a look-up needs many others to overlap with.
const UPDATES_AHEAD: usize = 64;

/// How many positions ahead of the cells prefetched the routing's own arrays are (a few cache
/// lines of counters).
const ROUTING_AHEAD: usize = 64;

/// The positions of a normalization batch as phase 2 reads and counts them (see
/// [`Positions`]): a local shard's position in place, read by read as in the one-process run
/// (its counter already holds every earlier kept read); a remote shard's position as its
/// looked-up value plus the delta that the batch's earlier kept reads gave its slot (the first
/// remote position of its counter), both held at the slot. A k-mer's counters may lie on both kinds of shards.
struct InPlace<'a, 's, K, R> {
    local: &'a mut [Option<&'s mut K>],
    routed: &'a Routed<R>,
    n: usize,
    probes: usize,
    delta: Vec<u8>,
    /// k-mers whose local cells were prefetched.
    ready: Cell<usize>,
}

impl<'a, 's, K: ShardKernel, R: ShardRouting> InPlace<'a, 's, K, R> {
    /// The positions of `routed` (of `probes` counters per k-mer), the local shards `local`,
    /// the deltas kept in `delta` (the buffer of an earlier batch, zeroed).
    fn new(local: &'a mut [Option<&'s mut K>], routed: &'a Routed<R>, probes: usize, mut delta: Vec<u8>) -> Self {
        let len = routed.counters.len();
        delta.clear();
        delta.resize(len, 0);
        InPlace { local, routed, n: len / probes, probes, delta, ready: Cell::new(0) }
    }

    /// The local shard holding position `q`'s counter, if any.
    #[inline(always)]
    fn shard(&self, q: usize) -> Option<&K> {
        self.local[self.routed.owners[q] as usize].as_deref()
    }

    /// Adds the remote positions' deltas (at their slots) to `unsent`, each to its shard's
    /// updates.
    fn remote_updates(&self, unsent: &mut [Updates]) {
        for q in self.routed.remote_positions() {
            let d = self.delta[q];
            if d > 0 {
                let updates = &mut unsent[self.routed.owners[q] as usize];
                updates.counters.push(self.routed.counters[q]);
                updates.deltas.push(d);
            }
        }
    }
}

impl<K: ShardKernel, R: ShardRouting> Positions for InPlace<'_, '_, K, R> {
    #[inline(always)]
    fn value(&self, q: usize) -> u8 {
        match self.shard(q) {
            Some(shard) => shard.get(self.routed.counters[q]),
            None => {
                let slot = self.routed.slots[q] as usize;
                self.routed.values[slot] + self.delta[slot]
            }
        }
    }

    #[inline(always)]
    fn add_one(&mut self, q: usize, max: u8) -> u8 {
        match self.local[self.routed.owners[q] as usize].as_deref_mut() {
            Some(shard) => shard.add_one(self.routed.counters[q]),
            None => {
                let slot = self.routed.slots[q] as usize;
                let previous = self.routed.values[slot] + self.delta[slot];
                self.delta[slot] += u8::from(previous < max);
                previous
            }
        }
    }

    /// Prefetches the local cells of the k-mers up to `PREFETCH_AHEAD` after `o`, and the
    /// routing's counters and owners of the k-mers [`ROUTING_AHEAD`] after those (read in
    /// order, one stream per probe, but left to the hardware they waited on memory as long
    /// as the cells did).
    #[inline(always)]
    fn ahead(&self, o: usize) {
        let end = (o + 1 + PREFETCH_AHEAD).min(self.n);
        for k in self.ready.get()..end {
            for p in 0..self.probes {
                let q = p * self.n + k;
                if q.is_multiple_of(8) {
                    if let Some(counter) = self.routed.counters.get(q + ROUTING_AHEAD) {
                        prefetch(counter);
                        prefetch(&self.routed.owners[q + ROUTING_AHEAD]);
                    }
                }
                if let Some(shard) = self.shard(q) {
                    shard.prefetch(self.routed.counters[q]);
                }
            }
        }
        self.ready.set(self.ready.get().max(end));
    }
}

/// What a message asks of a remote shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Apply the updates, then answer the values of the counters (look-ups, normalization).
    Step,
    /// Count the counters (or, on the blocked layout, the hashes) in order; the answer is
    /// each one's previous value (khmer's layout) or what the adds did to the statistics.
    Add,
}

/// A remote shard's answer to one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Counter values (a [`Kind::Step`], or a [`Kind::Add`] on khmer's layout).
    Values(Vec<u8>),
    /// What a [`Kind::Add`] did to a blocked shard's statistics.
    Added(OccupancyStats),
}

impl Answer {
    /// The values of a [`Answer::Values`]; an error for statistics.
    pub fn values(self) -> Result<Vec<u8>> {
        match self {
            Answer::Values(values) => Ok(values),
            Answer::Added(_) => Err(Error::invalid("a remote shard answered statistics where values were asked")),
        }
    }

    /// The statistics of an [`Answer::Added`]; an error for values.
    pub fn added(self) -> Result<OccupancyStats> {
        match self {
            Answer::Added(stats) => Ok(stats),
            Answer::Values(_) => Err(Error::invalid("a remote shard answered values where statistics were asked")),
        }
    }
}

/// The remote shards of a sharded run, reached by its caller (Dask actors, for the Python
/// package): the transport only, every decision is the run's.
pub trait RemoteShards: Send {
    /// Sends every remote shard its message (in shard order, each the bytes of
    /// [`wire::encode`]: for [`Kind::Step`] the updates to apply, then the counters to look
    /// up; for [`Kind::Add`] the counters to count), without waiting for the answers.
    fn send(&mut self, messages: Vec<Vec<u8>>) -> Result<()>;
    /// The answers to the oldest messages not answered yet (up to two may wait), in shard
    /// order.
    fn answers(&mut self) -> Result<Vec<Answer>>;
    /// The answers to the oldest messages, counter values each.
    fn values(&mut self) -> Result<Vec<Vec<u8>>> {
        self.answers()?.into_iter().map(Answer::values).collect()
    }
}

/// Sends the remote shards' `unsent` updates (one per shard, in shard order; `remote_shards[s]`
/// when shard `s` is remote) and waits for them to be applied.
pub(crate) fn send_updates(unsent: Vec<Updates>, remote: &mut dyn RemoteShards, remote_shards: &[bool]) -> Result<()> {
    if unsent.iter().all(|u| u.counters.is_empty()) {
        return Ok(());
    }
    let messages = unsent
        .into_iter()
        .zip(remote_shards)
        .filter(|(_, &r)| r)
        .map(|(apply, _)| wire::encode(Kind::Step, &apply, std::iter::empty()))
        .collect();
    remote.send(messages)?;
    remote.answers().map(drop)
}

/// A sharded table of either layout (its client `C`) read and counted in this process by the
/// native commands: [`ShardedDecisions::shards`] lends it to the drivers of [`super::drive`]
/// (trim-low-abund's first pass, `normalize`'s passes); [`ShardedDecisions::lookups`] gives the
/// counts of a file's k-mers without changing the table (trim-low-abund's second pass,
/// filter-abund's and abundance-dist's passes); [`ShardedDecisions::flush`] sends the updates
/// still held here, leaving the whole table on the shards (to be saved shard by shard, see
/// [`super::file`]). The decisions, counts, counters and statistics are those of the
/// one-process table of the same layout and sizes.
pub struct ShardedDecisions<'a, C: ShardLayout> {
    client: &'a C,
    local: Vec<Option<&'a mut C::Shard>>,
    remote: &'a mut dyn RemoteShards,
    unsent: Vec<Updates>,
    batch_kmers: usize,
}

impl<'a, C: ShardLayout> ShardedDecisions<'a, C> {
    /// Decisions on `client`'s table (either layout), whose shard `s` is `local[s]` when held
    /// in this process and reached through `remote` otherwise, in batches of about
    /// `batch_kmers` k-mers.
    pub fn new(
        client: &'a C,
        local: Vec<Option<&'a mut C::Shard>>,
        remote: &'a mut dyn RemoteShards,
        batch_kmers: usize,
    ) -> Result<Self> {
        check_shards(client.routing(), local.len())?;
        let unsent = vec![Updates::default(); local.len()];
        Ok(ShardedDecisions { client, local, remote, unsent, batch_kmers: batch_kmers.max(1) })
    }

    /// The client's part of the table.
    pub fn client(&self) -> &'a C {
        self.client
    }

    /// k-mers per batch.
    pub fn batch_kmers(&self) -> usize {
        self.batch_kmers
    }

    /// Whether each shard is remote (in shard order).
    fn remote_shards(&self) -> Vec<bool> {
        self.local.iter().map(Option::is_none).collect()
    }

    /// Looks up every k-mer of `batches` (a batch at a time, see [`Lookups`]); the updates
    /// not sent yet go with the first messages.
    pub fn lookups(&mut self, batches: BundleBatches) -> Result<Lookups<'_, 'a, C>> {
        let batches = RoutedBatches::new(batches, self.client.routing(), self.remote_shards(), Purpose::LookUp)?;
        Ok(Lookups { shards: self, batches, waiting: VecDeque::new() })
    }

    /// Appends the count of each k-mer of `hashes` to `counts`, the table unchanged: looked
    /// up in pieces of the batch size, the next piece sent before the one answered is read
    /// (as [`Lookups`]); the updates not sent yet go with the first messages.
    pub fn counts(&mut self, hashes: &[u64], counts: &mut Vec<u32>) -> Result<()> {
        let remote = self.remote_shards();
        let mut pieces = hashes.chunks(self.batch_kmers);
        let mut waiting = VecDeque::new();
        loop {
            while waiting.len() < 2 {
                let Some(piece) = pieces.next() else { break };
                let routed = Routed::new(self.client.routing(), piece, &remote)?;
                self.remote.send(routed.messages(Kind::Step, piece, &mut self.unsent))?;
                waiting.push_back((piece, routed));
            }
            let Some((piece, mut routed)) = waiting.pop_front() else { return Ok(()) };
            counts.extend(self.counted(piece, &mut routed)?);
        }
    }

    /// The counts of the k-mers `hashes` of a batch routed by `routed` and sent: the local
    /// shards read in place, the remote ones' answers taken.
    fn counted(&mut self, hashes: &[u64], routed: &mut Routed<C::Routing>) -> Result<Vec<u32>> {
        routed.local(&mut self.local, |shard, c| shard.get(c));
        let answers = self.remote.values()?;
        routed.put(&answers.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
        self.client.kmer_counts(hashes, &routed.values)
    }

    /// The table's client and the shards held here, with the transport to the others, once
    /// the updates held here are sent: for the drivers over whole inputs
    /// ([`super::drive::decide_all`]).
    pub fn shards(&mut self) -> Result<(Shards<'_, C>, &mut dyn RemoteShards)> {
        self.flush()?;
        let local = self.local.iter_mut().map(Option::as_deref_mut).collect();
        Ok((Shards { client: self.client, local }, &mut *self.remote))
    }

    /// Sends the updates still held here (the remote shards' part of the last batch decided),
    /// so that the shards hold the whole table.
    pub fn flush(&mut self) -> Result<()> {
        let unsent = std::mem::replace(&mut self.unsent, vec![Updates::default(); self.local.len()]);
        let remote_shards = self.remote_shards();
        send_updates(unsent, self.remote, &remote_shards)
    }
}

/// The counts of the k-mers of a file on a sharded table of either layout, a batch at a time
/// ([`ShardedDecisions::lookups`]): each batch is read, hashed and routed by a thread of the
/// run, the remote shards get one message per batch (their look-ups), and the local shards
/// are read in place. [`Lookups::next_batch`] sends the batch after the one it returns before
/// waiting for that one's answers, so that a round trip overlaps the caller's work on the
/// previous batch. The counts are those of the one-process table with the same sizes (the
/// bigcounts are the client's).
pub struct Lookups<'s, 'a, C: ShardLayout> {
    shards: &'s mut ShardedDecisions<'a, C>,
    batches: RoutedBatches<C::Routing>,
    /// The batches sent and not answered, oldest first (at most two).
    waiting: VecDeque<(HashedBundles, Routed<C::Routing>)>,
}

impl<C: ShardLayout> Lookups<'_, '_, C> {
    /// The next batch and the count of each of its k-mers (in the order of its hashes),
    /// `None` at the end of the input.
    pub fn next_batch(&mut self) -> Result<Option<(HashedBundles, Vec<u32>)>> {
        let shards = &mut *self.shards;
        while self.waiting.len() < 2 {
            let Some((batch, routed, messages)) = self.batches.send(&shards.local, false, &mut shards.unsent)? else {
                break;
            };
            shards.remote.send(messages)?;
            self.waiting.push_back((batch, routed));
        }
        let Some((batch, mut routed)) = self.waiting.pop_front() else { return Ok(None) };
        let counts = shards.counted(&batch.hashes, &mut routed)?;
        self.batches.recycle(routed);
        Ok(Some((batch, counts)))
    }

    /// Reads dropped for being shorter than the reader's minimum length (all of them once
    /// [`Lookups::next_batch`] returned `None`).
    pub fn short_dropped(&self) -> u64 {
        self.batches.short_dropped
    }
}

/// What the tests of the sharded runs share: remote shards answered in this process, reads,
/// and shards that counted a file.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    use crate::io::{FastxReader, PairMode, PairedReader};
    use crate::shards::blocked::{BlockedShard, BlockedShardClient};
    use crate::shards::drive::DrivenLayout;
    use crate::shards::khmer::{Shard, ShardClient};
    use crate::table::{AllocOptions, BlockedParams, BlockedTable, CounterWidth, CountingTable as _};
    use crate::table::{HashKind, KhmerTable, StorageKind};

    /// The tests' sizes of khmer's layout: three tables of about 90 bins.
    pub(crate) const SIZES: [u64; 3] = [97, 89, 83];

    /// The one-process table of khmer's layout of [`SIZES`] (k = 20).
    pub(crate) fn khmer_table(bigcount: bool) -> KhmerTable {
        let mut table = KhmerTable::with_sizes(20, HashKind::TwoBit, StorageKind::Byte, SIZES.to_vec()).unwrap();
        table.set_use_bigcount(bigcount).unwrap();
        table
    }

    /// A blocked shape of 40 lines (k = 20, 4 counters a k-mer), so that k-mers share lines
    /// and counters saturate.
    pub(crate) fn blocked_params(width: CounterWidth) -> BlockedParams {
        BlockedParams::new(20, 40 * crate::table::blocked::LINE_BYTES as u64, width, 4)
    }

    /// The zeroed one-process blocked table of shape `params`.
    pub(crate) fn blocked_table(params: BlockedParams) -> BlockedTable {
        BlockedTable::with_params(params, AllocOptions::default()).unwrap()
    }

    /// A client of khmer's layout (k = 20, tables of `sizes`) cut into `n` shards, and its
    /// zeroed shards.
    pub(crate) fn khmer_sharded(sizes: &[u64], n: usize, bigcount: bool) -> (ShardClient, Vec<Shard>) {
        let client = ShardClient::new(20, HashKind::TwoBit, sizes, n, bigcount).unwrap();
        let b = client.map().bounds().to_vec();
        let shards = (0..n).map(|s| Shard::new(b[s], b[s + 1] - b[s], 255).unwrap()).collect();
        (client, shards)
    }

    /// A blocked client of shape `params` cut into `n` shards, and its zeroed shards.
    pub(crate) fn blocked_sharded(params: BlockedParams, n: usize) -> (BlockedShardClient, Vec<BlockedShard>) {
        let client = BlockedShardClient::new(params, n).unwrap();
        let shards = (0..n).map(|s| BlockedShard::new(params, client.map().lines(s)).unwrap()).collect();
        (client, shards)
    }

    /// The whole khmer-layout table from `client`'s `shards`.
    pub(crate) fn gathered(client: &ShardClient, shards: &[Shard]) -> KhmerTable {
        client.gather(&shards.iter().map(Shard::cells).collect::<Vec<_>>()).unwrap()
    }

    /// The whole blocked table from `client`'s `shards`.
    pub(crate) fn gathered_blocked(client: &BlockedShardClient, shards: &[BlockedShard]) -> BlockedTable {
        let bytes: Vec<Vec<u8>> = shards.iter().map(BlockedShard::bytes).collect();
        client.gather(&bytes.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap()
    }

    /// The FASTA or FASTQ `text` read single, reads shorter than `min_length` dropped.
    pub(crate) fn reader(text: &str, min_length: Option<usize>) -> PairedReader {
        let reader = FastxReader::from_stream("reads.fq", Box::new(std::io::Cursor::new(text.to_owned())), 97).unwrap();
        PairedReader::new(reader, PairMode::ForceSingle, min_length)
    }

    /// The tests' keep rule on a read's `counts` (kept unless its median reaches `cutoff`).
    pub(crate) fn kept_below(cutoff: u32) -> impl Fn(&[u32]) -> bool {
        move |counts: &[u32]| {
            counts.is_empty()
                || counts.iter().filter(|&&c| c >= cutoff).count() < crate::table::median_min_required(counts.len())
        }
    }

    /// The decisions of `keep_of` on `reads` (each read's hashes) read by read on `table`, a
    /// read kept counted into it.
    pub(crate) fn kept_read_by_read(
        table: &impl crate::table::CountingTable,
        reads: &[Vec<u64>],
        keep_of: &impl Fn(&[u32]) -> bool,
    ) -> Vec<bool> {
        let kept = |r: &Vec<u64>| {
            let counts: Vec<u32> = r.iter().map(|&h| table.get_hash(h)).collect();
            let keep = keep_of(&counts);
            if keep {
                r.iter().for_each(|&h| {
                    table.add_hash(h);
                });
            }
            keep
        };
        reads.iter().map(kept).collect()
    }

    /// The decisions of `keep_of` on the reads of `batch` (each read's hashes, end to end in
    /// the batch `d` decides), a read kept counted through `d`.
    pub(crate) fn kept_in_batch(
        d: &mut impl crate::table::ReadCounts,
        batch: &[Vec<u64>],
        keep_of: &impl Fn(&[u32]) -> bool,
    ) -> Vec<bool> {
        let mut start = 0;
        let mut counts = Vec::new();
        let kept = |r: &Vec<u64>| {
            let read = start..start + r.len();
            start += r.len();
            counts.clear();
            d.counts(read.clone(), &mut counts);
            let keep = keep_of(&counts);
            if keep {
                d.add(read);
            }
            keep
        };
        batch.iter().map(kept).collect()
    }

    /// Asserts that the khmer-layout `table` is `expected`: counters, statistics and the
    /// counts of `hashes` (bigcounts).
    pub(crate) fn assert_same(table: &KhmerTable, expected: &KhmerTable, hashes: &[u64]) {
        assert_eq!(table.raw_tables(), expected.raw_tables());
        assert_eq!((table.n_occupied(), table.n_unique_kmers()), (expected.n_occupied(), expected.n_unique_kmers()));
        hashes.iter().for_each(|&h| assert_eq!(table.get_hash(h), expected.get_hash(h)));
    }

    /// A shard that answers a message as a worker's shard of its layout does (tests).
    pub(crate) trait Answering: Send {
        /// The answer to a message of `kind`.
        fn answer(&mut self, kind: Kind, message: Message) -> Result<Answer>;

        /// The answer to the bytes of a message ([`wire::encode`]), decoded as a worker does.
        fn answer_bytes(&mut self, bytes: &[u8]) -> Result<Answer> {
            let (kind, message) = wire::decode(bytes)?;
            self.answer(kind, message)
        }
    }

    impl Answering for Shard {
        fn answer(&mut self, kind: Kind, m: Message) -> Result<Answer> {
            match kind {
                Kind::Step => {
                    self.apply(&m.apply.counters, &m.apply.deltas)?;
                    self.counts(&m.keys).map(Answer::Values)
                }
                Kind::Add => self.add(&m.keys).map(Answer::Values),
            }
        }
    }

    impl Answering for BlockedShard {
        fn answer(&mut self, kind: Kind, m: Message) -> Result<Answer> {
            match kind {
                Kind::Step => {
                    self.apply(&m.apply.counters, &m.apply.deltas)?;
                    self.values(&m.keys).map(Answer::Values)
                }
                Kind::Add => self.add(&m.keys).map(Answer::Added),
            }
        }
    }

    /// Remote shards answered in this process, as a worker answers them (tests).
    pub(crate) struct InProcess<K = Shard> {
        /// The shards.
        pub shards: Vec<K>,
        answers: VecDeque<Vec<Answer>>,
    }

    impl<K> InProcess<K> {
        /// `shards` as remote shards.
        pub fn new(shards: Vec<K>) -> Self {
            InProcess { shards, answers: VecDeque::new() }
        }
    }

    impl<K: Answering> RemoteShards for InProcess<K> {
        fn send(&mut self, messages: Vec<Vec<u8>>) -> Result<()> {
            if messages.len() != self.shards.len() {
                return Err(Error::invalid("one message per remote shard"));
            }
            let answers =
                self.shards.iter_mut().zip(messages).map(|(shard, m)| shard.answer_bytes(&m)).collect::<Result<_>>()?;
            self.answers.push_back(answers);
            Ok(())
        }

        fn answers(&mut self) -> Result<Vec<Answer>> {
            self.answers.pop_front().ok_or_else(|| Error::invalid("no message is waiting"))
        }
    }

    /// The shards `shards` split into a run's local ones (`None` where `remote[s]`) and the
    /// remote ones, in shard order (tests).
    pub(crate) fn held_and_away<'a, K>(
        shards: &'a mut [K],
        remote: &[bool],
    ) -> (Vec<Option<&'a mut K>>, Vec<&'a mut K>) {
        let (mut held, mut away) = (Vec::new(), Vec::new());
        for (shard, &is_remote) in shards.iter_mut().zip(remote) {
            if is_remote {
                away.push(shard);
                held.push(None);
            } else {
                held.push(Some(shard));
            }
        }
        (held, away)
    }

    /// What a sharded normalization run gives: the kept records, the reads it dropped for
    /// being shorter than k, whether each bundle was kept, and the shards at the end.
    pub(crate) struct Normalized<K> {
        pub out: Vec<u8>,
        pub short_dropped: u64,
        pub keep: Vec<bool>,
        pub shards: Vec<K>,
    }

    /// normalize-by-median of `text` (reads shorter than 20 dropped) on `client`'s `shards`,
    /// those with `remote[s]` answered by the test as a worker would, with up to `waiting`
    /// batches sent and not decided (1: each batch decided before the next is sent; 2: the
    /// next sent first).
    pub(crate) fn normalized_sharded<C: DrivenLayout<Shard: Answering>>(
        client: &C,
        mut shards: Vec<C::Shard>,
        remote: &[bool],
        text: &str,
        (batch_kmers, waiting): (usize, usize),
        cutoff: u32,
    ) -> Normalized<C::Shard> {
        let (mut local, mut far) = held_and_away(&mut shards, remote);
        let batches = client.batches(Box::new(reader(text, Some(20))), batch_kmers, Cleaning::ScreedWithRecords);
        let mut run = ShardedKeep::new(batches, client, remote.to_vec()).unwrap();
        let (mut out, mut keep, mut answered) = (Vec::new(), Vec::new(), VecDeque::new());
        loop {
            if answered.len() < waiting {
                if let Some(messages) = run.send(&local).unwrap() {
                    let answer = |(s, m): (&mut &mut C::Shard, Vec<u8>)| s.answer_bytes(&m).and_then(Answer::values);
                    answered.push_back(far.iter_mut().zip(messages).map(answer).collect::<Result<Vec<_>>>().unwrap());
                    continue;
                }
            } else if waiting == 2 {
                assert!(run.send(&local).is_err(), "at most two batches wait");
            }
            let Some(answers) = answered.pop_front() else { break };
            let answers: Vec<&[u8]> = answers.iter().map(Vec::as_slice).collect();
            let mut kept = Vec::new();
            let rule = |counts: &mut dyn ReadCounts, batch: &HashedBundles| {
                kept = crate::shards::keep_bundles(counts, &batch.reads(), &batch.bundle_ends, cutoff);
            };
            run.decide(client, &mut local, &answers, rule).unwrap().write_kept(&kept, &mut out);
            keep.extend(kept);
        }
        for (shard, (apply, _)) in far.iter_mut().zip(run.unsent().into_iter().zip(remote).filter(|(_, &r)| r)) {
            shard.answer(Kind::Step, Message { apply, ..Message::default() }).unwrap();
        }
        let short_dropped = run.short_dropped();
        drop((local, far));
        Normalized { out, short_dropped, keep, shards }
    }

    /// FASTQ reads of 10 to 49 bases from a random genome of `genome` bases (at least 50), some
    /// with N, some shorter than k = 20 (tests).
    pub(crate) fn fastq_of(seed: u64, n: usize, genome: usize) -> String {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let genome: Vec<u8> = (0..genome).map(|_| b"ACGT"[rng.random_range(0..4)]).collect();
        let mut text = String::new();
        for i in 0..n {
            let start = rng.random_range(0..genome.len() - 49);
            let mut seq = genome[start..start + rng.random_range(10..50)].to_vec();
            if rng.random_range(0..5) == 0 {
                seq[0] = b'N';
            }
            let seq = String::from_utf8(seq).unwrap();
            text += &format!("@r{i}\n{seq}\n+\n{}\n", "I".repeat(seq.len()));
        }
        text
    }

    /// A table of `sizes` (k = 20, bigcount) cut into `shards` shards holding the counts of the
    /// reads of `path` (tests): the client, the first `held` shards and the others as remote shards.
    pub(crate) fn counted_shards(
        sizes: &[u64],
        shards: usize,
        held: usize,
        path: &str,
    ) -> (ShardClient, Vec<Shard>, InProcess) {
        let (client, all) = khmer_sharded(sizes, shards, true);
        counted_on(client, all, held, path)
    }

    /// `client`'s shards `all` (either layout) holding the counts of the reads of `path`
    /// (tests): the client, the first `held` shards and the others as remote shards.
    pub(crate) fn counted_on<C: DrivenLayout<Shard: Answering>>(
        client: C,
        mut all: Vec<C::Shard>,
        held: usize,
        path: &str,
    ) -> (C, Vec<C::Shard>, InProcess<C::Shard>) {
        let (text, local) = (std::fs::read_to_string(path).unwrap(), vec![false; all.len()]);
        counted_sharded(&client, &mut all, &local, &text, 1000);
        let remote = InProcess::new(all.split_off(held));
        (client, all, remote)
    }

    /// Counts the reads of `text` (khmer's C++ cleaning) in batches of about `batch_kmers`
    /// k-mers on `client`'s `shards`, those with `remote[s]` answered by the test as a worker
    /// would, checking that the run refuses other local shards and a missing answer (tests).
    /// Returns the run's totals.
    pub(crate) fn counted_sharded<C: DrivenLayout<Shard: Answering>>(
        client: &C,
        shards: &mut [C::Shard],
        remote: &[bool],
        text: &str,
        batch_kmers: usize,
    ) -> (u64, u64, u64) {
        let (mut local, mut far) = held_and_away(shards, remote);
        let batches = client.batches(Box::new(reader(text, None)), batch_kmers, Cleaning::Parser);
        let mut run = ShardedCount::new(batches, client, remote.to_vec()).unwrap();
        let none: Vec<Option<&mut C::Shard>> = remote.iter().map(|_| None).collect();
        assert!(!remote.contains(&false) || run.send(&none).is_err(), "not the shards the run was started with");
        while let Some(messages) = run.send(&local).unwrap() {
            let answer = |(s, m): (&mut &mut C::Shard, Vec<u8>)| s.answer_bytes(&m).and_then(C::added);
            let owned: Vec<C::AddedOwned> = far.iter_mut().zip(messages).map(answer).collect::<Result<_>>().unwrap();
            let answers: Vec<&C::Added> = owned.iter().map(std::borrow::Borrow::borrow).collect();
            if !answers.is_empty() {
                assert!(run.record(client, &mut local, &answers[1..]).is_err(), "an answer missing");
            }
            run.local(&mut local).unwrap();
            run.record(client, &mut local, &answers).unwrap();
        }
        run.totals
    }

    /// The reads `reads` as FASTA text, named `r0`, `r1`, ... (tests).
    pub(crate) fn fasta(reads: &[Vec<u8>]) -> String {
        reads.iter().enumerate().map(|(i, r)| format!(">r{i}\n{}\n", String::from_utf8_lossy(r))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use crate::shards::blocked::{BlockedShard, BlockedShardClient};
    use crate::shards::drive::{self, DrivenLayout, ShardedTable, Shards};
    use crate::shards::khmer::{Shard, ShardClient};
    use crate::table::{median_min_required, AnyTable, CounterWidth, CountingTable as _, KhmerTable};

    /// normalize-by-median of `text` read by read on one table: the table, the kept records
    /// and the reads shorter than k.
    fn normalized_read_by_read(text: &str, cutoff: u32, bigcount: bool) -> (KhmerTable, Vec<u8>, u64) {
        let expected = khmer_table(bigcount);
        let mut expected_out = Vec::new();
        let (mut hashes, mut clean, mut short) = (Vec::new(), Vec::new(), 0);
        for record in text.split('@').filter(|r| !r.is_empty()) {
            let seq = record.lines().nth(1).unwrap().as_bytes();
            if seq.len() < 20 {
                short += 1;
                continue;
            }
            hashes.clear();
            clean_screed(seq, &mut clean);
            twobit::canonical_hashes(&clean, 20, &mut hashes);
            let high = hashes.iter().filter(|&&h| expected.get_hash(h) >= cutoff).count();
            if high < median_min_required(hashes.len()) {
                hashes.iter().for_each(|&h| {
                    expected.add_hash(h);
                });
                expected_out.extend_from_slice(b"@");
                expected_out.extend_from_slice(record.as_bytes());
            }
        }
        (expected, expected_out, short)
    }

    /// Routes `hashes` on `map` (shards 0 and 2 of 4 remote) for counting and for keep
    /// decisions and asserts that each remote message holds its updates and its shard's keys in
    /// input order (no shard's keys can be copied out: [`Sections`] holds positions only).
    fn assert_messages_read_the_batch<R: ShardRouting>(map: &R, hashes: &[u64]) {
        let remote = [true, false, true, false];
        for (purpose, kind) in [(Purpose::Count, Kind::Add), (Purpose::Keep, Kind::Step)] {
            let mut routed = Routed::<R>::default();
            routed.route(map, hashes, &remote, purpose).unwrap();
            let keys = if R::BY_KMER { hashes } else { &routed.counters };
            let mut apply: Vec<Updates> =
                (0..4).map(|s| Updates { counters: vec![s as u64], deltas: vec![1] }).collect();
            let messages = routed.messages(kind, hashes, &mut apply);
            assert_eq!(messages.len(), 2);
            for (&s, bytes) in [0, 2].iter().zip(&messages) {
                let (decoded_kind, m) = wire::decode(bytes).unwrap();
                let owners = &routed.owners[..routed.keys];
                let expected: Vec<u64> =
                    keys.iter().zip(owners).filter(|(_, &o)| o as usize == s).map(|(&k, _)| k).collect();
                assert!(!expected.is_empty(), "shard {s} has no keys");
                assert_eq!((decoded_kind, m.keys, m.apply.counters), (kind, expected, vec![s as u64]));
                assert!(apply[s].counters.is_empty(), "the updates are taken");
            }
        }
    }

    #[test]
    fn remote_messages_are_encoded_from_the_batch_in_either_layout() {
        let hashes: Vec<u64> = (1..500u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        assert_messages_read_the_batch(khmer_sharded(&SIZES, 4, false).0.routing(), &hashes);
        assert_messages_read_the_batch(blocked_sharded(blocked_params(CounterWidth::Bits8), 4).0.routing(), &hashes);
    }

    #[test]
    fn normalize_runs_match_read_by_read_with_local_and_remote_shards() {
        // Reads of a 200-base genome: heavy collisions in tables of about 90 bins.
        let text = fastq_of(9, 400, 200);
        let cutoff = 5;
        let (expected, expected_out, short) = normalized_read_by_read(&text, cutoff, false);
        for (batch_kmers, held, waiting) in
            [(1, 1, 2), (150, 1, 1), (150, 1, 2), (100_000, 1, 2), (150, 2, 2), (100_000, 2, 1), (1, 3, 2), (150, 3, 2)]
        {
            let (client, shards) = khmer_sharded(&SIZES, 3, false);
            let remote: Vec<bool> = (0..3).map(|s| s >= held).collect();
            let run = normalized_sharded(&client, shards, &remote, &text, (batch_kmers, waiting), cutoff);
            let out = String::from_utf8_lossy(&run.out);
            assert_eq!(out, String::from_utf8_lossy(&expected_out), "{batch_kmers} {held} {waiting}");
            let kept = expected_out.iter().filter(|&&b| b == b'@').count() as u64;
            assert!(kept > 10 && run.keep.iter().filter(|&&k| k).count() as u64 == kept);
            assert_eq!(run.short_dropped, short);
            assert_same(&gathered(&client, &run.shards), &expected, &[]);
        }
    }

    /// Shards that cut tables into ranges, held here and remote in turn: a k-mer's counters lie
    /// on both kinds, and reads of the same few k-mers kept in one batch take them past 255
    /// (bigcount), local counters counted in place and remote ones through the batch's deltas.
    #[test]
    fn normalize_runs_stay_exact_when_a_kmers_counters_are_local_and_remote_and_saturate() {
        let text = fastq_of(3, 2500, 70);
        let cutoff = 300;
        let (expected, expected_out, _) = normalized_read_by_read(&text, cutoff, true);
        let (mut hashes, mut clean) = (Vec::new(), Vec::new());
        for seq in text.lines().skip(1).step_by(4) {
            clean_screed(seq.as_bytes(), &mut clean);
            twobit::canonical_hashes(&clean, 20, &mut hashes);
        }
        assert!(hashes.iter().any(|&h| expected.get_hash(h) > 255), "saturated, with bigcounts");
        let probes = [false, true, false, true, true];
        for remote in [probes.to_vec(), probes.iter().map(|r| !r).collect()] {
            for batching in [(150, 1), (150, 2), (100_000, 2)] {
                let (client, shards) = khmer_sharded(&SIZES, 5, true);
                let map = client.map();
                let mixed = hashes.iter().any(|&h| {
                    let held_remotely: Vec<bool> =
                        map.counters(&[h]).iter().map(|&c| remote[map.shard_of(c)]).collect();
                    held_remotely.contains(&true) && held_remotely.contains(&false)
                });
                assert!(mixed, "a k-mer with counters on local and remote shards");
                let run = normalized_sharded(&client, shards, &remote, &text, batching, cutoff);
                assert_eq!(run.out, expected_out, "{remote:?} {batching:?}");
                assert_same(&gathered(&client, &run.shards), &expected, &hashes);
            }
        }
    }

    #[test]
    fn count_runs_match_a_sequential_add_with_local_and_remote_shards() {
        let text = fastq_of(4, 900, 200);
        let expected = khmer_table(false);
        for record in text.split('@').filter(|r| !r.is_empty()) {
            let mut clean = Vec::new();
            clean_parser(record.lines().nth(1).unwrap().as_bytes(), &mut clean);
            let mut hashes = Vec::new();
            twobit::canonical_hashes(&clean, 20, &mut hashes);
            hashes.iter().for_each(|&h| {
                expected.add_hash(h);
            });
        }
        assert!(expected.raw_tables()[0].contains(&255), "saturated counters");
        // Up to fifteen shards of three tables: several local shards on both halves, a table's
        // counters on local and remote shards, and every shard local (counted straight from
        // the hashes) with whole tables and with tables across up to 3 and 6 shards.
        for (n, held) in [(3, 1), (3, 2), (3, 3), (6, 4), (6, 6), (15, 15)] {
            let (client, mut shards) = khmer_sharded(&SIZES, n, false);
            let remote: Vec<bool> = (0..n).map(|s| s >= held).collect();
            let totals = counted_sharded(&client, &mut shards, &remote, &text, 300);
            assert_eq!(totals.0, 900);
            assert!(totals.2 > 0, "reads shorter than k");
            let table = gathered(&client, &shards);
            assert_eq!(table.raw_tables(), expected.raw_tables(), "{n} {held}");
            assert_eq!(
                (table.n_occupied(), table.n_unique_kmers()),
                (expected.n_occupied(), expected.n_unique_kmers())
            );
        }
    }

    /// Each layout's client and zeroed shards, and the one-process table, of one small shape
    /// (k = 20, colliding, counts past 255), for the tests written once over both layouts.
    trait TestLayout: DrivenLayout<Shard: Answering> + Sized {
        /// A client of `n` shards and its zeroed shards.
        fn sharded(n: usize) -> (Self, Vec<Self::Shard>);
        /// The one-process table of the same shape.
        fn one_table() -> AnyTable;
        /// The whole table from `shards`.
        fn gather(&self, shards: &[Self::Shard]) -> AnyTable;
    }

    impl TestLayout for ShardClient {
        fn sharded(n: usize) -> (Self, Vec<Shard>) {
            khmer_sharded(&SIZES, n, true)
        }

        fn one_table() -> AnyTable {
            AnyTable::Khmer(khmer_table(true))
        }

        fn gather(&self, shards: &[Shard]) -> AnyTable {
            AnyTable::Khmer(gathered(self, shards))
        }
    }

    impl TestLayout for BlockedShardClient {
        fn sharded(n: usize) -> (Self, Vec<BlockedShard>) {
            blocked_sharded(blocked_params(CounterWidth::Bits8), n)
        }

        fn one_table() -> AnyTable {
            AnyTable::Blocked(blocked_table(blocked_params(CounterWidth::Bits8)))
        }

        fn gather(&self, shards: &[BlockedShard]) -> AnyTable {
            AnyTable::Blocked(gathered_blocked(self, shards))
        }
    }

    /// The k-mer hashes of every read of the FASTQ `text` (khmer's C++ cleaning, hashed as
    /// `client` hashes), in order.
    fn read_hashes(client: &impl DrivenLayout, text: &str) -> Vec<Vec<u64>> {
        let (hash, mut clean) = (client.hash_fn(), Vec::new());
        text.lines()
            .skip(1)
            .step_by(4)
            .map(|seq| {
                let mut hashes = Vec::new();
                clean_parser(seq.as_bytes(), &mut clean);
                hash(&clean, &mut hashes);
                hashes
            })
            .collect()
    }

    /// Every k-mer's count looked up batch by batch, with shards held here and remote ones
    /// answered as a worker would (two batches waiting), equals the one-process table's of the
    /// same layout (counts past 255 included); the records come back as read.
    fn lookups_give_the_counts_of_one_table<C: TestLayout>() {
        let text = fastq_of(3, 1200, 70);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reads.fq");
        std::fs::write(&path, &text).unwrap();
        let expected = C::one_table();
        let records: Vec<&str> = text.lines().collect();
        read_hashes(&C::sharded(1).0, &text).iter().flatten().for_each(|&h| {
            expected.add_hash(h);
        });
        for (shards, held, batch_kmers) in [(1, 0, 100), (2, 1, 1), (3, 1, 300), (3, 3, 100_000)] {
            let (client, all) = C::sharded(shards);
            let (client, mut all, mut remote) = counted_on(client, all, held, path.to_str().unwrap());
            let local = all.iter_mut().map(Some).chain((held..shards).map(|_| None)).collect();
            let mut decisions = ShardedDecisions::new(&client, local, &mut remote, batch_kmers).unwrap();
            let batches = client.batches(Box::new(reader(&text, Some(20))), batch_kmers, Cleaning::ParserWithRecords);
            let mut lookups = decisions.lookups(batches).unwrap();
            let (mut reads, mut big) = (0, 0);
            while let Some((batch, counts)) = lookups.next_batch().unwrap() {
                assert_eq!(counts.len(), batch.hashes.len());
                for (&hash, &count) in batch.hashes.iter().zip(&counts) {
                    assert_eq!(count, expected.get_hash(hash));
                    big += usize::from(count >= 255);
                }
                for i in 0..batch.read_ends.len() {
                    let record = batch.record(i);
                    let line = records.iter().position(|l| l.as_bytes() == [b"@", record.name].concat()).unwrap();
                    assert_eq!(
                        (record.seq, record.qual),
                        (records[line + 1].as_bytes(), Some(records[line + 3].as_bytes()))
                    );
                    reads += 1;
                }
            }
            let short = lookups.short_dropped();
            assert!(big > 0 && short > 0, "saturated counts and reads shorter than k");
            assert_eq!(reads + short, 1200, "{shards} {held} {batch_kmers}");
            // The same k-mers asked at once: looked up in pieces, the next sent ahead.
            let hashes = read_hashes(&client, &text).concat();
            let mut counts = Vec::new();
            decisions.counts(&hashes, &mut counts).unwrap();
            let one: Vec<u32> = hashes.iter().map(|&h| expected.get_hash(h)).collect();
            assert!(counts == one, "{shards} {held} {batch_kmers}");
        }
    }

    #[test]
    fn lookups_give_the_counts_of_one_table_on_both_layouts() {
        lookups_give_the_counts_of_one_table::<ShardClient>();
        lookups_give_the_counts_of_one_table::<BlockedShardClient>();
    }

    /// Reads decided batch by batch on shards held here and remote ones by the overlapped
    /// driver (a read kept, and counted, unless its median count reaches the cutoff: a rule
    /// of the caller's) keep the reads, and leave the table, that the one-process table of the
    /// same layout does read by read.
    fn decisions_match_one_table<C: TestLayout>() {
        let cutoff = 200;
        let text = fastq_of(5, 2500, 70);
        let reads = read_hashes(&C::sharded(1).0, &text);
        let keep_of = kept_below(cutoff);
        let expected = C::one_table();
        let expected_keep = kept_read_by_read(&expected, &reads, &keep_of);
        assert!(expected_keep.contains(&false), "reads at the cutoff");
        for (shards, held) in [(1, 1), (2, 0), (3, 1)] {
            let (client, mut all) = C::sharded(shards);
            let mut remote = InProcess::new(all.split_off(held));
            let local = all.iter_mut().map(Some).chain((held..shards).map(|_| None)).collect();
            let mut table = Shards { client: &client, local };
            let remote_shards = table.remote();
            let mut run = table.decisions(Box::new(reader(&text, None)), Cleaning::Parser, 300).unwrap();
            let mut kept = Vec::new();
            let rule = |kept: &mut Vec<bool>, mut counts: &mut dyn ReadCounts, batch: &HashedBundles| {
                let reads: Vec<Vec<u64>> = batch.reads().into_iter().map(|r| batch.hashes[r].to_vec()).collect();
                kept.extend(kept_in_batch(&mut counts, &reads, &keep_of));
            };
            drive::decide_all(&mut *run, &mut remote, &remote_shards, &mut kept, rule, |_, _, _| Ok(())).unwrap();
            drop(run);
            assert_eq!(kept, expected_keep, "{shards} shards, {held} held");
            let shards_all: Vec<C::Shard> = all.into_iter().chain(remote.shards).collect();
            let table = client.gather(&shards_all);
            reads.iter().flatten().for_each(|&h| assert_eq!(table.get_hash(h), expected.get_hash(h)));
            assert_eq!(
                (table.n_occupied(), table.n_unique_kmers()),
                (expected.n_occupied(), expected.n_unique_kmers())
            );
        }
    }

    #[test]
    fn decisions_match_one_table_on_both_layouts() {
        decisions_match_one_table::<ShardClient>();
        decisions_match_one_table::<BlockedShardClient>();
    }
}
