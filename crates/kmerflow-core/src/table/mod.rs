//! Counting and presence tables (Count-Min sketch, Bloom filter), HyperLogLog, file formats.
//!
//! [`KTable`] is khmer's hashtable family behind one type: the hash family ([`HashKind`]) times
//! the storage ([`StorageKind`]) gives Countgraph (2-bit, byte counters), SmallCountgraph
//! (2-bit, 4-bit counters), Nodegraph (2-bit, bits), and Counttable / SmallCounttable /
//! Nodetable (Murmur). All updates take `&self` and use atomic instructions, so one table is
//! shared by all threads and threaded counting gives the same counts as one thread.

pub mod hll;
pub mod khmer_format;
pub mod primes;

use crate::Result;

/// The k-mer hash family of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKind {
    /// khmer's 2-bit canonical hash, k <= 32 (Countgraph, SmallCountgraph, Nodegraph).
    TwoBit,
    /// khmer's canonical MurmurHash3, any k (Counttable, SmallCounttable, Nodetable).
    Murmur,
}

/// The counter storage of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// 8-bit saturating counters, optional "bigcount" up to 65535 (khmer type 1).
    Byte,
    /// 4-bit saturating counters, max 15 (khmer type 7).
    Nibble,
    /// One bit per bin: a Bloom filter (khmer type 2).
    Bit,
}

/// A khmer-compatible Count-Min sketch / Bloom filter with prime-sized tables.
pub struct KTable {
    _private: (),
}

impl KTable {
    /// A table with explicit per-table sizes (khmer's `primes=[...]`). A 2-bit table with k > 32
    /// is refused with a clear error.
    pub fn with_sizes(k: usize, hash: HashKind, storage: StorageKind, sizes: Vec<u64>) -> Result<Self> {
        let _ = (k, hash, storage, sizes);
        todo!()
    }

    /// khmer's `Cls(k, starting_size, n_tables)`: sizes = the `n_tables` largest odd primes
    /// below `starting_size` (KHMER.md §2.2).
    pub fn new(k: usize, hash: HashKind, storage: StorageKind, starting_size: u64, n_tables: usize) -> Result<Self> {
        Self::with_sizes(k, hash, storage, primes::get_n_primes_near_x(n_tables, starting_size)?)
    }

    /// k.
    pub fn ksize(&self) -> usize {
        todo!()
    }

    /// Hash family.
    pub fn hash_kind(&self) -> HashKind {
        todo!()
    }

    /// Storage kind.
    pub fn storage_kind(&self) -> StorageKind {
        todo!()
    }

    /// Per-table sizes (bins).
    pub fn hashsizes(&self) -> &[u64] {
        todo!()
    }

    /// Number of tables.
    pub fn n_tables(&self) -> usize {
        self.hashsizes().len()
    }

    /// Bins of table 0 that are non-zero (khmer's `n_occupied`).
    pub fn n_occupied(&self) -> u64 {
        todo!()
    }

    /// Number of adds that found at least one zero bin (khmer's `n_unique_kmers`; not saved).
    pub fn n_unique_kmers(&self) -> u64 {
        todo!()
    }

    /// Turns bigcount (counts above 255 up to 65535) on or off; byte storage only.
    pub fn set_use_bigcount(&mut self, on: bool) -> Result<()> {
        let _ = on;
        todo!()
    }

    /// Whether bigcount is on.
    pub fn use_bigcount(&self) -> bool {
        todo!()
    }

    /// Hash of one k-mer (`kmer.len() == k`), with this table's hash family, no cleaning.
    pub fn hash_kmer(&self, kmer: &[u8]) -> Result<u64> {
        let _ = kmer;
        todo!()
    }

    /// Adds one hashed k-mer; returns true when it was new (some bin was zero). Thread-safe.
    pub fn add_hash(&self, hash: u64) -> bool {
        let _ = hash;
        todo!()
    }

    /// Count of one hashed k-mer (min over tables, bigcount aware; 0/1 for bit storage).
    pub fn get_hash(&self, hash: u64) -> u32 {
        let _ = hash;
        todo!()
    }

    /// Appends the hash of every k-mer of `seq` (in order) to `out`. `seq` is used as given (the
    /// caller cleans it); a sequence shorter than k yields nothing.
    pub fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
        let _ = (seq, out);
        todo!()
    }

    /// Counts every k-mer of `seq`; returns the number of k-mers. Thread-safe.
    pub fn consume(&self, seq: &[u8]) -> u64 {
        let _ = seq;
        todo!()
    }

    /// Appends the count of every k-mer of `seq` to `out`.
    pub fn kmer_counts(&self, seq: &[u8], out: &mut Vec<u32>) {
        let _ = (seq, out);
        todo!()
    }

    /// khmer's `get_median_count`: (upper median, float32 mean, float32 population stddev) of the
    /// k-mer counts; `None` when `seq` has no k-mer.
    pub fn median_count(&self, seq: &[u8]) -> Option<(u32, f32, f32)> {
        let _ = seq;
        todo!()
    }

    /// khmer's `median_at_least(seq, cutoff)` (the diginorm test).
    pub fn median_at_least(&self, seq: &[u8], cutoff: u32) -> bool {
        let _ = (seq, cutoff);
        todo!()
    }

    /// khmer's `trim_on_abundance`: length of the longest prefix whose k-mers all have count
    /// >= `cutoff` (0 when `seq` has exactly one k-mer or none).
    pub fn trim_on_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
        let _ = (seq, cutoff);
        todo!()
    }

    /// khmer's `trim_below_abundance` (the same with count > `cutoff`).
    pub fn trim_below_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
        let _ = (seq, cutoff);
        todo!()
    }

    /// One read's share of khmer's `abundance_distribution`: for each k-mer not yet in
    /// `tracking`, mark it there and add one to `dist[count]` (`dist.len() == 65536`).
    pub fn abundance_distribution_seq(&self, seq: &[u8], tracking: &KTable, dist: &mut [u64]) {
        let _ = (seq, tracking, dist);
        todo!()
    }

    /// The raw counter bytes of each table (khmer's `get_raw_tables`).
    pub fn raw_tables(&self) -> Vec<&[u8]> {
        todo!()
    }

    /// Saves in khmer's format v4 (gzip for a byte-storage table whose name ends in `.gz`).
    pub fn save(&self, path: &str) -> Result<()> {
        khmer_format::save(self, path)
    }

    /// Loads a khmer format-v4 file (types 1, 2, 7) with the given hash family (files do not
    /// record it).
    pub fn load(path: &str, hash: HashKind) -> Result<Self> {
        khmer_format::load(path, hash)
    }
}
