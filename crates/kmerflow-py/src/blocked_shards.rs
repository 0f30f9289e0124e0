//! Sharded blocked tables (`kmerflow-core`'s `shards::blocked`) on numpy arrays:
//! `BlockedShard`, one range of lines (held by a Dask worker or locally), `BlockedShardClient`,
//! the client's part (hashing, routing, statistics, gathering). A table's shape is given as k, bytes of counters (whole 64-byte lines),
//! bits per counter (8 or 4) and counters per k-mer, as the one-process table is sized. Every
//! call on many k-mers releases the GIL.

use crate::batch::slice;
use crate::errors::IntoPyResult;
use crate::shards::{hash_reads_by, HashedReads, HeldShard};
use kmerflow_core::run::RunContext;
use kmerflow_core::shards::blocked::{BlockedShard as CoreShard, BlockedShardClient as CoreClient};
use kmerflow_core::table::blocked::OccupancyStats;
use kmerflow_core::table::{native_format, BlockedParams, CounterWidth};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::Mutex;

/// The shape of a blocked table of k `ksize`, `memory_bytes` of counters of `bits` bits and
/// `probes` counters per k-mer.
fn shape(ksize: usize, memory_bytes: u64, bits: u8, probes: usize) -> PyResult<BlockedParams> {
    let width = CounterWidth::from_bits(bits).filter(|&w| w != CounterWidth::Bits1).ok_or_else(|| {
        PyValueError::new_err(format!("a sharded blocked table has 8- or 4-bit counters, not {bits}"))
    })?;
    let params = BlockedParams::new(ksize, memory_bytes, width, probes);
    params.check().py()?;
    Ok(params)
}

/// What a shard's adds did to the statistics: (non-zero counters, adds that found a zero
/// counter, adds).
type Done = (u64, u64, u64);

/// One shard: lines `start .. end` of a blocked table.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct BlockedShard {
    inner: Mutex<CoreShard>,
}

impl HeldShard for BlockedShard {
    type Core = CoreShard;

    fn mutex(&self) -> &Mutex<CoreShard> {
        &self.inner
    }
}

#[pymethods]
impl BlockedShard {
    /// A zeroed shard of lines `start .. end` of the table of that shape.
    #[new]
    fn new(
        py: Python<'_>,
        ksize: usize,
        memory_bytes: u64,
        bits: u8,
        probes: usize,
        start: u64,
        end: u64,
    ) -> PyResult<Self> {
        let params = shape(ksize, memory_bytes, bits, probes)?;
        let inner = py.detach(|| CoreShard::new(params, start..end)).py()?;
        Ok(BlockedShard { inner: Mutex::new(inner) })
    }

    /// (first line, end line).
    #[getter]
    fn lines(&self) -> (u64, u64) {
        let lines = self.lock().lines();
        (lines.start, lines.end)
    }

    /// Adds the k-mer hashes (uint64, all the shard's) in order; returns (non-zero counters,
    /// adds that found a zero counter, adds) that they added to the statistics.
    fn add(&self, py: Python<'_>, hashes: PyReadonlyArray1<'_, u64>) -> PyResult<Done> {
        let hashes = slice(&hashes, "hashes")?;
        let done = py.detach(|| self.lock().add(hashes)).py()?;
        Ok((done.occupied, done.unique, done.added))
    }

    /// The count of each k-mer hash (uint64, all the shard's) as uint8.
    fn counts<'py>(&self, py: Python<'py>, hashes: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let hashes = slice(&hashes, "hashes")?;
        Ok(py.detach(|| self.lock().counts(hashes)).py()?.into_pyarray(py))
    }

    /// Adds `deltas` (uint8) to the distinct `counters` (uint64, numbered line × counters a
    /// line + slot), then returns the values of the counters of `hashes` (uint64, probe-major).
    fn step<'py>(
        &self,
        py: Python<'py>,
        counters: PyReadonlyArray1<'py, u64>,
        deltas: PyReadonlyArray1<'py, u8>,
        hashes: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let (counters, deltas) = (slice(&counters, "counters")?, slice(&deltas, "deltas")?);
        let hashes = slice(&hashes, "hashes")?;
        let values = py.detach(|| {
            let mut shard = self.lock();
            shard.apply(counters, deltas)?;
            shard.values(hashes)
        });
        Ok(values.py()?.into_pyarray(py))
    }

    /// A copy of the counter bytes (uint8).
    fn cells<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        py.detach(|| self.lock().bytes()).into_pyarray(py)
    }
}

