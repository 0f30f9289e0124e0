//! `ReadReader`: FASTA/FASTQ records (or pairs) handed to Python one batch at a time.
//!
//! A batch (about 1 MiB of input) is read and parsed with the GIL released, then converted to a
//! Python list in one go; `kmerflow.open_reads` hands its items out one at a time
//! (`ReadReader.records()`), so the per-record cost on the Python side is creating three `str`
//! objects and one `Record`. Threads sharing a reader each get different records.

use crate::errors::IntoPyResult;
use crate::interrupt::warn_message;
use kmerflow_core::io::{FastxReader, PairMode, PairedReader, Record as CoreRecord, RecordBatch};
use kmerflow_core::run::RunContext;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyList, PyString, PyTuple};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// One sequence record: `name` (whole header line), `sequence`, `quality` (`None` for FASTA).
#[pyclass(frozen, module = "kmerflow._core")]
pub struct Record {
    /// The header line after `>`/`@`, comment included.
    #[pyo3(get)]
    name: Py<PyString>,
    /// The sequence as in the file.
    #[pyo3(get)]
    sequence: Py<PyString>,
    /// FASTQ qualities, or `None` for FASTA.
    #[pyo3(get)]
    quality: Option<Py<PyString>>,
}

#[pymethods]
impl Record {
    /// A record made in Python (for the streaming filters, or tests).
    #[new]
    #[pyo3(signature = (name, sequence, quality = None))]
    fn py_new(name: Bound<'_, PyString>, sequence: Bound<'_, PyString>, quality: Option<Bound<'_, PyString>>) -> Self {
        new_record(name, sequence, quality)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.sequence.bind(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Record(name={}, sequence={}, quality={})",
            self.name.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
            self.sequence.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
            match &self.quality {
                Some(q) => q.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
                None => "None".to_owned(),
            }
        )
    }
}

/// A record of Python strings (for records made in Rust, e.g. a trimmed copy).
pub fn new_record(
    name: Bound<'_, PyString>,
    sequence: Bound<'_, PyString>,
    quality: Option<Bound<'_, PyString>>,
) -> Record {
    Record { name: name.unbind(), sequence: sequence.unbind(), quality: quality.map(Bound::unbind) }
}

/// A Python `str` of ASCII-ish bytes (invalid UTF-8 is replaced, never an error).
fn py_str<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
    match std::str::from_utf8(bytes) {
        Ok(s) => PyString::new(py, s),
        Err(_) => PyString::new(py, &String::from_utf8_lossy(bytes)),
    }
}

/// Converts one core record to a Python `Record`.
fn to_py_record(py: Python<'_>, rec: &CoreRecord<'_>) -> PyResult<Py<Record>> {
    Py::new(
        py,
        Record {
            name: py_str(py, rec.name).unbind(),
            sequence: py_str(py, rec.seq).unbind(),
            quality: rec.qual.map(|q| py_str(py, q).unbind()),
        },
    )
}

/// The source of batches: plain records or khmer's bundles (one per iterator, so the size
/// difference of the variants costs nothing).
#[allow(clippy::large_enum_variant)]
enum Source {
    Records(FastxReader, Option<usize>),
    Pairs(PairedReader),
}

/// Parses the `pairs` argument of `open_reads`.
pub(crate) fn pair_mode(pairs: &Bound<'_, PyAny>) -> PyResult<Option<PairMode>> {
    if let Ok(flag) = pairs.extract::<bool>() {
        return Ok(flag.then_some(PairMode::BrokenPaired));
    }
    match pairs.extract::<String>()?.as_str() {
        "broken" => Ok(Some(PairMode::BrokenPaired)),
        "require" => Ok(Some(PairMode::RequirePaired)),
        "single" => Ok(Some(PairMode::ForceSingle)),
        other => Err(PyValueError::new_err(format!(
            "pairs must be False, True, 'broken', 'require' or 'single', not {other:?}"
        ))),
    }
}

/// Iterator over batches (Python lists) of records or `(read1, read2_or_None)` tuples; its
/// `records()` iterates them one at a time. Threads may share it: one reads a batch at a time
/// (the others wait with the GIL released) and every item goes to exactly one of them.
#[pyclass(module = "kmerflow._core", frozen)]
pub struct ReadReader {
    state: Mutex<ReaderState>,
}

/// What a `ReadReader` reads from and has read.
struct ReaderState {
    source: Source,
    /// Reads dropped so far for being shorter than `min_length`.
    short_dropped: u64,
    /// The batch `records()` is handing out and the index of its next item.
    current: Option<(Py<PyList>, usize)>,
}

impl ReadReader {
    /// A reader of `source` that has read nothing.
    fn from_source(source: Source) -> Self {
        ReadReader { state: Mutex::new(ReaderState { source, short_dropped: 0, current: None }) }
    }

    /// The state, locked with the GIL released while another thread holds it (a panic in a
    /// holder leaves nothing half-updated that matters: at worst a batch is lost with the error).
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, ReaderState> {
        self.state.lock_py_attached(py).unwrap_or_else(PoisonError::into_inner)
    }

