//! Blocked tables ([`BlockedTable`]) cut into shards of whole lines, which may live in other
//! processes. A k-mer's counters all lie in its line, so its shard alone counts and answers it
//! and messages name k-mer hashes. [`BlockedShardMap`] routes hashes to shards (one counting
//! sort, input order kept), [`BlockedShard`] holds a range of lines as a blocked table of its
//! own, and [`BlockedShardClient`] holds the map, the hasher and the statistics summed from
//! the shards' answers; the counters, statistics and saved file are the one-process table's.

use crate::shards::file as shard_file;
use crate::shards::khmer::split_by_owner;
use crate::shards::runs::Routed;
use crate::shards::{even_bounds, shard_at, ShardKernel, ShardLayout, ShardRouting};
use crate::table::batch::{BatchOutcome, BatchRules};
use crate::table::blocked::{probe_slots, with_width, CounterWidth, LineCells};
use crate::table::blocked::{BlockedParams, BlockedTable, KmerHasher, OccupancyStats, LINE_BYTES};
use crate::table::storage::{BitCells, ByteCells, Cells, NibbleCells};
use crate::table::with_cells;
use crate::table::{native_format, AllocOptions};
use crate::{Error, Result};
use std::ops::Range;
use std::sync::atomic::AtomicU8;
use std::sync::Mutex;

/// Where each line of a blocked table is: shard `s` holds lines `bounds[s] .. bounds[s + 1]`.
#[derive(Debug, Clone)]
pub struct BlockedShardMap {
    params: BlockedParams,
    bounds: Vec<u64>,
}

impl BlockedShardMap {
    /// The lines of a table of shape `params` cut into `shards` equal ranges.
    pub fn new(params: BlockedParams, shards: usize) -> Result<Self> {
        params.check()?;
        Ok(BlockedShardMap { params, bounds: even_bounds(params.n_lines, shards, " (the table's lines)")? })
    }

    /// The shape of the whole table.
    pub fn params(&self) -> &BlockedParams {
        &self.params
    }

    /// Shard `s` holds lines `bounds[s] .. bounds[s + 1]`.
    pub fn bounds(&self) -> &[u64] {
        &self.bounds
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The lines of shard `s`.
    pub fn lines(&self, s: usize) -> Range<u64> {
        self.bounds[s]..self.bounds[s + 1]
    }

    /// The shard of a k-mer hash (of its line).
    #[inline]
    pub fn shard_of(&self, hash: u64) -> usize {
        shard_at(&self.bounds, self.params.line_of(hash))
    }

    /// Every counter of `hashes`, probe-major (position `p * n + o` is probe `p` of k-mer `o`),
    /// numbered in the whole table: line × counters a line + slot.
    pub fn counters(&self, hashes: &[u64]) -> Vec<u64> {
        let mut out = Vec::new();
        self.counters_into(hashes, &mut out);
        out
    }

    /// Sets `out` to [`BlockedShardMap::counters`] of `hashes`.
    fn counters_into(&self, hashes: &[u64], out: &mut Vec<u64>) {
        let (n, probes) = (hashes.len(), self.params.probes);
        out.clear();
        out.resize(n * probes, 0);
        with_width!(self.params.width, C => for (o, &hash) in hashes.iter().enumerate() {
            let base = self.params.line_of(hash) << C::SLOT_BITS;
            for (p, &slot) in probe_slots::<C>(hash, probes)[..probes].iter().enumerate() {
                out[p * n + o] = base + u64::from(slot);
            }
        });
    }

    /// The shard of every hash, refusing a batch too large for the routing's positions.
    pub fn owners(&self, hashes: &[u64]) -> Result<Vec<u32>> {
        if hashes.len() > u32::MAX as usize {
            return Err(Error::invalid(format!("a batch of {} k-mers is too large", hashes.len())));
        }
        Ok(hashes.iter().map(|&h| self.shard_of(h) as u32).collect())
    }

    /// Splits `hashes` by shard: each shard's hashes in input order, and `order`, the input
    /// position of each entry of the shards' parts laid end to end (for
    /// [`crate::shards::khmer::ShardMap::unroute`]).
    pub fn route(&self, hashes: &[u64]) -> Result<(Vec<Vec<u64>>, Vec<u32>)> {
        Ok(split_by_owner(hashes, &self.owners(hashes)?, self.shards(), |_| true))
    }
}

/// One shard: the lines `lines` of a blocked table, held as a blocked table of their own.
pub struct BlockedShard {
    params: BlockedParams,
    lines: Range<u64>,
    table: BlockedTable,
}

impl BlockedShard {
    /// A zeroed shard of lines `lines` of a table of shape `params`, allocated as a table's
    /// counters are ([`AllocOptions::for_shard`]: huge pages from one huge page on); an
    /// allocation that fails is an error, not an abort.
    pub fn new(params: BlockedParams, lines: Range<u64>) -> Result<Self> {
        params.check()?;
        if lines.is_empty() || lines.end > params.n_lines {
            return Err(Error::invalid(format!(
                "lines {}..{} are not a shard of a table of {} lines",
                lines.start, lines.end, params.n_lines
            )));
        }
        let part = BlockedParams { n_lines: lines.end - lines.start, ..params };
        Ok(BlockedShard { params, table: BlockedTable::with_params(part, AllocOptions::default().for_shard())?, lines })
    }

