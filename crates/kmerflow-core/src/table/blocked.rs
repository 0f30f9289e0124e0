//! The native "blocked" table layout: every counter of a k-mer lives in ONE 64-byte cache line.
//!
//! A k-mer is hashed to 64 bits (canonical; see [`BlockedHash`] for the three schemes), its
//! line is `(hash * n_lines) >> 64` (Lemire's multiply-shift range reduction, which uses the
//! high bits of the hash), and its N probe slots inside the line come from successive bit
//! fields of a second mix of the hash (6 bits a slot for 64 byte counters, 7 for 128 nibble
//! counters, 9 for 512 bits); a slot that repeats an earlier one moves to the next free slot,
//! so the N slots are distinct. Adding increments all N counters (saturating; no conservative
//! update) and the count is their minimum: a Count-Min sketch (or, with 1-bit counters, a
//! Bloom filter) whose probes cost one cache miss per k-mer instead of one per table. The
//! batched paths compute every line of a read (or a batch) first and prefetch ahead.
//!
//! Updates use the atomic saturating primitives of the khmer-compatible tables, so threaded
//! counting gives exactly the counters of one thread; `&mut` methods use plain loads and stores.
//! Files use kmerflow's own format (see [`super::native_format`]), loaded by mapping.
//!
//! Measurements (release build, 2-core box shared with other builds; see
//! `tests/blocked_measure.rs`):
//!
//! - Throughput, 500,000 random 120-bp reads (50.5 M k-mers, k = 20), 400 MB tables, 64 reads
//!   a call, rates in M k-mers per thread-CPU-second (wall in brackets; load average 5-7):
//!   exclusive 1 thread: blocked 22.5 (14.6) vs khmer layout 4 x 1e8 13.3 (8.7); atomic
//!   1 thread: 18.7 (12.1) vs 12.3 (8.0); atomic 2 threads, wall: 14.6 vs 6.4.
//! - Accuracy on the first 300,000 reads of an E. coli 50x read set (24.0 M k-mers, 7.16 M
//!   distinct, k = 21; exact counts from a HashMap of canonical k-mers; FP from 1 M random
//!   absent k-mers), 4 khmer tables vs 4 probes at equal memory
//!   (mean over-count / fraction over-counted / FP rate):
//!   - 100 MB, 8-bit: khmer 0.0052 / 0.38% / 0.38%; blocked 0.0111 / 0.69% / 0.69%.
//!   - 10 MB, 8-bit: khmer 3.12 / 79.1% / 79.0%; blocked 3.25 / 79.3% / 79.4%.
//!   - 2 MB, 8-bit: both saturated (100% over-counted, mean 32.2 vs 32.5).
//!   - Bloom FP: 100 MB 0% for both; 10 MB khmer 0.83%, blocked 0.88%; 2 MB 48.2% vs 48.4%.
//!
//!   At low fill the blocked layout has about 1.8x the false positives (the load of a line
//!   varies more than the load of a whole table); near saturation the layouts are equal.

mod hash;
mod memory;

pub use hash::{BlockedHash, KmerHasher};

use super::alloc::AllocOptions;
use super::storage::{BitCells, ByteCells, Cells, NibbleCells};
use super::{prefetch, CountingTable, MedianVote, StorageKind, Tally, PREFETCH_AHEAD};
use crate::io::Staged;
use crate::kmer::murmur::fmix64;
use crate::kmer::Strand;
use crate::run::RunContext;
use crate::{Error, Result};
use memory::LineMemory;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// Bytes of one line (a cache line).
pub const LINE_BYTES: usize = 64;
/// Most probes (counters per k-mer) a table may use.
pub const MAX_PROBES: usize = 8;

/// Width of the counters of a blocked table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterWidth {
    /// 8-bit counters saturating at 255 (64 a line).
    Bits8,
    /// 4-bit counters saturating at 15 (128 a line).
    Bits4,
    /// 1-bit presence (a Bloom filter; 512 a line).
    Bits1,
}

impl CounterWidth {
    /// Bits of one counter.
    pub fn bits(self) -> u8 {
        match self {
            Self::Bits8 => 8,
            Self::Bits4 => 4,
            Self::Bits1 => 1,
        }
    }

    /// The width of `bits` bits, if supported.
    pub fn from_bits(bits: u8) -> Option<Self> {
        [Self::Bits8, Self::Bits4, Self::Bits1].into_iter().find(|w| w.bits() == bits)
    }