    /// The next item of the batches one at a time; `None` at the end.
    fn next_item<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut state = self.lock(py);
        loop {
            if let Some((batch, next)) = &mut state.current {
                let batch = batch.bind(py);
                if *next < batch.len() {
                    *next += 1;
                    return batch.get_item(*next - 1).map(Some);
                }
            }
            state.current = None;
            let Some(batch) = state.next_batch(py)? else { return Ok(None) };
            state.current = Some((batch.unbind(), 0));
        }
    }
}

/// Iterator over the records (or bundles) of a `ReadReader` one at a time (`ReadReader.records()`).
#[pyclass(module = "kmerflow._core", frozen)]
pub struct RecordIterator {
    reader: Py<ReadReader>,
}

#[pymethods]
impl RecordIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next record (or bundle), `StopIteration` at the end.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.reader.get().next_item(py)
    }
}

#[pymethods]
impl ReadReader {
    /// Opens `path` (`-` for stdin; compression detected from the content). `pairs`: `False`
    /// (records), `True`/`"broken"` (khmer's broken-paired bundles), `"require"` (an orphan is an
    /// error), `"single"` (every record alone, as a bundle). `mate`: a second file whose records
    /// pair with those of `path` in order. `min_length`: drop shorter reads as khmer does.
    #[new]
    #[pyo3(signature = (path, pairs = None, min_length = None, mate = None))]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        pairs: Option<&Bound<'_, PyAny>>,
        min_length: Option<usize>,
        mate: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let mode = match pairs {
            Some(p) => pair_mode(p)?,
            None => None,
        };
        let path = path.to_string_lossy().into_owned();
        let mate = mate.map(|m| m.to_string_lossy().into_owned());
        let ctx = RunContext::new();
        let source = py.detach(|| -> kmerflow_core::Result<Source> {
            if let Some(m) = &mate {
                kmerflow_core::io::mates::refuse_same_mates(&path, m)?;
            }
            let reader = FastxReader::open_in(&path, &ctx)?;
            Ok(match (mate, mode) {
                (Some(m), _) => Source::Pairs(PairedReader::mates(
                    reader,
                    FastxReader::open_in(&m, &ctx)?,
                    mode.unwrap_or(PairMode::RequirePaired),
                    min_length,
                )),
                (None, Some(mode)) => Source::Pairs(PairedReader::new(reader, mode, min_length)),
                (None, None) => Source::Records(reader, min_length),
            })
        });
        ctx.messages().iter().try_for_each(|m| warn_message(py, m))?;
        Ok(ReadReader::from_source(source.py()?))
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The records (or bundles) one at a time, from where the batches are.
    fn records(slf: Py<Self>) -> RecordIterator {
        RecordIterator { reader: slf }
    }

    /// Reads dropped so far for being shorter than `min_length` (with pairs that must stay
    /// together, their mates too), as khmer's scripts count them.
    #[getter]
    fn short_dropped(&self, py: Python<'_>) -> u64 {
        self.lock(py).short_dropped
    }

    /// The next batch as a list (never empty; what `records()` has not handed out of its batch
    /// first), `StopIteration` at the end.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut state = self.lock(py);
        if let Some((batch, next)) = state.current.take() {
            let batch = batch.into_bound(py);
            if next < batch.len() {
                return Ok(Some(batch.get_slice(next, batch.len()).cast_into::<PyList>()?));
            }
        }
        state.next_batch(py)
    }
}

impl ReaderState {
    /// The next non-empty batch; `None` at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        loop {
            let Some(batch) = self.read_batch(py)? else { return Ok(None) };
            if !batch.is_empty() {
                return Ok(Some(batch));
            }
        }
    }

    /// Reads the next batch with the GIL released and converts it; `None` at the end.
    fn read_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        match &mut self.source {
            Source::Records(reader, min_length) => {
                let Some(batch) = py.detach(|| reader.next_batch()).py()? else { return Ok(None) };
                let min = min_length.unwrap_or(0);
                let items = batch
                    .iter()
                    .filter(|r| r.seq.len() >= min)
                    .map(|r| to_py_record(py, &r))
                    .collect::<PyResult<Vec<_>>>()?;
                self.short_dropped += (batch.len() - items.len()) as u64;
                Ok(Some(PyList::new(py, items)?))
            }
            Source::Pairs(reader) => {
                let Some(bundles) = py.detach(|| reader.next_batch()).py()? else { return Ok(None) };
                self.short_dropped += bundles.n_short_dropped;
                let records: &RecordBatch = &bundles.batch;
                let items = bundles
                    .bundles
                    .iter()
                    .map(|b| {
                        let first = to_py_record(py, &records.get(b.first))?.into_any();
                        let second = match b.second {
                            Some(i) => to_py_record(py, &records.get(i))?.into_any(),
                            None => py.None(),
                        };
                        PyTuple::new(py, [first, second])
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(Some(PyList::new(py, items)?))
            }
        }
    }
}