    /// The lines held.
    pub fn lines(&self) -> Range<u64> {
        self.lines.clone()
    }

    /// Bytes of counter memory held.
    pub fn data_bytes(&self) -> u64 {
        self.table.params.data_bytes()
    }

    /// A copy of the counter bytes of the lines held.
    pub fn bytes(&self) -> Vec<u8> {
        self.table.raw_bytes()
    }

    /// Where the shard's lines are in a kmerflow table file (offset, length).
    pub fn place(&self) -> (u64, u64) {
        Self::place_of(self.lines())
    }

    /// Where lines `lines` of a table are in its kmerflow table file (offset, length).
    pub fn place_of(lines: Range<u64>) -> (u64, u64) {
        let bytes = LINE_BYTES as u64;
        (native_format::DATA_OFFSET as u64 + lines.start * bytes, (lines.end - lines.start) * bytes)
    }

    /// Writes the shard's lines at their place in the table file `path` (made by the client
    /// at its full length; see [`crate::shards::file`]).
    pub fn write_to(&self, path: &str) -> Result<()> {
        shard_file::write_chunks(path, self.place().0, |write| self.table.for_each_data_chunk(write))
    }

    /// Replaces the shard's lines with those at their place in the table file `path`.
    pub fn read_from(&mut self, path: &str) -> Result<()> {
        let place = self.place();
        shard_file::read_into(path, &[place], self.table.mem.bytes_mut())
    }

    /// Replaces the shard's lines with `bytes`.
    pub fn set_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() as u64 != self.data_bytes() {
            return Err(Error::invalid(format!("{} bytes for a shard of {} bytes", bytes.len(), self.data_bytes())));
        }
        self.table.mem.bytes_mut().copy_from_slice(bytes);
        Ok(())
    }

    /// The line of each hash within the shard, refusing a hash whose line another shard holds.
    fn local_lines(&self, hashes: &[u64]) -> Result<Vec<u64>> {
        hashes
            .iter()
            .map(|&hash| match self.params.line_of(hash) {
                line if self.lines.contains(&line) => Ok(line - self.lines.start),
                line => Err(Error::invalid(format!(
                    "k-mer hash {hash} is in line {line}, outside the shard's lines {}..{}",
                    self.lines.start, self.lines.end
                ))),
            })
            .collect()
    }

    /// Adds each hash in order (nothing when one is not the shard's); returns what the adds
    /// did to the statistics.
    pub fn add(&mut self, hashes: &[u64]) -> Result<OccupancyStats> {
        let lines = self.local_lines(hashes)?;
        let before = self.table.occupancy();
        self.table.add_at_lines::<true>(hashes, &lines, |_| {});
        let after = self.table.occupancy();
        Ok(OccupancyStats {
            occupied: after.occupied - before.occupied,
            unique: after.unique - before.unique,
            added: after.added - before.added,
        })
    }

    /// The value of every counter of `hashes` (all the shard's), probe-major (position
    /// `p * n + o` is probe `p` of k-mer `o`).
    pub fn values(&self, hashes: &[u64]) -> Result<Vec<u8>> {
        let lines = self.local_lines(hashes)?;
        let (n, probes) = (hashes.len(), self.params.probes);
        let (mut out, mut o) = (vec![0u8; n * probes], 0);
        with_width!(self.params.width, C => self.table.visit_prefetched(hashes, &lines, |mem, hash, line| {
            let base = line << C::SLOT_BITS;
            for (p, &slot) in probe_slots::<C>(hash, probes)[..probes].iter().enumerate() {
                out[p * n + o] = C::count(mem, base + u64::from(slot));
            }
            o += 1;
            true
        }));
        Ok(out)
    }