    /// Largest count a counter holds.
    pub fn max_count(self) -> u32 {
        (1 << self.bits()) - 1
    }

    /// Counters in one line.
    pub fn slots_per_line(self) -> u64 {
        (LINE_BYTES as u64 * 8) / u64::from(self.bits())
    }

    /// The khmer storage whose cells hold counters of this width (the cells of a line).
    pub fn storage(self) -> StorageKind {
        match self {
            Self::Bits8 => StorageKind::Byte,
            Self::Bits4 => StorageKind::Nibble,
            Self::Bits1 => StorageKind::Bit,
        }
    }
}

/// A storage of the khmer tables reused inside lines, with the number of bits of a slot index.
pub(crate) trait LineCells: Cells {
    const SLOT_BITS: u32;
}

impl LineCells for ByteCells {
    const SLOT_BITS: u32 = 6;
}

impl LineCells for NibbleCells {
    const SLOT_BITS: u32 = 7;
}

impl LineCells for BitCells {
    const SLOT_BITS: u32 = 9;
}

/// Calls `$body` with `$C` bound to the cell type of a [`CounterWidth`] (that of its
/// [`CounterWidth::storage`]; one dispatch a call).
macro_rules! with_width {
    ($width:expr, $C:ident => $body:expr) => {
        with_cells!(CounterWidth::storage($width), $C => $body)
    };
}
pub(crate) use with_width;

mod batch;

/// The shape of a blocked table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedParams {
    /// k-mer size.
    pub k: usize,
    /// Number of 64-byte lines.
    pub n_lines: u64,
    /// Counter width.
    pub width: CounterWidth,
    /// Counters per k-mer (1..=[`MAX_PROBES`]).
    pub probes: usize,
    /// Hash scheme (by default [`BlockedHash::for_k`]).
    pub hash: BlockedHash,
    /// Which strand k-mers are hashed on (by default canonical).
    pub strand: Strand,
}

impl BlockedParams {
    /// A table of `memory_bytes` (rounded down to whole lines, at least one) with the default
    /// hash scheme for `k`.
    pub fn new(k: usize, memory_bytes: u64, width: CounterWidth, probes: usize) -> Self {
        let n_lines = (memory_bytes / LINE_BYTES as u64).max(1);
        Self { k, n_lines, width, probes, hash: BlockedHash::for_k(k), strand: Strand::Canonical }
    }

    /// Bytes of counter memory.
    pub fn data_bytes(&self) -> u64 {
        self.n_lines * LINE_BYTES as u64
    }

    /// Total number of counters.
    pub fn n_counters(&self) -> u64 {
        self.n_lines * self.width.slots_per_line()
    }

    /// Line of a hash: `(hash * n_lines) >> 64`.
    #[inline(always)]
    pub fn line_of(&self, hash: u64) -> u64 {
        ((u128::from(hash) * u128::from(self.n_lines)) >> 64) as u64
    }

    /// Expected false-positive rate of a presence query with `occupied` non-zero counters:
    /// (fraction of non-zero counters)^probes.
    pub fn expected_fp_rate(&self, occupied: u64) -> f64 {
        (occupied as f64 / self.n_counters() as f64).powi(self.probes as i32)
    }

    /// Checks the parameters with clear errors.
    pub fn check(&self) -> Result<()> {
        if self.k == 0 || self.k > self.hash.max_k() {
            return Err(Error::invalid(format!(
                "k-mer size {} is not supported by the {:?} hash (1..={})",
                self.k,
                self.hash,
                self.hash.max_k()
            )));
        }
        if !(1..=MAX_PROBES).contains(&self.probes) {
            return Err(Error::invalid(format!("number of probes must be 1..={MAX_PROBES}, got {}", self.probes)));
        }
        let bytes = self.n_lines.checked_mul(LINE_BYTES as u64);
        if self.n_lines == 0 || !matches!(bytes, Some(b) if b <= isize::MAX as u64) {
            return Err(Error::invalid(format!("number of lines {} is out of range", self.n_lines)));
        }
        Ok(())
    }
}

/// Occupancy counters, updated once per batch.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Non-zero counters.
    pub(crate) occupied: AtomicU64,
    /// Adds that found at least one zero counter.
    pub(crate) unique: AtomicU64,
    /// All adds.
    pub(crate) added: AtomicU64,
}

