//! Sharded tables' files written and read shard by shard (`kmerflow-core`'s
//! `shards::file`): each shard's counters go to (come from) their places in the file from
//! the process that holds the shard (`Shard.write_to`, `Shard.read_from`), and the client
//! writes (reads) the rest. `StagedFile` is the file being saved, under a temporary name
//! beside the output until committed; `read_places` and `write_places` carry the counters of
//! a shard whose process does not see the file. Every call on counters releases the GIL.

use crate::batch::slice;
use crate::errors::IntoPyResult;
use kmerflow_core::io::output::{create_regular, is_replaced};
use kmerflow_core::io::Staged;
use kmerflow_core::shards::file as shard_file;
use kmerflow_core::Error;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

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
    add_functions!(m, read_places, write_places);
    Ok(())
}
