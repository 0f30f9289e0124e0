//! Sharded tables (`kmerflow-core`'s `shards::khmer`) on numpy arrays: `Shard`, one range of
//! counters (held by a Dask worker or locally), and `ShardClient`, the client's part (routing,
//! statistics, bigcounts, decisions); the shard classes of both layouts are locked by a run
//! through [`HeldShard`]. Every call on many counters releases the GIL.

use crate::batch::slice;
use crate::commands::ShardTerminal;
use crate::errors::IntoPyResult;
use crate::interrupt::warn_message;
use crate::tables::{Countgraph, Table};
use kmerflow_core::io::{FastxReader, PairMode, PairedReader};
use kmerflow_core::kmer::clean::clean_parser;
use kmerflow_core::kmer::twobit;
use kmerflow_core::ops::memory::{check_fits, Backing};
use kmerflow_core::run::{CancelToken, RunContext};
use kmerflow_core::shards::khmer::{Shard as CoreShard, ShardClient as CoreClient, ShardMap, Updates};
use kmerflow_core::shards::runs::Message;
use kmerflow_core::shards::ShardLayout as _;
use kmerflow_core::table::HashKind;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::types::PyString;
use pyo3::PyClass;
use std::sync::{Mutex, MutexGuard};

/// One shard: counters `start .. start + size` of a table, one byte each.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct Shard {
    inner: Mutex<CoreShard>,
}

impl HeldShard for Shard {
    type Core = CoreShard;

    fn mutex(&self) -> &Mutex<CoreShard> {
        &self.inner
    }
}

impl Shard {
    fn with<R>(&self, f: impl FnOnce(&mut CoreShard) -> R) -> R {
        f(&mut self.lock())
    }
}

#[pymethods]
impl Shard {
    /// A zeroed shard of `size` counters from `start`, each at most `max`; refused before
    /// allocation when it does not fit in this process's memory limits.
    #[new]
    #[pyo3(signature = (start, size, max = 255))]
    fn new(py: Python<'_>, start: u64, size: u64, max: u8) -> PyResult<Self> {
        check_fits(size as f64, Backing::Memory, "-M/--max-memory-usage or more shards (--shards)").py()?;
        let inner = py.detach(|| CoreShard::new(start, size, max)).py()?;
        Ok(Shard { inner: Mutex::new(inner) })
    }

    /// A shard holding `cells` (uint8, counters from `start`).
    #[staticmethod]
    #[pyo3(signature = (start, cells, max = 255))]
    fn from_cells(start: u64, cells: PyReadonlyArray1<'_, u8>, max: u8) -> PyResult<Self> {
        let inner = CoreShard::from_cells(start, max, slice(&cells, "cells")?.to_vec()).py()?;
        Ok(Shard { inner: Mutex::new(inner) })
    }

    /// First counter.
    #[getter]
    fn start(&self) -> u64 {
        self.with(|s| s.start())
    }

    /// Number of counters (= bytes held).
    #[getter]
    fn size(&self) -> u64 {
        self.with(|s| s.cells().len() as u64)
    }

    /// The values of `counters` (uint64 array) as uint8.
    fn counts<'py>(&self, py: Python<'py>, counters: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let counters = slice(&counters, "counters")?;
        Ok(py.detach(|| self.with(|s| s.counts(counters))).py()?.into_pyarray(py))
    }

    /// Adds one to each counter in order (saturating); returns each one's value before its add.
    fn add<'py>(&self, py: Python<'py>, counters: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let counters = slice(&counters, "counters")?;
        Ok(py.detach(|| self.with(|s| s.add(counters))).py()?.into_pyarray(py))
    }

    /// Adds `deltas` (uint8) to distinct `counters`; refused whole if one would pass the maximum.
    fn apply(
        &self,
        py: Python<'_>,
        counters: PyReadonlyArray1<'_, u64>,
        deltas: PyReadonlyArray1<'_, u8>,
    ) -> PyResult<()> {
        let (counters, deltas) = (slice(&counters, "counters")?, slice(&deltas, "deltas")?);
        py.detach(|| self.with(|s| s.apply(counters, deltas))).py()
    }

    /// How many counters hold each value 0..=255 (uint64, 256 entries).
    fn histogram<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        py.detach(|| self.with(|s| s.histogram())).into_pyarray(py)
    }

    /// A copy of the counters (uint8).
    fn cells<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        py.detach(|| self.with(|s| s.cells().to_vec())).into_pyarray(py)
    }
}

