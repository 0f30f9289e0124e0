//! khmer's 2-bit k-mer hash (k <= 32), bit-exact (KHMER.md §1.1).

use crate::Result;

/// Largest k of the 2-bit hash.
pub const MAX_K: usize = 32;

/// Canonical 2-bit hash of `kmer` (`len == k`, k <= 32): min(forward, reverse complement).
/// Bytes other than `A`, `T`, `C` count as `G` (forward) / `C` (complement), as in khmer.
pub fn forward_hash(kmer: &[u8]) -> Result<u64> {
    let _ = kmer;
    todo!()
}

/// Forward-strand 2-bit value of `kmer` (no canonicalisation).
pub fn forward_hash_no_rc(kmer: &[u8]) -> Result<u64> {
    let _ = kmer;
    todo!()
}

/// khmer's `reverse_hash`: the k-mer string of a 2-bit value.
pub fn reverse_hash(hash: u64, k: usize) -> String {
    let _ = (hash, k);
    todo!()
}
