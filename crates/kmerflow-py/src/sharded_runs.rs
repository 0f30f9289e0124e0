//! Commands run natively on a sharded table whose remote shards Python reaches (Dask actors):
//! `run_sharded_command`, trim-low-abund with its first pass deciding on the shards and its
//! second looking up there, and the filtering and the histogram of a table counted on the
//! shards, looked up there.

use crate::commands::{forwarder, ShardTerminal};
use crate::errors::{command_error, error_class, IntoPyResult};
use crate::interrupt::{interruptible, interruptible_showing, warn_message};
use crate::reads::pair_mode;
use crate::shard_files::StagedOutputs;
use crate::shards::{AnyShard, Layout, Shard, ShardClient};
use kmerflow_core::io::{FastxReader, PairMode, PairedReader};
use kmerflow_core::ops::abundance_dist;
use kmerflow_core::ops::filter_abund::{self, FilterParams};
use kmerflow_core::ops::normalize::{PassTable, Tables};
use kmerflow_core::ops::sizing::TableParams;
use kmerflow_core::run::RunContext;
use kmerflow_core::shards::drive::{self, BlockedShards, KeepBatches, KhmerShards, ShardedTable};
use kmerflow_core::shards::runs::{Answer, Cleaning, HashedBundles, RemoteShards, ShardedDecisions};
use kmerflow_core::table::blocked::OccupancyStats;
use kmerflow_core::table::Layout as TableLayout;
use kmerflow_core::{Error, Result};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::ffi::OsString;
use std::sync::MutexGuard;

/// The remote shards as a Python object reaches them: `send(messages)` (one message per remote
/// shard, in shard order, each a uint8 array of `kmerflow_core::shards::wire`, encoded by
/// the run without the GIL), then `answers()` (the answers to the oldest messages not answered yet: two
/// sends may wait), in shard order: uint8 arrays, or a blocked shard's add statistics
/// (occupied, unique, added). The Python side only moves them to the shards' `handle`. A Python
/// exception (a lost worker's `ShardError`, naming the shard and the worker) becomes a remote
/// error with its message.
struct PyRemote(Py<PyAny>);

/// A Python exception of the remote shards as an error: [`Error::Remote`] with its message
/// (a native file error's own, which names the file: a table's save), [`Error::Cancelled`] for
/// a `KeyboardInterrupt` (Ctrl-C, SIGTERM).
fn failure(py: Python<'_>, e: PyErr) -> Error {
    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        return Error::Cancelled;
    }
    let value = e.value(py);
    let file_error = error_class(py, "KmerflowIOError").is_ok_and(|cls| value.is_instance(&cls).unwrap_or(false));
    match value.getattr("strerror").and_then(|s| s.extract::<String>()) {
        Ok(message) if file_error => Error::Remote(message),
        _ => Error::Remote(value.to_string()),
    }
}

impl RemoteShards for PyRemote {
    fn send(&mut self, messages: Vec<Vec<u8>>) -> Result<()> {
        Python::attach(|py| {
            let messages: Vec<_> = messages.into_iter().map(|m| m.into_pyarray(py)).collect();
            self.0.bind(py).call_method1("send", (messages,)).map(drop).map_err(|e| failure(py, e))
        })
    }

    fn answers(&mut self) -> Result<Vec<Answer>> {
        Python::attach(|py| {
            let answer = |a: Bound<'_, PyAny>| -> PyResult<Answer> {
                if let Ok(values) = a.extract::<PyReadonlyArray1<'_, u8>>() {
                    return Ok(Answer::Values(values.as_slice()?.to_vec()));
                }
                let (occupied, unique, added) = a.extract()?;
                Ok(Answer::Added(OccupancyStats { occupied, unique, added }))
            };
            let answers = || -> PyResult<Vec<Answer>> {
                self.0.bind(py).call_method0("answers")?.try_iter()?.map(|a| answer(a?)).collect()
            };
            answers().map_err(|e| failure(py, e))
        })
    }
}

