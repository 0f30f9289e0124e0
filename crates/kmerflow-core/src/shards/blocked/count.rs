//! Counting a whole file on a sharded blocked table ([`super`]), a batch at a time, with
//! only the remote shards' messages left to the caller (who sends them to Dask workers and
//! hands back their answers).
//!
//! [`BlockedShardedCount::send`] reads the next batch ([`BundleBatches`]: every record, khmer's
//! C++ cleaning, the table's hash) and routes its hashes; it returns the remote shards' parts.
//! [`BlockedShardedCount::local`] adds the local shards' parts, then reads the next batch while
//! the remote shards work; [`BlockedShardedCount::record`] records the remote shards' answers.
//! Each shard gets its parts in input order, one batch after the other.

use super::{BlockedShard, BlockedShardClient};
use crate::shards::khmer::split_by_owner;
use crate::shards::runs::{BundleBatches, HashedBundles};
use crate::table::batch::spans;
use crate::table::blocked::OccupancyStats;
use crate::{Error, Result};

/// Counting a file on a sharded blocked table; `local[s]` (given to each call) is shard `s`
/// when it is held in this process, `None` when it is remote.
pub struct BlockedShardedCount {
    batches: BundleBatches,
    remote: Vec<bool>,
    /// The batch read ahead (`Some(None)`: the input ended).
    ahead: Option<Option<HashedBundles>>,
    /// The parts of the batch sent last, per shard (the remote ones taken), until added.
    waiting: Option<Vec<Vec<u64>>>,
    /// Remote shards whose answers are due.
    unanswered: usize,
    /// Reads, k-mers and reads without a k-mer (shorter than k) counted so far.
    pub totals: (u64, u64, u64),
}

impl BlockedShardedCount {
    /// Counting the bundles of `batches` on `client`'s table, whose shard `s` is remote when
    /// `remote[s]`.
    pub fn new(batches: BundleBatches, client: &BlockedShardClient, remote: Vec<bool>) -> Result<Self> {
        if remote.len() != client.map().shards() {
            return Err(Error::invalid(format!(
                "{} shards given for a table of {}",
                remote.len(),
                client.map().shards()
            )));
        }
        Ok(BlockedShardedCount { batches, remote, ahead: None, waiting: None, unanswered: 0, totals: (0, 0, 0) })
    }

    /// Refuses `local` unless it holds exactly the shards that are not remote.
    fn check(&self, local: &[Option<&mut BlockedShard>]) -> Result<()> {
        if local.len() != self.remote.len() || local.iter().zip(&self.remote).any(|(l, &r)| l.is_none() != r) {
            return Err(Error::invalid("the shards given are not those the run was started with"));
        }
        Ok(())
    }

    /// Reads, hashes and routes the next batch and returns the hashes of each remote shard, in
    /// shard order; `None` at the end of the input.
    pub fn send(&mut self, client: &BlockedShardClient) -> Result<Option<Vec<Vec<u64>>>> {
        if self.waiting.is_some() || self.unanswered > 0 {
            return Err(Error::invalid("the previous batch was not counted"));
        }
        let next = match self.ahead.take() {
            Some(next) => next,
            None => self.batches.next_batch()?,
        };
        let Some(batch) = next else {
            self.ahead = Some(None);
            return Ok(None);
        };
        self.totals.0 += batch.read_ends.len() as u64;
        self.totals.1 += batch.hashes.len() as u64;
        self.totals.2 += spans(&batch.read_ends).filter(|read| read.is_empty()).count() as u64;
        let map = client.map();
        let (mut parts, _) = split_by_owner(&batch.hashes, &map.owners(&batch.hashes)?, map.shards(), |_| true);
        let messages: Vec<Vec<u64>> =
            parts.iter_mut().zip(&self.remote).filter(|(_, &r)| r).map(|(p, _)| std::mem::take(p)).collect();
        self.unanswered = messages.len();
        self.waiting = Some(parts);
        Ok(Some(messages))
    }