/// Saved values of [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OccupancyStats {
    /// Non-zero counters.
    pub occupied: u64,
    /// Adds that found at least one zero counter (may vary with thread interleaving).
    pub unique: u64,
    /// All adds.
    pub added: u64,
}

/// Per-thread scratch buffers of the hot paths.
#[derive(Default)]
struct Scratch {
    hashes: Vec<u64>,
    lines: Vec<u64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The N distinct probe slots of `hash` inside its line.
#[inline(always)]
pub(crate) fn probe_slots<C: LineCells>(hash: u64, probes: usize) -> [u16; MAX_PROBES] {
    // u16 slots: the array travels in registers, not through the stack.
    let mask = (1u16 << C::SLOT_BITS) - 1;
    let mut slots = [0u16; MAX_PROBES];
    let mut bits = fmix64(hash ^ 0x6a09_e667_f3bc_c909);
    let mut left = 64;
    for i in 0..probes {
        if left < C::SLOT_BITS {
            bits = fmix64(bits);
            left = 64;
        }
        let mut slot = bits as u16 & mask;
        bits >>= C::SLOT_BITS;
        left -= C::SLOT_BITS;
        while slots[..i].contains(&slot) {
            slot = (slot + 1) & mask;
        }
        slots[i] = slot;
    }
    slots
}

/// A Count-Min sketch / Bloom filter with all counters of a k-mer in one cache line.
///
/// Concurrency: as for [`super::KhmerTable`], every counter update is atomic and saturating, so the
/// counters and `n_occupied` do not depend on the thread interleaving; `n_unique_kmers` may.
pub struct BlockedTable {
    pub(crate) params: BlockedParams,
    pub(crate) hasher: KmerHasher,
    pub(crate) mem: LineMemory,
    pub(crate) stats: Stats,
}

impl BlockedTable {
    /// A zeroed table of about `memory_bytes` (whole lines) with the default hash for `k`.
    pub fn new(k: usize, memory_bytes: u64, width: CounterWidth, probes: usize) -> Result<Self> {
        Self::with_params(BlockedParams::new(k, memory_bytes, width, probes), AllocOptions::default())
    }

    /// A zeroed table of shape `params`, its memory allocated as `options` say.
    pub fn with_params(params: BlockedParams, options: AllocOptions) -> Result<Self> {
        params.check()?;
        let len = params.data_bytes() as usize;
        let mem = LineMemory::anonymous(len, options)
            .map_err(|e| Error::invalid(format!("cannot allocate a table of {len} bytes: {e}")))?;
        Ok(Self::assemble(params, mem, OccupancyStats::default()))
    }

    /// A table over existing memory (parameters checked by the caller).
    fn assemble(params: BlockedParams, mem: LineMemory, stats: OccupancyStats) -> Self {
        Self {
            hasher: KmerHasher::new(params.k, params.hash, params.strand),
            params,
            mem,
            stats: Stats {
                occupied: AtomicU64::new(stats.occupied),
                unique: AtomicU64::new(stats.unique),
                added: AtomicU64::new(stats.added),
            },
        }
    }

    /// The shape.
    pub fn params(&self) -> &BlockedParams {
        &self.params
    }

    /// Number of lines.
    pub fn n_lines(&self) -> u64 {
        self.params.n_lines
    }

    /// Total number of counters.
    pub fn n_counters(&self) -> u64 {
        self.params.n_counters()
    }

    /// The occupancy counters.
    pub fn occupancy(&self) -> OccupancyStats {
        OccupancyStats {
            occupied: self.n_occupied(),
            unique: self.n_unique_kmers(),
            added: self.stats.added.load(Relaxed),
        }
    }

    /// Expected false-positive rate of a presence query: (fraction of non-zero counters)^N.
    pub fn expected_fp_rate(&self) -> f64 {
        self.params.expected_fp_rate(self.n_occupied())
    }

    /// Hash of one k-mer (`kmer.len() == k`).
    pub fn hash_kmer(&self, kmer: &[u8]) -> Result<u64> {
        crate::kmer::twobit::check_length(kmer, self.params.k)?;
        Ok(self.hasher.hash(kmer))
    }

    /// The table's k-mer hasher (clone it to hash on other threads).
    pub fn hasher(&self) -> &KmerHasher {
        &self.hasher
    }

    /// Line of a hash.
    #[inline(always)]
    pub(super) fn line_of(&self, hash: u64) -> u64 {
        self.params.line_of(hash)
    }

