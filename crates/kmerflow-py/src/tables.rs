//! khmer's table classes: `Countgraph`, `SmallCountgraph`, `Nodegraph` (2-bit hash) and
//! `Counttable`, `SmallCounttable`, `Nodetable` (Murmur hash), all subclasses of `Table`,
//! which holds one core [`KhmerTable`] and every method.
//!
//! Sequence arguments are not cleaned (as in khmer's API); files read by `consume_seqfile` and
//! `abundance_distribution` are cleaned with khmer's C++ rule. Heavy methods release the GIL, and
//! the core table is updated atomically, so several Python threads may count into one table.

use crate::errors::IntoPyResult;
use crate::hashing::check_ascii;
use crate::interrupt::interruptible;
use crate::seqfile::for_each_clean_read;
use kmerflow_core::kmer::{twobit, Strand};
use kmerflow_core::ops::count::write_text;
use kmerflow_core::ops::load_graph::TAG_DENSITY;
use kmerflow_core::ops::load_graph::{self, Tagset};
use kmerflow_core::ops::memory::{check_fits, Backing};
use kmerflow_core::ops::partition::repartition::{Excursions, Repartitioner};
use kmerflow_core::ops::partition::{annotate_file, files, partition_tags, stoptags, KmerSet, PartitionMap, Traverser};
use kmerflow_core::run::RunContext;
use kmerflow_core::table::CountingTable;
use kmerflow_core::table::{add_table_files, HashKind, KhmerTable, StorageKind};
use numpy::PyArray1;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;
use rustc_hash::FxHashSet;
use std::path::PathBuf;
use std::sync::Mutex;

/// A k-mer given as a string or as a precomputed hash.
#[derive(FromPyObject)]
pub enum KmerOrHash {
    /// A hash value.
    Hash(u64),
    /// A k-mer of length k.
    Kmer(String),
}

/// Length of the histogram returned by `abundance_distribution` (khmer drops the last slot).
const DIST_LEN: usize = 65535;

/// Base class of all tables; not constructed directly.
#[pyclass(subclass, module = "kmerflow._core")]
pub struct Table {
    inner: KhmerTable,
    /// khmer's tags and stop tags of a 2-bit graph (its partitioning API).
    marks: Mutex<Marks>,
}

/// The tags and stop tags of a graph, its partition map, and the tags that
/// `repartition_largest_partition` no longer walks from (khmer's `repart_small_tags`).
#[derive(Default)]
struct Marks {
    tags: FxHashSet<u64>,
    stop_tags: FxHashSet<u64>,
    partition: PartitionMap,
    small_tags: FxHashSet<u64>,
}

/// Picks one set of hashes of the [`Marks`]: [`TAGS`] or [`STOP_TAGS`].
type PickMarks = fn(&mut Marks) -> &mut FxHashSet<u64>;
/// The tags.
const TAGS: PickMarks = |marks| &mut marks.tags;
/// The stop tags.
const STOP_TAGS: PickMarks = |marks| &mut marks.stop_tags;

/// Bases of a long sequence counted at a time: the hashes and bins of a piece are held at once
/// (about 40 bytes a base with 4 tables), so a chromosome needs no more memory than a read.
const PIECE_BASES: usize = 1 << 16;

/// `seq` (at least `k` bases) in pieces of up to `PIECE_BASES + k - 1` bases overlapping by
/// `k - 1`: each k-mer of `seq` is in exactly one piece, in order.
fn kmer_pieces(seq: &[u8], k: usize) -> impl Iterator<Item = &[u8]> {
    (0..)
        .map(|i| i * PIECE_BASES)
        .take_while(move |&start| start == 0 || start + k <= seq.len())
        .map(move |start| &seq[start..(start + PIECE_BASES + k - 1).min(seq.len())])
}