    /// Adds the local shards' parts of the batch sent last, then reads the next batch ahead
    /// (call while the remote shards work).
    pub fn local(&mut self, client: &BlockedShardClient, local: &mut [Option<&mut BlockedShard>]) -> Result<()> {
        self.check(local)?;
        let parts = self.waiting.take().ok_or_else(|| Error::invalid("no batch is waiting"))?;
        for (shard, part) in local.iter_mut().zip(&parts) {
            if let Some(shard) = shard {
                client.record(shard.add(part)?);
            }
        }
        self.ahead = Some(self.batches.next_batch()?);
        Ok(())
    }

    /// Records the remote shards' answers to the batch sent last (in shard order).
    pub fn record(&mut self, client: &BlockedShardClient, answers: &[OccupancyStats]) -> Result<()> {
        if self.waiting.is_some() {
            return Err(Error::invalid("the local shards have not counted the batch"));
        }
        if answers.len() != self.unanswered {
            return Err(Error::invalid(format!("{} answers for {} remote shards", answers.len(), self.unanswered)));
        }
        answers.iter().for_each(|&a| client.record(a));
        self.unanswered = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FastxReader, PairMode, PairedReader};
    use crate::run::RunContext;
    use crate::shards::runs::Cleaning;
    use crate::table::{AllocOptions, BlockedParams, BlockedTable, CounterWidth, CountingTable as _};
    use std::io::Write as _;

    #[test]
    fn a_file_counts_as_in_one_process_with_local_and_remote_shards() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let bases = b"ACGTTGCAAGGCTTAACCGGTTAAGCTAGCTAGGATCCA";
        for i in 0..400usize {
            let len = 5 + (i * 7) % 60;
            let read: Vec<u8> = (0..len).map(|j| bases[(i * 3 + j * j) % bases.len()]).collect();
            writeln!(file, ">r{i}\n{}", String::from_utf8(read).unwrap()).unwrap();
        }
        let path = file.path().to_str().unwrap().to_string();
        let params = BlockedParams::new(20, 30 * 64, CounterWidth::Bits8, 3);
        let expected = BlockedTable::with_params(params, AllocOptions::default()).unwrap();
        let ctx = RunContext::new();
        let mut reader = FastxReader::open_in(&path, &ctx).unwrap();
        let mut clean = Vec::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            for i in 0..batch.len() {
                crate::kmer::clean::clean_parser(batch.get(i).seq, &mut clean);
                expected.consume_many([clean.as_slice()]);
            }
        }
        for (n, remote) in [(1, vec![false]), (2, vec![true, false]), (3, vec![true, true, true])] {
            let client = BlockedShardClient::new(params, n).unwrap();
            let mut shards: Vec<BlockedShard> =
                (0..n).map(|s| BlockedShard::new(params, client.map().lines(s)).unwrap()).collect();
            let reader = PairedReader::new(FastxReader::open_in(&path, &ctx).unwrap(), PairMode::ForceSingle, None);
            let hasher = client.hasher().clone();
            let batches = BundleBatches::with_hasher(
                reader,
                Box::new(move |s, out| hasher.hashes(s, out)),
                100,
                Cleaning::Parser,
            );
            let mut run = BlockedShardedCount::new(batches, &client, remote.clone()).unwrap();
            while let Some(messages) = run.send(&client).unwrap() {
                let (mut held, mut away): (Vec<_>, Vec<_>) = (Vec::new(), Vec::new());
                for (shard, &r) in shards.iter_mut().zip(&remote) {
                    if r {
                        away.push(shard);
                        held.push(None);
                    } else {
                        held.push(Some(shard));
                    }
                }
                let answers: Vec<OccupancyStats> =
                    away.into_iter().zip(&messages).map(|(s, m)| s.add(m).unwrap()).collect();
                run.local(&client, &mut held).unwrap();
                run.record(&client, &answers).unwrap();
            }
            assert_eq!(run.totals.0, 400);
            let bytes: Vec<Vec<u8>> = shards.iter().map(BlockedShard::bytes).collect();
            let table = client.gather(&bytes.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
            assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{n} shards");
            assert_eq!(table.occupancy(), expected.occupancy(), "{n} shards");
        }
    }
}