/// The reader of the bundles of `path`, paired as `mode` says, reads shorter than `min_length`
/// dropped (warnings about the input go to Python's `warnings`).
fn open_reader(
    py: Python<'_>,
    path: std::path::PathBuf,
    mode: PairMode,
    min_length: Option<usize>,
) -> PyResult<PairedReader> {
    let path = path.to_string_lossy().into_owned();
    let ctx = RunContext::new();
    let reader = py.detach(|| FastxReader::open_in(&path, &ctx));
    ctx.messages().iter().try_for_each(|m| warn_message(py, m))?;
    Ok(PairedReader::new(reader.py()?, mode, min_length))
}

/// The locked shards held here (`None` for a remote one) as the cores of the layout that
/// `pick` takes out of a shard (a shard of the other layout is refused).
fn picked<'g, T>(
    guards: &'g mut [Option<MutexGuard<'_, AnyShard>>],
    pick: impl Fn(&'g mut AnyShard) -> Option<&'g mut T>,
) -> Result<Vec<Option<&'g mut T>>> {
    let refused = || Error::invalid("a shard held here is not of its table's layout");
    guards.iter_mut().map(|g| g.as_deref_mut().map(|s| pick(s).ok_or_else(refused)).transpose()).collect()
}

/// Binds `$shards` to `$client`'s table (a [`drive::Shards`] of its layout), its `$local` shards
/// locked, and `$remote` to the remote shards (see [`PyRemote`]), then evaluates `$body` (the
/// same code for either layout): `Ok` of its value, or the error of a shard held here of the
/// other layout.
macro_rules! on_shards {
    ($client:expr, $local:expr, $remote:expr, |$shards:pat_param, $r:ident| $body:expr) => {{
        let mut guards: Vec<_> = $local.iter().map(|s| s.as_ref().map(|s| s.get().lock())).collect();
        let $r: &mut dyn RemoteShards = &mut PyRemote($remote);
        match $client.core() {
            Layout::Khmer(client) => picked(&mut guards, |s| match s {
                Layout::Khmer(s) => Some(s),
                Layout::Blocked(_) => None,
            })
            .map(|local| {
                let $shards = KhmerShards { client, local };
                $body
            }),
            Layout::Blocked(client) => picked(&mut guards, |s| match s {
                Layout::Blocked(s) => Some(s),
                Layout::Khmer(_) => None,
            })
            .map(|local| {
                let $shards = BlockedShards { client, local };
                $body
            }),
        }
    }};
}

/// Runs `work` on `client`'s table (either layout), its `local` shards locked for its
/// duration, and on `remote` as the remote shards.
fn with_table<R>(
    client: &ShardClient,
    local: &[Option<Py<Shard>>],
    remote: Py<PyAny>,
    work: impl FnOnce(&mut dyn ShardedTable, &mut dyn RemoteShards) -> R,
) -> Result<R> {
    on_shards!(client, local, remote, |mut shards, remote| work(&mut shards, remote))
}

