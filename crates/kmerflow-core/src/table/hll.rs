//! khmer's HyperLogLog cardinality estimator (KHMER.md §4.8), Murmur-hashed k-mers.

use crate::Result;

/// A HyperLogLog counter over k-mers.
#[derive(Debug, Clone)]
pub struct HllCounter {
    _private: (),
}

impl HllCounter {
    /// A counter with relative `error_rate` (p = ceil(log2((1.04/e)^2)), 4 <= p <= 16) for k-mers
    /// of length `k`.
    pub fn new(error_rate: f64, k: usize) -> Result<Self> {
        let _ = (error_rate, k);
        todo!()
    }

    /// Adds every k-mer of `seq` (cleaned by the caller); returns the number of k-mers.
    pub fn consume_seq(&mut self, seq: &[u8]) -> u64 {
        let _ = seq;
        todo!()
    }

    /// Merges `other` (same p and k) register-wise by max.
    pub fn merge(&mut self, other: &HllCounter) -> Result<()> {
        let _ = other;
        todo!()
    }

    /// khmer's cardinality estimate.
    pub fn estimate(&self) -> u64 {
        todo!()
    }
}
