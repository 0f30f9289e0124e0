//! Large-chunk sequential reading on a dedicated reader thread (the "data pump").
//!
//! The reader thread reads the (decompressed) input in chunks of at least 1 MiB, with
//! `posix_fadvise(SEQUENTIAL)` on regular files, and hands them over a bounded channel so that
//! decompression and I/O overlap with parsing and processing.
