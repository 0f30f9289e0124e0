//! Sharded tables (`kmerflow-core`'s `shards::khmer`) on numpy arrays: `Shard`, one range of
//! counters (held by a Dask worker or locally), and `ShardClient`, the client's part (routing,
//! statistics, bigcounts, decisions); and the runs over a file on a sharded table of either
//! layout (`ShardedCountRun`, `ShardedNormalizeRun`: one class each, the layout given by the
//! client, through [`PyLayout`]). Every call on many counters releases the GIL.

use crate::batch::slice;
use crate::blocked_shards::BlockedShardClient;
use crate::commands::ShardTerminal;
use crate::errors::IntoPyResult;
use crate::interrupt::warn_message;
use crate::reads::pair_mode;
use crate::tables::{Countgraph, Table};
use kmerflow_core::io::{FastxReader, PairMode, PairedReader};
use kmerflow_core::kmer::clean::clean_parser;
use kmerflow_core::kmer::twobit;
use kmerflow_core::ops::memory::{check_fits, Backing};
use kmerflow_core::run::{CancelToken, RunContext};
use kmerflow_core::shards::blocked::BlockedShardClient as BlockedCore;
use kmerflow_core::shards::khmer::{Shard as CoreShard, ShardClient as CoreClient, ShardMap, Updates};
use kmerflow_core::shards::runs::{BundleBatches, Cleaning, Message, ShardedCount, ShardedNormalize};
use kmerflow_core::shards::ShardLayout;
use kmerflow_core::table::HashKind;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::types::{PyBytes, PyString};
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

/// The shards of a run held in this process (`None` for a remote one), locked for one call.
pub(crate) struct LocalShards<S>(pub(crate) Vec<Option<Py<S>>>);

impl<S: HeldShard> LocalShards<S> {
    /// Which shards are remote.
    pub(crate) fn remote(&self) -> Vec<bool> {
        self.0.iter().map(Option::is_none).collect()
    }

    /// `f` with the local shards locked, without the GIL.
    pub(crate) fn call<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut [Option<&mut S::Core>]) -> R + Send) -> R {
        let mut guards: Vec<Option<MutexGuard<'_, S::Core>>> =
            self.0.iter().map(|s| s.as_ref().map(|s| s.get().lock())).collect();
        let mut shards: Vec<Option<&mut S::Core>> = guards.iter_mut().map(|g| g.as_deref_mut()).collect();
        py.detach(|| f(&mut shards))
    }

    /// A run's `send` with the shards: the next batch's messages to the remote shards as
    /// arrays, `None` at the end.
    pub(crate) fn send<'py>(
        &self,
        py: Python<'py>,
        send: impl FnOnce(&[Option<&mut S::Core>]) -> kmerflow_core::Result<Option<Vec<Message>>> + Send,
    ) -> PyResult<Option<Vec<MessageArrays<'py>>>> {
        let messages = self.call(py, |local| send(local)).py()?;
        Ok(messages.map(|m| message_arrays(py, m)))
    }
}

