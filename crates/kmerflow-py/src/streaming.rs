//! The streaming read filters (`Normalizer`, `AbundanceFilter`, `Trimmer`): one batch of
//! Python records in, the kept (or trimmed) records out, decided by the core's per-batch
//! functions ([`kmerflow_core::ops::stream`]) with the GIL released. `kmerflow.streaming`
//! subclasses them with the `filter(records)` generators.
//!
//! A record is any object with `name`, `sequence` and `quality` attributes (a `Record` from
//! `open_reads`, for one); with `paired=True` the items are bundles `(read1, read2_or_None)`.
//! Reads shorter than k are dropped, as the commands' readers do.

use crate::reads::new_record;
use crate::tables::Table;
use kmerflow_core::ops::read_filter::Trim;
use kmerflow_core::ops::stream::{filter_batch, normalize_batch, trim_first_pass_batch, FirstPass};
use kmerflow_core::table::CountingTable;
use kmerflow_core::table::{KhmerTable, StorageKind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

/// The sequence of a record, as bytes.
fn sequence(record: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let seq = record.getattr("sequence")?;
    let seq = seq.cast::<PyString>().map_err(|_| PyTypeError::new_err("a record's sequence must be a str"))?;
    Ok(seq.to_str()?.as_bytes().to_vec())
}

/// The records of one item: a record, or a bundle `(read1, read2_or_None)` when `paired`.
fn reads_of<'py>(item: &Bound<'py, PyAny>, paired: bool) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if !paired {
        return Ok(vec![item.clone()]);
    }
    let bundle = item
        .cast::<PyTuple>()
        .map_err(|_| PyTypeError::new_err("with paired=True the items must be (read1, read2_or_None) tuples"))?;
    Ok(bundle.iter().filter(|r| !r.is_none()).collect())
}

/// A table checked to hold counts (a presence table cannot tell abundances).
fn counting_table(table: &Bound<'_, Table>) -> PyResult<Py<Table>> {
    if table.borrow().inner().storage_kind() == StorageKind::Bit {
        return Err(PyValueError::new_err(
            "a presence table (Nodegraph/Nodetable) has no counts: use a counting table",
        ));
    }
    Ok(table.clone().unbind())
}

/// The items of a batch with the sequences of their reads of at least k bases (items left
/// with no read are dropped); when `paired`, the item becomes a new bundle if a read was dropped.
struct Batch<'py> {
    items: Vec<Bound<'py, PyAny>>,
    seqs: Vec<Vec<Vec<u8>>>,
}

impl<'py> Batch<'py> {
    fn new(batch: &Bound<'py, PyList>, paired: bool, k: usize) -> PyResult<Self> {
        let (mut items, mut seqs) = (Vec::new(), Vec::new());
        for item in batch.iter() {
            let reads = reads_of(&item, paired)?;
            let mut kept = Vec::new();
            let mut long = Vec::new();
            for r in &reads {
                let seq = sequence(r)?;
                if seq.len() >= k {
                    kept.push(r.clone());
                    long.push(seq);
                }
            }
            if long.is_empty() {
                continue;
            }
            let item = if kept.len() == reads.len() || !paired {
                item
            } else {
                PyTuple::new(batch.py(), [kept[0].clone(), batch.py().None().into_bound(batch.py())])?.into_any()
            };
            items.push(item);
            seqs.push(long);
        }
        Ok(Batch { items, seqs })
    }
}

/// The record cut to its first `n` bases (and qualities).
fn truncated<'py>(record: &Bound<'py, PyAny>, n: usize) -> PyResult<Bound<'py, PyAny>> {
    let py = record.py();
    let name = record.getattr("name")?;
    let seq = record.getattr("sequence")?.cast_into::<PyString>()?;
    let qual = record.getattr("quality")?;
    let cut = |s: &Bound<'py, PyString>| -> PyResult<Bound<'py, PyString>> {
        let text = s.to_str()?;
        Ok(PyString::new(py, text.get(..n).unwrap_or(text)))
    };
    let qual = if qual.is_none() { None } else { Some(cut(qual.cast::<PyString>()?)?) };
    Ok(Bound::new(py, new_record(name.cast_into::<PyString>()?, cut(&seq)?, qual))?.into_any())
}

/// Appends what `trim` leaves of `record` to `out`.
fn push_trimmed<'py>(out: &Bound<'py, PyList>, record: &Bound<'py, PyAny>, trim: Trim) -> PyResult<()> {
    match trim {
        Trim::Keep => out.append(record),
        Trim::Truncate(n) => out.append(truncated(record, n)?),
        Trim::Drop => Ok(()),
    }
}

/// The records of `batch` (a list of single records) cut before their first k-mer whose count
/// in `table` is below `cutoff` (those of a median count below `keep_whole_below` kept whole),
/// in order: the filter of `AbundanceFilter` and of the `Trimmer`'s second pass.
fn abundance_filtered<'py>(
    table: &Py<Table>,
    batch: &Bound<'py, PyList>,
    cutoff: u32,
    keep_whole_below: Option<u32>,
) -> PyResult<Bound<'py, PyList>> {
    let py = batch.py();
    let table = table.bind(py).borrow();
    let inner: &KhmerTable = table.inner();
    let b = Batch::new(batch, false, inner.ksize())?;
    let seqs: Vec<&Vec<u8>> = b.seqs.iter().map(|s| &s[0]).collect();
    let trims = py.detach(|| filter_batch(inner, &seqs, cutoff, keep_whole_below));
    let out = PyList::empty(py);
    for (item, trim) in b.items.iter().zip(trims) {
        push_trimmed(&out, item, trim)?;
    }
    Ok(out)
}

