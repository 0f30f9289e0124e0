//! normalize-by-median of a whole file on a sharded blocked table ([`super::shard`]), a batch at
//! a time, with only the remote shards' messages left to the caller.
//!
//! [`BlockedShardedNormalize::send`] reads the next batch ([`BundleBatches`], screed's cleaning,
//! the records kept as text) and routes its hashes by line; each remote shard's message carries
//! the updates not sent yet, then this batch's hashes, whose counters' values it returns. The
//! next batch is sent before the one answered is decided ([`InFlight`]: its round trip overlaps
//! the decisions, and its values get the remote updates of the batch decided meanwhile).
//! [`BlockedShardedNormalize::decide`] takes the remote answers of the oldest batch sent, looks
//! its k-mers up on the local shards, decides it (phase 2, in-batch deltas of the kept reads on
//! the counters they share, saturating at the counter width's maximum), applies its updates to
//! the local shards and keeps the remote ones for the next messages, and appends the kept
//! bundles' text. The kept reads and the table are those of the one-process run.

use super::shard::{BlockedShard, BlockedShardClient};
use crate::table::in_flight::{InFlight, LastDeltas};
use crate::table::shard::{split_by_owner, Updates, PREFETCH_AHEAD};
use crate::table::shard_runs::{BundleBatches, Decided, HashedBundles};
use crate::{Error, Result};

/// One message to a remote shard: the updates to apply first, then the hashes of this batch
/// whose counters' values it returns (probe-major).
#[derive(Debug, Default)]
pub struct BlockedMessage {
    /// Counter updates of the batches decided since the last message.
    pub apply: Updates,
    /// The hashes of this batch whose lines the shard holds.
    pub hashes: Vec<u64>,
}

/// A batch sent: its bundles, the counters of its positions (probe-major), the shard of each
/// k-mer, each shard's part (the local ones kept), where each entry of the parts laid end to
/// end comes from, and the remote positions' values so far (zero, or the deltas of the batch
/// decided after this one was sent).
struct Sent {
    batch: HashedBundles,
    counters: Vec<u64>,
    owners: Vec<u32>,
    parts: Vec<Vec<u64>>,
    lens: Vec<usize>,
    order: Vec<u32>,
    values: Vec<u8>,
}

impl Sent {
    /// Sets each remote position's value (before the answers are added) to its counter's
    /// delta in `last`.
    fn add_deltas(&mut self, remote: &[bool], last: &LastDeltas) {
        let n = self.owners.len();
        for (q, &c) in self.counters.iter().enumerate() {
            if let Some(&ahead) = self.counters.get(q + PREFETCH_AHEAD) {
                last.prefetch(ahead);
            }
            if remote[self.owners[q % n.max(1)] as usize] {
                self.values[q] = last.get(c);
            }
        }
    }

    /// Adds `answer`, shard `s`'s values of its part (probe-major), to its positions' values
    /// (`add`), or sets them.
    fn put(&mut self, s: usize, at: usize, answer: &[u8], probes: usize, add: bool) -> Result<()> {
        let (n, len) = (self.owners.len(), self.lens[s]);
        if answer.len() != len * probes {
            return Err(Error::invalid(format!("shard {s} answered {} values for {len} k-mers", answer.len())));
        }
        for (j, &o) in self.order[at..at + len].iter().enumerate() {
            for p in 0..probes {
                let value = &mut self.values[p * n + o as usize];
                let v = answer[p * len + j];
                *value = if add {
                    value
                        .checked_add(v)
                        .ok_or_else(|| Error::invalid(format!("shard {s} answered a value too large")))?
                } else {
                    v
                };
            }
        }
        Ok(())
    }
}

