//! `kmerflow._core`: thin PyO3 bindings over kmerflow-core.
//!
//! - [`batch`]: the three phases of batched decisions on numpy arrays of hashes.
//! - [`shards`]: `Shard` and `ShardClient`, tables split over processes (Dask workers).
//! - [`reads`]: `ReadReader`/`Record`, batches of records crossing into Python at once.
//! - [`tables`]: khmer's table classes over the core `KhmerTable`.
//! - [`hll`]: the `HLLCounter` class.
//! - [`streaming`]: `Normalizer`, `AbundanceFilter`, `Trimmer` over batches of records.
//! - [`hashing`]: module-level hash and prime functions.
//! - [`commands`]: `cli_main` (console script), `run_command` and `command_specs` (Python
//!   command functions).
//! - [`errors`]: core errors → `kmerflow.errors` exceptions.
//!
//! Every method that reads files or touches many k-mers releases the GIL; commands and file
//! reads stop promptly on Ctrl-C ([`interrupt`]).

/// Adds the `#[pyfunction]`s named to the module `m` (in a fn returning `PyResult`):
/// `add_functions!(m, f, g)`.
macro_rules! add_functions {
    ($m:expr, $($function:path),+ $(,)?) => {
        $($m.add_function(pyo3::wrap_pyfunction!($function, $m)?)?;)+
    };
}

mod batch;
mod commands;
mod errors;
mod hashing;
mod hll;
mod interrupt;
mod reads;
mod seqfile;
mod shard_files;
mod sharded_runs;
mod shards;
mod streaming;
mod tables;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // NumPy's C API is looked up on first use, which runs Python code: done here, at import,
    // a signal then cannot land inside that lookup in the middle of a run (a Ctrl-C there
    // became a panic).
    drop(numpy::PyArray1::<u8>::zeros(m.py(), 0, false));
    m.add("__version__", kmerflow_core::VERSION)?;
    m.add_class::<reads::Record>()?;
    m.add_class::<reads::ReadReader>()?;
    m.add_class::<reads::RecordIterator>()?;
    m.add_class::<hll::PyHllCounter>()?;
    tables::register(m)?;
    batch::register(m)?;
    shards::register(m)?;
    shard_files::register(m)?;
    sharded_runs::register(m)?;
    hashing::register(m)?;
    commands::register(m)?;
    streaming::register(m)?;
    Ok(())
}
