//! Sharded tables' files written and read shard by shard (`kmerflow-core`'s
//! `shards::file`): each shard's counters go to (come from) their places in the file from
//! the process that holds the shard (`Shard.write_to`, `Shard.read_from`), and the client
//! writes (reads) the rest. `StagedOutputs` holds the file being saved (and a sharded run's
//! outputs) under a temporary name beside the output until committed; `read_places` and
//! `write_places` carry the counters of a shard whose process does not see the file. Every
//! call on counters releases the GIL.

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

/// Outputs complete but under temporary names (a sharded run's, a table file being saved
/// shard by shard) until `commit()` renames them into place, in the order they were written;
/// `discard()`, or dropping it uncommitted, removes them.
#[pyclass(module = "kmerflow._core")]
pub struct StagedOutputs(Vec<Staged>);

impl StagedOutputs {
    /// The outputs `staged`.
    pub(crate) fn new(staged: Vec<Staged>) -> Self {
        StagedOutputs(staged)
    }

    /// The table file saving `path`, a new file of `length` bytes of zeros under a temporary
    /// name beside it (the outputs' naming and mode), and that name; `None` when `path` is
    /// written in place (a FIFO, a device), which a file written at offsets cannot be.
    pub(crate) fn table_file(path: &str, length: u64) -> PyResult<Option<(Self, String)>> {
        if !is_replaced(path).py()? {
            return Ok(None);
        }
        let (file, staged) = create_regular(path).py()?;
        file.set_len(length).map_err(|e| Error::io(path, e)).py()?;
        let temp = staged.written_path().to_string_lossy().into_owned();
        Ok(Some((StagedOutputs(vec![staged]), temp)))
    }
}

#[pymethods]
impl StagedOutputs {
    /// Renames the outputs into place (once; a failure removes those not renamed yet).
    fn commit(&mut self) -> PyResult<()> {
        std::mem::take(&mut self.0).into_iter().try_for_each(Staged::commit).py()
    }

    /// Removes the outputs (nothing once committed).
    fn discard(&mut self) {
        self.0.clear();
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
    m.add_class::<StagedOutputs>()?;
    add_functions!(m, read_places, write_places);
    Ok(())
}