/// Digital normalization of a file on a sharded blocked table; `local[s]` (given to each call)
/// is shard `s` when it is held in this process, `None` when it is remote.
pub struct BlockedShardedNormalize {
    batches: BundleBatches,
    remote: Vec<bool>,
    cutoff: u32,
    waiting: InFlight<Sent>,
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
        Ok(BlockedShardedNormalize { batches, remote, cutoff, waiting: InFlight::default(), unsent, decided: (0, 0) })
    }

    /// Refuses `local` unless it holds exactly the shards that are not remote.
    fn check(&self, local: &[Option<&mut BlockedShard>]) -> Result<()> {
        if local.len() != self.remote.len() || local.iter().zip(&self.remote).any(|(l, &r)| l.is_none() != r) {
            return Err(Error::invalid("the shards given are not those the run was started with"));
        }
        Ok(())
    }

    /// Reads and routes the next batch and returns one message per remote shard, in shard
    /// order; `None` at the end of the input. At most two batches may wait.
    pub fn send(&mut self, client: &BlockedShardClient) -> Result<Option<Vec<BlockedMessage>>> {
        if self.waiting.full() {
            return Err(Error::invalid("two batches wait already"));
        }
        let Some(batch) = self.batches.next_batch()? else { return Ok(None) };
        let map = client.map();
        let owners = map.owners(&batch.hashes)?;
        let (mut parts, order) = split_by_owner(&batch.hashes, &owners, map.shards(), |_| true);
        let lens = parts.iter().map(Vec::len).collect();
        let messages = (0..parts.len())
            .filter(|&s| self.remote[s])
            .map(|s| BlockedMessage {
                apply: std::mem::take(&mut self.unsent[s]),
                hashes: std::mem::take(&mut parts[s]),
            })
            .collect();
        let counters = map.counters(&batch.hashes);
        let values = vec![0; counters.len()];
        self.waiting.push(Sent { batch, counters, owners, parts, lens, order, values });
        Ok(Some(messages))
    }

    /// Decides the oldest batch sent given the remote shards' answers to its messages (in
    /// shard order), looking its k-mers up on the local shards; appends the kept bundles'
    /// records to `out` and returns the batch's decisions. The answers may lack the updates of
    /// the batch decided last (when the batch was sent before it was decided), never earlier
    /// ones.
    pub fn decide(
        &mut self,
        client: &BlockedShardClient,
        local: &mut [Option<&mut BlockedShard>],
        remote: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<Decided> {
        self.check(local)?;
        let probes = client.map().params().probes;
        let sent = self.waiting.front_mut().ok_or_else(|| Error::invalid("no batch is waiting"))?;
        let (mut answers, mut at) = (remote.iter(), 0);
        for (s, shard) in local.iter().enumerate() {
            let len = sent.lens[s];
            match shard {
                Some(shard) => sent.put(s, at, &shard.values(&sent.parts[s])?, probes, false)?,
                None => {
                    let answer = answers.next().ok_or_else(|| Error::invalid("fewer answers than remote shards"))?;
                    sent.put(s, at, answer, probes, true)?;
                }
            }
            at += len;
        }
        if answers.next().is_some() {
            return Err(Error::invalid("more answers than remote shards"));
        }
        let sent = self.waiting.pop().expect("checked above");
        let batch = &sent.batch;
        let lookup = client.lookup(&batch.hashes, &sent.counters, &sent.values)?;
        let (keep, updates) = client.normalize(
            &batch.hashes,
            &sent.counters,
            &lookup,
            &batch.read_ends,
            &batch.bundle_ends,
            self.cutoff,
        )?;
        self.apply(client, local, updates)?;
        self.decided.0 += batch.read_ends.len() as u64;
        self.decided.1 += crate::table::batch::spans(&batch.bundle_ends)
            .zip(&keep)
            .filter(|(_, &kept)| kept)
            .map(|(r, _)| r.len() as u64)
            .sum::<u64>();
        batch.write_kept(&keep, out);
        Ok(Decided { bundle_ends: sent.batch.bundle_ends, keep })
    }

    /// Applies `updates` to the local shards, adds the others to the unsent ones, and gives
    /// those to the batch sent before this one was decided.
    fn apply(
        &mut self,
        client: &BlockedShardClient,
        local: &mut [Option<&mut BlockedShard>],
        updates: Updates,
    ) -> Result<()> {
        let mut held = vec![Updates::default(); local.len()];
        let mut far = Updates::default();
        for (c, d) in updates.counters.into_iter().zip(updates.deltas) {
            let s = client.map().shard_of_counter(c);
            let to = if local[s].is_some() { &mut held[s] } else { &mut self.unsent[s] };
            to.counters.push(c);
            to.deltas.push(d);
            if local[s].is_none() {
                far.counters.push(c);
                far.deltas.push(d);
            }
        }
        for (shard, part) in local.iter_mut().zip(&held) {
            if let Some(shard) = shard {
                shard.apply(&part.counters, &part.deltas)?;
            }
        }
        let far = far.counters.iter().copied().zip(far.deltas.iter().copied());
        if let Some((next, last)) = self.waiting.decided(far) {
            next.add_deltas(&self.remote, last);
        }
        Ok(())
    }

    /// Reads decided, reads kept, and reads dropped for being shorter than k, so far.
    pub fn totals(&self) -> (u64, u64, u64) {
        (self.decided.0, self.decided.1, self.batches.short_dropped)
    }

    /// The updates not sent yet, one per shard (empty for the local shards): at the end, those
    /// of the last two batches when the last was sent before the one ahead of it was decided
    /// (a counter may then appear twice).
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
    use std::collections::VecDeque;
    use std::io::Write as _;

    /// The answers of the remote shards `away` to their messages, as their workers give them.
    fn answer(away: Vec<&mut BlockedShard>, messages: &[BlockedMessage]) -> Vec<Vec<u8>> {
        away.into_iter()
            .zip(messages)
            .map(|(s, m)| {
                s.apply(&m.apply.counters, &m.apply.deltas).unwrap();
                s.values(&m.hashes).unwrap()
            })
            .collect()
    }

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
    fn normalization_matches_read_by_read_with_local_and_remote_shards_and_batches_in_flight() {
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
            let max = width.max_count() as u8;
            let saturated = |b: u8| if width == CounterWidth::Bits4 { b & 15 == 15 || b >> 4 == 15 } else { b == max };
            assert!(width == CounterWidth::Bits8 || expected.raw_bytes().into_iter().any(saturated));
            let cases = [
                (vec![false], 150, 1),
                (vec![true], 150, 2),
                (vec![true, false], 150, 1),
                (vec![true, false], 1, 2),
                (vec![false, true], 150, 2),
                (vec![true, true, false], 150, 2),
                (vec![true, true, true], 10_000, 2),
                (vec![true, true, true], 60, 2),
            ];
            for (remote, batch_kmers, waiting) in cases {
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
                    batch_kmers,
                    Cleaning::ScreedWithText,
                );
                let mut run = BlockedShardedNormalize::new(batches, cutoff, &client, remote.clone()).unwrap();
                let (mut keep, mut text, mut answered) = (Vec::new(), Vec::new(), VecDeque::new());
                loop {
                    let (mut held, mut away): (Vec<_>, Vec<_>) = (Vec::new(), Vec::new());
                    for (shard, &r) in shards.iter_mut().zip(&remote) {
                        if r {
                            away.push(shard);
                            held.push(None);
                        } else {
                            held.push(Some(shard));
                        }
                    }
                    if answered.len() < waiting {
                        if let Some(messages) = run.send(&client).unwrap() {
                            answered.push_back(answer(away, &messages));
                            continue;
                        }
                    } else if waiting == 2 {
                        assert!(run.send(&client).is_err(), "at most two batches wait");
                    }
                    let Some(answers) = answered.pop_front() else { break };
                    let answers: Vec<&[u8]> = answers.iter().map(Vec::as_slice).collect();
                    keep.extend(run.decide(&client, &mut held, &answers, &mut text).unwrap().keep);
                }
                for (shard, updates) in shards.iter_mut().zip(run.unsent()) {
                    shard.apply(&updates.counters, &updates.deltas).unwrap();
                }
                let case = format!("{remote:?}, {batch_kmers} k-mers a batch, {waiting} waiting, {width:?}");
                assert_eq!(keep, expected_keep, "{case}");
                assert_eq!(run.totals().1, expected_keep.iter().filter(|&&k| k).count() as u64);
                let bytes: Vec<Vec<u8>> = shards.iter().map(BlockedShard::bytes).collect();
                let table = client.gather(&bytes.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
                assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{case}");
                assert_eq!(table.occupancy(), expected.occupancy(), "{case}");
            }
        }
    }
}
