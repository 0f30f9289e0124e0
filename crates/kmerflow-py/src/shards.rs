//! Sharded tables of either layout (`kmerflow-core`'s `shards`) on numpy arrays: `Shard`, one
//! shard (held by a Dask worker or locally), and `ShardClient`, the client's part (routing,
//! statistics, bigcounts, the table's file). The layout is inside each ([`Layout`]): khmer's
//! (shards of contiguous counters, a message naming counters) or the blocked one (shards of
//! whole 64-byte lines, a message naming k-mer hashes), so that Python holds one sharded-table
//! class and one actor. Every call on many counters releases the GIL.

use crate::batch::slice;
use crate::errors::IntoPyResult;
use crate::interrupt::interruptible;
use crate::shard_files::StagedOutputs;
use crate::tables::{Countgraph, Table};
use kmerflow_core::kmer::clean::clean_parser;
use kmerflow_core::ops::memory::{check_fits, Backing};
use kmerflow_core::ops::sizing::FpRate;
use kmerflow_core::shards::blocked::{BlockedShard as CoreBlockedShard, BlockedShardClient as CoreBlockedClient};
use kmerflow_core::shards::file as shard_file;
use kmerflow_core::shards::khmer::{Shard as CoreShard, ShardClient as CoreClient, ShardMap};
use kmerflow_core::shards::runs::{Answer, Kind, Message, ReadHasher};
use kmerflow_core::shards::wire;
use kmerflow_core::shards::ShardLayout as _;
use kmerflow_core::table::blocked::OccupancyStats;
use kmerflow_core::table::khmer_format::ByteFrame;
use kmerflow_core::table::{native_format, BlockedParams, CounterWidth, CountingTable, HashKind};
use kmerflow_core::{Error, Result};
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::{Mutex, MutexGuard};

/// Either layout's part of a sharded table.
pub(crate) enum Layout<K, B> {
    /// khmer's layout.
    Khmer(K),
    /// The blocked layout.
    Blocked(B),
}

/// A shard of either layout.
pub(crate) type AnyShard = Layout<CoreShard, CoreBlockedShard>;
/// The client's part of either layout.
type AnyClient = Layout<CoreClient, CoreBlockedClient>;

/// The shape of a blocked table: (k, bytes of counters, bits per counter, counters per k-mer);
/// `None` for khmer's layout, whose shards need only their range.
type Shape = Option<(usize, u64, u8, usize)>;
/// Places in a file: (offset, length) in counter order.
type Places = Vec<(u64, u64)>;
/// A shard's part of a batch (counters, or k-mer hashes for the blocked layout).
type Parts<'py> = Vec<Bound<'py, PyArray1<u64>>>;
/// The k-mer hashes of sequences end to end and where each sequence's end.
type HashedReads<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);
/// What a blocked shard's adds did to the statistics: (non-zero counters, adds that found a
/// zero counter, adds).
type Added = (u64, u64, u64);

/// The blocked layout's parameters of `shape`.
fn blocked_params((ksize, memory_bytes, bits, probes): (usize, u64, u8, usize)) -> PyResult<BlockedParams> {
    let width = CounterWidth::from_bits(bits).filter(|&w| w != CounterWidth::Bits1).ok_or_else(|| {
        PyValueError::new_err(format!("a sharded blocked table has 8- or 4-bit counters, not {bits}"))
    })?;
    let params = BlockedParams::new(ksize, memory_bytes, width, probes);
    params.check().py()?;
    Ok(params)
}

/// The error of a call that only khmer's layout answers, made on a blocked table.
fn khmer_only(what: &str) -> PyErr {
    PyValueError::new_err(format!("{what} is not defined for a sharded table of the blocked layout"))
}

/// One shard of a sharded table (either layout).
#[pyclass(module = "kmerflow._core", frozen)]
pub struct Shard {
    inner: Mutex<AnyShard>,
}

impl Shard {
    /// The shard, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, AnyShard> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `f` on the shard, locked, without the GIL.
    fn with<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut AnyShard) -> R + Send) -> R {
        py.detach(|| f(&mut self.lock()))
    }
}

