//! The one error type of the core library.
//!
//! Every error that reaches a user names the file (and where it applies the record number and
//! line) so that the CLI can print it as a single line.

use std::fmt;

/// Where in an input file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The path as the user gave it (`-` for stdin).
    pub path: String,
    /// 1-based record number, if known.
    pub record: Option<u64>,
    /// 1-based line number, if known.
    pub line: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path)?;
        match (self.record, self.line) {
            (Some(r), Some(l)) => write!(f, ": record {r} (line {l})"),
            (Some(r), None) => write!(f, ": record {r}"),
            (None, Some(l)) => write!(f, ": line {l}"),
            (None, None) => Ok(()),
        }
    }
}

/// Errors of the core library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Malformed input data (bad FASTA/FASTQ record, corrupt compressed stream, bad table file).
    #[error("{location}: {message}")]
    Format {
        /// Where the problem is.
        location: Location,
        /// What is wrong.
        message: String,
    },
    /// Invalid parameters or an impossible request (e.g. k > 32 for a 2-bit table).
    #[error("{0}")]
    Invalid(String),
    /// A shard of a table held by another process (a Dask worker) could not answer: its
    /// worker was lost or the call failed there. The message names the shard and the worker.
    #[error("{0}")]
    Remote(String),
    /// The run was cancelled through its [`crate::run::CancelToken`] (a signal, a
    /// `KeyboardInterrupt`).
    #[error("interrupted")]
    Cancelled,
}

impl Error {
    /// An I/O error on `path`; [`Error::Cancelled`] for a read or open given up because the
    /// run was cancelled ([`crate::io::interruptible::is_cancelled`]).
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        if crate::io::interruptible::is_cancelled(&source) {
            return Error::Cancelled;
        }
        Error::Io { path: path.into(), source }
    }

    /// A format error in `path` at an optional record and line.
    pub fn format(path: impl Into<String>, record: Option<u64>, line: Option<u64>, message: impl Into<String>) -> Self {
        Error::Format { location: Location { path: path.into(), record, line }, message: message.into() }
    }

    /// An invalid-parameter error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::Invalid(message.into())
    }

    /// True when the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Error::Cancelled)
    }

    /// True when this error is a closed pipe downstream (`| head`), which commands treat as a
    /// quiet, successful end.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Result alias of the core library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
