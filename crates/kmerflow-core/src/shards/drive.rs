//! Whole files through a sharded table of either layout, driven from this process: the caller
//! supplies only the transport to the remote shards ([`RemoteShards`]); [`normalize_file`] and
//! [`count_file`] send each batch's messages and hand the answers back to the layout's run,
//! reached through the traits here ([`ShardedTable`], [`NormalizeBatches`], [`CountBatches`]),
//! one implementation per layout ([`KhmerShards`], [`BlockedShards`]).

use super::blocked::count::BlockedShardedCount;
use super::blocked::normalize::BlockedShardedNormalize;
use super::blocked::{BlockedShard, BlockedShardClient};
use super::khmer::{Shard, ShardClient, Updates};
use super::runs::{
    Answer, BundleBatches, Cleaning, Decided, Kind, Message, ReadHasher, RemoteShards, ShardedCount, ShardedNormalize,
};
use crate::io::PairedReader;
use crate::ops::sizing::FpRate;
use crate::Result;

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
        .map(|(apply, _)| Message { apply, counters: Vec::new() })
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

/// A table of khmer's layout: its client and its shards held here (`None` for a remote one).
pub struct KhmerShards<'a> {
    /// The client's part of the table.
    pub client: &'a ShardClient,
    /// Shard `s` when held in this process.
    pub local: Vec<Option<&'a mut Shard>>,
}

/// A table of the blocked layout: its client and its shards held here (`None` for a remote
/// one).
pub struct BlockedShards<'a> {
    /// The client's part of the table.
    pub client: &'a BlockedShardClient,
    /// Shard `s` when held in this process.
    pub local: Vec<Option<&'a mut BlockedShard>>,
}

/// A layout's run bound to its table's client and local shards.
struct Bound<'s, R, S> {
    run: R,
    shards: &'s mut S,
}

impl<'s, R, S> Bound<'s, R, S> {
    fn new(run: R, shards: &'s mut S) -> Self {
        Bound { run, shards }
    }
}

/// The shards of `local` that are remote.
fn remote_of<T>(local: &[Option<T>]) -> Vec<bool> {
    local.iter().map(Option::is_none).collect()
}

/// [`FpRate`] of a bound run: its table's client's.
macro_rules! fp_rate_of_client {
    ($ty:ty) => {
        impl FpRate for $ty {
            fn fp_rate(&self) -> f64 {
                self.client.fp_rate()
            }
            fn resize_hint(&self, fp: f64, target: f64) -> String {
                self.client.resize_hint(fp, target)
            }
        }
    };
}
fp_rate_of_client!(KhmerShards<'_>);
fp_rate_of_client!(BlockedShards<'_>);

impl<R, S: FpRate> FpRate for Bound<'_, R, S> {
    fn fp_rate(&self) -> f64 {
        self.shards.fp_rate()
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        self.shards.resize_hint(fp, target)
    }
}

impl<'a> ShardedTable for KhmerShards<'a> {
    fn ksize(&self) -> usize {
        self.client.ksize()
    }

    fn n_unique_kmers(&self) -> u64 {
        self.client.n_unique_kmers()
    }

    fn remote(&self) -> Vec<bool> {
        remote_of(&self.local)
    }

    fn normalize(
        &mut self,
        reader: PairedReader,
        cutoff: u32,
        batch_kmers: usize,
    ) -> Result<Box<dyn NormalizeBatches + '_>> {
        let batches = BundleBatches::new(reader, self.ksize(), batch_kmers, Cleaning::ScreedWithText);
        let run = ShardedNormalize::new(batches, cutoff, self.client, self.remote())?;
        Ok(Box::new(Bound::new(run, self)))
    }

    fn count(&mut self, reader: PairedReader, batch_kmers: usize) -> Result<Box<dyn CountBatches + '_>> {
        let batches = BundleBatches::new(reader, self.ksize(), batch_kmers, Cleaning::Parser);
        let run = ShardedCount::new(batches, self.client, self.remote())?;
        Ok(Box::new(Bound::new(run, self)))
    }
}

impl NormalizeBatches for Bound<'_, ShardedNormalize, KhmerShards<'_>> {
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

impl CountBatches for Bound<'_, ShardedCount, KhmerShards<'_>> {
    fn send(&mut self) -> Result<Option<Vec<Message>>> {
        self.run.send(&self.shards.local)
    }

    fn local(&mut self) -> Result<()> {
        self.run.local(&mut self.shards.local)
    }

    fn record(&mut self, answers: Vec<Answer>) -> Result<()> {
        let values: Vec<Vec<u8>> = answers.into_iter().map(Answer::values).collect::<Result<_>>()?;
        let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        self.run.record(self.shards.client, &mut self.shards.local, &values)
    }

    fn totals(&self) -> (u64, u64, u64) {
        self.run.totals
    }
}

impl<'a> BlockedShards<'a> {
    /// Each read's k-mers hashed by the table's hash.
    fn hasher(&self) -> ReadHasher {
        let hasher = self.client.hasher().clone();
        Box::new(move |seq, out| hasher.hashes(seq, out))
    }
}

impl<'a> ShardedTable for BlockedShards<'a> {
    fn ksize(&self) -> usize {
        self.client.map().params().k
    }

    fn n_unique_kmers(&self) -> u64 {
        self.client.occupancy().unique
    }

    fn remote(&self) -> Vec<bool> {
        remote_of(&self.local)
    }

    fn normalize(
        &mut self,
        reader: PairedReader,
        cutoff: u32,
        batch_kmers: usize,
    ) -> Result<Box<dyn NormalizeBatches + '_>> {
        let batches = BundleBatches::with_hasher(reader, self.hasher(), batch_kmers, Cleaning::ScreedWithText);
        let run = BlockedShardedNormalize::new(batches, cutoff, self.client, self.remote())?;
        Ok(Box::new(Bound::new(run, self)))
    }

    fn count(&mut self, reader: PairedReader, batch_kmers: usize) -> Result<Box<dyn CountBatches + '_>> {
        let batches = BundleBatches::with_hasher(reader, self.hasher(), batch_kmers, Cleaning::Parser);
        let run = BlockedShardedCount::new(batches, self.client, self.remote())?;
        Ok(Box::new(Bound::new(run, self)))
    }
}

impl NormalizeBatches for Bound<'_, BlockedShardedNormalize, BlockedShards<'_>> {
    fn send(&mut self) -> Result<Option<Vec<Message>>> {
        let messages = self.run.send(self.shards.client)?;
        Ok(messages.map(|m| m.into_iter().map(|m| Message { apply: m.apply, counters: m.hashes }).collect()))
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

impl CountBatches for Bound<'_, BlockedShardedCount, BlockedShards<'_>> {
    fn send(&mut self) -> Result<Option<Vec<Message>>> {
        let parts = self.run.send(self.shards.client)?;
        Ok(parts.map(|p| p.into_iter().map(|counters| Message { apply: Updates::default(), counters }).collect()))
    }

    fn local(&mut self) -> Result<()> {
        self.run.local(self.shards.client, &mut self.shards.local)
    }

    fn record(&mut self, answers: Vec<Answer>) -> Result<()> {
        let stats: Vec<_> = answers.into_iter().map(Answer::added).collect::<Result<_>>()?;
        self.run.record(self.shards.client, &stats)
    }

    fn totals(&self) -> (u64, u64, u64) {
        self.run.totals
    }
}