#[pymethods]
impl Shard {
    /// A zeroed shard of the table of `shape` (`ShardClient.description.shape`): counters (or,
    /// for a blocked table, lines) `start .. end`; refused before allocation when it does not
    /// fit in this process's memory limits.
    #[staticmethod]
    fn zeroed(py: Python<'_>, shape: Shape, start: u64, end: u64) -> PyResult<Self> {
        let params = shape.map(blocked_params).transpose()?;
        let line = params.as_ref().map_or(1, |_| CoreBlockedShard::place_of(0..1).1);
        let bytes = end.saturating_sub(start) * line;
        check_fits(bytes as f64, Backing::Memory, "-M/--max-memory-usage or more shards (--shards)").py()?;
        let inner = py.detach(|| match params {
            None => CoreShard::new(start, end.saturating_sub(start), u8::MAX).map(Layout::Khmer),
            Some(params) => CoreBlockedShard::new(params, start..end).map(Layout::Blocked),
        });
        Ok(Shard { inner: Mutex::new(inner.py()?) })
    }

    /// Answers a message of the transport (`kmerflow_core::shards::wire`, uint8): a step
    /// applies its updates (deltas to distinct counters), then returns the values of the
    /// counters that its keys name (uint8; for a blocked shard the keys are k-mer hashes whose
    /// counters' values come probe-major); an add answers as `add`.
    fn handle<'py>(&self, py: Python<'py>, message: PyReadonlyArray1<'py, u8>) -> PyResult<Bound<'py, PyAny>> {
        let message = slice(&message, "message")?;
        let answer = self.with(py, |shard| {
            let (kind, Message { apply, keys }) = wire::decode(message)?;
            match kind {
                Kind::Step => step(shard, &apply.counters, &apply.deltas, &keys).map(Answer::Values),
                Kind::Add => add(shard, &keys),
            }
        });
        answer_object(py, answer.py()?)
    }

    /// Counts `keys` (counters; k-mer hashes for a blocked shard) in order. Returns each
    /// counter's value before its add (uint8); a blocked shard returns what the adds did to
    /// the statistics: (non-zero counters, adds that found a zero counter, adds).
    fn add<'py>(&self, py: Python<'py>, keys: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyAny>> {
        let keys = slice(&keys, "keys")?;
        answer_object(py, self.with(py, |shard| add(shard, keys)).py()?)
    }

    /// The values of the counters `keys` name (uint8): counters; for a blocked shard the
    /// count of each k-mer hash.
    fn counts<'py>(&self, py: Python<'py>, keys: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let keys = slice(&keys, "keys")?;
        let counts = self.with(py, |shard| match shard {
            Layout::Khmer(s) => s.counts(keys),
            Layout::Blocked(s) => s.counts(keys),
        });
        Ok(counts.py()?.into_pyarray(py))
    }

    /// How many counters hold each value 0..=255 (uint64, 256 entries; khmer's layout).
    fn histogram<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        match self.with(py, |shard| match shard {
            Layout::Khmer(s) => Some(s.histogram()),
            Layout::Blocked(_) => None,
        }) {
            Some(histogram) => Ok(histogram.into_pyarray(py)),
            None => Err(khmer_only("a shard's histogram")),
        }
    }

    /// A copy of the counter bytes (uint8).
    fn cells<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        self.with(py, |shard| match shard {
            Layout::Khmer(s) => s.cells().to_vec(),
            Layout::Blocked(s) => s.bytes(),
        })
        .into_pyarray(py)
    }

    /// Writes the counters at `places` (from `ShardClient.places`) of the table file `path`.
    fn write_to(&self, py: Python<'_>, path: &str, places: Places) -> PyResult<()> {
        self.with(py, |shard| match shard {
            Layout::Khmer(s) => shard_file::write_pieces(path, &places, s.cells()),
            Layout::Blocked(s) => check_place(s, &places).and_then(|()| s.write_to(path)),
        })
        .py()
    }

    /// Replaces the counters with those at `places` of the table file `path`.
    fn read_from(&self, py: Python<'_>, path: &str, places: Places) -> PyResult<()> {
        self.with(py, |shard| match shard {
            Layout::Khmer(s) => s.read_from(path, &places),
            Layout::Blocked(s) => check_place(s, &places).and_then(|()| s.read_from(path)),
        })
        .py()
    }

    /// Replaces the counters with `cells` (uint8).
    fn set_cells(&self, py: Python<'_>, cells: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        let cells = slice(&cells, "cells")?;
        self.with(py, |shard| match shard {
            Layout::Khmer(s) => CoreShard::from_cells(s.start(), s.max(), cells).map(|new| *s = new),
            Layout::Blocked(s) => s.set_bytes(cells),
        })
        .py()
    }
}

