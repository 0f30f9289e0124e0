//! normalize-by-median of a whole file on a sharded blocked table ([`super::shard`]), a batch at
//! a time, with only the remote shards' messages left to the caller.
//!
//! [`BlockedShardedNormalize::send`] reads the next batch ([`BundleBatches`], screed's cleaning,
//! the records kept as text) and routes its hashes by line; each remote shard's message carries
//! the updates of the batch decided last, then this batch's hashes, whose counters' values it
//! returns. [`BlockedShardedNormalize::local`] looks up the local shards;
//! [`BlockedShardedNormalize::decide`] takes the remote answers, decides the batch (phase 2,
//! in-batch deltas of the kept reads on the counters they share, saturating at the counter
//! width's maximum), applies its updates to the local shards and keeps the remote ones for the
//! next messages, and appends the kept bundles' text. The kept reads and the table are those of
//! the one-process run.

use super::shard::{BlockedShard, BlockedShardClient};
use crate::table::shard::{split_by_owner, Updates};
use crate::table::shard_runs::{BundleBatches, Decided, HashedBundles};
use crate::{Error, Result};

/// One message to a remote shard: the updates to apply first, then the hashes of this batch
/// whose counters' values it returns (probe-major).
#[derive(Debug, Default)]
pub struct BlockedMessage {
    /// Counter updates of the batch decided last.
    pub apply: Updates,
    /// The hashes of this batch whose lines the shard holds.
    pub hashes: Vec<u64>,
}

/// A batch sent: its bundles, each shard's part (the local ones kept), where each entry of the
/// parts laid end to end comes from, and the local shards' values once looked up.
struct Sent {
    batch: HashedBundles,
    parts: Vec<Vec<u64>>,
    lens: Vec<usize>,
    order: Vec<u32>,
    local_values: Option<Vec<Vec<u8>>>,
}

/// Digital normalization of a file on a sharded blocked table; `local[s]` (given to each call)
/// is shard `s` when it is held in this process, `None` when it is remote.
pub struct BlockedShardedNormalize {
    batches: BundleBatches,
    remote: Vec<bool>,
    cutoff: u32,
    sent: Option<Sent>,
    unsent: Vec<Updates>,
    decided: (u64, u64),
}

impl BlockedShardedNormalize {
    /// Normalizing the bundles of `batches` to `cutoff` on `client`'s table, whose shard `s` is
    /// remote when `remote[s]`.
    pub fn new(batches: BundleBatches, cutoff: u32, client: &BlockedShardClient, remote: Vec<bool>) -> Result<Self> {
        if remote.len() != client.map().shards() {
            return Err(Error::invalid(format!(
                "{} shards given for a table of {}",
                remote.len(),
                client.map().shards()
            )));
        }
        let unsent = vec![Updates::default(); remote.len()];
        Ok(BlockedShardedNormalize { batches, remote, cutoff, sent: None, unsent, decided: (0, 0) })
    }

    /// Refuses `local` unless it holds exactly the shards that are not remote.
    fn check(&self, local: &[Option<&mut BlockedShard>]) -> Result<()> {
        if local.len() != self.remote.len() || local.iter().zip(&self.remote).any(|(l, &r)| l.is_none() != r) {
            return Err(Error::invalid("the shards given are not those the run was started with"));
        }
        Ok(())
    }

    /// Reads and routes the next batch and returns one message per remote shard, in shard
    /// order; `None` at the end of the input.
    pub fn send(&mut self, client: &BlockedShardClient) -> Result<Option<Vec<BlockedMessage>>> {
        if self.sent.is_some() {
            return Err(Error::invalid("the previous batch was not decided"));
        }
        let Some(batch) = self.batches.next_batch()? else { return Ok(None) };
        let map = client.map();
        let (mut parts, order) = split_by_owner(&batch.hashes, &map.owners(&batch.hashes)?, map.shards(), |_| true);
        let lens = parts.iter().map(Vec::len).collect();
        let messages = (0..parts.len())
            .filter(|&s| self.remote[s])
            .map(|s| BlockedMessage {
                apply: std::mem::take(&mut self.unsent[s]),
                hashes: std::mem::take(&mut parts[s]),
            })
            .collect();
        self.sent = Some(Sent { batch, parts, lens, order, local_values: None });
        Ok(Some(messages))
    }