    /// Adds `deltas[j]` to counter `counters[j]` (distinct counters of the shard's lines,
    /// numbered as [`BlockedShardMap::counters`] numbers them); refused whole, before anything
    /// is changed, when a counter is another shard's or would pass the maximum.
    pub fn apply(&mut self, counters: &[u64], deltas: &[u8]) -> Result<()> {
        if counters.len() != deltas.len() {
            return Err(Error::invalid(format!("{} counters but {} deltas", counters.len(), deltas.len())));
        }
        let per_line = self.params.width.slots_per_line();
        let held = self.lines.start * per_line..self.lines.end * per_line;
        let max = self.params.width.max_count();
        let mem = self.table.mem.atomics();
        with_width!(self.params.width, C => {
            for (&c, &d) in counters.iter().zip(deltas) {
                if !held.contains(&c) {
                    return Err(Error::invalid(format!(
                        "counter {c} is outside the shard's counters {}..{}",
                        held.start, held.end
                    )));
                }
                if u32::from(C::count(mem, c - held.start)) + u32::from(d) > max {
                    return Err(Error::invalid(format!("a delta takes counter {c} past its maximum {max}")));
                }
            }
            for (&c, &d) in counters.iter().zip(deltas) {
                let bin = c - held.start;
                C::set_exclusive(mem, bin, C::count(mem, bin) + d);
            }
        });
        Ok(())
    }

    /// The shard's own bin of `counter` (held by the shard).
    #[inline(always)]
    fn bin(&self, counter: u64) -> u64 {
        counter - self.lines.start * self.params.width.slots_per_line()
    }

    /// The count of each hash (the minimum of its counters).
    pub fn counts(&self, hashes: &[u64]) -> Result<Vec<u8>> {
        let lines = self.local_lines(hashes)?;
        let mut counts = Vec::with_capacity(hashes.len());
        self.table.counts_at_lines(hashes, &lines, &mut counts);
        // A counter holds at most 255.
        Ok(counts.into_iter().map(|c| c as u8).collect())
    }
}

/// The part of a sharded blocked table that stays with the client: the map, the hasher and the
/// statistics of every add, summed from the shards' answers.
pub struct BlockedShardClient {
    map: BlockedShardMap,
    hasher: KmerHasher,
    stats: Mutex<OccupancyStats>,
}

impl BatchRules for BlockedShardClient {
    fn batch_probes(&self) -> usize {
        self.map.params.probes
    }

    fn counter_max(&self) -> u8 {
        self.map.params.width.max_count() as u8
    }

    fn occupancy_probes(&self) -> usize {
        self.map.params.probes
    }

    fn batch_uses_bigcount(&self) -> bool {
        false
    }

    fn bigcount_of(&self, _hash: u64) -> Option<u16> {
        None
    }
}

impl BlockedShardClient {
    /// A table of shape `params` cut into `shards` shards.
    pub fn new(params: BlockedParams, shards: usize) -> Result<Self> {
        let map = BlockedShardMap::new(params, shards)?;
        Ok(BlockedShardClient {
            hasher: KmerHasher::new(params.k, params.hash, params.strand),
            map,
            stats: Mutex::new(OccupancyStats::default()),
        })
    }

    /// The client of the table saved with shape `params` and statistics `stats`, cut into
    /// `shards` shards, whose lines the shards read.
    pub fn with_stats(params: BlockedParams, shards: usize, stats: OccupancyStats) -> Result<Self> {
        let client = Self::new(params, shards)?;
        client.record(stats);
        Ok(client)
    }

    /// The map.
    pub fn map(&self) -> &BlockedShardMap {
        &self.map
    }

    /// The table's k-mer hasher.
    pub fn hasher(&self) -> &KmerHasher {
        &self.hasher
    }

    /// Adds what a shard's adds did to the statistics ([`BlockedShard::add`]'s answer).
    pub fn record(&self, done: OccupancyStats) {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.occupied += done.occupied;
        stats.unique += done.unique;
        stats.added += done.added;
    }

    /// The statistics of the whole table.
    pub fn occupancy(&self) -> OccupancyStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The whole table's expected false-positive rate ([`BlockedTable::expected_fp_rate`]).
    pub fn expected_fp_rate(&self) -> f64 {
        self.map.params.expected_fp_rate(self.occupancy().occupied)
    }

