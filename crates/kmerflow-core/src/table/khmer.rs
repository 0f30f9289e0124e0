//! khmer's hashtable family behind one type, [`KhmerTable`]: the hash family ([`HashKind`])
//! times the storage ([`StorageKind`]), each table of counters prime-sized ([`Table`]).

use super::alloc::ZeroedBytes;
use super::storage::{BitCells, ByteCells, Cells, NibbleCells};
use super::*;
use crate::kmer::{murmur, twobit, Strand};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

/// One prime-sized table of counters.
pub(crate) struct Table {
    pub(crate) mem: ZeroedBytes,
    pub(crate) modulus: FastMod,
}

impl Table {
    /// Calls `visit(i, mem, bin)` for the bin of every hash in order, the bin `PREFETCH_AHEAD`
    /// hashes later computed once and prefetched meanwhile.
    #[inline(always)]
    pub(super) fn visit_bins<C: Cells>(&self, hashes: &[u64], visit: impl FnMut(usize, &[AtomicU8], u64)) {
        self.visit_bins_ahead::<C>(hashes, |_| (), visit)
    }

    /// [`Table::visit_bins`], also calling `ahead(bin)` when a bin is prefetched (to prefetch
    /// what the visit of that bin will need besides its counter).
    #[inline(always)]
    pub(super) fn visit_bins_ahead<C: Cells>(
        &self,
        hashes: &[u64],
        mut ahead: impl FnMut(u64),
        mut visit: impl FnMut(usize, &[AtomicU8], u64),
    ) {
        let mem = self.mem.atomics();
        let mut ring = [0u64; PREFETCH_AHEAD];
        for (slot, &hash) in ring.iter_mut().zip(hashes) {
            *slot = self.modulus.rem(hash);
            prefetch(&mem[C::byte_of(*slot)]);
            ahead(*slot);
        }
        for i in 0..hashes.len() {
            let bin = ring[i % PREFETCH_AHEAD];
            if let Some(&next_hash) = hashes.get(i + PREFETCH_AHEAD) {
                let next = self.modulus.rem(next_hash);
                prefetch(&mem[C::byte_of(next)]);
                ahead(next);
                ring[i % PREFETCH_AHEAD] = next;
            }
            visit(i, mem, bin);
        }
    }

    /// Calls `visit(i, mem, bin)` for the bin of every hash `i` that `keep` accepts, in order,
    /// prefetching ahead ([`visit_prefetched`]): a phase that changes a few of a batch's counters
    /// touches only their lines.
    pub(super) fn visit_bins_where<C: Cells>(
        &self,
        hashes: &[u64],
        keep: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, &[AtomicU8], u64),
    ) {
        let mem = self.mem.atomics();
        let picked: Vec<(usize, u64)> =
            hashes.iter().enumerate().filter(|&(i, _)| keep(i)).map(|(i, &h)| (i, self.modulus.rem(h))).collect();
        visit_prefetched(&picked, |bin| prefetch(&mem[C::byte_of(bin)]), |i, bin| visit(i, mem, bin));
    }

    /// A zeroed table of `size` bins.
    pub(crate) fn new(storage: StorageKind, size: u64) -> Result<Self> {
        Self::with_options(storage, size, AllocOptions::default())
    }

    /// A zeroed table of `size` bins allocated as `options` say.
    pub(crate) fn with_options(storage: StorageKind, size: u64, options: AllocOptions) -> Result<Self> {
        if size == 0 || size > 1 << 63 {
            return Err(Error::invalid(format!("table size {size} is out of range (1..=2^63)")));
        }
        let len = bytes_for(storage, size);
        let mem = ZeroedBytes::with_options(len, options)
            .map_err(|e| Error::invalid(format!("cannot allocate a table of {len} bytes: {e}")))?;
        Ok(Self { mem, modulus: FastMod::new(size) })
    }
}

/// Bytes of one table of `size` bins.
pub(crate) fn bytes_for(storage: StorageKind, size: u64) -> usize {
    with_cells!(storage, C => C::bytes_for(size))
}

