//! Counting tables of khmer's layout split into shards: contiguous ranges of counters that can
//! live in other processes (Dask workers), reached by batches of counter indices.
//!
//! The counters of a table of sizes `s_0 .. s_{N-1}` form one space: bin `i` of table `t` is
//! counter `offset_t + i`, `offset_t = s_0 + .. + s_{t-1}`. A [`ShardMap`] cuts that space into
//! contiguous ranges, whole tables when there are at least as many tables as shards, and routes
//! the counters of a batch to their shards with one counting sort (input order kept within a
//! shard). A [`Shard`] holds one range (one byte per counter) and answers in batches: the counts
//! of counters, adding one to counters (returning the values before each add), and applying
//! deltas. A [`ShardClient`] holds the rest of the table (the bigcount map, `n_occupied`,
//! `n_unique_kmers`) and makes the per-k-mer decisions from the values the shards return, by the
//! rules of [`crate::table::batch`]: counting a batch (phase 3 alone: the shards add in input order and
//! return each counter's previous value, from which the statistics and bigcounts follow exactly
//! as in a sequential add), counts of k-mers, and the three phases of the read-by-read decisions.
//!
//! Everything equals the one-process table with the same sizes: counters, bigcounts and the
//! statistics ([`ShardClient::gather`] rebuilds it).

use super::runs::{drive, Routed};
use super::{even_bounds, shard_at, ShardKernel, ShardLayout, ShardRouting};
use crate::table::batch::{BatchOutcome, BatchRules, SeenCounters};
use crate::table::khmer_format::ByteFrame;
use crate::table::{prefetch, AllocOptions, FastMod, HashKind, KhmerTable, OwnedBytes, StorageKind, Table};
use crate::{Error, Result};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

/// Where each counter of a khmer-layout table is: its index in the table's counter space and
/// its shard (see the module documentation).
#[derive(Debug, Clone)]
pub struct ShardMap {
    moduli: Vec<FastMod>,
    offsets: Vec<u64>,
    bounds: Vec<u64>,
}

impl ShardMap {
    /// The map of tables of `sizes` cut into `shards` ranges: whole tables grouped as evenly as
    /// can be when there are at least as many tables as shards, else equal ranges of the space.
    pub fn new(sizes: &[u64], shards: usize) -> Result<Self> {
        if sizes.is_empty() || sizes.contains(&0) {
            return Err(Error::invalid("a sharded table needs at least one table, each of at least one bin"));
        }
        let mut offsets = vec![0u64];
        for &size in sizes {
            offsets.push(offsets.last().unwrap().checked_add(size).ok_or_else(|| Error::invalid("table too large"))?);
        }
        let even = even_bounds(*offsets.last().unwrap(), shards, "")?;
        let bounds: Vec<u64> = if shards <= sizes.len() {
            // Shard s ends at the table boundary nearest to its even share, leaving every later
            // shard at least one table.
            let mut bounds = vec![0];
            for s in 1..shards {
                let previous = offsets.iter().position(|&o| o == bounds[s - 1]).unwrap();
                let last_allowed = sizes.len() - (shards - s);
                let t = (previous + 1..=last_allowed)
                    .min_by_key(|&t| offsets[t].abs_diff(even[s]))
                    .expect("a table left for every shard");
                bounds.push(offsets[t]);
            }
            bounds.push(even[shards]);
            bounds
        } else {
            even
        };
        Ok(ShardMap { moduli: sizes.iter().map(|&s| FastMod::new(s)).collect(), offsets, bounds })
    }

    /// Counters per k-mer (the number of tables).
    pub fn probes(&self) -> usize {
        self.moduli.len()
    }

    /// The table sizes.
    pub fn sizes(&self) -> Vec<u64> {
        self.moduli.iter().map(FastMod::divisor).collect()
    }

