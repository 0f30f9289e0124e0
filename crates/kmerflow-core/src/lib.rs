//! kmerflow-core: the engine behind the `kmerflow` command and Python package.
//!
//! Layers, each depending only on the ones above it:
//! - [`error`]: the one error type.
//! - [`run`]: the context of one run (threads, metrics, progress, cancellation, messages).
//! - [`pipeline`]: the parallel, order-preserving batch engine (generic over its batches).
//! - [`io`]: the data pump (compressed input sniffed by magic bytes, large chunks read on a
//!   reader thread), the FASTA/FASTQ chunk parser exposing records as borrowed slices,
//!   khmer's pair recognition, and atomic (temp-file + rename) outputs.
//! - [`kmer`]: 2-bit and MurmurHash3 k-mer hashing, bit-exact with khmer, and read cleaning.
//! - [`table`]: Count-Min sketches, Bloom filters, HyperLogLog and their file formats.
//! - [`ops`]: the algorithms behind each command; each takes a [`run::RunContext`], returns
//!   a typed summary and reports through the context's messages (the core never prints).

pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod io;
pub mod kmer;
pub mod ops;
pub mod pipeline;
pub mod run;
pub mod shards;
pub mod table;

pub use error::{Error, Result};

/// The kmerflow version, as printed by `kmerflow --version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