/// Builds a table of the given family, from explicit primes or from khmer's sizing rule.
fn build(
    k: usize,
    hash: HashKind,
    storage: StorageKind,
    starting_size: f64,
    n_tables: usize,
    primes: Option<Vec<u64>>,
    single_strand: bool,
) -> PyResult<Table> {
    if hash == HashKind::TwoBit && k > twobit::MAX_K {
        return Err(PyValueError::new_err(format!(
            "k = {k} is above {} for 2-bit tables (use Counttable/Nodetable for larger k)",
            twobit::MAX_K
        )));
    }
    if primes.is_none() && (starting_size.is_nan() || starting_size < 1.0) {
        return Err(PyValueError::new_err(format!("starting_size must be at least 1, not {starting_size}")));
    }
    let counters = match &primes {
        Some(sizes) => sizes.iter().map(|&s| s as f64).sum(),
        None => starting_size * n_tables as f64,
    };
    let counters_per_byte = match storage {
        StorageKind::Byte => 1.0,
        StorageKind::Nibble => 2.0,
        StorageKind::Bit => 8.0,
    };
    // Each table also holds its size and bookkeeping (a few dozen bytes).
    let bytes = counters / counters_per_byte + 64.0 * primes.as_ref().map_or(n_tables, Vec::len) as f64;
    check_fits(bytes, Backing::Memory, "starting_size and n_tables (or primes)").py()?;
    let inner = match primes {
        Some(sizes) => KhmerTable::with_sizes(k, hash, storage, sizes),
        None => KhmerTable::new(k, hash, storage, starting_size as u64, n_tables),
    };
    Ok(Table::from_core(inner.py()?.with_strand(Strand::from_single(single_strand))))
}

/// Loads a saved table and checks that its storage matches the class.
fn load_checked(py: Python<'_>, path: PathBuf, hash: HashKind, storage: StorageKind, class: &str) -> PyResult<Table> {
    let path = path.to_string_lossy().into_owned();
    let inner = interruptible(py, |ctx| KhmerTable::load_in(&path, hash, ctx))?.py()?;
    if inner.storage_kind() != storage {
        return Err(PyValueError::new_err(format!(
            "{path}: the file holds a {:?}-storage table, not a {class}",
            inner.storage_kind()
        )));
    }
    Ok(Table::from_core(inner))
}

impl Table {
    /// A table over a core table.
    pub fn from_core(inner: KhmerTable) -> Self {
        Table { inner, marks: Mutex::default() }
    }

    /// The tags and stop tags, for a 2-bit graph (khmer's Hashgraph; a Murmur table has none).
    fn marks(&self) -> PyResult<std::sync::MutexGuard<'_, Marks>> {
        if self.inner.hash_kind() != HashKind::TwoBit {
            return Err(PyValueError::new_err("tags and stop tags are for 2-bit graphs (Countgraph, Nodegraph)"));
        }
        Ok(self.marks.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Adds the hash of `kmer` to the set of the marks that `set` picks.
    fn add_mark(&self, kmer: KmerOrHash, set: PickMarks) -> PyResult<()> {
        let hash = self.hash_of(&kmer)?;
        set(&mut *self.marks()?).insert(hash);
        Ok(())
    }

    /// The k-mers of the set of the marks that `set` picks, by ascending hash.
    fn marked_kmers(&self, set: PickMarks) -> PyResult<Vec<String>> {
        let mut sorted: Vec<u64> = set(&mut *self.marks()?).iter().copied().collect();
        sorted.sort_unstable();
        Ok(sorted.into_iter().map(|hash| twobit::reverse_hash(hash, self.inner.ksize())).collect())
    }

    /// Reads the hashes of a file of this k with `load` (GIL released) into the set of the marks
    /// that `set` picks, replacing the hashes there when `clear`.
    fn load_marks(
        &self,
        py: Python<'_>,
        path: PathBuf,
        load: fn(&str, usize, &RunContext) -> kmerflow_core::Result<Vec<u64>>,
        set: PickMarks,
        clear: bool,
    ) -> PyResult<()> {
        let path = path.to_string_lossy().into_owned();
        let k = self.inner.ksize();
        let hashes = interruptible(py, |ctx| load(&path, k, ctx))?.py()?;
        let mut marks = self.marks()?;
        let set = set(&mut marks);
        if clear {
            set.clear();
        }
        set.extend(hashes);
        Ok(())
    }

    /// Writes `bytes` to `path` within a run (Ctrl-C stops it), GIL released.
    fn write_file(py: Python<'_>, path: PathBuf, bytes: Vec<u8>) -> PyResult<()> {
        let path = path.to_string_lossy().into_owned();
        interruptible(py, |ctx| write_text(&path, &bytes, ctx))?.py()
    }

    /// The core table.
    pub fn inner(&self) -> &KhmerTable {
        &self.inner
    }

    /// Checks that `seq` is ASCII and has at least one k-mer (khmer raises `ValueError`
    /// otherwise).
    fn check_seq(&self, seq: &str) -> PyResult<()> {
        check_ascii(seq)?;
        let k = self.inner.ksize();
        if seq.len() < k {
            return Err(PyValueError::new_err(format!(
                "sequence length ({}) must be >= the hashtable k-mer size ({k})",
                seq.len()
            )));
        }
        Ok(())
    }

    /// The hash of a k-mer or hash argument.
    fn hash_of(&self, kmer: &KmerOrHash) -> PyResult<u64> {
        match kmer {
            KmerOrHash::Hash(h) => Ok(*h),
            KmerOrHash::Kmer(s) => self.hash(s),
        }
    }
}

#[pymethods]
impl Table {
    #[new]
    fn new() -> PyResult<Self> {
        Err(PyTypeError::new_err("Table is abstract: use Countgraph, Nodegraph, Counttable, ..."))
    }