/// Checks k against the hash family and the number of tables.
pub(crate) fn check_parameters(k: usize, hash: HashKind, n_tables: usize) -> Result<()> {
    match hash {
        HashKind::TwoBit if k > twobit::MAX_K => return Err(twobit::k_too_large(k)),
        HashKind::Murmur if k > MAX_MURMUR_K => {
            return Err(Error::invalid(format!("k-mer size {k} is not supported (max {MAX_MURMUR_K})")))
        }
        _ if k == 0 => return Err(Error::invalid("k-mer size must be at least 1")),
        _ => {}
    }
    if n_tables == 0 || n_tables > usize::from(u8::MAX) {
        return Err(Error::invalid(format!("number of tables must be 1..=255, got {n_tables}")));
    }
    Ok(())
}

/// Per-thread scratch buffers of the hot paths (no allocation per read).
#[derive(Default)]
struct Scratch {
    hashes: Vec<u64>,
    bins: Vec<u64>,
    revcomp: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    /// The reverse-complement buffer of [`CountingTable::kmer_hashes`] (Murmur hashing).
    static REVCOMP: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Appends the hash (by `hash`, for `strand`) of every k-mer (k = `k`) of `seq` to `out`.
pub(crate) fn hash_kmers(
    hash: HashKind,
    strand: Strand,
    k: usize,
    seq: &[u8],
    revcomp: &mut Vec<u8>,
    out: &mut Vec<u64>,
) {
    match hash {
        HashKind::TwoBit => twobit::hashes(seq, k, strand, out),
        HashKind::Murmur => murmur::hashes(seq, k, strand, revcomp, out),
    }
}

/// A khmer-compatible Count-Min sketch / Bloom filter with prime-sized tables.
///
/// Concurrency: every counter update is atomic and saturating, so the final tables (and
/// `n_occupied`) are the same for any thread interleaving. Two values can depend on the
/// interleaving, as in khmer: `n_unique_kmers` (two threads adding the same new k-mer may both
/// see an empty bin) and bigcount values when k-mers collide in every table.
pub struct KhmerTable {
    pub(crate) k: usize,
    pub(crate) hash: HashKind,
    pub(crate) strand: Strand,
    pub(crate) storage: StorageKind,
    pub(crate) sizes: Vec<u64>,
    pub(crate) tables: Vec<Table>,
    pub(crate) occupied: AtomicU64,
    pub(crate) unique: AtomicU64,
    pub(crate) use_bigcount: bool,
    pub(crate) bigcounts: Mutex<HashMap<u64, u16>>,
}

impl KhmerTable {
    /// A table with explicit per-table sizes (khmer's `primes=[...]`). A 2-bit table with k > 32
    /// is refused with a clear error.
    pub fn with_sizes(k: usize, hash: HashKind, storage: StorageKind, sizes: Vec<u64>) -> Result<Self> {
        Self::with_sizes_and_options(k, hash, storage, sizes, AllocOptions::default())
    }

    /// [`KhmerTable::with_sizes`] with explicit memory options (huge pages, pre-faulting).
    pub fn with_sizes_and_options(
        k: usize,
        hash: HashKind,
        storage: StorageKind,
        sizes: Vec<u64>,
        options: AllocOptions,
    ) -> Result<Self> {
        check_parameters(k, hash, sizes.len())?;
        let tables =
            sizes.iter().map(|&size| Table::with_options(storage, size, options)).collect::<Result<Vec<_>>>()?;
        Ok(Self::assemble(k, hash, storage, tables))
    }

    /// A table from already filled tables (parameters checked by the caller).
    pub(crate) fn assemble(k: usize, hash: HashKind, storage: StorageKind, tables: Vec<Table>) -> Self {
        Self {
            k,
            hash,
            strand: Strand::Canonical,
            storage,
            sizes: tables.iter().map(|t| t.modulus.divisor()).collect(),
            tables,
            occupied: AtomicU64::new(0),
            unique: AtomicU64::new(0),
            use_bigcount: false,
            bigcounts: Mutex::new(HashMap::new()),
        }
    }

    /// khmer's `Cls(k, starting_size, n_tables)`: sizes = the `n_tables` largest odd primes
    /// below `starting_size` (docs/khmer-compat.md §2.2).
    pub fn new(k: usize, hash: HashKind, storage: StorageKind, starting_size: u64, n_tables: usize) -> Result<Self> {
        Self::with_sizes(k, hash, storage, primes::get_n_primes_near_x(n_tables, starting_size)?)
    }