/// The client's part of a sharded blocked table: the map of lines, the hasher and the
/// statistics summed from the shards' answers.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct BlockedShardClient {
    inner: CoreClient,
}

impl BlockedShardClient {
    /// The client `inner`.
    pub(crate) fn from_core(inner: CoreClient) -> Self {
        BlockedShardClient { inner }
    }

    /// The core's client.
    pub(crate) fn core(&self) -> &CoreClient {
        &self.inner
    }
}

/// A shard's part of a batch: k-mer hashes (uint64).
type Parts<'py> = Vec<Bound<'py, PyArray1<u64>>>;
#[pymethods]
impl BlockedShardClient {
    /// The table of that shape cut into `shards` shards of whole lines.
    #[new]
    fn new(ksize: usize, memory_bytes: u64, bits: u8, probes: usize, shards: usize) -> PyResult<Self> {
        let params = shape(ksize, memory_bytes, bits, probes)?;
        Ok(BlockedShardClient { inner: CoreClient::new(params, shards).py()? })
    }

    /// k.
    #[getter]
    fn ksize(&self) -> usize {
        self.inner.map().params().k
    }

    /// Bytes of counters of the whole table (whole lines).
    #[getter]
    fn memory_bytes(&self) -> u64 {
        self.inner.map().params().data_bytes()
    }

    /// Bits per counter.
    #[getter]
    fn bits(&self) -> u8 {
        self.inner.map().params().width.bits()
    }

    /// Counters per k-mer.
    #[getter]
    fn probes(&self) -> usize {
        self.inner.map().params().probes
    }

    /// Shard `s` holds lines `bounds[s] .. bounds[s + 1]`.
    #[getter]
    fn bounds(&self) -> Vec<u64> {
        self.inner.map().bounds().to_vec()
    }

    /// Non-zero counters of the whole table.
    fn n_occupied(&self) -> u64 {
        self.inner.occupancy().occupied
    }

    /// Adds that found a zero counter (the distinct k-mer estimate).
    fn n_unique_kmers(&self) -> u64 {
        self.inner.occupancy().unique
    }

    /// The whole table's expected false-positive rate (non-zero fraction ^ probes).
    fn expected_fp_rate(&self) -> f64 {
        self.inner.expected_fp_rate()
    }

    /// The hashes of the k-mers of `sequences` laid end to end (uint64) and where each
    /// sequence's k-mers end (uint64); each cleaned by khmer's C++ parser rule.
    fn hash_reads<'py>(&self, py: Python<'py>, sequences: Vec<Bound<'py, PyString>>) -> PyResult<HashedReads<'py>> {
        let hasher = self.inner.hasher();
        hash_reads_by(py, &sequences, |clean, hashes| hasher.hashes(clean, hashes))
    }

    /// `hashes` split by shard (input order kept) and the input position of each entry of the
    /// parts laid end to end (uint32), for `ShardClient.unroute`.
    fn route<'py>(
        &self,
        py: Python<'py>,
        hashes: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(Parts<'py>, Bound<'py, PyArray1<u32>>)> {
        let hashes = slice(&hashes, "hashes")?;
        let (parts, order) = py.detach(|| self.inner.map().route(hashes)).py()?;
        Ok((parts.into_iter().map(|p| p.into_pyarray(py)).collect(), order.into_pyarray(py)))
    }

    /// Records a shard's answer to `BlockedShard.add`.
    fn record(&self, done: Done) {
        self.inner.record(occupancy(done));
    }

    /// Gathers the table from the shards' counter bytes (uint8 arrays in shard order) and
    /// saves it in kmerflow's format at `path` (through this process's memory).
    fn save(&self, py: Python<'_>, cells: Vec<PyReadonlyArray1<'_, u8>>, path: std::path::PathBuf) -> PyResult<()> {
        let cells: Vec<&[u8]> = cells.iter().map(|c| slice(c, "cells")).collect::<PyResult<_>>()?;
        let path = path.to_string_lossy().into_owned();
        py.detach(|| {
            let table = self.inner.gather(&cells)?;
            native_format::save(&table, &path, &RunContext::new())
        })
        .py()
    }
}

fn occupancy((occupied, unique, added): Done) -> OccupancyStats {
    OccupancyStats { occupied, unique, added }
}

/// Adds the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BlockedShard>()?;
    m.add_class::<BlockedShardClient>()?;
    Ok(())
}