    /// Increments the probe counters of `hash` in `line`.
    #[inline(always)]
    fn update<C: LineCells, const EXCLUSIVE: bool>(&self, mem: &[AtomicU8], hash: u64, line: u64) -> Tally {
        let mut occupied = 0;
        self.increment_probes::<C, EXCLUSIVE>(mem, hash, line, |_, previous| occupied += u64::from(previous == 0));
        Tally { occupied, unique: u64::from(occupied > 0) }
    }

    /// Increments (saturating) the probe counters of `hash` in `line`, calling `each(probe,
    /// value before)`; records nothing else.
    #[inline(always)]
    fn increment_probes<C: LineCells, const EXCLUSIVE: bool>(
        &self,
        mem: &[AtomicU8],
        hash: u64,
        line: u64,
        mut each: impl FnMut(usize, u8),
    ) {
        let base = line << C::SLOT_BITS;
        for (p, &slot) in probe_slots::<C>(hash, self.params.probes)[..self.params.probes].iter().enumerate() {
            let bin = base + u64::from(slot);
            each(p, if EXCLUSIVE { C::increment_exclusive(mem, bin) } else { C::increment(mem, bin) });
        }
    }

    /// Count of `hash` in `line` (min over the probes).
    #[inline(always)]
    fn count<C: LineCells>(&self, mem: &[AtomicU8], hash: u64, line: u64) -> u32 {
        let base = line << C::SLOT_BITS;
        let slots = probe_slots::<C>(hash, self.params.probes);
        u32::from(
            slots[..self.params.probes].iter().map(|&slot| C::count(mem, base + u64::from(slot))).min().unwrap_or(0),
        )
    }

    /// Sets `lines` to the line of each hash.
    fn fill_lines(&self, hashes: &[u64], lines: &mut Vec<u64>) {
        lines.clear();
        lines.extend(hashes.iter().map(|&h| self.line_of(h)));
    }

    /// Visits the hashes in order with their line (`lines[i]` for `hashes[i]`) while the line
    /// `PREFETCH_AHEAD` k-mers later is prefetched; stops early when `visit` returns false.
    #[inline(always)]
    pub(crate) fn visit_prefetched(
        &self,
        hashes: &[u64],
        lines: &[u64],
        mut visit: impl FnMut(&[AtomicU8], u64, u64) -> bool,
    ) {
        let mem = self.mem.atomics();
        let fetch = |line: u64| prefetch(&mem[line as usize * LINE_BYTES]);
        lines.iter().take(PREFETCH_AHEAD).for_each(|&line| fetch(line));
        for (i, (&hash, &line)) in hashes.iter().zip(lines.iter()).enumerate() {
            if let Some(&ahead) = lines.get(i + PREFETCH_AHEAD) {
                fetch(ahead);
            }
            if !visit(mem, hash, line) {
                return;
            }
        }
    }

    /// Adds each hash in order, calling `each_new` with the hashes that found a zero counter.
    fn add_all<const EXCLUSIVE: bool>(&self, hashes: &[u64], lines: &mut Vec<u64>, each_new: impl FnMut(u64)) {
        self.fill_lines(hashes, lines);
        self.add_at_lines::<EXCLUSIVE>(hashes, lines, each_new);
    }

    /// Adds each hash in order at its line (`lines[i]` for `hashes[i]`, lines of this table),
    /// calling `each_new` with the hashes that found a zero counter.
    pub(crate) fn add_at_lines<const EXCLUSIVE: bool>(
        &self,
        hashes: &[u64],
        lines: &[u64],
        mut each_new: impl FnMut(u64),
    ) {
        let mut total = Tally::default();
        with_width!(self.params.width, C => self.visit_prefetched(hashes, lines, |mem, hash, line| {
            let tally = self.update::<C, EXCLUSIVE>(mem, hash, line);
            if tally.unique > 0 {
                each_new(hash);
            }
            total.add(tally);
            true
        }));
        self.record(total, hashes.len() as u64);
    }

    /// Adds each hash in order with plain loads and stores: the caller is the only writer of
    /// the lines of these hashes (see [`super::OwnedCounting`]). Calls `each_new` with the
    /// hashes that found a zero counter (new to the table, as [`CountingTable::add_hash`] tells).
    pub(super) fn add_hashes_owned(&self, hashes: &[u64], each_new: impl FnMut(u64)) {
        SCRATCH.with(|cell| self.add_all::<true>(hashes, &mut cell.borrow_mut().lines, each_new));
    }