    /// [`KhmerTable::new`] with explicit memory options (huge pages, pre-faulting).
    pub fn new_with_options(
        k: usize,
        hash: HashKind,
        storage: StorageKind,
        starting_size: u64,
        n_tables: usize,
        options: AllocOptions,
    ) -> Result<Self> {
        let sizes = primes::get_n_primes_near_x(n_tables, starting_size)?;
        Self::with_sizes_and_options(k, hash, storage, sizes, options)
    }

    /// Hash family.
    pub fn hash_kind(&self) -> HashKind {
        self.hash
    }

    /// The table, empty, for k-mers hashed on `strand` (canonical by default).
    pub fn with_strand(mut self, strand: Strand) -> Self {
        self.strand = strand;
        self
    }

    /// Which strand its k-mers are hashed on.
    pub fn strand(&self) -> Strand {
        self.strand
    }

    /// Storage kind.
    pub fn storage_kind(&self) -> StorageKind {
        self.storage
    }

    /// Per-table sizes (bins).
    pub fn hashsizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Number of tables.
    pub fn n_tables(&self) -> usize {
        self.hashsizes().len()
    }

    /// Bytes of counter memory of all its tables.
    pub fn memory_bytes(&self) -> u64 {
        self.hashsizes().iter().map(|&size| bytes_for(self.storage_kind(), size) as u64).sum()
    }

    /// Turns bigcount (counts above 255 up to 65535) on or off; byte storage only.
    pub fn set_use_bigcount(&mut self, on: bool) -> Result<()> {
        if self.storage != StorageKind::Byte {
            return Err(Error::invalid("bigcount is not supported for this storage"));
        }
        self.use_bigcount = on;
        Ok(())
    }

    /// Whether bigcount is on.
    pub fn use_bigcount(&self) -> bool {
        self.use_bigcount
    }

    /// Hash of one k-mer (`kmer.len() == k`), with this table's hash family, no cleaning.
    pub fn hash_kmer(&self, kmer: &[u8]) -> Result<u64> {
        twobit::check_length(kmer, self.k)?;
        Ok(match self.hash {
            HashKind::TwoBit => twobit::hash_for(kmer, self.strand)?,
            HashKind::Murmur => murmur::hash_for(kmer, self.strand),
        })
    }

    /// [`CountingTable::kmer_hashes`] as a function that does not borrow the table (for threads that
    /// hash while another one updates the table).
    pub fn kmer_hasher(&self) -> impl Fn(&[u8], &mut Vec<u64>) + Send + Sync + 'static {
        let (hash, strand, k) = (self.hash, self.strand, self.k);
        move |seq, out| hash_kmers(hash, strand, k, seq, &mut Vec::new(), out)
    }

    fn hashes_into(&self, seq: &[u8], revcomp: &mut Vec<u8>, out: &mut Vec<u64>) {
        hash_kmers(self.hash, self.strand, self.k, seq, revcomp, out);
    }

    /// Runs `f` with the thread's scratch buffers, `hashes` holding the k-mer hashes of `seq`.
    fn with_hashes<R>(&self, seq: &[u8], f: impl FnOnce(&mut Scratch) -> R) -> R {
        SCRATCH.with(|cell| {
            let scratch = &mut *cell.borrow_mut();
            scratch.hashes.clear();
            self.hashes_into(seq, &mut scratch.revcomp, &mut scratch.hashes);
            f(scratch)
        })
    }

    /// Fills `bins` with the bin of every (hash, table), hash-major.
    fn compute_bins(&self, hashes: &[u64], bins: &mut Vec<u64>) {
        let n_tables = self.tables.len();
        bins.clear();
        bins.resize(hashes.len() * n_tables, 0);
        for (row, &hash) in bins.chunks_exact_mut(n_tables).zip(hashes) {
            for (bin, table) in row.iter_mut().zip(&self.tables) {
                *bin = table.modulus.rem(hash);
            }
        }
    }