    /// k.
    fn ksize(&self) -> usize {
        self.inner.ksize()
    }

    /// Whether k-mers are hashed as read (`single_strand=True`), not canonically.
    fn single_strand(&self) -> bool {
        self.inner.strand().is_single()
    }

    /// The size (bins) of each table.
    fn hashsizes(&self) -> Vec<u64> {
        self.inner.hashsizes().to_vec()
    }

    /// Number of tables.
    fn n_tables(&self) -> usize {
        self.inner.n_tables()
    }

    /// Non-zero bins of the first table.
    fn n_occupied(&self) -> u64 {
        self.inner.n_occupied()
    }

    /// Number of k-mer additions that found an empty bin (0 after `load`).
    fn n_unique_kmers(&self) -> u64 {
        self.inner.n_unique_kmers()
    }

    /// Turns counting above 255 (up to 65535) on or off; byte-counter tables only.
    fn set_use_bigcount(&mut self, on: bool) -> PyResult<()> {
        self.inner.set_use_bigcount(on).py()
    }

    /// Whether counts above 255 are kept.
    fn get_use_bigcount(&self) -> bool {
        self.inner.use_bigcount()
    }

    /// The hash of `kmer` (`len(kmer) == k`).
    fn hash(&self, kmer: &str) -> PyResult<u64> {
        if kmer.len() != self.inner.ksize() {
            return Err(PyValueError::new_err(format!(
                "k-mer length {} does not match the table's k = {}",
                kmer.len(),
                self.inner.ksize()
            )));
        }
        self.inner.hash_kmer(kmer.as_bytes()).py()
    }

    /// The k-mer of a 2-bit hash (Murmur hashes cannot be reversed).
    fn reverse_hash(&self, hash: u64) -> PyResult<String> {
        match self.inner.hash_kind() {
            HashKind::TwoBit => Ok(twobit::reverse_hash(hash, self.inner.ksize())),
            HashKind::Murmur => Err(PyValueError::new_err("reverse_hash is not possible for Murmur-hashed tables")),
        }
    }

    /// Counts one k-mer (string of length k, or hash); returns True when it was new.
    fn add(&self, kmer: KmerOrHash) -> PyResult<bool> {
        Ok(self.inner.add_hash(self.hash_of(&kmer)?))
    }

    /// Same as `add`.
    fn count(&self, kmer: KmerOrHash) -> PyResult<bool> {
        self.add(kmer)
    }

    /// The count of one k-mer (string of length k, or hash).
    fn get(&self, kmer: KmerOrHash) -> PyResult<u32> {
        Ok(self.inner.get_hash(self.hash_of(&kmer)?))
    }

    /// Counts every k-mer of `seq` (not cleaned); returns the number of k-mers.
    fn consume(&self, py: Python<'_>, seq: &str) -> PyResult<u64> {
        self.check_seq(seq)?;
        let inner = &self.inner;
        Ok(py.detach(|| kmer_pieces(seq.as_bytes(), inner.ksize()).map(|piece| inner.consume(piece)).sum()))
    }

