//! Whole files through a sharded table of either layout, driven from this process: the caller
//! supplies only the transport to the remote shards ([`RemoteShards`]); [`normalize_file`] and
//! [`count_file`] send each batch's messages and hand the answers back to the layout's run,
//! reached through the traits here ([`ShardedTable`], [`NormalizeBatches`], [`CountBatches`]),
//! implemented once by [`Shards`] for both layouts ([`DrivenLayout`] holds the little that
//! differs: the k-mer hash, the statistics, the form of a counting answer).

use super::blocked::BlockedShardClient;
use super::khmer::{ShardClient, Updates};
use super::runs::{
    Answer, BundleBatches, Cleaning, Decided, Kind, Message, RemoteShards, ShardedCount, ShardedDecisions,
    ShardedNormalize,
};
use super::ShardLayout;
use crate::io::PairedReader;
use crate::ops::abundance_dist;
use crate::ops::normalize::ShardedPass;
use crate::ops::sizing::FpRate;
use crate::table::blocked::OccupancyStats;
use crate::table::{AnyTable, Layout};
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
    /// normalize-by-median of the bundles of `reader` to `cutoff`, in batches of about
    /// `batch_kmers` k-mers.
    fn normalize(
        &mut self,
        reader: PairedReader,
        cutoff: u32,
        batch_kmers: usize,
    ) -> Result<Box<dyn NormalizeBatches + '_>>;
    /// Counting every k-mer of the reads of `reader` (khmer's C++ cleaning), in batches of
    /// about `batch_kmers` k-mers.
    fn count(&mut self, reader: PairedReader, batch_kmers: usize) -> Result<Box<dyn CountBatches + '_>>;
    /// A `normalize` run's table on these shards, the remote ones reached through `remote`,
    /// looked up and counted in pieces of `batch_kmers` k-mers.
    fn pass<'s>(&'s mut self, remote: &'s mut dyn RemoteShards, batch_kmers: usize) -> Result<ShardedPass<'s>>;
}

/// normalize-by-median of one file on a sharded table, a batch at a time (a layout's
/// `*ShardedNormalize` with its client and local shards).
pub trait NormalizeBatches: FpRate {
    /// Reads the next batch and returns the remote shards' [`Kind::Step`] messages (in shard
    /// order); `None` at the end. At most two batches wait.
    fn send(&mut self) -> Result<Option<Vec<Message>>>;
    /// Decides the oldest batch sent given the remote shards' answers, appends the kept
    /// bundles' records to `out` and returns its decisions.
    fn decide(&mut self, answers: &[Vec<u8>], out: &mut Vec<u8>) -> Result<Decided>;
    /// The updates not sent yet, one per shard (empty for the local ones).
    fn unsent(&mut self) -> Vec<Updates>;
    /// Reads decided, reads kept, and reads dropped for being shorter than k, so far.
    fn totals(&self) -> (u64, u64, u64);
}

/// Counting one file on a sharded table, a batch at a time (a layout's `*ShardedCount` with
/// its client and local shards).
pub trait CountBatches: FpRate {
    /// Reads the next batch and returns the remote shards' [`Kind::Add`] messages (in shard
    /// order); `None` at the end.
    fn send(&mut self) -> Result<Option<Vec<Message>>>;
    /// Counts the batch sent last on the local shards.
    fn local(&mut self) -> Result<()>;
    /// Records the batch sent last from the remote shards' answers.
    fn record(&mut self, answers: Vec<Answer>) -> Result<()>;
    /// Reads, k-mers and reads without a k-mer (shorter than k) counted so far.
    fn totals(&self) -> (u64, u64, u64);
}

