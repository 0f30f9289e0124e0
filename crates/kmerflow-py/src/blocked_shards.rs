//! Sharded blocked tables (`kmerflow-core`'s `shards::blocked`) on numpy arrays:
//! `BlockedShard`, one range of lines (held by a Dask worker or locally), `BlockedShardClient`,
//! the client's part (hashing, routing, statistics, gathering), and `BlockedShardedCountRun`,
//! counting a file. A table's shape is given as k, bytes of counters (whole 64-byte lines),
//! bits per counter (8 or 4) and counters per k-mer, as the one-process table is sized. Every
//! call on many k-mers releases the GIL.

use crate::batch::slice;
use crate::commands::ShardTerminal;
use crate::errors::IntoPyResult;
use crate::reads::pair_mode;
use crate::shards::ShardUpdates;
use crate::shards::{hash_reads_by, open_reader, updates_arrays, HashedReads, HeldShard, LocalShards, MessageArrays};
use kmerflow_core::io::PairMode;
use kmerflow_core::run::RunContext;
use kmerflow_core::shards::blocked::{BlockedShard as CoreShard, BlockedShardClient as CoreClient};
use kmerflow_core::shards::runs::{BundleBatches, Cleaning, ShardedCount, ShardedNormalize};
use kmerflow_core::table::blocked::OccupancyStats;
use kmerflow_core::table::{native_format, BlockedParams, CounterWidth};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::sync::{Mutex, MutexGuard};

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

    fn lock(&self) -> MutexGuard<'_, CoreShard> {
        BlockedShard::lock(self)
    }
}

impl BlockedShard {
    /// The shard, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, CoreShard> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
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

/// Counting a file on a sharded blocked table (`ShardedBlockedTable.consume_seqfile`):
/// `send()` reads the next batch and returns one message per remote shard (its hashes, for its
/// `add`), or `None` at the end; `local()` counts the batch on the local shards (while the
/// remote shards work); `record(answers)` records the remote shards' answers.
#[pyclass(module = "kmerflow._core")]
pub struct BlockedShardedCountRun {
    client: Py<BlockedShardClient>,
    local: LocalShards<BlockedShard>,
    run: ShardedCount<CoreClient>,
}

#[pymethods]
impl BlockedShardedCountRun {
    /// Counting `path` (every record, khmer's C++ cleaning) on `client`'s table, whose shard
    /// `s` is `local[s]` when held in this process and remote when `None`; the reading advances
    /// the progress line of `terminal` when given.
    #[new]
    #[pyo3(signature = (client, local, path, batch_kmers, terminal = None))]
    fn new(
        py: Python<'_>,
        client: Py<BlockedShardClient>,
        local: Vec<Option<Py<BlockedShard>>>,
        path: std::path::PathBuf,
        batch_kmers: usize,
        terminal: Option<PyRef<'_, ShardTerminal>>,
    ) -> PyResult<Self> {
        let reader = open_reader(py, path, PairMode::ForceSingle, None, terminal.as_deref())?;
        let batches =
            BundleBatches::with_hasher(reader, read_hasher(&client.get().inner), batch_kmers, Cleaning::Parser);
        let local = LocalShards(local);
        let run = ShardedCount::new(batches, &client.get().inner, local.remote()).py()?;
        Ok(BlockedShardedCountRun { client, local, run })
    }

    /// The next batch's messages to the remote shards, `None` at the end.
    fn send<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Vec<MessageArrays<'py>>>> {
        let run = &mut self.run;
        self.local.send(py, |local| run.send(local))
    }

    /// Counts the batch sent last on the local shards (call while the remote shards work).
    fn local(&mut self, py: Python<'_>) -> PyResult<()> {
        let run = &mut self.run;
        self.local.call(py, |local| run.local(local)).py()
    }

    /// Records the remote shards' answers to the batch sent last (in shard order).
    fn record(&mut self, py: Python<'_>, answers: Vec<Done>) -> PyResult<()> {
        let answers: Vec<OccupancyStats> = answers.into_iter().map(occupancy).collect();
        let answers: Vec<&OccupancyStats> = answers.iter().collect();
        let (client, run) = (self.client.get(), &mut self.run);
        self.local.call(py, |local| run.record(&client.inner, local, &answers)).py()
    }

    /// (reads, k-mers, reads shorter than k) counted so far.
    #[getter]
    fn totals(&self) -> (u64, u64, u64) {
        self.run.totals
    }
}