    /// Counts every k-mer of every read of `path` (non-ACGT → `A`), GIL released; returns
    /// `(n_reads, n_kmers)`. Several threads may call it on one table at once.
    fn consume_seqfile(&self, py: Python<'_>, path: PathBuf) -> PyResult<(u64, u64)> {
        let inner = &self.inner;
        let path = path.to_string_lossy().into_owned();
        interruptible(py, |ctx| {
            let mut n_kmers = 0;
            let n_reads = for_each_clean_read(&path, ctx, |seq| n_kmers += inner.consume(seq))?;
            Ok((n_reads, n_kmers))
        })?
        .py()
    }

    /// The k-mers of `seq`, in order.
    fn get_kmers(&self, seq: &str) -> PyResult<Vec<String>> {
        check_ascii(seq)?;
        let k = self.inner.ksize();
        Ok((0..(seq.len() + 1).saturating_sub(k)).map(|i| seq[i..i + k].to_owned()).collect())
    }

    /// The hash of every k-mer of `seq`, in order.
    fn get_kmer_hashes(&self, seq: &str) -> PyResult<Vec<u64>> {
        self.check_seq(seq)?;
        let mut out = Vec::new();
        self.inner.kmer_hashes(seq.as_bytes(), &mut out);
        Ok(out)
    }

    /// The count of every k-mer of `seq`, in order.
    fn get_kmer_counts(&self, seq: &str) -> PyResult<Vec<u32>> {
        self.check_seq(seq)?;
        let mut out = Vec::new();
        self.inner.kmer_counts(seq.as_bytes(), &mut out);
        Ok(out)
    }

    /// `(median, average, stddev)` of the k-mer counts of `seq` (upper median; float32 stats).
    fn get_median_count(&self, seq: &str) -> PyResult<(u32, f32, f32)> {
        self.check_seq(seq)?;
        self.inner.median_count(seq.as_bytes()).ok_or_else(|| PyValueError::new_err("sequence has no k-mer"))
    }

    /// True when the median k-mer count of `seq` is at least `cutoff` (the diginorm test).
    fn median_at_least(&self, seq: &str, cutoff: u32) -> PyResult<bool> {
        self.check_seq(seq)?;
        Ok(self.inner.median_at_least(seq.as_bytes(), cutoff))
    }

    /// `(prefix, length)`: the longest prefix of `seq` whose k-mers all have count >= `cutoff`.
    fn trim_on_abundance(&self, seq: &str, cutoff: u32) -> PyResult<(String, usize)> {
        check_ascii(seq)?;
        let p = self.inner.trim_on_abundance(seq.as_bytes(), cutoff);
        Ok((seq[..p].to_owned(), p))
    }

    /// `(prefix, length)`: the longest prefix of `seq` whose k-mers all have count > `cutoff`.
    fn trim_below_abundance(&self, seq: &str, cutoff: u32) -> PyResult<(String, usize)> {
        check_ascii(seq)?;
        let p = self.inner.trim_below_abundance(seq.as_bytes(), cutoff);
        Ok((seq[..p].to_owned(), p))
    }

    /// khmer's k-mer abundance histogram of the reads of `path`: entry i is the number of distinct
    /// k-mers (tracked in the presence table `tracking`) whose count is i. GIL released.
    fn abundance_distribution(&self, py: Python<'_>, path: PathBuf, tracking: PyRef<'_, Table>) -> PyResult<Vec<u64>> {
        let (inner, track) = (&self.inner, &tracking.inner);
        let path = path.to_string_lossy().into_owned();
        let mut dist = interruptible(py, |ctx| {
            let mut dist = vec![0u64; DIST_LEN + 1];
            for_each_clean_read(&path, ctx, |seq| inner.abundance_distribution_seq(seq, track, &mut dist))?;
            Ok(dist)
        })?
        .py()?;
        dist.truncate(DIST_LEN);
        Ok(dist)
    }