/// Runs the sharded command line `argv` (program name first; a command without a sharded run
/// is the command line's usage error) on `client`'s table (either layout), whose shard `s` is
/// `local[s]` when held in this process and reached through `remote` (see [`PyRemote`]) when
/// `None`. The table is never gathered; the whole run is native, Python only carries the
/// messages.
/// Every command runs on either layout:
/// - `normalize-by-median`: the one-process command's messages, keep curve, `-R` report,
///   false-positive ceiling and outputs;
/// - `load-into-counting`: the inputs counted, the ceiling checked;
/// - `trim-low-abund`: pass 1 deciding batch by batch on the shards, pass 2 trimming from
///   counts looked up on them;
/// - `filter-abund-single` / `abundance-dist-single`: the input counted on the shards, then
///   the filtering or the histogram looked up there; `filter-abund`: the filtering of a table
///   that holds the counts already.
///
/// Messages go to `on_message(level, text)` as with `run_command`; the reading advances the
/// progress line of `terminal` when given. Returns the summary as JSON text, the outputs
/// written and their [`StagedOutputs`]: none appears until the caller, having saved the table
/// (`-s`, `load-into-counting`'s output) shard by shard, commits them; a failed save discards
/// them. Raises `kmerflow.CommandError` (a lost shard: exit status 1, its message naming the
/// shard).
#[pyfunction]
#[pyo3(signature = (argv, on_message, client, local, remote, terminal = None))]
pub fn run_sharded_command(
    py: Python<'_>,
    argv: Vec<OsString>,
    on_message: Bound<'_, PyAny>,
    client: Py<ShardClient>,
    local: Vec<Option<Py<Shard>>>,
    remote: Py<PyAny>,
    terminal: Option<PyRef<'_, ShardTerminal>>,
) -> PyResult<(String, Vec<String>, StagedOutputs)> {
    let shown = terminal.as_deref().map(ShardTerminal::run);
    let (summary, outputs, staged) = interruptible_showing(py, forwarder(&on_message), shown, |ctx| {
        ctx.files().hold_commits();
        let summary = on_shards!(client.get(), &local, remote, |shards, remote| {
            kmerflow_cli::sharded::run_command(&argv, ctx, shards, remote)
        });
        // Taken on a failure too: dropped, the outputs staged so far are removed.
        let staged = ctx.files().take_held();
        summary.map(|summary| {
            summary.map(|summary| {
                let outputs = ctx.files().outputs().into_iter().chain(staged.iter().map(|s| s.path().to_string()));
                (summary.to_string(), outputs.collect(), StagedOutputs::new(staged))
            })
        })
    })?
    .py()?
    .map_err(command_error)?;
    Ok((summary, outputs, staged))
}

/// The tables of a sharded `normalize`, made on the shards by the Python callable
/// `make(layout, shape)`: `make("khmer", sizes)` a table of khmer's layout with these hash table
/// sizes, 8-bit counters; `make("blocked", [memory_bytes, bits, probes])` a blocked table of this
/// shape (the run's k-mer size). It returns the table's `ShardClient`, its shards held here
/// (`None` for a remote one), its remote shards' calls (see [`PyRemote`]) and the Python
/// table, whose `save(path)` writes it shard by shard.
/// Each batch is looked up and counted on the shards in pieces of `batch_kmers` k-mers.
struct PyTables {
    make: Py<PyAny>,
    batch_kmers: usize,
}

/// What `make` returns (see [`PyTables`]).
type Made = (Py<ShardClient>, Vec<Option<Py<Shard>>>, Py<PyAny>, Py<PyAny>);