/// The client's part of a sharded byte-counter table: where counters are, the statistics, the
/// bigcount map, and the decisions made from the values the shards return.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct ShardClient {
    inner: CoreClient,
}

impl ShardClient {
    /// The client `inner`.
    pub(crate) fn from_core(inner: CoreClient) -> Self {
        ShardClient { inner }
    }

    /// The core's client.
    pub(crate) fn core(&self) -> &CoreClient {
        &self.inner
    }
}

/// A shard's part of a batch: counter indices (uint64).
type Parts<'py> = Vec<Bound<'py, PyArray1<u64>>>;
/// The k-mer hashes of sequences end to end and where each sequence's end.
pub(crate) type HashedReads<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);
/// One shard's updates: counters and their deltas.
pub(crate) type ShardUpdates<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u8>>);

#[pymethods]
impl ShardClient {
    /// A Countgraph of k `ksize` and tables of `sizes` cut into `shards` shards.
    #[new]
    #[pyo3(signature = (ksize, sizes, shards, use_bigcount = true))]
    fn new(ksize: usize, sizes: Vec<u64>, shards: usize, use_bigcount: bool) -> PyResult<Self> {
        Ok(ShardClient { inner: CoreClient::new(ksize, HashKind::TwoBit, &sizes, shards, use_bigcount).py()? })
    }

    /// k.
    #[getter]
    fn ksize(&self) -> usize {
        self.inner.ksize()
    }

    /// The table sizes.
    #[getter]
    fn sizes(&self) -> Vec<u64> {
        self.inner.map().sizes()
    }

    /// Shard `s` holds counters `bounds[s] .. bounds[s + 1]`.
    #[getter]
    fn bounds(&self) -> Vec<u64> {
        self.inner.map().bounds().to_vec()
    }

    /// khmer's `n_occupied` (counters of table 0 that are not zero).
    fn n_occupied(&self) -> u64 {
        self.inner.n_occupied()
    }

    /// khmer's `n_unique_kmers`.
    fn n_unique_kmers(&self) -> u64 {
        self.inner.n_unique_kmers()
    }

    /// The hashes of the k-mers of `sequences` laid end to end (uint64) and where each
    /// sequence's k-mers end (uint64); each cleaned by khmer's C++ parser rule.
    fn hash_reads<'py>(&self, py: Python<'py>, sequences: Vec<Bound<'py, PyString>>) -> PyResult<HashedReads<'py>> {
        let k = self.inner.ksize();
        hash_reads_by(py, &sequences, |clean, hashes| twobit::canonical_hashes(clean, k, hashes))
    }