/// Adds `deltas` to the distinct `counters` of `shard`, then returns the values of the
/// counters that `keys` name (see `Shard.handle`).
fn step(shard: &mut AnyShard, counters: &[u64], deltas: &[u8], keys: &[u64]) -> Result<Vec<u8>> {
    match shard {
        Layout::Khmer(s) if counters.is_empty() => s.counts(keys),
        Layout::Khmer(s) => s.apply(counters, deltas).and_then(|()| s.counts(keys)),
        Layout::Blocked(s) => s.apply(counters, deltas).and_then(|()| s.values(keys)),
    }
}

/// Counts `keys` on `shard` in order: each counter's previous value (khmer's layout), or what
/// the adds did to the statistics (the blocked layout).
fn add(shard: &mut AnyShard, keys: &[u64]) -> Result<Answer> {
    match shard {
        Layout::Khmer(s) => s.add(keys).map(Answer::Values),
        Layout::Blocked(s) => s.add(keys).map(Answer::Added),
    }
}

/// A shard's answer as Python takes it: values (uint8), or statistics (a tuple, see `Shard.add`).
fn answer_object(py: Python<'_>, answer: Answer) -> PyResult<Bound<'_, PyAny>> {
    match answer {
        Answer::Values(values) => Ok(values.into_pyarray(py).into_any()),
        Answer::Added(done) => Ok((done.occupied, done.unique, done.added).into_pyobject(py)?.into_any()),
    }
}

/// In a process started with `MALLOC_TRIM_THRESHOLD_` set (a Dask worker: its nanny sets it,
/// in its own process too, so that a client running a LocalCluster's nannies must not call
/// this), lets glibc's allocator keep freed blocks of up to 16 MiB for reuse, holding at most
/// 32 MiB freed: that variable turns off glibc's own adaptive thresholds, so that every buffer
/// of a shard's messages (megabytes each) was mapped, faulted in page by page and unmapped
/// again, a fifth of a worker's time. Nothing elsewhere, nor off glibc.
#[pyfunction]
pub fn keep_message_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_some() {
        // SAFETY: mallopt only changes the allocator's thresholds; any values are valid.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 16 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 32 << 20);
        }
    }
}

/// Refuses `places` other than the blocked shard's place.
fn check_place(shard: &CoreBlockedShard, places: &[(u64, u64)]) -> Result<()> {
    if places != [shard.place()] {
        return Err(Error::invalid(format!("{places:?} is not the place of lines {:?}", shard.lines())));
    }
    Ok(())
}

/// The client's part of a sharded table (either layout): where counters are, the statistics,
/// the bigcounts and the table's file.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct ShardClient {
    inner: AnyClient,
}

impl ShardClient {
    /// The client's part, of either layout.
    pub(crate) fn core(&self) -> &Layout<CoreClient, CoreBlockedClient> {
        &self.inner
    }

    /// k.
    pub(crate) fn ksize(&self) -> usize {
        match &self.inner {
            Layout::Khmer(c) => c.ksize(),
            Layout::Blocked(c) => c.map().params().k,
        }
    }
}

/// What a sharded table is (`ShardClient.description`), fixed when it is made.
#[pyclass(module = "kmerflow._core", frozen, get_all)]
pub struct TableDescription {
    /// k.
    ksize: usize,
    /// Counters per k-mer.
    n_tables: usize,
    /// Bytes of counters of the whole table.
    memory_bytes: u64,
    /// The table sizes (khmer's layout; `None` for the blocked one).
    sizes: Option<Vec<u64>>,
    /// What the shards' ranges count: `"counters"` or `"lines"`.
    unit: &'static str,
    /// Shard `s` holds counters (lines) `bounds[s] .. bounds[s + 1]`.
    bounds: Vec<u64>,
    /// The shape `Shard.zeroed` takes: `None` for khmer's layout.
    shape: Shape,
    /// The places of each shard's counters in the table's file, in shard order.
    places: Vec<Places>,
}

#[pymethods]
impl ShardClient {
    /// A Countgraph (khmer's layout) of k `ksize` and tables of `sizes` cut into `shards` shards.
    #[new]
    #[pyo3(signature = (ksize, sizes, shards, use_bigcount = true))]
    fn new(ksize: usize, sizes: Vec<u64>, shards: usize, use_bigcount: bool) -> PyResult<Self> {
        let inner = CoreClient::new(ksize, HashKind::TwoBit, &sizes, shards, use_bigcount).py()?;
        Ok(ShardClient { inner: Layout::Khmer(inner) })
    }