/// A batch's kept records as text, where each bundle's reads end, and whether each was kept.
type Decisions<'py> = (Bound<'py, PyBytes>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<bool>>);

/// normalize-by-median of a file on a sharded blocked table
/// (`ShardedBlockedTable.normalize_file`): `send()` reads the next batch and returns one message
/// per remote shard (counters to update, their deltas, hashes to look up: its `step`), or
/// `None` at the end (at most two batches sent and not decided); `decide(answers)` decides the
/// oldest batch sent, counting on the local shards in place, and returns the kept bundles'
/// records and the decisions; `unsent()` the updates left for the remote shards at the end.
#[pyclass(module = "kmerflow._core")]
pub struct BlockedShardedNormalizeRun {
    client: Py<BlockedShardClient>,
    local: LocalShards<BlockedShard>,
    run: ShardedNormalize<CoreClient>,
}

#[pymethods]
impl BlockedShardedNormalizeRun {
    /// Normalizing `path` to `cutoff` on `client`'s table (`local` as for
    /// `BlockedShardedCountRun`); `pairs` as for `open_reads`; reads shorter than k are
    /// dropped, as khmer does; `terminal` as for `BlockedShardedCountRun`.
    #[new]
    #[pyo3(signature = (client, local, path, pairs, cutoff, batch_kmers, terminal = None))]
    #[allow(clippy::too_many_arguments)] // the Python constructor's keywords
    fn new(
        py: Python<'_>,
        client: Py<BlockedShardClient>,
        local: Vec<Option<Py<BlockedShard>>>,
        path: std::path::PathBuf,
        pairs: &Bound<'_, PyAny>,
        cutoff: u32,
        batch_kmers: usize,
        terminal: Option<PyRef<'_, ShardTerminal>>,
    ) -> PyResult<Self> {
        let mode = pair_mode(pairs)?.unwrap_or(PairMode::ForceSingle);
        let core = &client.get().inner;
        let reader = open_reader(py, path, mode, Some(core.map().params().k), terminal.as_deref())?;
        let batches = BundleBatches::with_hasher(reader, read_hasher(core), batch_kmers, Cleaning::ScreedWithText);
        let local = LocalShards(local);
        let run = ShardedNormalize::new(batches, cutoff, core, local.remote()).py()?;
        Ok(BlockedShardedNormalizeRun { client, local, run })
    }

    /// The next batch's messages to the remote shards, `None` at the end (at most two batches
    /// wait).
    fn send<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Vec<MessageArrays<'py>>>> {
        let run = &mut self.run;
        self.local.send(py, |local| run.send(local))
    }

    /// Decides the oldest batch sent from the remote shards' answers (uint8, in shard order;
    /// the next batch may be sent first); returns the kept records' text, where each bundle's
    /// reads end in the batch (uint64) and whether each bundle was kept (bool).
    fn decide<'py>(&mut self, py: Python<'py>, answers: Vec<PyReadonlyArray1<'py, u8>>) -> PyResult<Decisions<'py>> {
        let answers: Vec<&[u8]> = answers.iter().map(|a| slice(a, "answer")).collect::<PyResult<_>>()?;
        let (client, run) = (&self.client.get().inner, &mut self.run);
        let mut out = Vec::new();
        let decided = self.local.call(py, |local| run.decide(client, local, &answers, &mut out)).py()?;
        Ok((PyBytes::new(py, &out), decided.bundle_ends.into_pyarray(py), decided.keep.into_pyarray(py)))
    }

    /// The updates not sent yet, per shard (counters, deltas; empty for the local shards).
    fn unsent<'py>(&mut self, py: Python<'py>) -> Vec<ShardUpdates<'py>> {
        self.run.unsent().into_iter().map(|u| updates_arrays(py, u)).collect()
    }

    /// (reads, reads kept, reads dropped for being shorter than k) so far.
    #[getter]
    fn totals(&self) -> (u64, u64, u64) {
        self.run.totals()
    }
}

/// Each read's k-mers hashed by `client`'s table hash.
fn read_hasher(client: &CoreClient) -> kmerflow_core::shards::runs::ReadHasher {
    let hasher = client.hasher().clone();
    Box::new(move |seq, out| hasher.hashes(seq, out))
}

/// Adds the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BlockedShard>()?;
    m.add_class::<BlockedShardClient>()?;
    m.add_class::<BlockedShardedCountRun>()?;
    m.add_class::<BlockedShardedNormalizeRun>()?;
    Ok(())
}
