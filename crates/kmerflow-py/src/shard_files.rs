//! Sharded tables' files written and read shard by shard (`kmerflow-core`'s
//! `shards::file`): each shard's counters go to (come from) their places in the file from
//! the process that holds the shard, and the client writes (reads) the rest. `StagedFile` is
//! the file being saved, under a temporary name beside the output until committed. Every call
//! on counters releases the GIL.

use crate::batch::slice;
use crate::blocked_shards::{BlockedShard, BlockedShardClient};
use crate::errors::IntoPyResult;
use crate::shards::{HeldShard, Shard, ShardClient};
use kmerflow_core::io::output::{create_regular, is_replaced};
use kmerflow_core::io::Staged;
use kmerflow_core::shards::blocked::BlockedShard as CoreBlockedShard;
use kmerflow_core::shards::blocked::BlockedShardClient as CoreBlockedClient;
use kmerflow_core::shards::file as shard_file;
use kmerflow_core::shards::khmer::ShardClient as CoreClient;
use kmerflow_core::table::khmer_format::ByteFrame;
use kmerflow_core::table::{native_format, BlockedParams, CounterWidth};
use kmerflow_core::Error;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Places in a file: (offset, length) in counter order.
type Places = Vec<(u64, u64)>;

/// A table file being saved: a new file of its full length under a temporary name beside the
/// output (the outputs' naming and mode), renamed over the output by `commit`; dropped or
/// `discard`ed uncommitted, the temporary is removed.
#[pyclass(module = "kmerflow._core")]
pub struct StagedFile {
    staged: Option<Staged>,
    temp: String,
}

#[pymethods]
impl StagedFile {
    /// The file saving `path`, `length` bytes of zeros; `None` when `path` is written in place
    /// (a FIFO, a device), which a file written at offsets cannot be.
    #[staticmethod]
    fn create(path: &str, length: u64) -> PyResult<Option<Self>> {
        if !is_replaced(path).py()? {
            return Ok(None);
        }
        let (file, staged) = create_regular(path).py()?;
        file.set_len(length).map_err(|e| Error::io(path, e)).py()?;
        let temp = staged.written_path().to_string_lossy().into_owned();
        Ok(Some(StagedFile { staged: Some(staged), temp }))
    }

    /// Where the bytes are written until committed.
    #[getter]
    fn temp_path(&self) -> String {
        self.temp.clone()
    }

    /// Writes each (offset, bytes) of `pieces`.
    fn write(&self, py: Python<'_>, pieces: Vec<(u64, Vec<u8>)>) -> PyResult<()> {
        let places: Places = pieces.iter().map(|(offset, bytes)| (*offset, bytes.len() as u64)).collect();
        let bytes: Vec<u8> = pieces.into_iter().flat_map(|(_, bytes)| bytes).collect();
        py.detach(|| shard_file::write_pieces(&self.temp, &places, &bytes)).py()
    }

    /// Renames the file over the output.
    fn commit(&mut self) -> PyResult<()> {
        self.staged.take().map_or(Ok(()), Staged::commit).py()
    }

    /// Removes the temporary file (nothing once committed).
    fn discard(&mut self) {
        self.staged.take();
    }
}

