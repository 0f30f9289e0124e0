//! Whole inputs through a sharded table of either layout, driven from this process over the
//! caller's transport ([`RemoteShards`]): [`decide_all`], [`normalize_file`] and [`count_file`]
//! reach the layout's run through [`ShardedTable`], [`KeepBatches`] and [`CountBatches`],
//! implemented once by [`Shards`] ([`DrivenLayout`] holds what differs by layout).

use super::blocked::BlockedShardClient;
use super::khmer::{ShardClient, Updates};
use super::runs::{
    send_updates, Answer, BundleBatches, BundleSource, Cleaning, HashedBundles, RemoteShards, ShardedCount,
    ShardedDecisions, ShardedKeep,
};
use super::{keep_bundles, ShardLayout};
use crate::ops::abundance_dist;
use crate::ops::normalize::ShardedPass;
use crate::ops::sizing::FpRate;
use crate::table::batch::spans;
use crate::table::blocked::OccupancyStats;
use crate::table::{AnyTable, Layout, ReadCounts};
use crate::Result;
use std::borrow::Borrow;
use std::sync::Arc;

/// Appends the canonical hash of every k-mer of a sequence.
pub type SequenceHasher = dyn Fn(&[u8], &mut Vec<u64>) + Send + Sync;

/// A table sharded over processes, its shards held here where given: what the drivers need of
/// either layout.
pub trait ShardedTable: FpRate {
    /// The k-mer size.
    fn ksize(&self) -> usize;
    /// k-mers new to the table so far (khmer's `n_unique_kmers`).
    fn n_unique_kmers(&self) -> u64;
    /// Whether each shard is remote (in shard order).
    fn remote(&self) -> Vec<bool>;
    /// The decisions of the bundles of `source` in input order (see [`decide_all`]), their
    /// reads cleaned by `cleaning`, in batches of about `batch_kmers` k-mers.
    fn decisions(
        &mut self,
        source: BundleSource,
        cleaning: Cleaning,
        batch_kmers: usize,
    ) -> Result<Box<dyn KeepBatches + '_>>;
    /// Counting every k-mer of the reads of `source` (khmer's C++ cleaning), in batches of
    /// about `batch_kmers` k-mers.
    fn count(&mut self, source: BundleSource, batch_kmers: usize) -> Result<Box<dyn CountBatches + '_>>;
    /// A `normalize` run's table on these shards, the remote ones reached through `remote`,
    /// looked up and counted in pieces of `batch_kmers` k-mers.
    fn pass<'s>(&'s mut self, remote: &'s mut dyn RemoteShards, batch_kmers: usize) -> Result<ShardedPass<'s>>;
}

/// The keep decisions of one input's reads in input order on a sharded table (normalize-by-median,
/// `normalize`'s passes, trim-low-abund's first pass), a batch at a time (a layout's
/// [`ShardedKeep`] with its client and local shards).
pub trait KeepBatches: FpRate {
    /// Reads the next batch and returns the remote shards' messages (in shard order, of
    /// [`Kind::Step`](super::runs::Kind::Step)); `None` at the end. At most two batches wait.
    fn send(&mut self) -> Result<Option<Vec<Vec<u8>>>>;
    /// Decides the oldest batch sent given the remote shards' answers by `rule` (see
    /// [`ShardedKeep::decide`]) and returns it.
    fn decide(
        &mut self,
        answers: &[Vec<u8>],
        rule: &mut dyn FnMut(&mut dyn ReadCounts, &HashedBundles),
    ) -> Result<HashedBundles>;
    /// The updates not sent yet, one per shard (empty for the local ones).
    fn unsent(&mut self) -> Vec<Updates>;
    /// Reads dropped for being shorter than the reader's minimum length, so far.
    fn short_dropped(&self) -> u64;
}

/// Counting one file on a sharded table, a batch at a time (a layout's `*ShardedCount` with
/// its client and local shards).
pub trait CountBatches: FpRate {
    /// Reads the next batch and returns the remote shards' messages (in shard order, of
    /// [`Kind::Add`](super::runs::Kind::Add)); `None` at the end.
    fn send(&mut self) -> Result<Option<Vec<Vec<u8>>>>;
    /// Counts the batch sent last on the local shards.
    fn local(&mut self) -> Result<()>;
    /// Records the batch sent last from the remote shards' answers.
    fn record(&mut self, answers: Vec<Answer>) -> Result<()>;
    /// Reads, k-mers and reads without a k-mer (shorter than k) counted so far.
    fn totals(&self) -> (u64, u64, u64);
}

