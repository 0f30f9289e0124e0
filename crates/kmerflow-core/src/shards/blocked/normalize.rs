//! normalize-by-median of a whole file on a sharded blocked table ([`super`]), a batch at
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

use super::{BlockedShard, BlockedShardClient};
use crate::shards::in_flight::InFlight;
use crate::shards::khmer::{first_positions, split_by_owner, Updates, PREFETCH_AHEAD};
use crate::shards::runs::{BundleBatches, Decided, HashedBundles};
use crate::table::batch::{BatchLookup, SeenCounters};
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

/// A batch sent: its bundles, the counters of its positions (probe-major) and each one's slot
/// (the first position of its counter), each shard's part (the local ones kept), where each
/// entry of the parts laid end to end comes from, the values of its positions as they arrive,
/// and the remote updates that its answers lack, at the slots of their counters (empty when
/// none).
struct Sent {
    batch: HashedBundles,
    counters: Vec<u64>,
    slots: Vec<u32>,
    parts: Vec<Vec<u64>>,
    lens: Vec<usize>,
    order: Vec<u32>,
    values: Vec<u8>,
    lacking: Vec<u8>,
}

impl Sent {
    /// Sets the values of shard `s`'s positions from `answer`, its values of its part
    /// (probe-major), whose entries start at `at` of `order`.
    fn put(&mut self, s: usize, at: usize, answer: &[u8], probes: usize) -> Result<()> {
        let (n, len) = (self.batch.hashes.len(), self.lens[s]);
        if answer.len() != len * probes {
            return Err(Error::invalid(format!("shard {s} answered {} values for {len} k-mers", answer.len())));
        }
        for (j, &o) in self.order[at..at + len].iter().enumerate() {
            (0..probes).for_each(|p| self.values[p * n + o as usize] = answer[p * len + j]);
        }
        Ok(())
    }

    /// Adds the updates the answers lack to the values.
    fn add_lacking(&mut self) -> Result<()> {
        if self.lacking.is_empty() {
            return Ok(());
        }
        for (value, &slot) in self.values.iter_mut().zip(&self.slots) {
            *value = value
                .checked_add(self.lacking[slot as usize])
                .ok_or_else(|| Error::invalid("a remote shard answered a value too large"))?;
        }
        Ok(())
    }
}

/// A bit per hashed counter, set for each counter of a batch: most counters of the batch
/// decided meanwhile are not the next batch's, and this test (about a bit per byte of the
/// batch's positions, so in cache) spares them the look-up of their first position.
#[derive(Default)]
struct CounterFilter {
    words: Vec<u64>,
    shift: u32,
}

impl CounterFilter {
    /// Holds `counters` alone, with at most about one bit in eight set.
    fn fill(&mut self, counters: &[u64]) {
        let bits = (8 * counters.len()).next_power_of_two().clamp(64, 1 << 23);
        self.words.clear();
        self.words.resize(bits / 64, 0);
        self.shift = 64 - bits.trailing_zeros();
        for &c in counters {
            let bit = self.bit(c);
            self.words[bit / 64] |= 1 << (bit % 64);
        }
    }

