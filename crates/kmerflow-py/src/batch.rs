//! The three phases of batched decisions (`kmerflow-core`'s `table::batch`) on numpy arrays:
//! `batch_lookup`, `batch_decide` (normalize-by-median's rule) and `batch_apply`. Each releases
//! the GIL. Positions are probe-major: position `p * n + o` is table `p`'s counter of k-mer `o`.

use crate::errors::IntoPyResult;
use crate::tables::Table;
use kmerflow_core::table::batch::{self, BatchLookup, BatchOutcome};
use kmerflow_core::table::ReadCounts;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The decisions of one batch and what they change in the table (for `batch_apply`).
#[pyclass(module = "kmerflow._core", frozen)]
pub struct BatchDecision {
    keep: Vec<bool>,
    delta: Vec<u8>,
    outcome: BatchOutcome,
}

#[pymethods]
impl BatchDecision {
    /// Whether each read is kept (and counted).
    #[getter]
    fn keep<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        self.keep.clone().into_pyarray(py)
    }

    /// The increment of every position's counter (non-zero only at a counter's first position).
    #[getter]
    fn deltas<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        self.delta.clone().into_pyarray(py)
    }

    /// (counters newly occupied, k-mers new to the table, k-mers counted).
    #[getter]
    fn stats(&self) -> (u64, u64, u64) {
        (self.outcome.occupied, self.outcome.unique, self.outcome.added)
    }

    /// The hash of every bigcount increment, in order.
    #[getter]
    fn bigcounts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.outcome.bigcounts.clone().into_pyarray(py)
    }
}

/// A contiguous numpy array as a slice (a clear error for a strided view).
pub(crate) fn slice<'a, T: numpy::Element>(array: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    array.as_slice().map_err(|_| PyValueError::new_err(format!("{name} must be a contiguous 1-D array")))
}

pub(crate) use kmerflow_core::table::batch::{ends_in_order, spans};

/// `(bases, slots)` of a batch as numpy arrays.
type LookupArrays<'py> = (Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<u32>>);

/// Phase 1: the counters of `hashes` as the table stands (`bases`, uint8) and each position's
/// first position with the same counter (`slots`, uint32), looked up by `threads` owner threads.
#[pyfunction]
#[pyo3(signature = (table, hashes, threads = 1))]
fn batch_lookup<'py>(
    py: Python<'py>,
    table: PyRef<'py, Table>,
    hashes: PyReadonlyArray1<'py, u64>,
    threads: usize,
) -> PyResult<LookupArrays<'py>> {
    let (inner, hashes) = (table.inner(), slice(&hashes, "hashes")?);
    let (bases, slots) = py.detach(|| batch::look_up(inner, hashes, threads).map(|l| (l.bases(), l.slots()))).py()?;
    Ok((bases.into_pyarray(py), slots.into_pyarray(py)))
}

/// Phase 2 with normalize-by-median's rule: read `i` (k-mers `read_ends[i-1]..read_ends[i]` of
/// `hashes`) is kept and counted unless its upper-median count, with the earlier kept reads of
/// the batch counted, is at least `cutoff`.
#[pyfunction]
fn batch_decide(
    py: Python<'_>,
    table: PyRef<'_, Table>,
    hashes: PyReadonlyArray1<'_, u64>,
    bases: PyReadonlyArray1<'_, u8>,
    slots: PyReadonlyArray1<'_, u32>,
    read_ends: PyReadonlyArray1<'_, u64>,
    cutoff: u32,
) -> PyResult<BatchDecision> {
    let inner = table.inner();
    let (hashes, bases, slots) = (slice(&hashes, "hashes")?, slice(&bases, "bases")?, slice(&slots, "slots")?);
    let ends = slice(&read_ends, "read_ends")?;
    if !ends_in_order(ends, hashes.len()) {
        return Err(PyValueError::new_err("read_ends must be non-decreasing and at most len(hashes)"));
    }
    let (keep, delta, outcome) = py
        .detach(|| {
            let lookup = BatchLookup::from_arrays(hashes.len(), inner.n_tables(), bases, slots)?;
            batch::decide(inner, hashes, &lookup, |d| {
                spans(ends).map(|read| d.keep_bundle(|| std::iter::once(read.clone()), cutoff)).collect()
            })
        })
        .py()?;
    Ok(BatchDecision { keep, delta, outcome })
}

/// Phase 3: applies `decision` (made from `hashes` and `bases`) to the table with `threads`
/// owner threads.
#[pyfunction]
#[pyo3(signature = (table, hashes, bases, slots, decision, threads = 1))]
fn batch_apply(
    py: Python<'_>,
    table: PyRef<'_, Table>,
    hashes: PyReadonlyArray1<'_, u64>,
    bases: PyReadonlyArray1<'_, u8>,
    slots: PyReadonlyArray1<'_, u32>,
    decision: PyRef<'_, BatchDecision>,
    threads: usize,
) -> PyResult<()> {
    let inner = table.inner();
    let (hashes, bases, slots) = (slice(&hashes, "hashes")?, slice(&bases, "bases")?, slice(&slots, "slots")?);
    let decision = &*decision;
    py.detach(|| {
        let lookup = BatchLookup::from_arrays(hashes.len(), inner.n_tables(), bases, slots)?;
        batch::apply(inner, hashes, &lookup, &decision.delta, &decision.outcome, threads)
    })
    .py()
}

/// Adds the batch functions and class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BatchDecision>()?;
    add_functions!(m, batch_lookup, batch_decide, batch_apply);
    Ok(())
}