    /// The whole table (in this process) from the shards' counter bytes, in shard order.
    pub fn gather(&self, parts: &[&[u8]]) -> Result<BlockedTable> {
        if parts.len() != self.map.shards() {
            return Err(Error::invalid(format!("{} shards given for a table of {}", parts.len(), self.map.shards())));
        }
        let mut table = BlockedTable::with_params(self.map.params, AllocOptions::default())?;
        let mut bytes = table.mem.bytes_mut();
        for (s, part) in parts.iter().enumerate() {
            let lines = self.map.lines(s);
            if part.len() as u64 != (lines.end - lines.start) * LINE_BYTES as u64 {
                return Err(Error::invalid(format!(
                    "shard {s} gave {} bytes for lines {}..{}",
                    part.len(),
                    lines.start,
                    lines.end
                )));
            }
            let (done, rest) = std::mem::take(&mut bytes).split_at_mut(part.len());
            done.copy_from_slice(part);
            bytes = rest;
        }
        let stats = self.occupancy();
        *table.stats.occupied.get_mut() = stats.occupied;
        *table.stats.unique.get_mut() = stats.unique;
        *table.stats.added.get_mut() = stats.added;
        Ok(table)
    }
}

impl ShardRouting for BlockedShardMap {
    const BY_KMER: bool = true;

    fn shards(&self) -> usize {
        BlockedShardMap::shards(self)
    }

    fn probes(&self) -> usize {
        self.params.probes
    }

    fn positions(&self, hashes: &[u64], keys_only: bool, counters: &mut Vec<u64>, owners: &mut Vec<u32>) -> Result<()> {
        let len = hashes.len() * self.params.probes;
        if len > u32::MAX as usize {
            return Err(Error::invalid(format!("a batch of {len} counters is too large")));
        }
        owners.clear();
        owners.extend(hashes.iter().map(|&h| self.shard_of(h) as u32));
        if keys_only {
            counters.clear();
        } else {
            self.counters_into(hashes, counters);
            (1..self.params.probes).for_each(|_| owners.extend_from_within(..hashes.len()));
        }
        Ok(())
    }

    fn counter_owners(&self, counters: &[u64]) -> Result<Vec<u32>> {
        let per_line = self.params.width.slots_per_line();
        let total = self.params.n_lines * per_line;
        counters
            .iter()
            .map(|&c| match c < total {
                true => Ok(shard_at(&self.bounds, c / per_line) as u32),
                false => Err(Error::invalid(format!("counter {c} is outside the table's {total} counters"))),
            })
            .collect()
    }
}

impl ShardKernel for BlockedShard {
    fn held(&self) -> u64 {
        (self.lines.end - self.lines.start) * self.params.width.slots_per_line()
    }

    #[inline(always)]
    fn prefetch(&self, counter: u64) {
        let (mem, bin) = (self.table.mem.atomics(), self.bin(counter));
        with_width!(self.params.width, C => crate::table::prefetch(&mem[C::byte_of(bin)]));
    }

    #[inline(always)]
    fn get(&self, counter: u64) -> u8 {
        let (mem, bin) = (self.table.mem.atomics(), self.bin(counter));
        with_width!(self.params.width, C => C::count(mem, bin))
    }

    #[inline(always)]
    fn add_one(&mut self, counter: u64) -> u8 {
        let (mem, bin) = (self.table.mem.atomics(), self.bin(counter));
        with_width!(self.params.width, C => C::increment_exclusive(mem, bin))
    }

    fn add_delta(&mut self, counter: u64, delta: u8) -> Result<()> {
        self.apply(&[counter], &[delta])
    }
}

/// The blocked layout: messages name k-mer hashes; counting's answers are what the shards'
/// adds did to the statistics.
impl ShardLayout for BlockedShardClient {
    type Routing = BlockedShardMap;
    type Shard = BlockedShard;
    type Added = OccupancyStats;
    type Tally = OccupancyStats;

    fn routing(&self) -> &BlockedShardMap {
        &self.map
    }

    /// The shard adds its lines' k-mers as one slice: its part is gathered from the batch.
    fn count_here(shard: &mut BlockedShard, keys: &[u64], positions: &[u32], _: &[AtomicU8]) -> Result<OccupancyStats> {
        shard.add(&positions.iter().map(|&q| keys[q as usize]).collect::<Vec<_>>())
    }