/// The frame of a khmer-layout sharded table's file (everything but the counters): its
/// length and the (offset, bytes) to write.
#[pyfunction]
fn khmer_frame<'py>(py: Python<'py>, client: &ShardClient) -> (u64, Vec<(u64, Bound<'py, PyBytes>)>) {
    let (len, pieces) = client.core().frame().pieces();
    (len, pieces.into_iter().map(|(offset, bytes)| (offset, PyBytes::new(py, &bytes))).collect())
}

/// The places of each shard's counters in the khmer-layout table file, in shard order.
#[pyfunction]
fn khmer_places(client: &ShardClient) -> Vec<Places> {
    let frame = ByteFrame { bigcounts: Default::default(), ..client.core().frame() };
    client.core().map().bounds().windows(2).map(|b| frame.places(b[0], b[1])).collect()
}

/// The client of the uncompressed khmer table file `path` (type 1: byte counters) cut into
/// `shards` shards, with its statistics and bigcounts; the shards read their counters.
#[pyfunction]
fn khmer_client_from_file(py: Python<'_>, path: &str, shards: usize) -> PyResult<ShardClient> {
    let client = py.detach(|| ByteFrame::read(path).and_then(|frame| CoreClient::from_frame(frame, shards))).py()?;
    Ok(ShardClient::from_core(client))
}

/// Writes the counters of `shard` at `places` of the file `path`.
#[pyfunction]
fn khmer_shard_write(py: Python<'_>, shard: &Shard, path: &str, places: Places) -> PyResult<()> {
    py.detach(|| shard_file::write_pieces(path, &places, shard.lock().cells())).py()
}

/// Replaces the counters of `shard` with those at `places` of the file `path`.
#[pyfunction]
fn khmer_shard_read(py: Python<'_>, shard: &Shard, path: &str, places: Places) -> PyResult<()> {
    py.detach(|| shard.lock().read_from(path, &places)).py()
}

/// The place of each shard's lines in the kmerflow table file, in shard order (one place each).
#[pyfunction]
fn blocked_places(client: &BlockedShardClient) -> Vec<Places> {
    let map = client.core().map();
    (0..map.shards()).map(|s| vec![CoreBlockedShard::place_of(map.lines(s))]).collect()
}

/// Writes `shard`'s lines at `places` (their place, from `blocked_places`) of the file `path`.
#[pyfunction]
fn blocked_shard_write(py: Python<'_>, shard: &BlockedShard, path: &str, places: Places) -> PyResult<()> {
    py.detach(|| {
        let shard = shard.lock();
        check_place(&shard, &places)?;
        shard.write_to(path)
    })
    .py()
}

/// Replaces `shard`'s lines with those at `places` (their place) of the file `path`.
#[pyfunction]
fn blocked_shard_read(py: Python<'_>, shard: &BlockedShard, path: &str, places: Places) -> PyResult<()> {
    py.detach(|| {
        let mut shard = shard.lock();
        check_place(&shard, &places)?;
        shard.read_from(path)
    })
    .py()
}

/// Refuses `places` other than the shard's place.
fn check_place(shard: &CoreBlockedShard, places: &[(u64, u64)]) -> kmerflow_core::Result<()> {
    if places != [shard.place()] {
        return Err(Error::invalid(format!("{places:?} is not the place of lines {:?}", shard.lines())));
    }
    Ok(())
}

/// Replaces `shard`'s lines with `cells` (uint8).
#[pyfunction]
fn blocked_shard_set(py: Python<'_>, shard: &BlockedShard, cells: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
    let cells = slice(&cells, "cells")?;
    py.detach(|| shard.lock().set_bytes(cells)).py()
}

/// Finishes the kmerflow table file `path` whose lines the shards wrote: checksums them and
/// writes the header with the client's shape and statistics.
#[pyfunction]
fn blocked_seal(py: Python<'_>, client: &BlockedShardClient, path: &str) -> PyResult<()> {
    let core = client.core();
    py.detach(|| native_format::seal(path, core.map().params(), core.occupancy())).py()
}

/// The client of the kmerflow table file `path` (its header and checksum checked) cut into
/// `shards` shards, with its statistics; the shards read their lines.
#[pyfunction]
fn blocked_client_from_file(py: Python<'_>, path: &str, shards: usize) -> PyResult<BlockedShardClient> {
    let client = py.detach(|| {
        let (params, stats) = native_format::read_header(path)?;
        // The shards are made from the shape alone (8- or 4-bit counters, the hash for k).
        if params.width == CounterWidth::Bits1 {
            return Err(Error::format(
                path,
                None,
                None,
                "holds presence bits, not counts: shards hold 8- or 4-bit counters",
            ));
        }
        if params.hash != BlockedParams::new(params.k, 0, params.width, params.probes).hash {
            return Err(Error::format(
                path,
                None,
                None,
                "hashes k-mers with another scheme than this build's for its k",
            ));
        }
        CoreBlockedClient::with_stats(params, shards, stats)
    });
    Ok(BlockedShardClient::from_core(client.py()?))
}

/// The bytes at `places` of the file `path`, laid end to end (uint8).
#[pyfunction]
fn read_places<'py>(py: Python<'py>, path: &str, places: Places) -> PyResult<Bound<'py, PyArray1<u8>>> {
    Ok(py.detach(|| shard_file::read_pieces(path, &places)).py()?.into_pyarray(py))
}

/// Writes `cells` (uint8) laid end to end at `places` of the file `path`.
#[pyfunction]
fn write_places(py: Python<'_>, path: &str, places: Places, cells: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
    let cells = slice(&cells, "cells")?;
    py.detach(|| shard_file::write_pieces(path, &places, cells)).py()
}

/// Adds the functions and classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StagedFile>()?;
    add_functions!(
        m,
        khmer_frame,
        khmer_places,
        khmer_client_from_file,
        khmer_shard_write,
        khmer_shard_read,
        blocked_places,
        blocked_shard_write,
        blocked_shard_read,
        blocked_shard_set,
        blocked_seal,
        blocked_client_from_file,
        read_places,
        write_places
    );
    Ok(())
}