/// Digital normalization of a stream of reads or bundles (normalize-by-median).
#[pyclass(subclass, frozen, module = "kmerflow._core")]
pub struct Normalizer {
    /// The table.
    #[pyo3(get)]
    table: Py<Table>,
    cutoff: u32,
    paired: bool,
}

#[pymethods]
impl Normalizer {
    /// Normalizes into `table` (a counting table, updated as reads are kept): a read, or a
    /// bundle when `paired`, is kept unless each of its reads has a median k-mer count of at
    /// least `cutoff`.
    #[new]
    #[pyo3(signature = (table, cutoff = 20, paired = false))]
    fn new(table: &Bound<'_, Table>, cutoff: u32, paired: bool) -> PyResult<Self> {
        Ok(Normalizer { table: counting_table(table)?, cutoff, paired })
    }

    /// The kept items of one batch (a list), in order.
    fn filter_batch<'py>(&self, batch: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
        let py = batch.py();
        let table = self.table.bind(py).borrow();
        let inner: &KhmerTable = table.inner();
        let b = Batch::new(batch, self.paired, inner.ksize())?;
        let cutoff = self.cutoff;
        let keep = py.detach(|| normalize_batch(inner, &b.seqs, cutoff));
        PyList::new(py, b.items.into_iter().zip(keep).filter_map(|(item, k)| k.then_some(item)))
    }
}

/// Abundance filtering of a stream of reads (filter-abund).
#[pyclass(subclass, frozen, module = "kmerflow._core")]
pub struct AbundanceFilter {
    /// The table.
    #[pyo3(get)]
    table: Py<Table>,
    cutoff: u32,
    variable_coverage: Option<u32>,
}

#[pymethods]
impl AbundanceFilter {
    /// Cuts each read before its first k-mer whose count in `table` is below `cutoff`, dropping
    /// it when fewer than k bases remain; with `variable_coverage`, reads whose median count is
    /// below `normalize_to` are kept whole. The table is only read.
    #[new]
    #[pyo3(signature = (table, cutoff = 2, variable_coverage = false, normalize_to = 20))]
    fn new(table: &Bound<'_, Table>, cutoff: u32, variable_coverage: bool, normalize_to: u32) -> PyResult<Self> {
        Ok(AbundanceFilter {
            table: counting_table(table)?,
            cutoff,
            variable_coverage: variable_coverage.then_some(normalize_to),
        })
    }

    /// The kept (possibly truncated) records of one batch (a list), in order.
    fn filter_batch<'py>(&self, batch: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
        abundance_filtered(&self.table, batch, self.cutoff, self.variable_coverage)
    }
}

/// Two-pass trimming of a stream of reads or bundles (trim-low-abund).
#[pyclass(subclass, frozen, module = "kmerflow._core")]
pub struct Trimmer {
    /// The table.
    #[pyo3(get)]
    table: Py<Table>,
    cutoff: u32,
    trim_at_coverage: u32,
    variable_coverage: bool,
    paired: bool,
}

#[pymethods]
impl Trimmer {
    /// trim-low-abund into `table` (a counting table): a read or bundle whose median count is
    /// at least `trim_at_coverage` is trimmed at `cutoff` at once; others are counted and set
    /// aside, to be trimmed by `second_pass_batch` against the final table (with
    /// `variable_coverage`, those still below `trim_at_coverage` are kept whole).
    #[new]
    #[pyo3(signature = (table, cutoff = 2, trim_at_coverage = 20, variable_coverage = false, paired = false))]
    fn new(
        table: &Bound<'_, Table>,
        cutoff: u32,
        trim_at_coverage: u32,
        variable_coverage: bool,
        paired: bool,
    ) -> PyResult<Self> {
        Ok(Trimmer { table: counting_table(table)?, cutoff, trim_at_coverage, variable_coverage, paired })
    }

    /// The first pass over one batch: `(trimmed, set_aside)`, the records trimmed now and the
    /// records set aside (single records, in order).
    fn first_pass_batch<'py>(&self, batch: &Bound<'py, PyList>) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let py = batch.py();
        let table = self.table.bind(py).borrow();
        let inner: &KhmerTable = table.inner();
        let b = Batch::new(batch, self.paired, inner.ksize())?;
        let (cutoff, z) = (self.cutoff, self.trim_at_coverage);
        let decisions = py.detach(|| trim_first_pass_batch(inner, &b.seqs, cutoff, z));
        let (trimmed, aside) = (PyList::empty(py), PyList::empty(py));
        for (item, decision) in b.items.iter().zip(decisions) {
            let reads = reads_of(item, self.paired)?;
            match decision {
                FirstPass::Trimmed(trims) => {
                    for (r, t) in reads.iter().zip(trims) {
                        push_trimmed(&trimmed, r, t)?;
                    }
                }
                FirstPass::SetAside => reads.iter().try_for_each(|r| aside.append(r))?,
            }
        }
        Ok((trimmed, aside))
    }

    /// The second pass over set-aside records (a list): the kept, possibly truncated, records.
    fn second_pass_batch<'py>(&self, batch: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
        abundance_filtered(&self.table, batch, self.cutoff, self.variable_coverage.then_some(self.trim_at_coverage))
    }
}

/// Registers the classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Normalizer>()?;
    m.add_class::<AbundanceFilter>()?;
    m.add_class::<Trimmer>()?;
    Ok(())
}