    fn record(&self, tally: Tally, added: u64) {
        if tally.occupied > 0 {
            self.stats.occupied.fetch_add(tally.occupied, Relaxed);
            self.stats.unique.fetch_add(tally.unique, Relaxed);
        }
        self.stats.added.fetch_add(added, Relaxed);
    }

    /// Runs `f` with the thread's line buffer.
    fn with_lines<R>(f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
        SCRATCH.with(|cell| f(&mut cell.borrow_mut().lines))
    }

    /// Runs `f` with the thread's scratch holding the hashes of all `seqs`; returns their number.
    fn with_hashes<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>, f: impl FnOnce(&mut Scratch)) -> u64 {
        SCRATCH.with(|cell| {
            let scratch = &mut *cell.borrow_mut();
            scratch.hashes.clear();
            seqs.into_iter().for_each(|seq| self.hasher.hashes(seq, &mut scratch.hashes));
            f(scratch);
            scratch.hashes.len() as u64
        })
    }

    fn counts_of(&self, hashes: &[u64], lines: &mut Vec<u64>, out: &mut Vec<u32>) {
        self.fill_lines(hashes, lines);
        self.counts_at_lines(hashes, lines, out);
    }

    /// Appends the count of each hash at its line (`lines[i]` for `hashes[i]`) to `out`.
    pub(crate) fn counts_at_lines(&self, hashes: &[u64], lines: &[u64], out: &mut Vec<u32>) {
        out.reserve(hashes.len());
        with_width!(self.params.width, C => self.visit_prefetched(hashes, lines, |mem, hash, line| {
            out.push(self.count::<C>(mem, hash, line));
            true
        }));
    }

    fn median_at_least_of(&self, hashes: &[u64], lines: &mut Vec<u64>, cutoff: u32) -> bool {
        self.fill_lines(hashes, lines);
        let mut vote = MedianVote::new(hashes.len());
        with_width!(self.params.width, C => self.visit_prefetched(hashes, lines, |mem, hash, line| {
            vote.cast(self.count::<C>(mem, hash, line) >= cutoff);
            vote.decided().is_none()
        }));
        vote.result()
    }

    /// A copy of the counter bytes, read atomically (other threads may be counting; see
    /// [`super::alloc::for_each_chunk`]).
    pub fn raw_bytes(&self) -> Vec<u8> {
        super::alloc::snapshot(self.mem.atomics())
    }

    /// Calls `visit` on consecutive copies of the counter bytes read atomically (other threads
    /// may be counting; see [`super::alloc::for_each_chunk`]).
    pub fn for_each_data_chunk<E>(
        &self,
        visit: impl FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        super::alloc::for_each_chunk(self.mem.atomics(), visit)
    }

    /// Adds `other`'s counters to this table's, as [`super::KhmerTable::add_table`] (see
    /// `table/add.rs` for what is exact): both tables need the same shape ([`BlockedParams`]).
    pub fn add_table(&mut self, other: &BlockedTable) -> Result<()> {
        if self.params != other.params {
            return Err(super::add::shape_mismatch("shapes", self.params, other.params));
        }
        let mine = self.mem.bytes_mut();
        let occupied = with_width!(self.params.width, C => {
            super::add::add_memory::<C>(mine, other.mem.atomics());
            C::nonzero_counters(mine)
        });
        let theirs = other.occupancy();
        let stats = &mut self.stats;
        *stats.occupied.get_mut() = occupied;
        *stats.unique.get_mut() += theirs.unique;
        *stats.added.get_mut() += theirs.added;
        Ok(())
    }

    /// Loads a native-format file by mapping it (private copy-on-write: updates never reach
    /// the file); checks magic, version and checksums.
    pub fn load(path: &str) -> Result<Self> {
        super::native_format::load(path)
    }

    /// A zeroed table whose counters live in a new file, mapped shared, so that counting
    /// writes into the file (tables larger than RAM page to disk). The file has a temporary
    /// name in the directory of `path` until [`BlockedTable::finish`] writes the header and
    /// checksums, flushes it and renames it to `path` (dropped unfinished, it is removed).
    pub fn create_file_backed(path: &str, params: BlockedParams) -> Result<(Self, Staged)> {
        super::native_format::create_file_backed(path, params)
    }