    /// Prefetches the cells of one k-mer given its bins.
    #[inline(always)]
    fn prefetch_kmer<C: Cells>(&self, bins: &[u64]) {
        for (table, &bin) in self.tables.iter().zip(bins) {
            prefetch(&table.mem.atomics()[C::byte_of(bin)]);
        }
    }

    /// Prefetches the counter of `hash` in the table `t` (a lookup staged one table at a
    /// time, as the graph walks make theirs).
    #[inline(always)]
    pub(crate) fn prefetch_in(&self, t: usize, hash: u64) {
        let table = &self.tables[t];
        with_cells!(self.storage, C => prefetch(&table.mem.atomics()[C::byte_of(table.modulus.rem(hash))]))
    }

    /// Whether the counter of `hash` in the table `t` is not zero (a k-mer is in the table when
    /// it is in each of its tables).
    #[inline(always)]
    pub(crate) fn is_set_in(&self, t: usize, hash: u64) -> bool {
        let table = &self.tables[t];
        with_cells!(self.storage, C => C::count(table.mem.atomics(), table.modulus.rem(hash)) != 0)
    }

    /// Visits k-mers 0..n in order (with their hash and bins) while the bins of the k-mer
    /// `PREFETCH_AHEAD` places later are prefetched; stops early when `visit` returns false.
    #[inline(always)]
    fn visit_prefetched<C: Cells>(&self, hashes: &[u64], bins: &[u64], mut visit: impl FnMut(u64, &[u64]) -> bool) {
        let n_tables = self.tables.len();
        let mut ahead = bins.chunks_exact(n_tables);
        for kmer_bins in ahead.by_ref().take(PREFETCH_AHEAD) {
            self.prefetch_kmer::<C>(kmer_bins);
        }
        for (&hash, kmer_bins) in hashes.iter().zip(bins.chunks_exact(n_tables)) {
            if let Some(next) = ahead.next() {
                self.prefetch_kmer::<C>(next);
            }
            if !visit(hash, kmer_bins) {
                return;
            }
        }
    }

    /// Adds every hash (bins computed first, then updated with prefetching).
    fn add_all<const EXCLUSIVE: bool>(&self, hashes: &[u64], bins: &mut Vec<u64>) {
        self.add_each::<EXCLUSIVE>(hashes, bins, |_, _| ());
    }

    /// [`KhmerTable::add_all`], telling `each` for every hash, in order, whether it was new.
    fn add_each<const EXCLUSIVE: bool>(&self, hashes: &[u64], bins: &mut Vec<u64>, mut each: impl FnMut(u64, bool)) {
        self.compute_bins(hashes, bins);
        let mut total = Tally::default();
        with_cells!(self.storage, C => {
            self.visit_prefetched::<C>(hashes, bins, |hash, kmer_bins| {
                let tally = self.update::<C, EXCLUSIVE>(hash, |t| kmer_bins[t]);
                each(hash, tally.unique == 1);
                total.add(tally);
                true
            });
        });
        self.record(total);
    }

    /// Runs `f` with the thread's bin scratch buffer.
    fn with_bins<R>(f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
        SCRATCH.with(|cell| f(&mut cell.borrow_mut().bins))
    }

