//! `HLLCounter`: khmer's HyperLogLog k-mer cardinality estimator, shareable by threads.
//!
//! The registers sit behind a mutex that is only taken with the GIL released, so calls from
//! several Python threads never fail with "Already borrowed" and never lose an update. A file
//! is counted into a private counter (in parallel with other threads) and merged at the end.

use crate::errors::IntoPyResult;
use crate::interrupt::interruptible;
use crate::seqfile::for_each_clean_read;
use kmerflow_core::table::hll::HllCounter;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Mutex, MutexGuard};

/// HyperLogLog counter of distinct k-mers (Murmur-hashed, canonical).
#[pyclass(name = "HLLCounter", module = "kmerflow._core", frozen)]
pub struct PyHllCounter {
    inner: Mutex<HllCounter>,
    ksize: usize,
    error_rate: f64,
}

impl PyHllCounter {
    /// The registers (a panic in another thread cannot leave them half-updated: every update
    /// is a register-wise maximum).
    fn lock(&self) -> MutexGuard<'_, HllCounter> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the registers, taken with the GIL released.
    fn snapshot(&self, py: Python<'_>) -> HllCounter {
        py.detach(|| self.lock().clone())
    }
}

#[pymethods]
impl PyHllCounter {
    /// A counter with relative `error_rate` (0.0041..0.37) for k-mers of length `ksize`.
    #[new]
    #[pyo3(signature = (error_rate = 0.01, ksize = 20))]
    fn new(error_rate: f64, ksize: usize) -> PyResult<Self> {
        Ok(PyHllCounter { inner: Mutex::new(HllCounter::new(error_rate, ksize).py()?), ksize, error_rate })
    }

    /// k.
    #[getter]
    fn ksize(&self) -> usize {
        self.ksize
    }

    /// The error rate the counter was created with.
    #[getter]
    fn error_rate(&self) -> f64 {
        self.error_rate
    }

    /// Adds one k-mer (`len(kmer) == ksize`).
    fn add(&self, py: Python<'_>, kmer: &str) -> PyResult<()> {
        if kmer.len() != self.ksize {
            return Err(PyValueError::new_err(format!(
                "k-mer length {} does not match ksize {}",
                kmer.len(),
                self.ksize
            )));
        }
        py.detach(|| self.lock().consume_seq(kmer.as_bytes()));
        Ok(())
    }

    /// Adds every k-mer of `seq` (no cleaning); returns the number of k-mers.
    fn consume_string(&self, py: Python<'_>, seq: &str) -> u64 {
        py.detach(|| self.lock().consume_seq(seq.as_bytes()))
    }

    /// Adds every k-mer of every read of `path` (non-ACGT → `A`), GIL released; returns
    /// `(n_reads, n_kmers)`.
    fn consume_seqfile(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<(u64, u64)> {
        let path = path.to_string_lossy().into_owned();
        interruptible(py, |ctx| {
            let mut own = HllCounter::new(self.error_rate, self.ksize)?;
            let mut n_kmers = 0;
            let n_reads = for_each_clean_read(&path, ctx, |seq| n_kmers += own.consume_seq(seq))?;
            self.lock().merge(&own)?;
            Ok((n_reads, n_kmers))
        })?
        .py()
    }

    /// The estimated number of distinct k-mers.
    fn estimate_cardinality(&self, py: Python<'_>) -> u64 {
        py.detach(|| self.lock().estimate())
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.estimate_cardinality(py) as usize
    }

    /// Merges `other` (same error rate and k) into this counter.
    fn merge(&self, py: Python<'_>, other: &Bound<'_, PyHllCounter>) -> PyResult<()> {
        // A copy of `other` first: never two locks at once (no deadlock between `a.merge(b)`
        // and `b.merge(a)` in two threads, nor for `a.merge(a)`).
        let other = other.get().snapshot(py);
        py.detach(|| self.lock().merge(&other)).py()
    }
}