/// A shard client class of the module, of either layout: the core's client, its shard class
/// and what is particular to its runs.
pub(crate) trait PyLayout: PyClass<Frozen = True> + Sync {
    /// The core's client.
    type Core: ShardLayout;
    /// The module's shard class.
    type Shard: HeldShard<Core = <Self::Core as ShardLayout>::Shard>;
    /// The core's client.
    fn core(&self) -> &Self::Core;
    /// k.
    fn k(&self) -> usize;
    /// The bundles of `reader` in batches of about `batch_kmers` k-mers, hashed by the table's
    /// hash.
    fn batches(&self, reader: PairedReader, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches;
    /// Records the batch sent last by `run` from the remote shards' answers as Python gives
    /// them (in shard order).
    fn record(
        &self,
        py: Python<'_>,
        run: &mut ShardedCount<Self::Core>,
        local: &LocalShards<Self::Shard>,
        answers: &[Bound<'_, PyAny>],
    ) -> PyResult<()>;
}

impl PyLayout for ShardClient {
    type Core = CoreClient;
    type Shard = Shard;

    fn core(&self) -> &CoreClient {
        &self.inner
    }

    fn k(&self) -> usize {
        self.inner.ksize()
    }

    fn batches(&self, reader: PairedReader, batch_kmers: usize, cleaning: Cleaning) -> BundleBatches {
        BundleBatches::new(reader, self.inner.ksize(), batch_kmers, cleaning)
    }

    fn record(
        &self,
        py: Python<'_>,
        run: &mut ShardedCount<CoreClient>,
        local: &LocalShards<Shard>,
        answers: &[Bound<'_, PyAny>],
    ) -> PyResult<()> {
        let arrays: Vec<PyReadonlyArray1<'_, u8>> = answers.iter().map(|a| a.extract()).collect::<PyResult<_>>()?;
        let answers: Vec<&[u8]> = arrays.iter().map(|a| slice(a, "answer")).collect::<PyResult<_>>()?;
        local.call(py, |shards| run.record(&self.inner, shards, &answers)).py()
    }
}

/// A run on a table of one layout: the client, the shards held here and the core's run.
struct Run<P: PyLayout, D> {
    client: Py<P>,
    local: LocalShards<P::Shard>,
    run: D,
}

impl<P: PyLayout, D> Run<P, D> {
    /// A run on `client`'s table with the shards `local` (a shard of the client's layout
    /// when held here, `None` when remote) over the bundles of `path` paired as `mode` says
    /// (reads shorter than k dropped when `drop_short`), made by `start`.
    #[allow(clippy::too_many_arguments)] // the Python constructors' arguments
    fn open(
        py: Python<'_>,
        client: Py<P>,
        local: &Bound<'_, PyAny>,
        (path, mode, drop_short): (std::path::PathBuf, PairMode, bool),
        batch_kmers: usize,
        cleaning: Cleaning,
        terminal: Option<&ShardTerminal>,
        start: impl FnOnce(BundleBatches, &P::Core, Vec<bool>) -> kmerflow_core::Result<D>,
    ) -> PyResult<Self> {
        let local = LocalShards(local.extract()?);
        let layout = client.get();
        let reader = open_reader(py, path, mode, drop_short.then(|| layout.k()), terminal)?;
        let run = start(layout.batches(reader, batch_kmers, cleaning), layout.core(), local.remote()).py()?;
        Ok(Run { client, local, run })
    }
}

/// A run of either layout.
enum Either<P: PyLayout, B: PyLayout, D, E> {
    Khmer(Run<P, D>),
    Blocked(Run<B, E>),
}

/// `$body` on the run of either layout, named `$run`.
macro_rules! either {
    ($either:expr, $run:ident => $body:expr) => {
        match $either {
            Either::Khmer($run) => $body,
            Either::Blocked($run) => $body,
        }
    };
}

/// The run `$open` of either layout on `$client`'s table (a `ShardClient` or a
/// `BlockedShardClient`, named `$layout` in `$open`).
macro_rules! open_either {
    ($client:expr, $layout:ident => $open:expr) => {{
        let client = $client;
        match client.extract::<Py<ShardClient>>() {
            Ok($layout) => Either::Khmer($open?),
            Err(_) => {
                let $layout = client.extract::<Py<BlockedShardClient>>()?;
                Either::Blocked($open?)
            }
        }
    }};
}

type CountRun = Either<ShardClient, BlockedShardClient, ShardedCount<CoreClient>, ShardedCount<BlockedCore>>;

/// Counting a file on a sharded table of either layout (`consume_seqfile`): `send()` reads the
/// next batch and returns one message per remote shard (for its `add`), or `None` at the end;
/// `local()` counts it on the local shards (while the remote shards work); `record(answers)`
/// records the batch from the remote shards' answers.
#[pyclass(module = "kmerflow._core")]
pub struct ShardedCountRun(CountRun);

#[pymethods]
impl ShardedCountRun {
    /// Counting `path` (every record, khmer's C++ cleaning) on `client`'s table (a
    /// `ShardClient` or a `BlockedShardClient`), whose shard `s` is `local[s]` when held in
    /// this process (a shard of that layout) and remote when `None`; the reading advances the
    /// progress line of `terminal` when given.
    #[new]
    #[pyo3(signature = (client, local, path, batch_kmers, terminal = None))]
    fn new(
        py: Python<'_>,
        client: &Bound<'_, PyAny>,
        local: &Bound<'_, PyAny>,
        path: std::path::PathBuf,
        batch_kmers: usize,
        terminal: Option<PyRef<'_, ShardTerminal>>,
    ) -> PyResult<Self> {
        let (input, terminal) = ((path, PairMode::ForceSingle, false), terminal.as_deref());
        Ok(ShardedCountRun(open_either!(client, layout => {
            Run::open(py, layout, local, input.clone(), batch_kmers, Cleaning::Parser, terminal, ShardedCount::new)
        })))
    }

    /// The next batch's messages to the remote shards, `None` at the end.
    fn send<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Vec<MessageArrays<'py>>>> {
        either!(&mut self.0, r => r.local.send(py, |local| r.run.send(local)))
    }

    /// Counts the batch sent last on the local shards (call while the remote shards work).
    fn local(&mut self, py: Python<'_>) -> PyResult<()> {
        either!(&mut self.0, r => r.local.call(py, |local| r.run.local(local)).py())
    }

    /// Records the batch sent last from the remote shards' answers (in shard order: uint8
    /// arrays of previous values for khmer's layout, (occupied, unique, added) for the blocked
    /// one).
    fn record(&mut self, py: Python<'_>, answers: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        either!(&mut self.0, r => r.client.get().record(py, &mut r.run, &r.local, &answers))
    }

    /// (reads, k-mers, reads shorter than k) counted so far.
    #[getter]
    fn totals(&self) -> (u64, u64, u64) {
        either!(&self.0, r => r.run.totals)
    }
}

/// A batch's kept records as text, where each bundle's reads end, and whether each was kept.
type Decisions<'py> = (Bound<'py, PyBytes>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<bool>>);

type NormalizeRun =
    Either<ShardClient, BlockedShardClient, ShardedNormalize<CoreClient>, ShardedNormalize<BlockedCore>>;

/// normalize-by-median of a file on a sharded table of either layout (`normalize_file`):
/// `send()` reads the next batch and returns one message per remote shard (updates to apply,
/// then keys to look up: its `step`), or `None` at the end (at most two batches sent and not
/// decided); `decide(answers)` decides the oldest batch sent, counting on the local shards in
/// place, and returns the kept bundles' records as FASTA/FASTQ bytes and the batch's
/// decisions; `unsent()` the updates left for the remote shards at the end.
#[pyclass(module = "kmerflow._core")]
pub struct ShardedNormalizeRun(NormalizeRun);

#[pymethods]
impl ShardedNormalizeRun {
    /// Normalizing `path` to `cutoff` on `client`'s table (`client` and `local` as for
    /// `ShardedCountRun`); `pairs` as for `open_reads`; reads shorter than k are dropped, as
    /// khmer does; `terminal` as for `ShardedCountRun`.
    #[new]
    #[pyo3(signature = (client, local, path, pairs, cutoff, batch_kmers, terminal = None))]
    #[allow(clippy::too_many_arguments)] // the Python constructor's keywords
    fn new(
        py: Python<'_>,
        client: &Bound<'_, PyAny>,
        local: &Bound<'_, PyAny>,
        path: std::path::PathBuf,
        pairs: &Bound<'_, PyAny>,
        cutoff: u32,
        batch_kmers: usize,
        terminal: Option<PyRef<'_, ShardTerminal>>,
    ) -> PyResult<Self> {
        let input = (path, pair_mode(pairs)?.unwrap_or(PairMode::ForceSingle), true);
        let (terminal, cleaning) = (terminal.as_deref(), Cleaning::ScreedWithText);
        Ok(ShardedNormalizeRun(open_either!(client, layout => {
            let start = |batches, core: &_, remote| ShardedNormalize::new(batches, cutoff, core, remote);
            Run::open(py, layout, local, input.clone(), batch_kmers, cleaning, terminal, start)
        })))
    }

