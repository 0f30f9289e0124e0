//! Mapping of core errors to the Python exception hierarchy of `kmerflow.errors`.
//!
//! The classes are defined in Python (multiple inheritance: `FormatError` is also a
//! `ValueError`, `KmerflowIOError` also an `OSError`) and looked up here when an error is raised.

use kmerflow_core::Error;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The `kmerflow.errors` class called `name`.
pub fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    Ok(py.import("kmerflow.errors")?.getattr(name)?.cast_into::<PyType>()?)
}

/// The OS error number of `e`; for an error that carries only its kind (the temporary files of
/// outputs wrap the OS error in one naming the path), the number of that kind, so that Python
/// still picks the standard subclass (`FileNotFoundError`, `PermissionError`, ...).
fn os_errno(e: &std::io::Error) -> Option<i32> {
    use std::io::ErrorKind::*;
    e.raw_os_error().or(match e.kind() {
        NotFound => Some(libc::ENOENT),
        PermissionDenied => Some(libc::EACCES),
        AlreadyExists => Some(libc::EEXIST),
        IsADirectory => Some(libc::EISDIR),
        NotADirectory => Some(libc::ENOTDIR),
        BrokenPipe => Some(libc::EPIPE),
        StorageFull => Some(libc::ENOSPC),
        ReadOnlyFilesystem => Some(libc::EROFS),
        _ => None,
    })
}

/// Builds the Python exception for a core error.
pub fn to_pyerr(err: Error) -> PyErr {
    Python::attach(|py| {
        let built = match &err {
            Error::Io { path, source } => error_class(py, "KmerflowIOError").map(|cls| {
                let errno = os_errno(source).unwrap_or(0);
                PyErr::from_type(cls, (errno, err.to_string(), path.clone()))
            }),
            Error::Format { .. } => error_class(py, "FormatError").map(|cls| PyErr::from_type(cls, err.to_string())),
            Error::Invalid(message) => {
                error_class(py, "ParameterError").map(|cls| PyErr::from_type(cls, message.clone()))
            }
            Error::Remote(message) => error_class(py, "ShardError").map(|cls| PyErr::from_type(cls, message.clone())),
            Error::Cancelled => Ok(pyo3::exceptions::PyKeyboardInterrupt::new_err(err.to_string())),
        };
        built.unwrap_or_else(|_| PyValueError::new_err(err.to_string()))
    })
}

/// The Python exception of a failed command: a `kmerflow.KmerflowIOError` when it failed on a
/// named file (so a missing input is a `FileNotFoundError`, as elsewhere in the API), else a
/// `kmerflow.CommandError` with the command's exit code; the message is the command's error line.
pub fn command_error(err: kmerflow_cli::CliError) -> PyErr {
    let message = err.message.trim_end().to_owned();
    Python::attach(|py| {
        let built = match err.file {
            Some(file) => error_class(py, "KmerflowIOError").map(|cls| {
                let source = match file.os_code {
                    Some(code) => std::io::Error::from_raw_os_error(code),
                    None => std::io::Error::from(file.kind),
                };
                PyErr::from_type(cls, (os_errno(&source).unwrap_or(0), message, file.path))
            }),
            None => error_class(py, "CommandError").map(|cls| PyErr::from_type(cls, (message, err.code))),
        };
        built.unwrap_or_else(|e| e)
    })
}

/// Extension for core results: `.py()?` turns a core error into the Python exception.
pub trait IntoPyResult<T> {
    /// Converts the error side.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}