/// Decides every batch of `run` in input order: each batch's messages go to `remote` (the next
/// batch sent before the one answered is decided, so that its round trip overlaps the
/// decisions), `rule` decides it (reading and counting its reads through the [`ReadCounts`])
/// and `after` is given it with the run (for its table's statistics); both share `state`, and
/// an error of `after` ends the run. At the end the updates not sent yet go to the remote
/// shards (`remote_shards[s]` when shard `s` is remote), which then hold the whole table.
pub fn decide_all<S>(
    run: &mut dyn KeepBatches,
    remote: &mut dyn RemoteShards,
    remote_shards: &[bool],
    state: &mut S,
    mut rule: impl FnMut(&mut S, &mut dyn ReadCounts, &HashedBundles),
    mut after: impl FnMut(&mut S, HashedBundles, &dyn KeepBatches) -> Result<()>,
) -> Result<()> {
    let send = |run: &mut dyn KeepBatches, remote: &mut dyn RemoteShards| -> Result<bool> {
        let messages = run.send()?;
        messages.map(|m| remote.send(m)).transpose().map(|sent| sent.is_some())
    };
    let mut waiting = send(run, remote)?;
    while waiting {
        let answers = remote.values()?;
        waiting = send(run, remote)?;
        let batch = run.decide(&answers, &mut |counts, batch| rule(state, counts, batch))?;
        after(state, batch, run)?;
    }
    send_updates(run.unsent(), remote, remote_shards)
}

/// normalize-by-median of one input to `cutoff` ([`keep_bundles`]) by [`decide_all`]: each
/// decided batch goes to `on_batch` with whether each of its bundles was kept. Returns the
/// reads decided and the reads kept.
pub fn normalize_file(
    run: &mut dyn KeepBatches,
    remote: &mut dyn RemoteShards,
    remote_shards: &[bool],
    cutoff: u32,
    mut on_batch: impl FnMut(&[bool], &HashedBundles, &dyn KeepBatches) -> Result<()>,
) -> Result<(u64, u64)> {
    let (mut keep, mut totals) = (Vec::new(), (0, 0));
    let decide = |keep: &mut Vec<bool>, counts: &mut dyn ReadCounts, batch: &HashedBundles| {
        *keep = keep_bundles(counts, &batch.reads(), &batch.bundle_ends, cutoff);
    };
    decide_all(run, remote, remote_shards, &mut keep, decide, |keep, batch, run| {
        totals.0 += batch.read_ends.len() as u64;
        totals.1 += spans(&batch.bundle_ends).zip(&*keep).filter(|(_, &k)| k).map(|(r, _)| r.len() as u64).sum::<u64>();
        on_batch(keep, &batch, run)
    })?;
    Ok(totals)
}

/// Counts one file: each batch's messages go to `remote` while the local shards count it, and
/// `after` is given the run once each batch is recorded (an error of it ends the run).
/// Returns reads, k-mers and reads shorter than k.
pub fn count_file(
    run: &mut dyn CountBatches,
    remote: &mut dyn RemoteShards,
    mut after: impl FnMut(&dyn CountBatches) -> Result<()>,
) -> Result<(u64, u64, u64)> {
    while let Some(messages) = run.send()? {
        remote.send(messages)?;
        run.local()?;
        run.record(remote.answers()?)?;
        after(run)?;
    }
    Ok(run.totals())
}

/// What the drivers need of a layout besides [`ShardLayout`].
pub trait DrivenLayout: ShardLayout + FpRate {
    /// A remote shard's answer to a counting message, as [`ShardedCount::record`] takes it.
    type AddedOwned: Borrow<Self::Added>;
    /// The k-mer size.
    fn ksize(&self) -> usize;
    /// k-mers new to the table so far (khmer's `n_unique_kmers`).
    fn n_unique_kmers(&self) -> u64;
    /// The batches of `source`, its reads hashed by the table's hash.
    fn batches(&self, source: BundleSource, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches;
    /// The table's hash: appends the canonical hash of every k-mer of a sequence.
    fn hash_fn(&self) -> Arc<SequenceHasher>;
    /// An empty tracking filter of abundance-dist's histogram of this table: the one-process
    /// run's filter for a table of this shape.
    fn tracking_filter(&self) -> Result<AnyTable>;
    /// A counting answer in the layout's form.
    fn added(answer: Answer) -> Result<Self::AddedOwned>;
    /// The layout and the bytes of its counters, as the one-process table of this shape
    /// reports them.
    fn memory(&self) -> (Layout, u64);
}

impl DrivenLayout for ShardClient {
    type AddedOwned = Vec<u8>;

    fn ksize(&self) -> usize {
        ShardClient::ksize(self)
    }

    fn n_unique_kmers(&self) -> u64 {
        ShardClient::n_unique_kmers(self)
    }

    fn batches(&self, source: BundleSource, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches {
        BundleBatches::new(source, self.ksize(), batch_kmers, cleaning)
    }

    fn added(answer: Answer) -> Result<Vec<u8>> {
        answer.values()
    }

    fn hash_fn(&self) -> Arc<SequenceHasher> {
        Arc::new(self.kmer_hasher())
    }

    fn tracking_filter(&self) -> Result<AnyTable> {
        abundance_dist::khmer_tracking(self.ksize(), self.hash_kind(), self.map().sizes()).map(AnyTable::Khmer)
    }

    fn memory(&self) -> (Layout, u64) {
        // One byte a counter, as the one-process countgraph of the same sizes.
        (Layout::Khmer, self.map().sizes().iter().sum())
    }
}

impl DrivenLayout for BlockedShardClient {
    type AddedOwned = OccupancyStats;

    fn ksize(&self) -> usize {
        self.map().params().k
    }