    /// A blocked table of k `ksize`, `memory_bytes` of counters (whole lines) of `bits` bits
    /// and `probes` counters per k-mer, cut into `shards` shards of whole lines.
    #[staticmethod]
    fn blocked(ksize: usize, memory_bytes: u64, bits: u8, probes: usize, shards: usize) -> PyResult<Self> {
        let params = blocked_params((ksize, memory_bytes, bits, probes))?;
        Ok(ShardClient { inner: Layout::Blocked(CoreBlockedClient::new(params, shards).py()?) })
    }

    /// The client of the table saved at `path` cut into `shards` shards, with its statistics
    /// (and bigcounts); the shards read their counters. `blocked`: a kmerflow table file (its
    /// header and checksum checked), else khmer's uncompressed file of byte counters.
    #[staticmethod]
    fn load(py: Python<'_>, path: &str, shards: usize, blocked: bool) -> PyResult<Self> {
        let inner = py.detach(|| -> Result<AnyClient> {
            if !blocked {
                return Ok(Layout::Khmer(CoreClient::from_frame(ByteFrame::read(path)?, shards)?));
            }
            let (params, stats) = native_format::read_header(path)?;
            // The shards are made from the shape alone (8- or 4-bit counters, the hash for k).
            if params.width == CounterWidth::Bits1 {
                let why = "holds presence bits, not counts: shards hold 8- or 4-bit counters";
                return Err(Error::format(path, None, None, why));
            }
            if params.hash != BlockedParams::new(params.k, 0, params.width, params.probes).hash {
                let why = "hashes k-mers with another scheme than this build's for its k";
                return Err(Error::format(path, None, None, why));
            }
            Ok(Layout::Blocked(CoreBlockedClient::with_stats(params, shards, stats)?))
        });
        Ok(ShardClient { inner: inner.py()? })
    }

    /// What the table is, fixed when it was made.
    #[getter]
    fn description(&self) -> TableDescription {
        let (n_tables, memory_bytes, sizes, unit, bounds, shape, places) = match &self.inner {
            Layout::Khmer(c) => {
                let (map, sizes) = (c.map(), c.map().sizes());
                let frame = ByteFrame { bigcounts: Default::default(), ..c.frame() };
                let places = map.bounds().windows(2).map(|b| frame.places(b[0], b[1])).collect();
                (map.probes(), sizes.iter().sum(), Some(sizes), "counters", map.bounds().to_vec(), None, places)
            }
            Layout::Blocked(c) => {
                let (map, p) = (c.map(), c.map().params());
                let places = (0..map.shards()).map(|s| vec![CoreBlockedShard::place_of(map.lines(s))]).collect();
                let shape = Some((p.k, p.data_bytes(), p.width.bits(), p.probes));
                (p.probes, p.data_bytes(), None, "lines", map.bounds().to_vec(), shape, places)
            }
        };
        TableDescription { ksize: self.ksize(), n_tables, memory_bytes, sizes, unit, bounds, shape, places }
    }

    /// What each shard's worker holds at most: (the shard's bytes, one batch of `batch_kmers`
    /// k-mers' messages, twice: their copies while (de)serialized).
    fn shard_bytes(&self, batch_kmers: u64) -> Vec<(u64, u64)> {
        match &self.inner {
            Layout::Khmer(c) => {
                // At most the batch's counters of each table the shard overlaps, 8 bytes in,
                // 1 out and 9 of updates.
                let mut offsets = vec![0];
                offsets.extend(c.map().sizes().iter().scan(0, |end, size| {
                    *end += size;
                    Some(*end)
                }));
                let tables = |(start, end)| offsets.windows(2).filter(|t| t[0] < end && t[1] > start).count() as u64;
                c.map()
                    .bounds()
                    .windows(2)
                    .map(|b| (b[1] - b[0], 2 * batch_kmers * tables((b[0], b[1])) * 18))
                    .collect()
            }
            Layout::Blocked(c) => {
                // A batch of hashes (in, and as lines), their counters' values and updates.
                let message = 2 * batch_kmers * (16 + 10 * c.map().params().probes as u64);
                let line = CoreBlockedShard::place_of(0..1).1;
                c.map().bounds().windows(2).map(|b| ((b[1] - b[0]) * line, message)).collect()
            }
        }
    }