    /// Adds `other`'s counts to this table's, counter by counter (khmer's `Nodegraph.update`,
    /// for every table class): counting two parts of an input into two tables and adding
    /// them gives the counters of counting the whole input into one. `other` needs the same
    /// class, k and sizes. GIL released.
    fn update(&mut self, py: Python<'_>, other: PyRef<'_, Table>) -> PyResult<()> {
        let (inner, theirs) = (&mut self.inner, &other.inner);
        py.detach(|| inner.add_table(theirs)).py()
    }

    /// `table += other`: [`Table::update`].
    fn __iadd__(&mut self, py: Python<'_>, other: PyRef<'_, Table>) -> PyResult<()> {
        self.update(py, other)
    }

    /// Saves the table in khmer's format (gzip-compressed when the name ends in `.gz`);
    /// Ctrl-C stops a save blocked on a FIFO nobody reads.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let inner = &self.inner;
        let path = path.to_string_lossy().into_owned();
        interruptible(py, |ctx| inner.save_in(&path, ctx))?.py()
    }

    /// khmer's `consume_seqfile_and_tag`: counts every k-mer of the reads of `path` (cleaned)
    /// and tags them as load-graph does, GIL released; returns `(n_reads, n_new_kmers)` (the
    /// k-mers not yet in the graph, as khmer counts them).
    fn consume_seqfile_and_tag(&mut self, py: Python<'_>, path: PathBuf) -> PyResult<(u64, u64)> {
        let mut tagset = Tagset { tags: std::mem::take(&mut self.marks()?.tags) };
        let path = path.to_string_lossy().into_owned();
        let inner = &mut self.inner;
        let tally = interruptible(py, |ctx| load_graph::consume_file_and_tag(inner, &mut tagset, &path, None, ctx));
        self.marks()?.tags = tagset.tags;
        let (tally, new_kmers) = tally?.py()?;
        Ok((tally.reads, new_kmers))
    }

    /// Adds a tag (k-mer or hash), as khmer's `add_tag`.
    fn add_tag(&self, kmer: KmerOrHash) -> PyResult<()> {
        self.add_mark(kmer, TAGS)
    }

    /// The tags as k-mers (khmer's), by ascending hash.
    fn get_tagset(&self) -> PyResult<Vec<String>> {
        self.marked_kmers(TAGS)
    }

    /// Number of tags.
    fn n_tags(&self) -> PyResult<usize> {
        Ok(self.marks()?.tags.len())
    }

    /// Reads a tagset file (khmer's or load-graph's) of this k; its tags replace ours unless
    /// `clear_tags` is False.
    #[pyo3(signature = (path, clear_tags = true))]
    fn load_tagset(&self, py: Python<'_>, path: PathBuf, clear_tags: bool) -> PyResult<()> {
        self.load_marks(py, path, files::load_tagset, TAGS, clear_tags)
    }

    /// Saves the tags as a tagset file khmer reads.
    fn save_tagset(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let tagset = Tagset { tags: self.marks()?.tags.iter().copied().collect() };
        Self::write_file(py, path, tagset.to_bytes(self.inner.ksize()))
    }

    /// Adds a stop tag (k-mer or hash), as khmer's `add_stop_tag`.
    fn add_stop_tag(&self, kmer: KmerOrHash) -> PyResult<()> {
        self.add_mark(kmer, STOP_TAGS)
    }

    /// The stop tags as k-mers (khmer's), by ascending hash.
    fn get_stop_tags(&self) -> PyResult<Vec<String>> {
        self.marked_kmers(STOP_TAGS)
    }

    /// Reads a stop-tags file of this k (khmer's, or make-initial-stoptags' and find-knots');
    /// its stop tags are added to ours, or replace them with `clear_tags`.
    #[pyo3(signature = (path, clear_tags = false))]
    fn load_stop_tags(&self, py: Python<'_>, path: PathBuf, clear_tags: bool) -> PyResult<()> {
        self.load_marks(py, path, files::load_stoptags, STOP_TAGS, clear_tags)
    }

    /// Saves the stop tags as a stop-tags file khmer reads.
    fn save_stop_tags(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let bytes = files::stoptags_bytes(self.marks()?.stop_tags.iter().copied(), self.inner.ksize());
        Self::write_file(py, path, bytes)
    }