    fn record_count(
        &self,
        _hashes: &[u64],
        here: &[OccupancyStats],
        remote: &[&OccupancyStats],
        routed: &mut Routed<BlockedShardMap>,
    ) -> Result<()> {
        if remote.len() != routed.remote_shards() {
            return Err(Error::invalid(format!(
                "{} answers for {} remote shards",
                remote.len(),
                routed.remote_shards()
            )));
        }
        here.iter().chain(remote.iter().copied()).for_each(|&done| self.record(done));
        Ok(())
    }

    fn record_outcome(&self, outcome: &BatchOutcome) {
        self.record(OccupancyStats { occupied: outcome.occupied, unique: outcome.unique, added: outcome.added });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::runs::testing::{blocked_params, blocked_sharded, blocked_table, counted_sharded, fasta};
    use crate::shards::runs::testing::{gathered_blocked, normalized_sharded};
    use crate::table::{CounterWidth, CountingTable as _};
    use rand::{Rng, SeedableRng};

    /// Hashes from a small pool (repeats past 255) in random order.
    fn hashes(seed: u64, n: usize, distinct: usize) -> Vec<u64> {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let pool: Vec<u64> = (0..distinct).map(|_| rng.random()).collect();
        (0..n).map(|_| pool[rng.random_range(0..distinct)]).collect()
    }

    #[test]
    fn saved_shard_by_shard_is_the_one_process_file_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        for width in [CounterWidth::Bits8, CounterWidth::Bits4] {
            let hashes = hashes(9, 20_000, 400);
            let mut expected = blocked_table(blocked_params(width));
            expected.add_hashes_exclusive(&hashes);
            native_format::save(&expected, &path("whole.kf"), &crate::run::RunContext::new()).unwrap();
            for n in 1..=3 {
                let (client, mut shards) = blocked_sharded(blocked_params(width), n);
                let (parts, _) = client.map().route(&hashes).unwrap();
                for (shard, part) in shards.iter_mut().zip(&parts) {
                    client.record(shard.add(part).unwrap());
                }
                let file = std::fs::File::create(path("parts.kf")).unwrap();
                file.set_len(native_format::DATA_OFFSET as u64 + blocked_params(width).data_bytes()).unwrap();
                shards.iter().for_each(|s| s.write_to(&path("parts.kf")).unwrap());
                native_format::seal(&path("parts.kf"), client.map().params(), client.occupancy()).unwrap();
                assert_eq!(std::fs::read(path("parts.kf")).unwrap(), std::fs::read(path("whole.kf")).unwrap());

                let (shape, stats) = native_format::read_header(&path("parts.kf")).unwrap();
                let loaded = BlockedShardClient::with_stats(shape, n, stats).unwrap();
                assert_eq!(loaded.occupancy(), expected.occupancy());
                for (s, shard) in shards.iter_mut().enumerate() {
                    *shard = BlockedShard::new(shape, loaded.map().lines(s)).unwrap();
                    shard.read_from(&path("parts.kf")).unwrap();
                }
                let table = gathered_blocked(&loaded, &shards);
                assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{n} shards, {width:?}");
            }
        }
        let mut damaged = std::fs::read(path("parts.kf")).unwrap();
        *damaged.last_mut().unwrap() ^= 1;
        std::fs::write(path("damaged.kf"), damaged).unwrap();
        let err = native_format::read_header(&path("damaged.kf")).unwrap_err().to_string();
        assert!(err.contains("damaged.kf") && err.contains("checksum"), "{err}");
    }

    #[test]
    fn counting_matches_one_table_at_one_to_four_shards() {
        for width in [CounterWidth::Bits8, CounterWidth::Bits4] {
            let hashes = hashes(7, 60_000, 500);
            let mut expected = blocked_table(blocked_params(width));
            hashes.chunks(999).for_each(|batch| expected.add_hashes_exclusive(batch));
            assert!(hashes.iter().any(|&h| expected.get_hash(h) == width.max_count()));
            for n in 1..=4 {
                let (client, mut shards) = blocked_sharded(blocked_params(width), n);
                for batch in hashes.chunks(700) {
                    let (parts, _) = client.map().route(batch).unwrap();
                    for (shard, part) in shards.iter_mut().zip(&parts) {
                        client.record(shard.add(part).unwrap());
                    }
                }
                let table = gathered_blocked(&client, &shards);
                assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{n} shards, {width:?}");
                assert_eq!(table.occupancy(), expected.occupancy());
                assert_eq!(client.expected_fp_rate(), expected.expected_fp_rate());
                let (parts, order) = client.map().route(&hashes).unwrap();
                let answers: Vec<Vec<u8>> = shards.iter().zip(&parts).map(|(s, p)| s.counts(p).unwrap()).collect();
                let counts = crate::shards::khmer::ShardMap::unroute(
                    &order,
                    &answers.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                )
                .unwrap();
                assert!(counts.iter().zip(&hashes).all(|(&c, &h)| u32::from(c) == expected.get_hash(h)));
            }
        }
    }