    /// Completes a file-backed table (`file` as `create_file_backed` gave it): writes the
    /// header and checksums into the map, flushes it to disk and renames the file into place.
    pub fn finish(mut self, file: Staged) -> Result<()> {
        let occupancy = self.occupancy();
        let params = self.params;
        let path = file.path();
        let map = self
            .mem
            .map_mut()
            .ok_or_else(|| Error::invalid(format!("{path}: the table is not file-backed; use save")))?;
        super::native_format::finish_map(map, &params, occupancy, path)?;
        drop(self);
        file.commit()
    }

    /// A table over mapped file memory (for the file format).
    pub(super) fn from_map(params: BlockedParams, map: memmap2::MmapMut, offset: usize, stats: OccupancyStats) -> Self {
        let len = params.data_bytes() as usize;
        Self::assemble(params, LineMemory::mapped(map, offset, len), stats)
    }
}

impl CountingTable for BlockedTable {
    fn holds_counts(&self) -> bool {
        self.params.width != CounterWidth::Bits1
    }
    fn ksize(&self) -> usize {
        self.params.k
    }
    fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
        self.hasher.hashes(seq, out);
    }
    fn add_hash(&self, hash: u64) -> bool {
        let line = self.line_of(hash);
        let tally = with_width!(self.params.width, C => self.update::<C, false>(self.mem.atomics(), hash, line));
        self.record(tally, 1);
        tally.unique == 1
    }
    fn get_hash(&self, hash: u64) -> u32 {
        let line = self.line_of(hash);
        with_width!(self.params.width, C => self.count::<C>(self.mem.atomics(), hash, line))
    }
    fn add_hashes(&self, hashes: &[u64]) {
        Self::with_lines(|lines| self.add_all::<false>(hashes, lines, |_| {}));
    }
    fn add_hashes_exclusive(&mut self, hashes: &[u64]) {
        Self::with_lines(|lines| self.add_all::<true>(hashes, lines, |_| {}));
    }
    fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>) {
        Self::with_lines(|lines| self.counts_of(hashes, lines, out));
    }
    fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        self.with_hashes(seqs, |s| self.add_all::<false>(&s.hashes, &mut s.lines, |_| {}))
    }
    fn consume_many_exclusive<'a>(&mut self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        self.with_hashes(seqs, |s| self.add_all::<true>(&s.hashes, &mut s.lines, |_| {}))
    }
    fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool {
        Self::with_lines(|lines| self.median_at_least_of(hashes, lines, cutoff))
    }
    fn n_occupied(&self) -> u64 {
        self.stats.occupied.load(Relaxed)
    }
    fn n_unique_kmers(&self) -> u64 {
        self.stats.unique.load(Relaxed)
    }
    fn save_in(&self, path: &str, ctx: &RunContext) -> Result<()> {
        super::native_format::save(self, path, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_slots_are_distinct_and_in_range() {
        fn check<C: LineCells>() {
            for probes in 1..=MAX_PROBES {
                for h in 0..2000u64 {
                    let slots = probe_slots::<C>(fmix64(h), probes);
                    let mut used: Vec<u16> = slots[..probes].to_vec();
                    assert!(used.iter().all(|&s| s < 1 << C::SLOT_BITS));
                    used.sort_unstable();
                    used.dedup();
                    assert_eq!(used.len(), probes);
                }
            }
        }
        check::<ByteCells>();
        check::<NibbleCells>();
        check::<BitCells>();
    }

    #[test]
    fn lines_cover_the_table() {
        let t = BlockedTable::new(5, 64 * 10, CounterWidth::Bits8, 4).unwrap();
        let mut seen = [false; 10];
        (0..1000u64).for_each(|h| seen[t.line_of(fmix64(h)) as usize] = true);
        assert!(seen.iter().all(|&s| s));
        assert_eq!(t.line_of(u64::MAX), 9);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let err = |p: BlockedParams| BlockedTable::with_params(p, AllocOptions::default()).err().unwrap().to_string();
        assert!(err(BlockedParams::new(0, 4096, CounterWidth::Bits8, 4)).contains("k-mer size 0"));
        assert!(err(BlockedParams::new(21, 4096, CounterWidth::Bits8, 9)).contains("probes"));
        let mut p = BlockedParams::new(40, 4096, CounterWidth::Bits8, 4);
        p.hash = BlockedHash::TwoBit64;
        assert!(err(p).contains("1..=32"));
    }
}