    /// khmer's `do_subset_partition`: joins each tag from `start_kmer` (a tag; 0 or None: the
    /// first) up to `end_kmer` (excluded; 0 or None: to the last) to the tags near it, into a new
    /// `SubsetPartition`; stop tags end the walks with `break_on_stoptags`, and a walk of more
    /// than 200 k-mers joins nothing with `stop_big_traversals`. GIL released.
    #[pyo3(signature = (start_kmer = None, end_kmer = None, break_on_stoptags = false, stop_big_traversals = false))]
    fn do_subset_partition(
        &self,
        py: Python<'_>,
        start_kmer: Option<KmerOrHash>,
        end_kmer: Option<KmerOrHash>,
        break_on_stoptags: bool,
        stop_big_traversals: bool,
    ) -> PyResult<SubsetPartition> {
        let bound = |kmer: Option<KmerOrHash>| kmer.map_or(Ok(0), |kmer| self.hash_of(&kmer));
        let (start, end) = (bound(start_kmer)?, bound(end_kmer)?);
        // copies, so that no lock is held while the GIL is released
        let (tag_set, stop_tags) = {
            let marks = self.marks()?;
            let stops = if break_on_stoptags { marks.stop_tags.clone() } else { FxHashSet::default() };
            (marks.tags.clone(), stops)
        };
        let mut tags: Vec<u64> = tag_set.iter().copied().collect();
        tags.sort_unstable();
        // khmer's bounds: a bound that is not a tag is the end of the tags
        let position = |bound: u64, none: usize| match bound {
            0 => none,
            _ => tags.binary_search(&bound).unwrap_or(tags.len()),
        };
        let (first, last) = (position(start, 0), position(end, tags.len()));
        let inner = &self.inner;
        let map = interruptible(py, |ctx| {
            let tag_set: KmerSet = tag_set.iter().copied().collect();
            let traverser = Traverser::new(inner, &tag_set, &stop_tags, stop_big_traversals, TAG_DENSITY, ctx);
            partition_tags(&traverser, &tags[first.min(last)..last], ctx)
        })?
        .py()?;
        Ok(SubsetPartition { map, ksize: inner.ksize(), tags })
    }

    /// Merges `subset` into the graph's partition map (khmer's `merge_subset`; stop tags are
    /// left out).
    fn merge_subset(&self, subset: PyRef<'_, SubsetPartition>) -> PyResult<()> {
        let mut marks = self.marks()?;
        let Marks { stop_tags, partition, .. } = &mut *marks;
        partition.merge(&subset.map.assignments(), stop_tags);
        Ok(())
    }

    /// Replaces the graph's partition map with the map file `path` (khmer's
    /// `load_partitionmap`; stop tags are left out).
    fn load_partitionmap(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        self.marks()?.partition = PartitionMap::default();
        self.merge_subset_from_disk(py, path)
    }

    /// Merges the map file `path` into the graph's partition map: partitions sharing a tag
    /// are joined (khmer's `merge_subset_from_disk`; stop tags are left out).
    fn merge_subset_from_disk(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let path = path.to_string_lossy().into_owned();
        let k = self.inner.ksize();
        let records = interruptible(py, |ctx| files::load_pmap_records(&path, k, ctx))?.py()?;
        let mut marks = self.marks()?;
        let Marks { stop_tags, partition, .. } = &mut *marks;
        partition.merge(&records, stop_tags);
        Ok(())
    }

    /// Saves the graph's partition map as a map file khmer reads (partition ids from 2 by
    /// ascending tag).
    fn save_partitionmap(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let bytes = files::pmap_bytes(&self.marks()?.partition, self.inner.ksize());
        Self::write_file(py, path, bytes)
    }

    /// khmer's `count_partitions`: `(partitions, tags without a partition)`.
    fn count_partitions(&self) -> PyResult<(usize, usize)> {
        let marks = self.marks()?;
        let tags: Vec<u64> = marks.tags.iter().copied().collect();
        Ok(marks.partition.count_partitions(&tags))
    }