    /// Runs `f` with the thread's scratch holding the hashes of all `seqs`; returns their number.
    fn with_many_hashes<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>, f: impl FnOnce(&mut Scratch)) -> u64 {
        SCRATCH.with(|cell| {
            let scratch = &mut *cell.borrow_mut();
            scratch.hashes.clear();
            for seq in seqs {
                self.hashes_into(seq, &mut scratch.revcomp, &mut scratch.hashes);
            }
            f(scratch);
            scratch.hashes.len() as u64
        })
    }

    /// [`KhmerTable::add_hashes_exclusive`], calling `each` with every hash, in order, and whether
    /// it was new (what [`CountingTable::add_hash`] returns).
    pub fn add_hashes_each_exclusive(&mut self, hashes: &[u64], each: impl FnMut(u64, bool)) {
        Self::with_bins(|bins| self.add_each::<true>(hashes, bins, each));
    }

    fn median_at_least_of(&self, hashes: &[u64], bins: &mut Vec<u64>, cutoff: u32) -> bool {
        let mut vote = MedianVote::new(hashes.len());
        self.compute_bins(hashes, bins);
        with_cells!(self.storage, C => {
            self.visit_prefetched::<C>(hashes, bins, |hash, kmer_bins| {
                vote.cast(self.count::<C>(hash, |t| kmer_bins[t]) >= cutoff);
                vote.decided().is_none()
            });
        });
        vote.result()
    }

    /// One read's share of khmer's `abundance_distribution`: for each k-mer not yet in
    /// `tracking`, mark it there and add one to `dist[count]` (`dist.len() == 65536`).
    pub fn abundance_distribution_seq(&self, seq: &[u8], tracking: &KhmerTable, dist: &mut [u64]) {
        self.with_hashes(seq, |s| {
            let mut counts = Vec::with_capacity(s.hashes.len());
            self.counts_for_hashes(&s.hashes, &mut counts);
            for (&hash, &count) in s.hashes.iter().zip(&counts) {
                if tracking.get_hash(hash) == 0 {
                    tracking.add_hash(hash);
                    dist[count as usize] += 1;
                }
            }
        });
    }

    /// A copy of the counter bytes of each table (khmer's `get_raw_tables`), read atomically:
    /// other threads may be counting meanwhile (each byte is then a value it held during the
    /// copy).
    pub fn raw_tables(&self) -> Vec<Vec<u8>> {
        self.tables.iter().map(|t| alloc::snapshot(t.mem.atomics())).collect()
    }

    /// Loads a khmer format-v4 file (types 1, 2, 7) with the given hash family (files do not
    /// record it).
    pub fn load(path: &str, hash: HashKind) -> Result<Self> {
        Self::load_in(path, hash, &crate::run::RunContext::new())
    }

    /// [`KhmerTable::load`] within the run `ctx`: a table read from a FIFO or other stream
    /// stops waiting for it once the run is cancelled.
    pub fn load_in(path: &str, hash: HashKind, ctx: &crate::run::RunContext) -> Result<Self> {
        Self::load_with(path, hash, AllocOptions::default(), ctx)
    }

    /// [`KhmerTable::load_in`] with the tables allocated as `options` say (huge pages for a
    /// table looked up at random, as the graph walks do).
    pub fn load_with(path: &str, hash: HashKind, options: AllocOptions, ctx: &crate::run::RunContext) -> Result<Self> {
        khmer_format::load(path, hash, options, ctx.cancel_token())
    }

    /// Increments the bins of one k-mer (bin of table t given by `bin_of(t)`), updating the
    /// bigcount map when every table was saturated.
    /// `EXCLUSIVE`: the caller holds the table exclusively (plain loads and stores).
    #[inline(always)]
    fn update<C: Cells, const EXCLUSIVE: bool>(&self, hash: u64, bin_of: impl FnMut(usize) -> u64) -> Tally {
        let mut any_zero = false;
        let mut all_full = true;
        let mut occupied = 0;
        self.increment_bins::<C, EXCLUSIVE>(bin_of, |t, previous| {
            if previous == 0 {
                any_zero = true;
                occupied += u64::from(t == 0);
            }
            all_full &= previous == C::MAX;
        });
        if C::BIGCOUNT && all_full && self.use_bigcount {
            self.bump_bigcount(hash);
        }
        Tally { occupied, unique: u64::from(any_zero) }
    }

    /// Increments the bin `bin_of(t)` of every table `t` (saturating), calling `each(t, value
    /// before)`; nothing else (statistics, bigcount) is recorded.
    #[inline(always)]
    pub(super) fn increment_bins<C: Cells, const EXCLUSIVE: bool>(
        &self,
        mut bin_of: impl FnMut(usize) -> u64,
        mut each: impl FnMut(usize, u8),
    ) {
        for (t, table) in self.tables.iter().enumerate() {
            let (mem, bin) = (table.mem.atomics(), bin_of(t));
            each(t, if EXCLUSIVE { C::increment_exclusive(mem, bin) } else { C::increment(mem, bin) });
        }
    }

    /// One more add of a k-mer whose bins were all saturated: its bigcount becomes 256 on the
    /// first, then grows by one up to 65535.
    pub(super) fn bump_bigcount(&self, hash: u64) {
        let mut map = self.bigcounts.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.entry(hash).or_insert(0);
        *entry = if *entry == 0 { 256 } else { entry.saturating_add(1) };
    }

    /// Count of one k-mer (min over tables, then the bigcount map when saturated).
    #[inline(always)]
    fn count<C: Cells>(&self, hash: u64, bin_of: impl FnMut(usize) -> u64) -> u32 {
        let min = self.least::<C>(bin_of);
        if C::BIGCOUNT && min == C::MAX && self.use_bigcount {
            let map = self.bigcounts.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(&big) = map.get(&hash) {
                return u32::from(big);
            }
        }
        u32::from(min)
    }

    /// The least of the bins `bin_of(t)` of the tables `t` (no bigcount).
    #[inline(always)]
    pub(super) fn least<C: Cells>(&self, mut bin_of: impl FnMut(usize) -> u64) -> u8 {
        let mut min = C::MAX;
        for (t, table) in self.tables.iter().enumerate() {
            min = min.min(C::count(table.mem.atomics(), bin_of(t)));
        }
        min
    }

    fn record(&self, tally: Tally) {
        if tally.occupied > 0 {
            self.occupied.fetch_add(tally.occupied, Relaxed);
        }
        if tally.unique > 0 {
            self.unique.fetch_add(tally.unique, Relaxed);
        }
    }
}