    /// The statistics now: khmer's `n_occupied` (non-zero counters; of table 0 for khmer's
    /// layout), `n_unique_kmers` and the one-process table's false-positive estimate.
    fn stats(&self) -> (u64, u64, f64) {
        match &self.inner {
            Layout::Khmer(c) => (c.n_occupied(), c.n_unique_kmers(), c.fp_rate()),
            Layout::Blocked(c) => (c.occupancy().occupied, c.occupancy().unique, c.fp_rate()),
        }
    }

    /// The hashes of the k-mers of `sequences` laid end to end (uint64) and where each
    /// sequence's k-mers end (uint64); each cleaned by khmer's C++ parser rule.
    fn hash_reads<'py>(&self, py: Python<'py>, sequences: Vec<Bound<'py, PyString>>) -> PyResult<HashedReads<'py>> {
        let seqs: Vec<&str> = sequences.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        let hash: ReadHasher = match &self.inner {
            Layout::Khmer(c) => Box::new(c.kmer_hasher()),
            Layout::Blocked(c) => {
                let hasher = c.hasher().clone();
                Box::new(move |clean, hashes| hasher.hashes(clean, hashes))
            }
        };
        let (hashes, ends) = py.detach(|| {
            let (mut hashes, mut ends, mut clean) = (Vec::new(), Vec::new(), Vec::new());
            for seq in &seqs {
                clean_parser(seq.as_bytes(), &mut clean);
                hash(&clean, &mut hashes);
                ends.push(hashes.len() as u64);
            }
            (hashes, ends)
        });
        Ok((hashes.into_pyarray(py), ends.into_pyarray(py)))
    }

    /// The hash of the k-mer `kmer` (of k bases).
    fn hash_kmer(&self, py: Python<'_>, kmer: Bound<'_, PyString>) -> PyResult<u64> {
        let k = self.ksize();
        if let Layout::Khmer(_) = &self.inner {
            return crate::hashing::forward_hash(kmer.to_str()?, k);
        }
        let (hashes, _) = self.hash_reads(py, vec![kmer.clone()])?;
        match hashes.readonly().as_slice()? {
            [hash] if kmer.to_str()?.len() == k => Ok(*hash),
            _ => Err(Error::invalid(format!("a k-mer of {k} bases is needed, not {kmer:?}"))).py(),
        }
    }

    /// What a message names for each k-mer of `hashes` (the counter of every position,
    /// probe-major: table `p`'s counter of k-mer `o` at `p * n + o`; for a blocked table, the
    /// hashes) split by shard (input order kept), and the input position of each entry of the
    /// parts laid end to end (uint32), for `unroute`.
    fn route<'py>(
        &self,
        py: Python<'py>,
        hashes: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(Parts<'py>, Bound<'py, PyArray1<u32>>)> {
        let hashes = slice(&hashes, "hashes")?;
        let (parts, order) = py
            .detach(|| match &self.inner {
                Layout::Khmer(c) => c.map().route(&c.map().counters(hashes)),
                Layout::Blocked(c) => c.map().route(hashes),
            })
            .py()?;
        Ok((parts.into_iter().map(|p| p.into_pyarray(py)).collect(), order.into_pyarray(py)))
    }

    /// Records counting `hashes` from the shards' answers to `Shard.add` (in shard order;
    /// `order` from `route`): statistics and bigcounts as a sequential add.
    fn record_adds(
        &self,
        py: Python<'_>,
        hashes: PyReadonlyArray1<'_, u64>,
        order: PyReadonlyArray1<'_, u32>,
        answers: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        match &self.inner {
            Layout::Khmer(c) => {
                let answers: Vec<PyReadonlyArray1<'_, u8>> =
                    answers.iter().map(|a| a.extract()).collect::<PyResult<_>>()?;
                let answers: Vec<&[u8]> = answers.iter().map(|a| slice(a, "answer")).collect::<PyResult<_>>()?;
                let (hashes, order) = (slice(&hashes, "hashes")?, slice(&order, "order")?);
                py.detach(|| c.record_adds(hashes, &ShardMap::unroute(order, &answers)?)).py()
            }
            Layout::Blocked(c) => answers.iter().try_for_each(|a| {
                let (occupied, unique, added): Added = a.extract()?;
                c.record(OccupancyStats { occupied, unique, added });
                Ok(())
            }),
        }
    }