    /// khmer's `repartition_largest_partition`: takes the largest partition of `subs` (or of
    /// the graph's map) apart, walks `distance` steps from each of its tags, counts the k-mers
    /// of each walk reaching at least `threshold` k-mers in `counts` (a Countgraph of this k),
    /// makes those counted more than `frequency` times stop tags, and joins the partition's
    /// tags again with the stop tags in place. A tag whose walk was small is not walked from
    /// again by later calls. Returns the next smaller partition size before the call (0 if
    /// none); a map without a partition is a `ValueError`. GIL released; an interrupted call
    /// leaves the map and the stop tags as they were (`counts` keeps what it counted).
    #[pyo3(signature = (counts, distance, threshold, frequency, subs = None))]
    fn repartition_largest_partition(
        &self,
        py: Python<'_>,
        counts: PyRef<'_, Countgraph>,
        distance: u32,
        threshold: u32,
        frequency: u32,
        subs: Option<PyRefMut<'_, SubsetPartition>>,
    ) -> PyResult<usize> {
        let counting = &counts.as_super().inner;
        let k = self.inner.ksize();
        if counting.ksize() != k || subs.as_ref().is_some_and(|subs| subs.ksize != k) {
            return Err(PyValueError::new_err(format!("counts and subs must have the graph's k-mer size ({k})")));
        }
        // copies, so that no lock is held while the GIL is released, and an interrupted call
        // changes nothing
        let (tags, mut stop_tags, mut small_tags, mut map) = {
            let marks = self.marks()?;
            let map = subs.as_ref().map_or_else(|| marks.partition.clone(), |subs| subs.map.clone());
            let tags: KmerSet = marks.tags.iter().copied().collect();
            (tags, marks.stop_tags.clone(), marks.small_tags.clone(), map)
        };
        let excursions = Excursions { distance, threshold: threshold as usize, frequency };
        let graph = &self.inner;
        let done = interruptible(py, |ctx| {
            Repartitioner { graph, tags: &tags, stop_tags: &mut stop_tags, small_tags: &mut small_tags, counting }
                .repartition_largest(&mut map, excursions, ctx)
        })?
        .py()?
        .ok_or_else(|| PyValueError::new_err("no partition to repartition: no tag of the map has a partition"))?;
        let mut marks = self.marks()?;
        marks.stop_tags.extend(stop_tags);
        marks.small_tags.extend(small_tags);
        match subs {
            Some(mut subs) => subs.map = map,
            None => marks.partition = map,
        }
        Ok(done.next_largest)
    }

    /// khmer's `output_partitions`: writes each read of `infile` with a tagged k-mer to
    /// `outfile` as `name<TAB>partition` (as annotate-partitions); returns the number of
    /// partitions seen.
    fn output_partitions(&self, py: Python<'_>, infile: PathBuf, outfile: PathBuf) -> PyResult<usize> {
        let lookup = self.marks()?.partition.lookup();
        let (infile, outfile) = (infile.to_string_lossy().into_owned(), outfile.to_string_lossy().into_owned());
        let k = self.inner.ksize();
        interruptible(py, |ctx| annotate_file(&lookup, k, self.inner.strand(), &infile, &outfile, ctx))?.py()
    }

    /// khmer's `trim_on_stoptags`: `seq` cut k - 2 bases after the start of its first k-mer that
    /// is a stop tag, and the length kept.
    fn trim_on_stoptags(&self, seq: &str) -> PyResult<(String, usize)> {
        check_ascii(seq)?;
        let cut = stoptags::trim_on_stoptags(
            seq.as_bytes(),
            self.inner.ksize(),
            self.inner.strand(),
            &self.marks()?.stop_tags,
            &mut Vec::new(),
        );
        Ok((seq[..cut].to_owned(), cut))
    }

    /// A copy of the counters of each table as numpy `uint8` arrays (the caller's to keep or
    /// change). The copy is read atomically, so other threads may go on counting meanwhile.
    /// Nibble tables pack two bins per byte (even bin in the high nibble), bit tables eight (LSB
    /// first).
    fn get_raw_tables<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyArray1<u8>>> {
        let inner = &self.inner;
        let copies = py.detach(|| inner.raw_tables());
        copies.into_iter().map(|bytes| PyArray1::from_vec(py, bytes)).collect()
    }
}