    /// The next batch's messages to the remote shards, `None` at the end.
    fn send<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Vec<MessageArrays<'py>>>> {
        either!(&mut self.0, r => r.local.send(py, |local| r.run.send(local)))
    }

    /// Decides the oldest batch sent from the remote shards' answers (uint8, in shard order);
    /// returns the kept records' text, where each bundle's reads end in the batch (uint64)
    /// and whether each bundle was kept (bool).
    fn decide<'py>(&mut self, py: Python<'py>, answers: Vec<PyReadonlyArray1<'py, u8>>) -> PyResult<Decisions<'py>> {
        let answers: Vec<&[u8]> = answers.iter().map(|a| slice(a, "answer")).collect::<PyResult<_>>()?;
        let mut out = Vec::new();
        let decided = either!(&mut self.0, r => {
            let client = r.client.get().core();
            r.local.call(py, |local| r.run.decide(client, local, &answers, &mut out)).py()?
        });
        Ok((PyBytes::new(py, &out), decided.bundle_ends.into_pyarray(py), decided.keep.into_pyarray(py)))
    }

    /// The updates not sent yet, per shard (counters, deltas; empty for the local shards).
    fn unsent<'py>(&mut self, py: Python<'py>) -> Vec<ShardUpdates<'py>> {
        either!(&mut self.0, r => r.run.unsent()).into_iter().map(|u| updates_arrays(py, u)).collect()
    }

    /// (reads, reads kept, reads dropped for being shorter than k) so far.
    #[getter]
    fn totals(&self) -> (u64, u64, u64) {
        either!(&self.0, r => r.run.totals())
    }
}

/// Adds the shard classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Shard>()?;
    m.add_class::<ShardClient>()?;
    m.add_class::<ShardedCountRun>()?;
    m.add_class::<ShardedNormalizeRun>()?;
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