    #[inline(always)]
    fn bit(&self, counter: u64) -> usize {
        (counter.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Prefetches the bit of `counter`.
    #[inline(always)]
    fn prefetch(&self, counter: u64) {
        crate::table::prefetch(&self.words[self.bit(counter) / 64]);
    }

    /// Whether `counter` may be one of those filled (never false for one of them).
    #[inline(always)]
    fn may_hold(&self, counter: u64) -> bool {
        let bit = self.bit(counter);
        self.words[bit / 64] >> (bit % 64) & 1 == 1
    }
}

/// The deltas of `far` (the remote updates of the batch decided last) at the first positions
/// of their counters in a batch of `len` positions whose counters' first positions `seen`
/// holds and `filter` was filled with; zero elsewhere. The filter and the map are reached
/// ahead of their use (prefetched), as both are larger than the cache nearest the core.
fn lacking(far: &[(u64, u8)], filter: &CounterFilter, seen: &SeenCounters, len: usize) -> Vec<u8> {
    let mut candidates = Vec::with_capacity(far.len() / 4);
    for (j, &(c, d)) in far.iter().enumerate() {
        if let Some(&(ahead, _)) = far.get(j + PREFETCH_AHEAD) {
            filter.prefetch(ahead);
        }
        if filter.may_hold(c) {
            candidates.push((c, d));
        }
    }
    let mut lacking = vec![0; len];
    for (j, &(c, d)) in candidates.iter().enumerate() {
        if let Some(&(ahead, _)) = candidates.get(j + PREFETCH_AHEAD) {
            seen.prefetch(ahead);
        }
        if let Some(slot) = seen.get(c) {
            lacking[slot as usize] = d;
        }
    }
    lacking
}

/// Digital normalization of a file on a sharded blocked table; `local[s]` (given to each call)
/// is shard `s` when it is held in this process, `None` when it is remote.
pub struct BlockedShardedNormalize {
    batches: BundleBatches,
    remote: Vec<bool>,
    cutoff: u32,
    waiting: InFlight<Sent>,
    /// The first position of each counter of the batch sent last, and its counters' filter.
    seen: SeenCounters,
    filter: CounterFilter,
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
        let (waiting, seen) = (InFlight::default(), SeenCounters::default());
        let filter = CounterFilter::default();
        Ok(BlockedShardedNormalize { batches, remote, cutoff, waiting, seen, filter, unsent, decided: (0, 0) })
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
        let (mut parts, order) = split_by_owner(&batch.hashes, &map.owners(&batch.hashes)?, map.shards(), |_| true);
        let lens = parts.iter().map(Vec::len).collect();
        let messages = (0..parts.len())
            .filter(|&s| self.remote[s])
            .map(|s| BlockedMessage {
                apply: std::mem::take(&mut self.unsent[s]),
                hashes: std::mem::take(&mut parts[s]),
            })
            .collect();
        let counters = map.counters(&batch.hashes);
        let mut slots = vec![0; counters.len()];
        first_positions(&mut self.seen, &counters, 0..counters.len(), &mut slots);
        self.filter.fill(&counters);
        let values = vec![0; counters.len()];
        self.waiting.push(Sent { batch, counters, slots, parts, lens, order, values, lacking: Vec::new() });
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
                Some(shard) => sent.put(s, at, &shard.values(&sent.parts[s])?, probes)?,
                None => {
                    let answer = answers.next().ok_or_else(|| Error::invalid("fewer answers than remote shards"))?;
                    sent.put(s, at, answer, probes)?;
                }
            }
            at += len;
        }
        if answers.next().is_some() {
            return Err(Error::invalid("more answers than remote shards"));
        }
        sent.add_lacking()?;
        let sent = self.waiting.pop().expect("checked above");
        let batch = &sent.batch;
        let lookup = BatchLookup::from_arrays(batch.hashes.len(), probes, &sent.values, &sent.slots)?;
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

    /// Applies `updates` to the local shards and adds the others to the unsent ones and to
    /// what the batch sent before this one was decided lacks.
    fn apply(
        &mut self,
        client: &BlockedShardClient,
        local: &mut [Option<&mut BlockedShard>],
        updates: Updates,
    ) -> Result<()> {
        let mut held = vec![Updates::default(); local.len()];
        let mut far = Vec::with_capacity(updates.counters.len());
        for (&c, &d) in updates.counters.iter().zip(&updates.deltas) {
            let s = client.map().shard_of_counter(c);
            let to = if local[s].is_some() { &mut held[s] } else { &mut self.unsent[s] };
            to.counters.push(c);
            to.deltas.push(d);
            if local[s].is_none() {
                far.push((c, d));
            }
        }
        for (shard, part) in local.iter_mut().zip(&held) {
            if let Some(shard) = shard {
                shard.apply(&part.counters, &part.deltas)?;
            }
        }
        if let Some(next) = self.waiting.overtaken() {
            next.lacking = lacking(&far, &self.filter, &self.seen, next.counters.len());
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
    use crate::shards::runs::Cleaning;
    use crate::table::{AllocOptions, BlockedParams, BlockedTable, CounterWidth, CountingTable as _};
    use std::collections::VecDeque;
    use std::io::Write as _;

    /// The answers of the remote shards `away` to their messages, as their workers give them.
    fn answer(away: Vec<&mut BlockedShard>, messages: &[BlockedMessage]) -> Vec<Vec<u8>> {
        let mut answers = Vec::new();
        for (shard, m) in away.into_iter().zip(messages) {
            shard.apply(&m.apply.counters, &m.apply.deltas).unwrap();
            answers.push(shard.values(&m.hashes).unwrap());
        }
        answers
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