impl Tables for PyTables {
    fn with_table(
        &mut self,
        params: &TableParams,
        layout: TableLayout,
        save: Option<&str>,
        ctx: &RunContext,
        work: &mut dyn FnMut(&mut PassTable<'_>, &mut dyn Tables) -> Result<()>,
    ) -> Result<()> {
        let name = if layout == TableLayout::Blocked { "blocked" } else { "khmer" };
        let shape = (name, kmerflow_cli::sharded::sized(params, layout, 1.0, ctx)?);
        let (client, local, remote, table): Made = Python::attach(|py| self.make.bind(py).call1(shape)?.extract())
            .map_err(|e| Python::attach(|py| failure(py, e)))?;
        let batch_kmers = self.batch_kmers;
        with_table(client.get(), &local, remote, |shards, remote| {
            let mut pass = PassTable::Sharded(shards.pass(remote, batch_kmers)?);
            work(&mut pass, self)?;
            match &mut pass {
                // The whole table on the shards, to be saved from there.
                PassTable::Sharded(sharded) => sharded.flush(),
                PassTable::Here(_) => Ok(()),
            }
        })??;
        match save {
            Some(path) => {
                Python::attach(|py| table.bind(py).call_method1("save", (path,)).map(drop).map_err(|e| failure(py, e)))
            }
            None => Ok(()),
        }
    }
}

/// Runs the sharded `normalize` command line `argv` (program name first): the one-process run,
/// each pass's table made on the shards by `make` (see [`PyTables`]), looked up and counted there
/// in pieces of `batch_kmers` k-mers; the first saved shard by shard with `--save-table`.
/// Messages go to `on_message(level, text)` as with `run_sharded_command`, the reading advances
/// the progress line of `terminal` when given. Returns the summary as JSON text and the outputs
/// written. Raises `kmerflow.CommandError` (a lost shard: exit status 1, naming the shard).
#[pyfunction]
#[pyo3(signature = (argv, on_message, make, batch_kmers, terminal = None))]
pub fn run_sharded_normalize(
    py: Python<'_>,
    argv: Vec<OsString>,
    on_message: Bound<'_, PyAny>,
    make: Py<PyAny>,
    batch_kmers: usize,
    terminal: Option<PyRef<'_, ShardTerminal>>,
) -> PyResult<(String, Vec<String>)> {
    let shown = terminal.as_deref().map(ShardTerminal::run);
    let mut tables = PyTables { make, batch_kmers };
    let (summary, outputs) = interruptible_showing(py, forwarder(&on_message), shown, |ctx| {
        kmerflow_cli::sharded::normalize(&argv, ctx, &mut tables)
            .map(|summary| (summary.to_string(), ctx.files().outputs()))
    })?
    .map_err(command_error)?;
    Ok((summary, outputs))
}

/// Counts every read of `path` (khmer's C++ cleaning) on `client`'s table (either layout;
/// `local`, `remote` as for `run_sharded_command`) in batches of about `batch_kmers` k-mers,
/// driven natively: each batch's messages go to the remote shards while the local ones count
/// it. Returns (reads, k-mers, reads shorter than k).
#[pyfunction]
pub fn count_file_sharded(
    py: Python<'_>,
    client: Py<ShardClient>,
    local: Vec<Option<Py<Shard>>>,
    remote: Py<PyAny>,
    path: std::path::PathBuf,
    batch_kmers: usize,
) -> PyResult<(u64, u64, u64)> {
    let reader = open_reader(py, path, PairMode::ForceSingle, None)?;
    interruptible(py, |_| {
        with_table(client.get(), &local, remote, |table, remote| {
            drive::count_file(&mut *table.count(Box::new(reader), batch_kmers)?, remote, |_| Ok(()))
        })?
    })?
    .py()
}

/// normalize-by-median of `path` to `cutoff` on `client`'s table (either layout; `local`,
/// `remote` as for `run_sharded_command`), `pairs` as for `open_reads` (reads shorter than k
/// dropped, as khmer does), in batches of about `batch_kmers` k-mers, driven natively: the
/// next batch is sent before the one answered is decided, and at the end the updates not sent
/// yet reach the remote shards. Each decided batch goes to `on_batch(text, bundle_ends, keep)`:
/// its kept records as FASTA/FASTQ bytes, where each bundle's reads end in the batch (uint64)
/// and whether each was kept (bool). Returns (reads, reads kept, reads shorter than k).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the Python function's keywords
pub fn normalize_file_sharded(
    py: Python<'_>,
    client: Py<ShardClient>,
    local: Vec<Option<Py<Shard>>>,
    remote: Py<PyAny>,
    path: std::path::PathBuf,
    pairs: &Bound<'_, PyAny>,
    cutoff: u32,
    batch_kmers: usize,
    on_batch: Py<PyAny>,
) -> PyResult<(u64, u64, u64)> {
    let mode = pair_mode(pairs)?.unwrap_or(PairMode::ForceSingle);
    let reader = open_reader(py, path, mode, Some(client.get().ksize()))?;
    let mut text = Vec::new();
    let decided = |keep: &[bool], batch: &HashedBundles, _: &dyn KeepBatches| {
        text.clear();
        batch.write_kept(keep, &mut text);
        Python::attach(|py| {
            let (ends, keep) = (batch.bundle_ends.clone().into_pyarray(py), keep.to_vec().into_pyarray(py));
            on_batch.bind(py).call1((PyBytes::new(py, &text), ends, keep)).map(drop).map_err(|e| failure(py, e))
        })
    };
    interruptible(py, |_| {
        with_table(client.get(), &local, remote, |table, remote| {
            let remote_shards = table.remote();
            let mut run = table.decisions(Box::new(reader), Cleaning::ScreedWithRecords, batch_kmers)?;
            let (reads, kept) = drive::normalize_file(&mut *run, remote, &remote_shards, cutoff, decided)?;
            Ok((reads, kept, run.short_dropped()))
        })?
    })?
    .py()
}

/// khmer's `abundance_distribution` of the files `paths` (read in order, one tracking filter)
/// on `client`'s table (either layout; `local`, `remote` as for `run_sharded_command`), the
/// k-mers new to the tracking filter (held here) looked up on the shards in batches of
/// `batch_kmers`: the histogram (uint64, abundances 0 .. 65534). The table is not gathered.
#[pyfunction]
pub fn abundance_distribution_sharded<'py>(
    py: Python<'py>,
    client: Py<ShardClient>,
    local: Vec<Option<Py<Shard>>>,
    remote: Py<PyAny>,
    paths: Vec<String>,
    batch_kmers: usize,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let (histogram, _) = interruptible(py, |ctx| {
        on_shards!(client.get(), &local, remote, |shards, remote| {
            ShardedDecisions::new(shards.client, shards.local, remote, batch_kmers)
                .and_then(|mut decisions| abundance_dist::sharded_histogram_of_files(&mut decisions, &paths, ctx))
        })?
    })?
    .py()?;
    Ok(histogram.into_pyarray(py))
}

