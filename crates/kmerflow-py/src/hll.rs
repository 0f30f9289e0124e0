//! `HLLCounter`: khmer's HyperLogLog k-mer cardinality estimator.

use crate::errors::IntoPyResult;
use crate::seqfile::for_each_clean_read;
use kmerflow_core::table::hll::HllCounter;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// HyperLogLog counter of distinct k-mers (Murmur-hashed, canonical).
#[pyclass(name = "HLLCounter", module = "kmerflow._core")]
pub struct PyHllCounter {
    inner: HllCounter,
    ksize: usize,
    error_rate: f64,
}

#[pymethods]
impl PyHllCounter {
    /// A counter with relative `error_rate` (0.0041..0.37) for k-mers of length `ksize`.
    #[new]
    #[pyo3(signature = (error_rate = 0.01, ksize = 20))]
    fn new(error_rate: f64, ksize: usize) -> PyResult<Self> {
        Ok(PyHllCounter { inner: HllCounter::new(error_rate, ksize).py()?, ksize, error_rate })
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
    fn add(&mut self, kmer: &str) -> PyResult<()> {
        if kmer.len() != self.ksize {
            return Err(PyValueError::new_err(format!(
                "k-mer length {} does not match ksize {}",
                kmer.len(),
                self.ksize
            )));
        }
        self.inner.consume_seq(kmer.as_bytes());
        Ok(())
    }

    /// Adds every k-mer of `seq` (no cleaning); returns the number of k-mers.
    fn consume_string(&mut self, py: Python<'_>, seq: &str) -> u64 {
        let inner = &mut self.inner;
        py.detach(|| inner.consume_seq(seq.as_bytes()))
    }

    /// Adds every k-mer of every read of `path` (non-ACGT → `A`), GIL released; returns
    /// `(n_reads, n_kmers)`.
    fn consume_seqfile(&mut self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<(u64, u64)> {
        let inner = &mut self.inner;
        let path = path.to_string_lossy().into_owned();
        py.detach(|| {
            let mut n_kmers = 0;
            let n_reads = for_each_clean_read(&path, |seq| n_kmers += inner.consume_seq(seq))?;
            Ok((n_reads, n_kmers))
        })
        .py()
    }

    /// The estimated number of distinct k-mers.
    fn estimate_cardinality(&self) -> u64 {
        self.inner.estimate()
    }

    fn __len__(&self) -> usize {
        self.inner.estimate() as usize
    }

    /// Merges `other` (same error rate and k) into this counter.
    fn merge(&mut self, other: PyRef<'_, PyHllCounter>) -> PyResult<()> {
        self.inner.merge(&other.inner).py()
    }
}