/// khmer's `SubsetPartition`: the partition map of some of a graph's tags, made by
/// `do_subset_partition`.
#[pyclass(module = "kmerflow._core")]
pub struct SubsetPartition {
    map: PartitionMap,
    ksize: usize,
    /// The graph's tags when the subset was made, ascending.
    tags: Vec<u64>,
}

#[pymethods]
impl SubsetPartition {
    /// `(partitions, tags of the graph without a partition here)`, as khmer's `count_partitions`.
    fn count_partitions(&self) -> (usize, usize) {
        self.map.count_partitions(&self.tags)
    }

    /// Saves the map as a partition-map file (what partition-graph writes for a subset).
    fn save_partitionmap(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        Table::write_file(py, path, files::pmap_bytes(&self.map, self.ksize))
    }
}

/// Defines one concrete table class: its constructor (khmer's `Cls(k, starting_size, n_tables,
/// primes=None)`, plus `single_strand=False`: k-mers hashed as read) and `load` classmethod.
macro_rules! table_class {
    ($name:ident, $hash:expr, $storage:expr, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(extends = Table, module = "kmerflow._core")]
        pub struct $name;

        #[pymethods]
        impl $name {
            #[new]
            #[pyo3(signature = (ksize, starting_size, n_tables, primes = None, *, single_strand = false))]
            fn new(
                ksize: usize,
                starting_size: f64,
                n_tables: usize,
                primes: Option<Vec<u64>>,
                single_strand: bool,
            ) -> PyResult<PyClassInitializer<Self>> {
                let table = build(ksize, $hash, $storage, starting_size, n_tables, primes, single_strand)?;
                Ok(PyClassInitializer::from(table).add_subclass($name))
            }

            /// Loads a table saved by kmerflow or khmer.
            #[classmethod]
            fn load(cls: &Bound<'_, PyType>, path: PathBuf) -> PyResult<Py<$name>> {
                let table = load_checked(cls.py(), path, $hash, $storage, stringify!($name))?;
                Py::new(cls.py(), PyClassInitializer::from(table).add_subclass($name))
            }
        }
    };
}

table_class!(
    Countgraph,
    HashKind::TwoBit,
    StorageKind::Byte,
    "Count-Min sketch of 8-bit counters, 2-bit hash (k <= 32)."
);
table_class!(
    SmallCountgraph,
    HashKind::TwoBit,
    StorageKind::Nibble,
    "Count-Min sketch of 4-bit counters, 2-bit hash (k <= 32)."
);
table_class!(Nodegraph, HashKind::TwoBit, StorageKind::Bit, "Bloom filter, 2-bit hash (k <= 32).");
table_class!(
    Counttable,
    HashKind::Murmur,
    StorageKind::Byte,
    "Count-Min sketch of 8-bit counters, Murmur hash (any k)."
);
table_class!(
    SmallCounttable,
    HashKind::Murmur,
    StorageKind::Nibble,
    "Count-Min sketch of 4-bit counters, Murmur hash (any k)."
);
table_class!(Nodetable, HashKind::Murmur, StorageKind::Bit, "Bloom filter, Murmur hash (any k).");

/// Adds the saved tables `inputs` (khmer or blocked layout, all of one shape) counter by counter
/// and saves the sum to `output` in their format. GIL released; Ctrl-C stops it.
#[pyfunction]
fn add_tables(py: Python<'_>, inputs: Vec<PathBuf>, output: PathBuf) -> PyResult<()> {
    let inputs: Vec<String> = inputs.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let output = output.to_string_lossy().into_owned();
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    interruptible(py, |ctx| add_table_files(&inputs, &output, ctx))?.py()
}

/// Registers the table classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(add_tables, m)?)?;
    m.add_class::<Table>()?;
    m.add_class::<SubsetPartition>()?;
    m.add_class::<Countgraph>()?;
    m.add_class::<SmallCountgraph>()?;
    m.add_class::<Nodegraph>()?;
    m.add_class::<Counttable>()?;
    m.add_class::<SmallCounttable>()?;
    m.add_class::<Nodetable>()?;
    Ok(())
}