/// filter-abund's filtering of the files `inputs` into `output` (FASTA/FASTQ, compressed by its
/// name's extension) on `client`'s table (either layout; `local`, `remote` as for
/// `run_sharded_command`): each read cut before its first k-mer whose count is below `cutoff`,
/// with `normalize_to` (`-V -Z`) only the reads whose median count reaches it, the reads looked
/// up on the shards in batches of `batch_kmers`. Returns the filtering's summary as JSON text.
/// The table is not gathered.
#[pyfunction]
#[pyo3(signature = (client, local, remote, inputs, output, cutoff, normalize_to, batch_kmers))]
#[allow(clippy::too_many_arguments)]
pub fn filter_reads_sharded(
    py: Python<'_>,
    client: Py<ShardClient>,
    local: Vec<Option<Py<Shard>>>,
    remote: Py<PyAny>,
    inputs: Vec<String>,
    output: String,
    cutoff: u32,
    normalize_to: Option<u32>,
    batch_kmers: usize,
) -> PyResult<String> {
    let filter = FilterParams {
        cutoff,
        variable_coverage: normalize_to.is_some(),
        normalize_to: normalize_to.unwrap_or_default(),
        output: Some(output),
        compression: None,
    };
    let summary = interruptible(py, |ctx| {
        on_shards!(client.get(), &local, remote, |shards, remote| {
            ShardedDecisions::new(shards.client, shards.local, remote, batch_kmers)
                .and_then(|decisions| filter_abund::run_sharded(&inputs, &filter, decisions, ctx))
        })?
    })?
    .py()?;
    serde_json::to_string(&summary).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_sharded_command, m)?)?;
    m.add_function(wrap_pyfunction!(run_sharded_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(count_file_sharded, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_file_sharded, m)?)?;
    m.add_function(wrap_pyfunction!(abundance_distribution_sharded, m)?)?;
    m.add_function(wrap_pyfunction!(filter_reads_sharded, m)?)?;
    Ok(())
}