    /// The count of each k-mer of `hashes` (uint32) from the shards' answers to `Shard.counts`
    /// (uint8 arrays in shard order; `order` from `route`): the values of its counters
    /// (probe-major), or its count for a blocked table.
    fn kmer_counts<'py>(
        &self,
        py: Python<'py>,
        hashes: PyReadonlyArray1<'py, u64>,
        order: PyReadonlyArray1<'py, u32>,
        answers: Vec<PyReadonlyArray1<'py, u8>>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let (hashes, order) = (slice(&hashes, "hashes")?, slice(&order, "order")?);
        let answers: Vec<&[u8]> = answers.iter().map(|a| slice(a, "answer")).collect::<PyResult<_>>()?;
        let counts = py.detach(|| {
            let values = ShardMap::unroute(order, &answers)?;
            match &self.inner {
                Layout::Khmer(c) => c.kmer_counts(hashes, &values),
                Layout::Blocked(_) => Ok(values.into_iter().map(u32::from).collect()),
            }
        });
        Ok(counts.py()?.into_pyarray(py))
    }

    /// The whole table as a `Countgraph` (in this process) from the shards' counters (uint8
    /// arrays in shard order), with the statistics and bigcounts (khmer's layout).
    fn gather(&self, py: Python<'_>, cells: Vec<PyReadonlyArray1<'_, u8>>) -> PyResult<Py<Countgraph>> {
        let Layout::Khmer(client) = &self.inner else { return Err(khmer_only("gathering into a Countgraph")) };
        let cells: Vec<&[u8]> = cells.iter().map(|c| slice(c, "cells")).collect::<PyResult<_>>()?;
        let table = py.detach(|| client.gather(&cells)).py()?;
        Py::new(py, PyClassInitializer::from(Table::from_core(table)).add_subclass(Countgraph))
    }

    /// Gathers the table from the shards' counter bytes (uint8 arrays in shard order) and
    /// saves it at `path` in the layout's format (through this process's memory).
    fn save(&self, py: Python<'_>, cells: Vec<PyReadonlyArray1<'_, u8>>, path: std::path::PathBuf) -> PyResult<()> {
        let cells: Vec<&[u8]> = cells.iter().map(|c| slice(c, "cells")).collect::<PyResult<_>>()?;
        let path = path.to_string_lossy().into_owned();
        interruptible(py, |ctx| match &self.inner {
            Layout::Khmer(c) => c.gather(&cells)?.save_in(&path, ctx),
            Layout::Blocked(c) => native_format::save(&c.gather(&cells)?, &path, ctx),
        })?
        .py()
    }

    /// The table file saving `path` shard by shard (see `StagedOutputs`): a new file of the
    /// table's length under a temporary name beside it, everything but the shards' counters
    /// written, and that name; `None` where the save is gathered (`save`): `path` written in place
    /// (a FIFO, a device), or a khmer table compressed by its `.gz` name.
    fn staged_file(&self, py: Python<'_>, path: &str) -> PyResult<Option<(StagedOutputs, String)>> {
        let (len, pieces) = match &self.inner {
            Layout::Khmer(_) if path.ends_with(".gz") => return Ok(None),
            Layout::Khmer(c) => c.frame().pieces(),
            // The header is written by `seal`, once the checksum of the lines can be computed.
            Layout::Blocked(c) => {
                let (offset, len) = CoreBlockedShard::place_of(0..c.map().bounds()[c.map().shards()]);
                (offset + len, Vec::new())
            }
        };
        let Some((staged, temp)) = StagedOutputs::table_file(path, len)? else { return Ok(None) };
        let places: Places = pieces.iter().map(|(offset, bytes)| (*offset, bytes.len() as u64)).collect();
        let bytes: Vec<u8> = pieces.into_iter().flat_map(|(_, bytes)| bytes).collect();
        py.detach(|| shard_file::write_pieces(&temp, &places, &bytes)).py()?;
        Ok(Some((staged, temp)))
    }

    /// Finishes the table file `path` once the shards wrote their counters: for a blocked
    /// table, checksums the lines and writes the header (nothing for khmer's layout).
    fn seal(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        match &self.inner {
            Layout::Khmer(_) => Ok(()),
            Layout::Blocked(c) => py.detach(|| native_format::seal(path, c.map().params(), c.occupancy())).py(),
        }
    }
}

/// Adds the shard classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Shard>()?;
    m.add_class::<ShardClient>()?;
    m.add_class::<TableDescription>()?;
    add_functions!(m, keep_message_memory);
    Ok(())
}
