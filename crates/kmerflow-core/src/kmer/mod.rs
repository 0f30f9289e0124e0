//! k-mer hashing (khmer's 2-bit and MurmurHash3 hashes, bit-exact) and read cleaning.
//!
//! - [`twobit`]: khmer's 2-bit encoding (A=0, T=1, C=2, G=3), canonical = min(forward,
//!   reverse complement), rolling iteration (docs/khmer-compat.md §1.1).
//! - [`murmur`]: MurmurHash3_x64_128 and khmer's canonical Murmur hash (§1.2).
//! - [`clean`]: the three cleaning rules of khmer (§1.4).

pub mod clean;
pub mod murmur;
pub mod twobit;