    /// Looks up the batch sent last on the local shards (once; call while the remote shards
    /// work).
    pub fn local(&mut self, local: &[Option<&mut BlockedShard>]) -> Result<()> {
        self.check(local)?;
        let sent = self.sent.as_mut().ok_or_else(|| Error::invalid("no batch is waiting"))?;
        if sent.local_values.is_none() {
            let values = local
                .iter()
                .zip(&sent.parts)
                .map(|(shard, part)| shard.as_ref().map_or(Ok(Vec::new()), |shard| shard.values(part)))
                .collect::<Result<_>>()?;
            sent.local_values = Some(values);
        }
        Ok(())
    }

    /// Decides the batch sent last given the remote shards' answers (in shard order), appends
    /// the kept bundles' records to `out` and returns the batch's decisions.
    pub fn decide(
        &mut self,
        client: &BlockedShardClient,
        local: &mut [Option<&mut BlockedShard>],
        remote: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<Decided> {
        self.local(local)?;
        let sent = self.sent.take().expect("checked by local");
        let local_values = sent.local_values.expect("looked up by local");
        let (n, probes) = (sent.batch.hashes.len(), client.map().params().probes);
        let mut answers = remote.iter();
        let mut values = vec![0u8; n * probes];
        let mut at = 0;
        for (s, &len) in sent.lens.iter().enumerate() {
            let answer = if self.remote[s] { answers.next().copied().unwrap_or_default() } else { &local_values[s] };
            if answer.len() != len * probes {
                return Err(Error::invalid(format!("shard {s} answered {} values for {len} k-mers", answer.len())));
            }
            for (j, &o) in sent.order[at..at + len].iter().enumerate() {
                (0..probes).for_each(|p| values[p * n + o as usize] = answer[p * len + j]);
            }
            at += len;
        }
        if answers.next().is_some() {
            return Err(Error::invalid("more answers than remote shards"));
        }
        let batch = sent.batch;
        let counters = client.map().counters(&batch.hashes);
        let lookup = client.lookup(&batch.hashes, &counters, &values)?;
        let (keep, updates) =
            client.normalize(&batch.hashes, &counters, &lookup, &batch.read_ends, &batch.bundle_ends, self.cutoff)?;
        self.apply(client, local, updates)?;
        self.decided.0 += batch.read_ends.len() as u64;
        self.decided.1 += crate::table::batch::spans(&batch.bundle_ends)
            .zip(&keep)
            .filter(|(_, &kept)| kept)
            .map(|(r, _)| r.len() as u64)
            .sum::<u64>();
        batch.write_kept(&keep, out);
        Ok(Decided { bundle_ends: batch.bundle_ends, keep })
    }

    /// Applies `updates` to the local shards and adds the others to the unsent ones.
    fn apply(
        &mut self,
        client: &BlockedShardClient,
        local: &mut [Option<&mut BlockedShard>],
        updates: Updates,
    ) -> Result<()> {
        let mut held = vec![Updates::default(); local.len()];
        for (c, d) in updates.counters.into_iter().zip(updates.deltas) {
            let s = client.map().shard_of_counter(c);
            let to = if local[s].is_some() { &mut held[s] } else { &mut self.unsent[s] };
            to.counters.push(c);
            to.deltas.push(d);
        }
        for (shard, part) in local.iter_mut().zip(&held) {
            if let Some(shard) = shard {
                shard.apply(&part.counters, &part.deltas)?;
            }
        }
        Ok(())
    }

    /// Reads decided, reads kept, and reads dropped for being shorter than k, so far.
    pub fn totals(&self) -> (u64, u64, u64) {
        (self.decided.0, self.decided.1, self.batches.short_dropped)
    }

    /// The updates not sent yet, one per shard (empty for the local shards).
    pub fn unsent(&mut self) -> Vec<Updates> {
        let shards = self.unsent.len();
        std::mem::replace(&mut self.unsent, vec![Updates::default(); shards])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FastxReader, PairMode, PairedReader};
    use crate::run::RunContext;
    use crate::table::shard_runs::Cleaning;
    use crate::table::{AllocOptions, BlockedParams, BlockedTable, CounterWidth, CountingTable as _};
    use std::io::Write as _;

    /// Reads from a short genome at high coverage, so that counters saturate and reads are
    /// dropped.
    fn reads_file() -> (tempfile::NamedTempFile, Vec<Vec<u8>>) {
        let genome: Vec<u8> = (0..300usize).map(|i| b"ACGT"[(i * i + 7 * i) / 3 % 4]).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let mut reads = Vec::new();
        for i in 0..700usize {
            let start = (i * 37) % 240;
            let read = genome[start..start + 25 + (i % 35)].to_vec();
            writeln!(file, ">r{i}\n{}", String::from_utf8(read.clone()).unwrap()).unwrap();
            reads.push(read);
        }
        (file, reads)
    }

    #[test]
    fn normalization_matches_read_by_read_with_local_and_remote_shards() {
        let (file, reads) = reads_file();
        let path = file.path().to_str().unwrap().to_string();
        let cutoff = 40;
        for width in [CounterWidth::Bits8, CounterWidth::Bits4] {
            let params = BlockedParams::new(20, 12 * 64, width, 3);
            let expected = BlockedTable::with_params(params, AllocOptions::default()).unwrap();
            let cutoff = cutoff.min(width.max_count());
            let mut hashes = Vec::new();
            let expected_keep: Vec<bool> = reads
                .iter()
                .map(|read| {
                    hashes.clear();
                    expected.kmer_hashes(read, &mut hashes);
                    let keep = !expected.median_at_least_hashes(&hashes, cutoff);
                    if keep {
                        expected.add_hashes(&hashes);
                    }
                    keep
                })
                .collect();
            assert!(expected_keep.iter().any(|&k| !k) && expected_keep.iter().any(|&k| k));
            for remote in [vec![false], vec![true, false], vec![true, true, false]] {
                let n = remote.len();
                let client = BlockedShardClient::new(params, n).unwrap();
                let mut shards: Vec<BlockedShard> =
                    (0..n).map(|s| BlockedShard::new(params, client.map().lines(s)).unwrap()).collect();
                let ctx = RunContext::new();
                let reader =
                    PairedReader::new(FastxReader::open_in(&path, &ctx).unwrap(), PairMode::ForceSingle, Some(20));
                let hasher = client.hasher().clone();
                let batches = BundleBatches::with_hasher(
                    reader,
                    Box::new(move |s, out| hasher.hashes(s, out)),
                    150,
                    Cleaning::ScreedWithText,
                );
                let mut run = BlockedShardedNormalize::new(batches, cutoff, &client, remote.clone()).unwrap();
                let (mut keep, mut text) = (Vec::new(), Vec::new());
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
                    let answers: Vec<Vec<u8>> = away
                        .into_iter()
                        .zip(&messages)
                        .map(|(s, m)| {
                            s.apply(&m.apply.counters, &m.apply.deltas).unwrap();
                            s.values(&m.hashes).unwrap()
                        })
                        .collect();
                    let answers: Vec<&[u8]> = answers.iter().map(Vec::as_slice).collect();
                    keep.extend(run.decide(&client, &mut held, &answers, &mut text).unwrap().keep);
                }
                for (shard, updates) in shards.iter_mut().zip(run.unsent()) {
                    shard.apply(&updates.counters, &updates.deltas).unwrap();
                }
                assert_eq!(keep, expected_keep, "{n} shards, {width:?}");
                assert_eq!(run.totals().1, expected_keep.iter().filter(|&&k| k).count() as u64);
                let bytes: Vec<Vec<u8>> = shards.iter().map(BlockedShard::bytes).collect();
                let table = client.gather(&bytes.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
                assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{n} shards, {width:?}");
                assert_eq!(table.occupancy(), expected.occupancy(), "{n} shards, {width:?}");
            }
        }
    }
}