    #[test]
    fn maps_and_shards_refuse_what_is_not_theirs() {
        let map = BlockedShardMap::new(blocked_params(CounterWidth::Bits8), 3).unwrap();
        assert_eq!(map.bounds(), &[0, 13, 26, 40]);
        assert!(BlockedShardMap::new(blocked_params(CounterWidth::Bits8), 41).is_err());
        assert!(BlockedShardMap::new(blocked_params(CounterWidth::Bits8), 0).is_err());
        let mut shard = BlockedShard::new(*map.params(), map.lines(1)).unwrap();
        let foreign = (0..u64::MAX).step_by(1 << 40).find(|&h| map.shard_of(h) == 0).unwrap();
        let err = shard.add(&[foreign]).unwrap_err().to_string();
        assert!(err.contains("outside the shard's lines 13..26"), "{err}");
        assert!(shard.bytes().iter().all(|&b| b == 0));
        assert!(BlockedShard::new(*map.params(), 30..41).is_err());
        let client = BlockedShardClient::new(*map.params(), 3).unwrap();
        assert!(client.gather(&[&[0u8; 64]]).is_err());
    }

    #[test]
    fn a_file_counts_as_in_one_process_with_local_and_remote_shards() {
        let bases = b"ACGTTGCAAGGCTTAACCGGTTAAGCTAGCTAGGATCCA";
        let reads: Vec<Vec<u8>> = (0..400usize)
            .map(|i| (0..5 + (i * 7) % 60).map(|j| bases[(i * 3 + j * j) % bases.len()]).collect())
            .collect();
        let params = BlockedParams::new(20, 30 * 64, CounterWidth::Bits8, 3);
        let expected = blocked_table(params);
        let mut clean = Vec::new();
        for read in &reads {
            crate::kmer::clean::clean_parser(read, &mut clean);
            expected.consume_many([clean.as_slice()]);
        }
        for (n, remote) in [(1, vec![false]), (2, vec![true, false]), (3, vec![true, true, true]), (3, vec![false; 3])]
        {
            let (client, mut shards) = blocked_sharded(params, n);
            assert_eq!(counted_sharded(&client, &mut shards, &remote, &fasta(&reads), 100).0, 400);
            let table = gathered_blocked(&client, &shards);
            assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{n} shards");
            assert_eq!(table.occupancy(), expected.occupancy(), "{n} shards");
        }
    }

    /// Reads from a short genome at high coverage, so that counters saturate and reads are
    /// dropped.
    fn reads_text() -> (String, Vec<Vec<u8>>) {
        let genome: Vec<u8> = (0..300usize).map(|i| b"ACGT"[(i * i + 7 * i) / 3 % 4]).collect();
        let reads: Vec<Vec<u8>> = (0..700usize).map(|i| genome[(i * 37) % 240..][..25 + (i % 35)].to_vec()).collect();
        (fasta(&reads), reads)
    }

    #[test]
    fn normalization_matches_read_by_read_with_local_and_remote_shards_and_batches_in_flight() {
        let (text, reads) = reads_text();
        let cutoff = 40;
        for width in [CounterWidth::Bits8, CounterWidth::Bits4] {
            let params = BlockedParams::new(20, 12 * 64, width, 3);
            let expected = blocked_table(params);
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
                (vec![false, false, false], 60, 2),
                (vec![false, false, false], 1, 1),
            ];
            for (remote, batch_kmers, waiting) in cases {
                let (client, shards) = blocked_sharded(params, remote.len());
                let run = normalized_sharded(&client, shards, &remote, &text, (batch_kmers, waiting), cutoff);
                let case = format!("{remote:?}, {batch_kmers} k-mers a batch, {waiting} waiting, {width:?}");
                assert_eq!(run.keep, expected_keep, "{case}");
                let table = gathered_blocked(&client, &run.shards);
                assert_eq!(table.raw_bytes(), expected.raw_bytes(), "{case}");
                assert_eq!(table.occupancy(), expected.occupancy(), "{case}");
            }
        }
    }
}