    /// The counter of every position of `hashes` (probe-major: table `p`'s counter of k-mer
    /// `o` at `p * n + o`).
    fn counters<'py>(
        &self,
        py: Python<'py>,
        hashes: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let hashes = slice(&hashes, "hashes")?;
        Ok(py.detach(|| self.inner.map().counters(hashes)).into_pyarray(py))
    }

    /// `counters` split by shard (input order kept) and the input position of each entry of
    /// the parts laid end to end (uint32), for `unroute`.
    fn route<'py>(
        &self,
        py: Python<'py>,
        counters: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(Parts<'py>, Bound<'py, PyArray1<u32>>)> {
        let counters = slice(&counters, "counters")?;
        let (parts, order) = py.detach(|| self.inner.map().route(counters)).py()?;
        Ok((parts.into_iter().map(|p| p.into_pyarray(py)).collect(), order.into_pyarray(py)))
    }

    /// The shards' answers (uint8 arrays, in shard order) put back in input order.
    #[staticmethod]
    fn unroute<'py>(
        py: Python<'py>,
        order: PyReadonlyArray1<'py, u32>,
        answers: Vec<PyReadonlyArray1<'py, u8>>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let order = slice(&order, "order")?;
        let answers: Vec<&[u8]> = answers.iter().map(|a| slice(a, "answer")).collect::<PyResult<_>>()?;
        Ok(py.detach(|| ShardMap::unroute(order, &answers)).py()?.into_pyarray(py))
    }

    /// Records counting `hashes`, given every position's value before its add (`previous`,
    /// probe-major, from the shards' `add`): statistics and bigcounts as a sequential add.
    fn record_adds(
        &self,
        py: Python<'_>,
        hashes: PyReadonlyArray1<'_, u64>,
        previous: PyReadonlyArray1<'_, u8>,
    ) -> PyResult<()> {
        let (hashes, previous) = (slice(&hashes, "hashes")?, slice(&previous, "previous")?);
        py.detach(|| self.inner.record_adds(hashes, previous)).py()
    }

    /// The count of each k-mer (uint32) from the values of its counters (probe-major).
    fn kmer_counts<'py>(
        &self,
        py: Python<'py>,
        hashes: PyReadonlyArray1<'py, u64>,
        values: PyReadonlyArray1<'py, u8>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let (hashes, values) = (slice(&hashes, "hashes")?, slice(&values, "values")?);
        Ok(py.detach(|| self.inner.kmer_counts(hashes, values)).py()?.into_pyarray(py))
    }

    /// The whole table as a `Countgraph` (in this process) from the shards' counters (uint8
    /// arrays in shard order), with the statistics and bigcounts.
    fn gather(&self, py: Python<'_>, cells: Vec<PyReadonlyArray1<'_, u8>>) -> PyResult<Py<Countgraph>> {
        let cells: Vec<&[u8]> = cells.iter().map(|c| slice(c, "cells")).collect::<PyResult<_>>()?;
        let table = py.detach(|| self.inner.gather(&cells)).py()?;
        Py::new(py, PyClassInitializer::from(Table::from_core(table)).add_subclass(Countgraph))
    }
}

/// One shard's updates as numpy arrays.
pub(crate) fn updates_arrays(py: Python<'_>, updates: Updates) -> ShardUpdates<'_> {
    (updates.counters.into_pyarray(py), updates.deltas.into_pyarray(py))
}

/// One remote shard's message: (counters to update, their deltas, counters to answer for).
pub(crate) type MessageArrays<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<u64>>);

pub(crate) fn message_arrays(py: Python<'_>, messages: Vec<Message>) -> Vec<MessageArrays<'_>> {
    messages
        .into_iter()
        .map(|m| {
            let (counters, deltas) = updates_arrays(py, m.apply);
            (counters, deltas, m.keys.into_pyarray(py))
        })
        .collect()
}

/// The reader of the bundles of `path`, paired as `mode` says, reads shorter than `min_length`
/// dropped (warnings about the input go to Python's `warnings`); what it reads advances the
/// progress line of `terminal` when given.
pub(crate) fn open_reader(
    py: Python<'_>,
    path: std::path::PathBuf,
    mode: PairMode,
    min_length: Option<usize>,
    terminal: Option<&ShardTerminal>,
) -> PyResult<PairedReader> {
    let path = path.to_string_lossy().into_owned();
    let ctx = match terminal {
        Some(t) => RunContext::build_showing_progress(CancelToken::new(), None, t.run()),
        None => RunContext::new(),
    };
    let reader = py.detach(|| FastxReader::open_in(&path, &ctx));
    ctx.messages().iter().try_for_each(|m| warn_message(py, m))?;
    Ok(PairedReader::new(reader.py()?, mode, min_length))
}

/// A shard class of the module (of either layout), whose core shard a run locks.
pub(crate) trait HeldShard: PyClass<Frozen = True> + Sync {
    /// The core's shard.
    type Core: Send;
    /// The core's shard behind its lock.
    fn mutex(&self) -> &Mutex<Self::Core>;
    /// The shard, locked.
    fn lock(&self) -> MutexGuard<'_, Self::Core> {
        self.mutex().lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Adds the shard classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Shard>()?;
    m.add_class::<ShardClient>()?;
    Ok(())
}

/// The hashes (by `hash`) of the k-mers of `sequences` laid end to end and where each sequence's
/// k-mers end, each sequence cleaned by khmer's C++ parser rule; without the GIL.
pub(crate) fn hash_reads_by<'py>(
    py: Python<'py>,
    sequences: &[Bound<'py, PyString>],
    hash: impl Fn(&[u8], &mut Vec<u64>) + Send + Sync,
) -> PyResult<HashedReads<'py>> {
    let seqs: Vec<&str> = sequences.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
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