    /// Shard `s` holds counters `bounds[s]..bounds[s + 1]`.
    pub fn bounds(&self) -> &[u64] {
        &self.bounds
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The counter of every position of `hashes` (probe-major: position `p * n + o` is table
    /// `p`'s counter of k-mer `o`).
    pub fn counters(&self, hashes: &[u64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(hashes.len() * self.probes());
        for (modulus, &offset) in self.moduli.iter().zip(&self.offsets) {
            out.extend(hashes.iter().map(|&h| offset + modulus.rem(h)));
        }
        out
    }

    /// Sets `counters` to [`ShardMap::counters`] of `hashes` and `owners` to the shard of each
    /// ([`ShardMap::owners`]) table by table, refusing a batch too large for [`Sections`]'
    /// positions.
    pub fn counters_and_owners(&self, hashes: &[u64], counters: &mut Vec<u64>, owners: &mut Vec<u32>) -> Result<()> {
        let len = hashes.len() * self.probes();
        if len > u32::MAX as usize {
            return Err(Error::invalid(format!("a batch of {len} counters is too large")));
        }
        counters.clear();
        owners.clear();
        counters.reserve(len);
        owners.reserve(len);
        for (t, modulus) in self.moduli.iter().enumerate() {
            let (offset, (first, inside)) = (self.offsets[t], self.table_shards(t));
            // Two tight passes over the table's positions (exact-size, so no capacity checks).
            let start = counters.len();
            counters.extend(hashes.iter().map(|&h| offset + modulus.rem(h)));
            let mut own =
                |cuts: &[u64]| owners.extend(counters[start..].iter().map(|&c| (first + below(cuts, c)) as u32));
            match Cuts::new(&inside) {
                Cuts::Few(cuts) => own(&cuts),
                Cuts::Many(cuts) => own(&cuts),
            }
        }
        Ok(())
    }

    /// The shards of table `t`'s counters: its counters lie in its first shard (returned) or
    /// in one after a bound (returned) inside it.
    fn table_shards(&self, t: usize) -> (usize, Vec<u64>) {
        let (offset, end) = (self.offsets[t], self.offsets[t + 1]);
        let first = self.shard_of(offset);
        (first, self.bounds[first + 1..].iter().copied().take_while(|&b| b < end).collect())
    }

    /// Adds every position of `hashes` (probe-major, as [`ShardMap::counters`] numbers them)
    /// whose shard is in `group` (shard `s` as `group[s]`) straight from the hashes, in order,
    /// setting `values` at the position to its counter's value before the add. Each table is
    /// cut once per batch into its parts in the shards ([`TablePart`]) and counted by
    /// [`add_to_parts`], as the one-process table counts.
    fn add_straight(&self, group: &mut [Option<&mut Shard>], hashes: &[u64], values: &[AtomicU8]) {
        let n = hashes.len();
        for (t, modulus) in self.moduli.iter().enumerate() {
            let (offset, end) = (self.offsets[t], self.offsets[t + 1]);
            let (first, inside) = self.table_shards(t);
            let last = first + inside.len();
            if group[first..=last].iter().all(Option::is_none) {
                continue;
            }
            let mut parts: Vec<TablePart> = (first..=last)
                .zip(group[first..=last].iter_mut())
                .map(|(s, shard)| {
                    let (lo, hi) = (self.bounds[s].max(offset), self.bounds[s + 1].min(end));
                    TablePart::new(lo - offset, shard.as_deref_mut().map(|shard| (shard, lo..hi)))
                })
                .collect();
            let out = &values[t * n..(t + 1) * n];
            let starts: Vec<u64> = parts.iter().map(|p| p.first_bin).collect();
            // The part of a hash's bin, and the bin's cell there.
            let locate = |cuts: &[u64], hash: u64| {
                let bin = modulus.rem(hash);
                let part = below(cuts, bin);
                (part, (bin - starts[part]) as usize)
            };
            match Cuts::new(&starts[1..]) {
                Cuts::Few(cuts) => add_to_parts(&mut parts, hashes, out, |hash| locate(&cuts, hash)),
                Cuts::Many(cuts) => add_to_parts(&mut parts, hashes, out, |hash| locate(&cuts, hash)),
            }
        }
    }

    /// The shard of a counter.
    #[inline]
    pub fn shard_of(&self, counter: u64) -> usize {
        shard_at(&self.bounds, counter)
    }

    /// The shard of every counter, refusing a counter outside the table or a batch too large
    /// for [`ShardMap::split`]'s positions.
    pub fn owners(&self, counters: &[u64]) -> Result<Vec<u32>> {
        if counters.len() > u32::MAX as usize {
            return Err(Error::invalid(format!("a batch of {} counters is too large", counters.len())));
        }
        let total = *self.bounds.last().unwrap();
        if let Some(&bad) = counters.iter().find(|&&c| c >= total) {
            return Err(Error::invalid(format!("counter {bad} is outside the table's {total} counters")));
        }
        Ok(counters.iter().map(|&c| self.shard_of(c) as u32).collect())
    }

    /// Splits `counters` by shard with one counting sort: each shard's counters in input order,
    /// and `order`, the input position of each entry of the shards' arrays laid end to end.
    pub fn route(&self, counters: &[u64]) -> Result<(Vec<Vec<u64>>, Vec<u32>)> {
        Ok(self.split(counters, &self.owners(counters)?, |_| true))
    }

    /// [`ShardMap::route`] of the counters of the shards `wanted` (of their `owners`); the
    /// other shards' parts are empty.
    pub fn split(&self, counters: &[u64], owners: &[u32], wanted: impl Fn(usize) -> bool) -> (Vec<Vec<u64>>, Vec<u32>) {
        split_by_owner(counters, owners, self.shards(), wanted)
    }

    /// The inverse of [`ShardMap::route`] for the shards' answers: `values[order[j]]` is entry
    /// `j` of the answers laid end to end.
    pub fn unroute<T: Copy + Default>(order: &[u32], answers: &[&[T]]) -> Result<Vec<T>> {
        let len: usize = answers.iter().map(|a| a.len()).sum();
        if len != order.len() {
            return Err(Error::invalid(format!("the shards answered {len} values for {} counters", order.len())));
        }
        let mut values = vec![T::default(); len];
        for (&q, &v) in order.iter().zip(answers.iter().flat_map(|a| a.iter())) {
            *values.get_mut(q as usize).ok_or_else(|| {
                Error::invalid(format!("position {q} in the order is past the {len} values answered"))
            })? = v;
        }
        Ok(values)
    }
}

/// Splits `values` by their `owners` (of `shards` shards) with one counting sort, keeping only
/// the shards `wanted` (the others' parts are empty): each shard's values in input order, and
/// `order`, the input position of each entry of the parts laid end to end.
pub fn split_by_owner(
    values: &[u64],
    owners: &[u32],
    shards: usize,
    wanted: impl Fn(usize) -> bool,
) -> (Vec<Vec<u64>>, Vec<u32>) {
    let wanted: Vec<usize> = (0..shards).filter(|&s| wanted(s)).collect();
    let mut sections = Sections::default();
    sections.split(owners, shards, &wanted);
    let parts = (0..shards).map(|s| sections.positions(s).iter().map(|&q| values[q as usize]).collect()).collect();
    (parts, sections.order)
}

/// The positions of values split by shard ([`Sections::split`]), the buffers kept from one
/// split to the next.
#[derive(Debug, Default)]
pub struct Sections {
    /// The input position of each entry of the shards asked for, shard after shard in the
    /// order asked.
    pub order: Vec<u32>,
    /// Where each shard's entries start in `order` (0 for a shard not asked for).
    pub starts: Vec<usize>,
    /// How many entries each shard has in `order` (0 for a shard not asked for).
    pub lens: Vec<usize>,
}

impl Sections {
    /// Splits the positions of values by their `owners` (of `shards` shards) with one counting
    /// sort, keeping only the shards `wanted` (each at most once), laid end to end in `order` in
    /// the order of `wanted`. With none wanted (a normalization whose shards are all held here)
    /// the owners are not read.
    pub fn split(&mut self, owners: &[u32], shards: usize, wanted: &[usize]) {
        let owners = if wanted.is_empty() { &[][..] } else { owners };
        let sizes = owner_sizes(owners, shards);
        let mut kept = vec![false; shards];
        self.starts.clear();
        self.starts.resize(shards, 0);
        self.lens.clear();
        self.lens.resize(shards, 0);
        let mut at = 0;
        for &s in wanted {
            (self.starts[s], self.lens[s], kept[s]) = (at, sizes[s], true);
            at += sizes[s];
        }
        self.order.clear();
        self.order.resize(at, 0);
        let mut next = self.starts.clone();
        for (q, &s) in owners.iter().enumerate() {
            let s = s as usize;
            if kept[s] {
                self.order[next[s]] = q as u32;
                next[s] += 1;
            }
        }
    }

    /// The input positions of shard `s`'s entries, in input order.
    pub fn positions(&self, s: usize) -> &[u32] {
        &self.order[self.starts[s]..self.starts[s] + self.lens[s]]
    }
}

/// How many of `owners` (of `shards` shards) each shard has. Four tallies, one per position in
/// each run of four, added at the end: a single tally's increments wait on each other whenever
/// an owner repeats (most of the split's time, with few shards).
fn owner_sizes(owners: &[u32], shards: usize) -> Vec<usize> {
    let mut tallies = vec![[0usize; 4]; shards];
    let runs = owners.chunks_exact(4);
    for &s in runs.remainder() {
        tallies[s as usize][0] += 1;
    }
    for run in runs {
        for (lane, &s) in run.iter().enumerate() {
            tallies[s as usize][lane] += 1;
        }
    }
    tallies.iter().map(|t| t.iter().sum()).collect()
}

/// Where a table's counters (or bins) pass from one shard to the next, for finding the part of
/// the table a counter lies in by comparisons alone ([`below`]): a fixed number of them, for a
/// table across at most [`FEW_CUTS`] + 1 shards (the common case: 8 shards over 4 tables put
/// 2-3 shards in a table), whose loops the compiler unrolls when given them as such.
enum Cuts {
    Few([u64; FEW_CUTS]),
    Many(Vec<u64>),
}

/// The most cuts compared as a fixed array ([`Cuts`]).
const FEW_CUTS: usize = 3;

impl Cuts {
    /// The cuts `cuts`, in order.
    fn new(cuts: &[u64]) -> Self {
        if cuts.len() > FEW_CUTS {
            return Cuts::Many(cuts.to_vec());
        }
        // A cut past every counter pads them.
        let mut few = [u64::MAX; FEW_CUTS];
        few[..cuts.len()].copy_from_slice(cuts);
        Cuts::Few(few)
    }
}

/// The part of a table holding `x`: how many of its `cuts` ([`Cuts`]) are at or below `x`.
#[inline(always)]
fn below(cuts: &[u64], x: u64) -> usize {
    cuts.iter().map(|&cut| usize::from(x >= cut)).sum()
}

/// Adds one to the cell of each of `hashes` in the `parts` of a table ([`ShardMap::add_straight`]),
/// in order, setting `out[o]` to the cell's value before the add of `hashes[o]` where its part
/// is held; `locate(hash)` is the hash's part and cell there. Each cell is prefetched
/// [`STRAIGHT_AHEAD`] hashes before its add.
#[inline(always)]
fn add_to_parts(parts: &mut [TablePart], hashes: &[u64], out: &[AtomicU8], locate: impl Fn(u64) -> (usize, usize)) {
    let mut ring = [(0, 0); STRAIGHT_AHEAD];
    for (slot, &hash) in ring.iter_mut().zip(hashes) {
        *slot = locate(hash);
        parts[slot.0].prefetch(slot.1);
    }
    for (o, value) in out.iter().enumerate() {
        let (part, cell) = ring[o % STRAIGHT_AHEAD];
        if let Some(&ahead) = hashes.get(o + STRAIGHT_AHEAD) {
            let next = locate(ahead);
            parts[next.0].prefetch(next.1);
            ring[o % STRAIGHT_AHEAD] = next;
        }
        if let Some(previous) = parts[part].add_one(cell) {
            value.store(previous, Relaxed);
        }
    }
}

/// The bins of one table that one shard holds, from `first_bin` on: their cells in the shard
/// when the shard is at hand, else none (adds to them are left to the shard's owner).
struct TablePart<'a> {
    first_bin: u64,
    max: u8,
    cells: &'a mut [u8],
}

impl<'a> TablePart<'a> {
    /// The part from `first_bin`: the cells of `counters` of `shard`, or none without a shard.
    fn new(first_bin: u64, shard: Option<(&'a mut Shard, std::ops::Range<u64>)>) -> Self {
        match shard {
            Some((shard, counters)) => {
                let (from, to) = (shard.index(counters.start), shard.index(counters.end));
                TablePart { first_bin, max: shard.max, cells: &mut shard.cells[from..to] }
            }
            None => TablePart { first_bin, max: 0, cells: &mut [] },
        }
    }

    /// Prefetches cell `cell` of this part, if held.
    #[inline(always)]
    fn prefetch(&self, cell: usize) {
        if let Some(cell) = self.cells.get(cell) {
            prefetch(cell);
        }
    }

    /// Adds one to cell `cell` of this part (saturating) and returns its value before, or none
    /// when the part is not held.
    #[inline(always)]
    fn add_one(&mut self, cell: usize) -> Option<u8> {
        let cell = self.cells.get_mut(cell)?;
        let previous = *cell;
        *cell = previous + u8::from(previous < self.max);
        Some(previous)
    }
}

/// How many positions ahead of its add the straight count ([`ShardMap::add_straight`])
/// prefetches a cell. Twice the one-process table's distance: 500k reads, -k 20 -N 4 -M 400M,
/// 8 shards in the client: 1303 perf samples of the straight count at 32, 831 at 64, 900 at
/// 128 (934 at 64 in the same runs).
const STRAIGHT_AHEAD: usize = 64;

/// How many counters ahead of its use a shard's cell is prefetched by the loops over routed
/// counters (a shard's adds and look-ups, the in-place reads of a normalization): as far as
/// the one-process table's bins are. At 16, 500k reads, -k 20 -N 4 -M 400M, 8 shards, 2 of
/// them on 2 workers: counting 3.96 -> 4.41 client CPU-s and 1.32 -> 1.53 workers', normalizing
/// 5.14 -> 5.27 and 1.63 -> 1.80 (all 8 shards in the client, normalizing: within noise).
pub const PREFETCH_AHEAD: usize = crate::table::PREFETCH_AHEAD;

/// One shard: counters `start..start + len` of a table's counter space, one byte each.
pub struct Shard {
    start: u64,
    max: u8,
    cells: OwnedBytes,
}

impl Shard {
    /// A zeroed shard of `len` counters from `start`, each at most `max`, allocated as a
    /// table's counters are ([`AllocOptions::for_shard`]: huge pages from one huge page on); an
    /// allocation that fails is an error, not an abort.
    pub fn new(start: u64, len: u64, max: u8) -> Result<Self> {
        let n = usize::try_from(len).map_err(|_| Error::invalid(format!("a shard of {len} counters is too large")))?;
        let cells = OwnedBytes::with_options(n, AllocOptions::default().for_shard())
            .map_err(|e| Error::invalid(format!("cannot allocate a shard of {len} counters: {e}")))?;
        Ok(Shard { start, max, cells })
    }

    /// A shard holding a copy of `cells` (counters from `start`), checked against `max`.
    pub fn from_cells(start: u64, max: u8, cells: &[u8]) -> Result<Self> {
        if let Some(i) = cells.iter().position(|&c| c > max) {
            return Err(Error::invalid(format!(
                "counter {} holds {} above the maximum {max}",
                start + i as u64,
                cells[i]
            )));
        }
        let mut shard = Shard::new(start, cells.len() as u64, max)?;
        shard.cells.copy_from_slice(cells);
        Ok(shard)
    }

    /// First counter.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Largest counter value.
    pub fn max(&self) -> u8 {
        self.max
    }

    /// The counters, in order.
    pub fn cells(&self) -> &[u8] {
        &self.cells
    }

    /// Replaces the counters with those at `places` of the table file `path` (see
    /// [`super::file`]), checked against the maximum.
    pub fn read_from(&mut self, path: &str, places: &[(u64, u64)]) -> Result<()> {
        super::file::read_into(path, places, &mut self.cells)?;
        match self.cells.iter().position(|&c| c > self.max) {
            Some(i) => Err(Error::format(
                path,
                None,
                None,
                format!("counter {} holds {} above the maximum {}", self.start + i as u64, self.cells[i], self.max),
            )),
            None => Ok(()),
        }
    }

    /// Refuses a counter outside the shard before anything is done.
    fn check(&self, counters: &[u64]) -> Result<()> {
        let end = self.start + self.cells.len() as u64;
        match counters.iter().find(|&&c| c < self.start || c >= end) {
            Some(c) => Err(Error::invalid(format!("counter {c} is outside the shard {}..{end}", self.start))),
            None => Ok(()),
        }
    }

    /// The cell of `counter` (held by the shard).
    #[inline(always)]
    fn index(&self, counter: u64) -> usize {
        (counter - self.start) as usize
    }

    /// Prefetches the cell of `counters[j + PREFETCH_AHEAD]`, if any.
    #[inline(always)]
    fn prefetch_ahead(&self, counters: &[u64], j: usize) {
        if let Some(&c) = counters.get(j + PREFETCH_AHEAD) {
            self.prefetch(c);
        }
    }

    /// The values of `counters`.
    pub fn counts(&self, counters: &[u64]) -> Result<Vec<u8>> {
        Shard::each(self, counters, |shard, c| shard.get(c))
    }

    /// Adds one to each of `counters` in order (saturating) and returns each one's value before
    /// its add.
    pub fn add(&mut self, counters: &[u64]) -> Result<Vec<u8>> {
        Shard::each(self, counters, |shard, c| shard.add_one(c))
    }

    /// `f(shard, counter)` for each of `counters` in order (all checked first), the cells
    /// prefetched ahead.
    fn each<S: Deref<Target = Shard>>(
        mut shard: S,
        counters: &[u64],
        mut f: impl FnMut(&mut S, u64) -> u8,
    ) -> Result<Vec<u8>> {
        shard.check(counters)?;
        Ok(counters
            .iter()
            .enumerate()
            .map(|(j, &c)| {
                shard.prefetch_ahead(counters, j);
                f(&mut shard, c)
            })
            .collect())
    }

    /// Adds `deltas[j]` to counter `counters[j]`, in order (a counter may repeat); a delta that
    /// would take a counter past the maximum is refused and nothing is changed.
    pub fn apply(&mut self, counters: &[u64], deltas: &[u8]) -> Result<()> {
        if counters.len() != deltas.len() {
            return Err(Error::invalid(format!("{} counters but {} deltas", counters.len(), deltas.len())));
        }
        self.check(counters)?;
        for (j, (&c, &d)) in counters.iter().zip(deltas).enumerate() {
            self.prefetch_ahead(counters, j);
            if let Err(e) = self.add_delta(c, d) {
                // Undo the deltas already added, each once.
                counters[..j].iter().zip(deltas).for_each(|(&c, &d)| {
                    let i = self.index(c);
                    self.cells[i] -= d;
                });
                return Err(e);
            }
        }
        Ok(())
    }

    /// How many counters hold each value 0..=255.
    pub fn histogram(&self) -> Vec<u64> {
        let mut hist = vec![0u64; 256];
        self.cells.iter().for_each(|&c| hist[usize::from(c)] += 1);
        hist
    }
}

/// The part of a sharded table that stays with the client: the counter map, the bigcount map
/// and the statistics. It makes every per-k-mer decision from values the shards return.
pub struct ShardClient {
    map: ShardMap,
    k: usize,
    hash: HashKind,
    use_bigcount: bool,
    bigcounts: Mutex<HashMap<u64, u16>>,
    occupied: AtomicU64,
    unique: AtomicU64,
}

impl BatchRules for ShardClient {
    fn batch_probes(&self) -> usize {
        self.map.probes()
    }

    fn counter_max(&self) -> u8 {
        u8::MAX
    }

    fn occupancy_probes(&self) -> usize {
        1
    }

    fn batch_uses_bigcount(&self) -> bool {
        self.use_bigcount
    }

    fn bigcount_of(&self, hash: u64) -> Option<u16> {
        self.bigcounts.lock().unwrap_or_else(|e| e.into_inner()).get(&hash).copied()
    }
}

/// Sets `slots[q]`, for each position `q` of `positions`, to the first of `positions` (in
/// their order) with the same counter in `counters` (its slot in a [`BatchLookup`]), `seen`
/// emptied and used as the map.
pub fn first_positions(
    seen: &mut SeenCounters,
    counters: &[u64],
    positions: impl ExactSizeIterator<Item = usize> + Clone,
    slots: &mut [u32],
) {
    seen.start(positions.len());
    let mut ahead = positions.clone().skip(PREFETCH_AHEAD);
    for q in positions {
        if let Some(a) = ahead.next() {
            seen.prefetch(counters[a]);
        }
        slots[q] = seen.first(counters[q], q as u32);
    }
}

/// What a decided batch changes in the shards: counter `counters[j]` grows by `deltas[j]`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Updates {
    /// Counters with a non-zero delta (distinct within one batch's updates).
    pub counters: Vec<u64>,
    /// Their deltas.
    pub deltas: Vec<u8>,
}

impl ShardClient {
    /// The client of a byte-counter table (khmer's Countgraph or Counttable) of `sizes` cut
    /// into `shards` shards.
    pub fn new(k: usize, hash: HashKind, sizes: &[u64], shards: usize, use_bigcount: bool) -> Result<Self> {
        crate::table::check_parameters(k, hash, sizes.len())?;
        Ok(ShardClient {
            map: ShardMap::new(sizes, shards)?,
            k,
            hash,
            use_bigcount,
            bigcounts: Mutex::new(HashMap::new()),
            occupied: AtomicU64::new(0),
            unique: AtomicU64::new(0),
        })
    }

    /// The counter map.
    pub fn map(&self) -> &ShardMap {
        &self.map
    }

    /// k.
    pub fn ksize(&self) -> usize {
        self.k
    }

    /// The hash family.
    pub fn hash_kind(&self) -> HashKind {
        self.hash
    }

    /// A function appending the canonical hash of every k-mer of a sequence (as the one-process
    /// table of the same k and hash family hashes them).
    pub fn kmer_hasher(&self) -> impl Fn(&[u8], &mut Vec<u64>) + Send + Sync + 'static {
        let (hash, k) = (self.hash, self.k);
        move |seq, out| crate::table::hash_kmers(hash, crate::kmer::Strand::Canonical, k, seq, &mut Vec::new(), out)
    }

    /// Counters of table 0 that are not zero (khmer's `n_occupied`).
    pub fn n_occupied(&self) -> u64 {
        self.occupied.load(Relaxed)
    }

    /// k-mers counted while one of their counters was zero (khmer's `n_unique_kmers`).
    pub fn n_unique_kmers(&self) -> u64 {
        self.unique.load(Relaxed)
    }

    /// Records the statistics and bigcount increments of a batch.
    pub(super) fn record(&self, outcome: &BatchOutcome) {
        self.occupied.fetch_add(outcome.occupied, Relaxed);
        self.unique.fetch_add(outcome.unique, Relaxed);
        let mut map = self.bigcounts.lock().unwrap_or_else(|e| e.into_inner());
        for &hash in &outcome.bigcounts {
            let next = match map.get(&hash).copied().unwrap_or(0) {
                0 => 256,
                big => big.saturating_add(1),
            };
            map.insert(hash, next);
        }
    }

    /// Counting `hashes` after the shards added them in input order and returned `previous`,
    /// every position's value before its add (probe-major): the statistics and bigcounts of the
    /// sequential add, recorded.
    pub fn record_adds(&self, hashes: &[u64], previous: &[u8]) -> Result<()> {
        let (n, probes) = (hashes.len(), self.map.probes());
        if previous.len() != n * probes {
            return Err(Error::invalid(format!("{} previous values for {n} k-mers x {probes} tables", previous.len())));
        }
        // Each position was read once, by its own k-mer, as the sequential add reads it: the
        // rules of the batch's phase 2 without its simulated counters.
        let mut outcome = BatchOutcome { added: n as u64, ..BatchOutcome::default() };
        for (o, &hash) in hashes.iter().enumerate() {
            let (mut any_zero, mut all_full) = (false, true);
            for p in 0..probes {
                let value = previous[p * n + o];
                any_zero |= value == 0;
                all_full &= value == u8::MAX;
            }
            outcome.occupied += u64::from(previous[o] == 0);
            outcome.unique += u64::from(any_zero);
            if all_full && self.use_bigcount {
                outcome.bigcounts.push(hash);
            }
        }
        self.record(&outcome);
        Ok(())
    }

    /// The fields of the table's file other than the counters (khmer's format, type 1), for a
    /// save shard by shard ([`super::file`]).
    pub fn frame(&self) -> ByteFrame {
        ByteFrame {
            k: self.k,
            sizes: self.map.sizes(),
            use_bigcount: self.use_bigcount,
            occupied: self.n_occupied(),
            bigcounts: self.bigcounts.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }

    /// The client of the table saved with `frame` (two-bit hashes; `n_unique_kmers` starts at
    /// zero, as a loaded table's), cut into `shards` shards, whose counters the shards read.
    pub fn from_frame(frame: ByteFrame, shards: usize) -> Result<Self> {
        let client = ShardClient::new(frame.k, HashKind::TwoBit, &frame.sizes, shards, frame.use_bigcount)?;
        client.occupied.store(frame.occupied, Relaxed);
        *client.bigcounts.lock().unwrap_or_else(|e| e.into_inner()) = frame.bigcounts;
        Ok(client)
    }

    /// The whole table (in this process) from the shards' counters, in shard order.
    pub fn gather(&self, shards: &[&[u8]]) -> Result<KhmerTable> {
        let total: usize = shards.iter().map(|s| s.len()).sum();
        if total as u64 != *self.map.bounds.last().unwrap() {
            return Err(Error::invalid(format!(
                "the shards hold {total} counters, the table {}",
                self.map.bounds.last().unwrap()
            )));
        }
        // The shards' counters laid end to end, copied a run at a time into the tables.
        let (mut shards, mut pending): (_, &[u8]) = (shards.iter(), &[]);
        let mut tables = Vec::with_capacity(self.map.probes());
        for size in self.map.sizes() {
            let mut table = Table::new(StorageKind::Byte, size)?;
            let mut bytes = table.mem.bytes_mut();
            while !bytes.is_empty() {
                if pending.is_empty() {
                    pending = shards.next().expect("as many counters as the tables (checked)");
                }
                let n = bytes.len().min(pending.len());
                let (done, rest) = std::mem::take(&mut bytes).split_at_mut(n);
                done.copy_from_slice(&pending[..n]);
                (bytes, pending) = (rest, &pending[n..]);
            }
            tables.push(table);
        }
        let mut table = KhmerTable::assemble(self.k, self.hash, StorageKind::Byte, tables);
        table.use_bigcount = self.use_bigcount;
        table.occupied.store(self.n_occupied(), Relaxed);
        table.unique.store(self.n_unique_kmers(), Relaxed);
        *table.bigcounts.get_mut().unwrap_or_else(|e| e.into_inner()) =
            self.bigcounts.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok(table)
    }
}

impl ShardRouting for ShardMap {
    const BY_KMER: bool = false;

    fn shards(&self) -> usize {
        ShardMap::shards(self)
    }

    fn probes(&self) -> usize {
        ShardMap::probes(self)
    }

    fn positions(&self, hashes: &[u64], _: bool, counters: &mut Vec<u64>, owners: &mut Vec<u32>) -> Result<()> {
        ShardMap::counters_and_owners(self, hashes, counters, owners)
    }

    fn counter_owners(&self, counters: &[u64]) -> Result<Vec<u32>> {
        self.owners(counters)
    }
}

impl ShardKernel for Shard {
    fn held(&self) -> u64 {
        self.cells.len() as u64
    }

    #[inline(always)]
    fn prefetch(&self, counter: u64) {
        prefetch(&self.cells[self.index(counter)]);
    }

    #[inline(always)]
    fn get(&self, counter: u64) -> u8 {
        self.cells[self.index(counter)]
    }

    #[inline(always)]
    fn add_one(&mut self, counter: u64) -> u8 {
        let (i, max) = (self.index(counter), self.max);
        let previous = self.cells[i];
        self.cells[i] = previous + u8::from(previous < max);
        previous
    }

    #[inline(always)]
    fn add_delta(&mut self, counter: u64, delta: u8) -> Result<()> {
        let i = self.index(counter);
        if delta > self.max - self.cells[i] {
            return Err(Error::invalid(format!("a delta takes counter {counter} past its maximum {}", self.max)));
        }
        self.cells[i] += delta;
        Ok(())
    }
}

/// khmer's layout: messages name counters; counting's answers are the counters' previous
/// values, from which the client keeps the statistics and bigcounts.
impl ShardLayout for ShardClient {
    type Routing = ShardMap;
    type Shard = Shard;
    type Added = [u8];
    type Tally = ();
    const COUNTS_STRAIGHT: bool = true;

    fn routing(&self) -> &ShardMap {
        &self.map
    }

    fn count_here(shard: &mut Shard, keys: &[u64], positions: &[u32], values: &[AtomicU8]) -> Result<()> {
        drive(shard, keys, positions, values, &|shard: &mut Shard, c| shard.add_one(c));
        Ok(())
    }

    fn count_straight(
        map: &ShardMap,
        group: &mut [Option<&mut Shard>],
        hashes: &[u64],
        values: &[AtomicU8],
    ) -> Result<Vec<()>> {
        map.add_straight(group, hashes, values);
        Ok(Vec::new())
    }

    fn record_count(
        &self,
        hashes: &[u64],
        _here: &[()],
        remote: &[&[u8]],
        routed: &mut Routed<ShardMap>,
    ) -> Result<()> {
        routed.put(remote)?;
        self.record_adds(hashes, routed.values())
    }

    fn record_outcome(&self, outcome: &BatchOutcome) {
        self.record(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::runs::testing::{assert_same, gathered, khmer_sharded, khmer_table, SIZES};
    use crate::table::CountingTable as _;
    use rand::{Rng, SeedableRng};

    /// Reads of hashes from a small pool: collisions, saturation and bigcounts.
    fn reads(seed: u64, n: usize, distinct: usize) -> Vec<Vec<u64>> {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let pool: Vec<u64> = (0..distinct).map(|_| rng.random()).collect();
        (0..n).map(|_| (0..rng.random_range(0..12)).map(|_| pool[rng.random_range(0..distinct)]).collect()).collect()
    }

    /// `f` on each of `shards` with its part of `counters`, the answers in input order.
    fn call(
        client: &ShardClient,
        shards: &mut [Shard],
        counters: &[u64],
        f: impl Fn(&mut Shard, &[u64]) -> Vec<u8>,
    ) -> Vec<u8> {
        let (parts, order) = client.map().route(counters).unwrap();
        let answers: Vec<Vec<u8>> = shards.iter_mut().zip(&parts).map(|(s, p)| f(s, p)).collect();
        ShardMap::unroute(&order, &answers.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn maps_cut_whole_tables_or_even_ranges() {
        assert_eq!(ShardMap::new(&SIZES, 1).unwrap().bounds(), &[0, 269]);
        assert_eq!(ShardMap::new(&SIZES, 2).unwrap().bounds(), &[0, 97, 269]);
        assert_eq!(ShardMap::new(&SIZES, 3).unwrap().bounds(), &[0, 97, 186, 269]);
        assert_eq!(ShardMap::new(&[10, 10, 10, 10], 2).unwrap().bounds(), &[0, 20, 40]);
        assert_eq!(ShardMap::new(&[10, 10], 4).unwrap().bounds(), &[0, 5, 10, 15, 20]);
        assert!(ShardMap::new(&[3], 4).is_err());
        let map = ShardMap::new(&[10, 10], 3).unwrap();
        let (parts, order) = map.route(&[19, 0, 7, 12, 1]).unwrap();
        assert_eq!(parts, vec![vec![0, 1], vec![7, 12], vec![19]]);
        assert_eq!(order, vec![1, 4, 2, 3, 0]);
        assert!(map.route(&[20]).is_err());
    }

    #[test]
    fn counters_and_owners_in_one_pass_match_the_two_steps() {
        let hashes = reads(5, 200, 60).concat();
        for (sizes, shards) in [(&SIZES[..], 1), (&SIZES[..], 2), (&SIZES[..], 7), (&[10, 3, 10][..], 6), (&[9][..], 9)]
        {
            let map = ShardMap::new(sizes, shards).unwrap();
            let counters = map.counters(&hashes);
            let owners = map.owners(&counters).unwrap();
            let (mut both, mut shards_of) = (vec![7], Vec::new());
            map.counters_and_owners(&hashes, &mut both, &mut shards_of).unwrap();
            assert_eq!((both, shards_of), (counters, owners), "{sizes:?} {shards}");
        }
    }

    #[test]
    fn owner_sizes_count_every_owner_at_any_length() {
        for n in 0..12 {
            let owners: Vec<u32> = (0..n).map(|i| (i * 7 % 5) as u32).collect();
            let naive: Vec<usize> = (0..6).map(|s| owners.iter().filter(|&&o| o == s).count()).collect();
            assert_eq!(owner_sizes(&owners, 6), naive, "{n}");
        }
    }

    #[test]
    fn sections_lay_the_parts_in_the_order_asked_and_reuse_their_buffers() {
        let owners = [2, 0, 2, 1, 0, 2];
        let mut sections = Sections::default();
        sections.split(&owners, 4, &[3, 1]);
        sections.split(&owners, 4, &[2, 0]);
        assert_eq!(sections.order, vec![0, 2, 5, 1, 4]);
        assert_eq!(sections.starts, vec![3, 0, 0, 0]);
        assert_eq!(sections.lens, vec![2, 0, 3, 0]);
        assert_eq!(sections.positions(0), [1, 4]);
        let (parts, order) = split_by_owner(&[5, 6, 7, 8, 9, 10], &owners, 4, |s| s % 2 == 0);
        assert_eq!(parts, vec![vec![6, 9], vec![], vec![5, 7, 10], vec![]]);
        assert_eq!(order, vec![1, 4, 0, 2, 5]);
    }

    #[test]
    fn counting_matches_one_table_at_one_to_four_shards() {
        let reads = reads(3, 3000, 150);
        let hashes = reads.concat();
        let expected = khmer_table(true);
        hashes.iter().for_each(|&h| {
            expected.add_hash(h);
        });
        assert!(hashes.iter().any(|&h| expected.get_hash(h) > 255));
        for n in 1..=4 {
            let (client, mut shards) = khmer_sharded(&SIZES, n, true);
            for batch in hashes.chunks(700) {
                let previous = call(&client, &mut shards, &client.map().counters(batch), |s, c| s.add(c).unwrap());
                client.record_adds(batch, &previous).unwrap();
            }
            assert_same(&gathered(&client, &shards), &expected, &hashes);
            let values = call(&client, &mut shards, &client.map().counters(&hashes), |s, c| s.counts(c).unwrap());
            let counts = client.kmer_counts(&hashes, &values).unwrap();
            assert_eq!(counts, hashes.iter().map(|&h| expected.get_hash(h)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn saved_shard_by_shard_is_the_gathered_file_and_loads_back() {
        use crate::shards::file as shard_file;
        use crate::table::khmer_format;
        let hashes = reads(7, 2000, 100).concat();
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        for n in 1..=3 {
            let (client, mut shards) = khmer_sharded(&SIZES, n, true);
            let previous = call(&client, &mut shards, &client.map().counters(&hashes), |s, c| s.add(c).unwrap());
            client.record_adds(&hashes, &previous).unwrap();
            let frame = client.frame();
            assert!(!frame.bigcounts.is_empty());
            let (len, pieces) = frame.pieces();
            let file = std::fs::File::create(path("parts.ct")).unwrap();
            file.set_len(len).unwrap();
            for (offset, bytes) in pieces {
                std::os::unix::fs::FileExt::write_all_at(&file, &bytes, offset).unwrap();
            }
            let (bounds, whole) = (client.map().bounds(), gathered(&client, &shards));
            for (s, shard) in shards.iter().enumerate() {
                shard_file::write_pieces(&path("parts.ct"), &frame.places(bounds[s], bounds[s + 1]), shard.cells())
                    .unwrap();
            }
            khmer_format::save(&whole, &path("whole.ct"), &crate::run::RunContext::new()).unwrap();
            assert_eq!(std::fs::read(path("parts.ct")).unwrap(), std::fs::read(path("whole.ct")).unwrap());

            let read = khmer_format::ByteFrame::read(&path("parts.ct")).unwrap();
            assert_eq!(read, frame);
            let from_frame = ShardClient::from_frame(read, n).unwrap();
            let cells: Vec<Vec<u8>> = (0..n)
                .map(|s| shard_file::read_pieces(&path("parts.ct"), &frame.places(bounds[s], bounds[s + 1])).unwrap())
                .collect();
            let loaded = from_frame.gather(&cells.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
            assert_eq!(loaded.raw_tables(), whole.raw_tables());
            assert_eq!(loaded.n_occupied(), client.n_occupied());
            hashes.iter().for_each(|&h| assert_eq!(loaded.get_hash(h), whole.get_hash(h)));
        }
        std::fs::write(path("short.ct"), &std::fs::read(path("parts.ct")).unwrap()[..100]).unwrap();
        let err = khmer_format::ByteFrame::read(&path("short.ct")).unwrap_err().to_string();
        assert!(err.contains("short.ct") && err.contains("truncated"), "{err}");
    }

    #[test]
    fn shards_refuse_foreign_counters_and_overflows() {
        let mut shard = Shard::new(10, 5, 255).unwrap();
        assert!(shard.counts(&[9]).is_err());
        assert!(shard.add(&[15]).is_err());
        assert_eq!(shard.add(&[10, 10, 14]).unwrap(), vec![0, 1, 0]);
        assert!(shard.apply(&[10, 11], &[254, 1]).is_err());
        assert_eq!(shard.cells(), &[2, 0, 0, 0, 1]);
        shard.apply(&[10, 11], &[253, 1]).unwrap();
        assert_eq!(shard.histogram()[255], 1);
        // A counter may repeat (two batches' updates): checked and undone as a whole.
        assert!(shard.apply(&[12, 12], &[200, 100]).is_err());
        assert_eq!(shard.cells()[2], 0);
        shard.apply(&[12, 13, 12], &[100, 1, 100]).unwrap();
        assert_eq!(&shard.cells()[2..4], &[200, 1]);
        assert!(Shard::from_cells(0, 15, &[16]).is_err());
    }
}