    fn n_unique_kmers(&self) -> u64 {
        self.occupancy().unique
    }

    fn batches(&self, source: BundleSource, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches {
        let hasher = self.hasher().clone();
        BundleBatches::with_hasher(source, Box::new(move |seq, out| hasher.hashes(seq, out)), batch_kmers, cleaning)
    }

    fn added(answer: Answer) -> Result<OccupancyStats> {
        answer.added()
    }

    fn hash_fn(&self) -> Arc<SequenceHasher> {
        let hasher = self.hasher().clone();
        Arc::new(move |seq: &[u8], out: &mut Vec<u64>| hasher.hashes(seq, out))
    }

    fn tracking_filter(&self) -> Result<AnyTable> {
        abundance_dist::blocked_tracking(self.map().params()).map(AnyTable::Blocked)
    }

    fn memory(&self) -> (Layout, u64) {
        (Layout::Blocked, self.map().params().data_bytes())
    }
}

/// A sharded table: its client and its shards held here (`None` for a remote one).
pub struct Shards<'a, C: ShardLayout> {
    /// The client's part of the table.
    pub client: &'a C,
    /// Shard `s` when held in this process.
    pub local: Vec<Option<&'a mut C::Shard>>,
}

/// A table of khmer's layout.
pub type KhmerShards<'a> = Shards<'a, ShardClient>;
/// A table of the blocked layout.
pub type BlockedShards<'a> = Shards<'a, BlockedShardClient>;

impl<C: DrivenLayout> FpRate for Shards<'_, C> {
    fn fp_rate(&self) -> f64 {
        self.client.fp_rate()
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        self.client.resize_hint(fp, target)
    }
}

/// A run bound to its table's client and local shards.
struct Bound<'s, 'a, R, C: ShardLayout> {
    run: R,
    shards: &'s mut Shards<'a, C>,
}

impl<R, C: DrivenLayout> FpRate for Bound<'_, '_, R, C> {
    fn fp_rate(&self) -> f64 {
        self.shards.fp_rate()
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        self.shards.resize_hint(fp, target)
    }
}

impl<C: DrivenLayout> ShardedTable for Shards<'_, C> {
    fn ksize(&self) -> usize {
        self.client.ksize()
    }

    fn n_unique_kmers(&self) -> u64 {
        self.client.n_unique_kmers()
    }

    fn remote(&self) -> Vec<bool> {
        self.local.iter().map(Option::is_none).collect()
    }

    fn decisions(
        &mut self,
        source: BundleSource,
        cleaning: Cleaning,
        batch_kmers: usize,
    ) -> Result<Box<dyn KeepBatches + '_>> {
        let batches = self.client.batches(source, batch_kmers, cleaning);
        let run = ShardedKeep::new(batches, self.client, self.remote())?;
        Ok(Box::new(Bound { run, shards: self }))
    }

    fn count(&mut self, source: BundleSource, batch_kmers: usize) -> Result<Box<dyn CountBatches + '_>> {
        let batches = self.client.batches(source, batch_kmers, Cleaning::Parser);
        let run = ShardedCount::new(batches, self.client, self.remote())?;
        Ok(Box::new(Bound { run, shards: self }))
    }

    fn pass<'s>(&'s mut self, remote: &'s mut dyn RemoteShards, batch_kmers: usize) -> Result<ShardedPass<'s>> {
        let local = self.local.iter_mut().map(Option::as_deref_mut).collect();
        ShardedDecisions::new(self.client, local, remote, batch_kmers).map(ShardedPass::new)
    }
}

impl<C: DrivenLayout> KeepBatches for Bound<'_, '_, ShardedKeep<C>, C> {
    fn send(&mut self) -> Result<Option<Vec<Vec<u8>>>> {
        self.run.send(&self.shards.local)
    }

    fn decide(
        &mut self,
        answers: &[Vec<u8>],
        rule: &mut dyn FnMut(&mut dyn ReadCounts, &HashedBundles),
    ) -> Result<HashedBundles> {
        let answers: Vec<&[u8]> = answers.iter().map(Vec::as_slice).collect();
        self.run.decide(self.shards.client, &mut self.shards.local, &answers, rule)
    }

    fn unsent(&mut self) -> Vec<Updates> {
        self.run.unsent()
    }

    fn short_dropped(&self) -> u64 {
        self.run.short_dropped()
    }
}

impl<C: DrivenLayout> CountBatches for Bound<'_, '_, ShardedCount<C>, C> {
    fn send(&mut self) -> Result<Option<Vec<Vec<u8>>>> {
        self.run.send(&self.shards.local)
    }

    fn local(&mut self) -> Result<()> {
        self.run.local(&mut self.shards.local)
    }

    fn record(&mut self, answers: Vec<Answer>) -> Result<()> {
        let owned: Vec<C::AddedOwned> = answers.into_iter().map(C::added).collect::<Result<_>>()?;
        let added: Vec<&C::Added> = owned.iter().map(Borrow::borrow).collect();
        self.run.record(self.shards.client, &mut self.shards.local, &added)
    }

    fn totals(&self) -> (u64, u64, u64) {
        self.run.totals
    }
}