impl CountingTable for KhmerTable {
    fn ksize(&self) -> usize {
        self.k
    }
    fn holds_counts(&self) -> bool {
        self.storage != StorageKind::Bit
    }
    fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
        let mut revcomp = REVCOMP.take();
        self.hashes_into(seq, &mut revcomp, out);
        REVCOMP.set(revcomp);
    }
    fn add_hash(&self, hash: u64) -> bool {
        with_cells!(self.storage, C => {
            let tally = self.update::<C, false>(hash, |t| self.tables[t].modulus.rem(hash));
            self.record(tally);
            tally.unique == 1
        })
    }
    fn get_hash(&self, hash: u64) -> u32 {
        with_cells!(self.storage, C => self.count::<C>(hash, |t| self.tables[t].modulus.rem(hash)))
    }
    fn add_hashes(&self, hashes: &[u64]) {
        Self::with_bins(|bins| self.add_all::<false>(hashes, bins));
    }
    fn add_hashes_exclusive(&mut self, hashes: &[u64]) {
        Self::with_bins(|bins| self.add_all::<true>(hashes, bins));
    }
    fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>) {
        // The minimum over the tables taken one table at a time with the bins prefetched (a
        // table's huge pages stay in the TLB), then bigcount values where saturated.
        let start = out.len();
        with_cells!(self.storage, C => {
            out.resize(start + hashes.len(), u32::from(C::MAX));
            let mins = &mut out[start..];
            for table in &self.tables {
                table.visit_bins::<C>(hashes, |i, mem, bin| mins[i] = mins[i].min(u32::from(C::count(mem, bin))));
            }
            if C::BIGCOUNT && self.use_bigcount {
                let map = self.bigcounts.lock().unwrap_or_else(|e| e.into_inner());
                for (count, hash) in mins.iter_mut().zip(hashes) {
                    if *count == u32::from(C::MAX) {
                        if let Some(&big) = map.get(hash) {
                            *count = u32::from(big);
                        }
                    }
                }
            }
        });
    }
    fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        self.with_many_hashes(seqs, |s| self.add_all::<false>(&s.hashes, &mut s.bins))
    }
    fn consume_many_exclusive<'a>(&mut self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        self.with_many_hashes(seqs, |s| self.add_all::<true>(&s.hashes, &mut s.bins))
    }
    fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool {
        Self::with_bins(|bins| self.median_at_least_of(hashes, bins, cutoff))
    }
    fn n_occupied(&self) -> u64 {
        self.occupied.load(Relaxed)
    }
    fn n_unique_kmers(&self) -> u64 {
        self.unique.load(Relaxed)
    }
    fn save_in(&self, path: &str, ctx: &RunContext) -> Result<()> {
        khmer_format::save(self, path, ctx)
    }
}