/// Normalizes one file: each batch's messages go to `remote` (the next batch sent before the
/// one answered is decided, so that its round trip overlaps the decisions), and each decided
/// batch goes to `on_batch` with its kept records' text and the run (for its table's
/// statistics); an error of `on_batch` ends the run. At the end the updates not sent yet go
/// to the remote shards, which then hold the whole table.
pub fn normalize_file(
    run: &mut dyn NormalizeBatches,
    remote: &mut dyn RemoteShards,
    remote_shards: &[bool],
    mut on_batch: impl FnMut(&Decided, &[u8], &dyn NormalizeBatches) -> Result<()>,
) -> Result<()> {
    let send = |run: &mut dyn NormalizeBatches, remote: &mut dyn RemoteShards| -> Result<bool> {
        let messages = run.send()?;
        messages.map(|m| remote.send(Kind::Step, m)).transpose().map(|sent| sent.is_some())
    };
    let mut waiting = send(run, remote)?;
    let mut text = Vec::new();
    while waiting {
        let answers = remote.values()?;
        waiting = send(run, remote)?;
        text.clear();
        let decided = run.decide(&answers, &mut text)?;
        on_batch(&decided, &text, run)?;
    }
    flush(run.unsent(), remote, remote_shards)
}

/// Sends the remote shards' `unsent` updates (one per shard, in shard order) and waits for
/// them to be applied.
fn flush(unsent: Vec<Updates>, remote: &mut dyn RemoteShards, remote_shards: &[bool]) -> Result<()> {
    if unsent.iter().all(|u| u.counters.is_empty()) {
        return Ok(());
    }
    let messages = unsent
        .into_iter()
        .zip(remote_shards)
        .filter(|(_, &r)| r)
        .map(|(apply, _)| Message { apply, keys: Vec::new() })
        .collect();
    remote.send(Kind::Step, messages)?;
    remote.answers().map(drop)
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
        remote.send(Kind::Add, messages)?;
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
    /// The batches of `reader`, its reads hashed by the table's hash.
    fn batches(&self, reader: PairedReader, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches;
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

    fn batches(&self, reader: PairedReader, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches {
        BundleBatches::new(reader, self.ksize(), batch_kmers, cleaning)
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

    fn batches(&self, reader: PairedReader, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches {
        let hasher = self.hasher().clone();
        BundleBatches::with_hasher(reader, Box::new(move |seq, out| hasher.hashes(seq, out)), batch_kmers, cleaning)
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

impl<C: ShardLayout> Shards<'_, C> {
    /// Whether each shard is remote.
    fn remote_shards(&self) -> Vec<bool> {
        self.local.iter().map(Option::is_none).collect()
    }
}

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
        self.remote_shards()
    }

    fn normalize(
        &mut self,
        reader: PairedReader,
        cutoff: u32,
        batch_kmers: usize,
    ) -> Result<Box<dyn NormalizeBatches + '_>> {
        let batches = self.client.batches(reader, batch_kmers, Cleaning::ScreedWithText);
        let run = ShardedNormalize::new(batches, cutoff, self.client, self.remote_shards())?;
        Ok(Box::new(Bound { run, shards: self }))
    }

    fn count(&mut self, reader: PairedReader, batch_kmers: usize) -> Result<Box<dyn CountBatches + '_>> {
        let batches = self.client.batches(reader, batch_kmers, Cleaning::Parser);
        let run = ShardedCount::new(batches, self.client, self.remote_shards())?;
        Ok(Box::new(Bound { run, shards: self }))
    }

    fn pass<'s>(&'s mut self, remote: &'s mut dyn RemoteShards, batch_kmers: usize) -> Result<ShardedPass<'s>> {
        let local = self.local.iter_mut().map(Option::as_deref_mut).collect();
        ShardedDecisions::new(self.client, local, remote, batch_kmers).map(ShardedPass::new)
    }
}

impl<C: DrivenLayout> NormalizeBatches for Bound<'_, '_, ShardedNormalize<C>, C> {
    fn send(&mut self) -> Result<Option<Vec<Message>>> {
        self.run.send(&self.shards.local)
    }

    fn decide(&mut self, answers: &[Vec<u8>], out: &mut Vec<u8>) -> Result<Decided> {
        let answers: Vec<&[u8]> = answers.iter().map(Vec::as_slice).collect();
        self.run.decide(self.shards.client, &mut self.shards.local, &answers, out)
    }

    fn unsent(&mut self) -> Vec<Updates> {
        self.run.unsent()
    }

    fn totals(&self) -> (u64, u64, u64) {
        self.run.totals()
    }
}

impl<C: DrivenLayout> CountBatches for Bound<'_, '_, ShardedCount<C>, C> {
    fn send(&mut self) -> Result<Option<Vec<Message>>> {
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
