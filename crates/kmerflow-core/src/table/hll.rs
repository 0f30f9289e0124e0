//! khmer's HyperLogLog cardinality estimator (docs/khmer-compat.md §4.8), Murmur-hashed k-mers.
//!
//! Register index = the low p bits of the k-mer's hash (khmer's canonical Murmur hash, or for
//! sizing tables a cheaper one: [`HllHash`]); the register keeps the
//! largest rank (leading zeros of the remaining bits, plus one). The estimate is linear
//! counting below khmer's per-p threshold, otherwise the raw HyperLogLog estimate with the
//! HyperLogLog++ empirical bias correction up to 5m.

use super::hll_bias::BIAS_ROWS;
use crate::kmer::{murmur, twobit, Strand};
use crate::{Error, Result};

/// Smallest and largest precision khmer accepts.
const MIN_P: u32 = 4;
const MAX_P: u32 = 16;
/// Linear-counting thresholds for p = 4..=18 (khmer's `THRESHOLD_DATA`).
const THRESHOLDS: [f64; 15] = [
    10.0, 20.0, 40.0, 80.0, 220.0, 400.0, 900.0, 1800.0, 3100.0, 6500.0, 11500.0, 20000.0, 50000.0, 120000.0, 350000.0,
];
/// Bias points averaged around a raw estimate.
const NEIGHBOURS: usize = 6;

/// The most k-mers [`HllCounter::consume_seq`] hashes at once (512 KiB of hashes).
const PIECE_KMERS: usize = 1 << 16;

/// How an [`HllCounter`] hashes k-mers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HllHash {
    /// khmer's canonical Murmur hash (`unique-kmers`, the Python `HLLCounter`: khmer's estimates).
    Khmer,
    /// Murmur's 64-bit finaliser over the canonical 2-bit k-mer, for k <= 32 (khmer's otherwise):
    /// as uniform for the estimate, about five times cheaper. For sizing tables (`-M auto`), where
    /// the estimate need not be khmer's.
    Fast,
}

/// A HyperLogLog counter over k-mers.
#[derive(Debug, Clone)]
pub struct HllCounter {
    p: u32,
    k: usize,
    hash: HllHash,
    strand: Strand,
    registers: Vec<u8>,
    revcomp: Vec<u8>,
    hashes: Vec<u64>,
}

impl HllCounter {
    /// A counter with relative `error_rate` (p = ceil(log2((1.04/e)^2)), 4 <= p <= 16) for k-mers
    /// of length `k`, hashed as khmer does.
    pub fn new(error_rate: f64, k: usize) -> Result<Self> {
        Self::with_hash(error_rate, k, HllHash::Khmer)
    }

    /// [`HllCounter::new`] with the k-mers hashed by `hash`.
    pub fn with_hash(error_rate: f64, k: usize, hash: HllHash) -> Result<Self> {
        let p = ((1.04 / error_rate).powi(2)).log2().ceil();
        if error_rate.is_nan() || error_rate <= 0.0 || !(f64::from(MIN_P)..=f64::from(MAX_P)).contains(&p) {
            return Err(Error::invalid(format!(
                "HyperLogLog error rate {error_rate} is out of range (between 0.0041 and 0.367)"
            )));
        }
        if k == 0 {
            return Err(Error::invalid("k-mer size must be at least 1"));
        }
        let p = p as u32;
        let hash = if k > twobit::MAX_K { HllHash::Khmer } else { hash };
        let strand = Strand::Canonical;
        Ok(Self { p, k, hash, strand, registers: vec![0; 1 << p], revcomp: Vec::new(), hashes: Vec::new() })
    }

    /// The counter, empty, counting k-mers hashed on `strand` (canonical by default).
    pub fn with_strand(mut self, strand: Strand) -> Self {
        self.strand = strand;
        self
    }

    /// The precision p (2^p registers).
    pub fn precision(&self) -> u32 {
        self.p
    }

    /// k.
    pub fn ksize(&self) -> usize {
        self.k
    }

    /// The registers (khmer's `counters`).
    pub fn counters(&self) -> &[u8] {
        &self.registers
    }

    /// Adds one k-mer hash.
    #[inline]
    pub fn add_hash(&mut self, hash: u64) {
        let index = (hash & ((1 << self.p) - 1)) as usize;
        let rest = hash >> self.p;
        // rest has at most 64 - p significant bits: its leading zeros are at least p.
        let rank = (rest.leading_zeros() - self.p + 1) as u8;
        let register = &mut self.registers[index];
        *register = (*register).max(rank);
    }

    /// Adds every k-mer of `seq` (cleaned by the caller); returns the number of k-mers. A long
    /// sequence (a chromosome) is hashed [`PIECE_KMERS`] k-mers at a time, in pieces that
    /// overlap by k - 1 bases, so that no hash per base is held.
    pub fn consume_seq(&mut self, seq: &[u8]) -> u64 {
        let mut hashes = std::mem::take(&mut self.hashes);
        let kmers = (seq.len() + 1).saturating_sub(self.k);
        for first in (0..kmers).step_by(PIECE_KMERS) {
            let end = (first + PIECE_KMERS).min(kmers);
            hashes.clear();
            let piece = &seq[first..end + self.k - 1];
            match self.hash {
                HllHash::Khmer => murmur::hashes(piece, self.k, self.strand, &mut self.revcomp, &mut hashes),
                HllHash::Fast => twobit::hashes(piece, self.k, self.strand, &mut hashes),
            }
            for &hash in &hashes {
                self.add_hash(match self.hash {
                    HllHash::Khmer => hash,
                    HllHash::Fast => murmur::fmix64(hash),
                });
            }
        }
        self.hashes = hashes;
        kmers as u64
    }

    /// Merges `other` (same p, k and hash) register-wise by max.
    pub fn merge(&mut self, other: &HllCounter) -> Result<()> {
        if other.p != self.p || other.k != self.k || other.hash != self.hash || other.strand != self.strand {
            return Err(Error::invalid(format!(
                "cannot merge HyperLogLog counters with different parameters (p {} k {} vs p {} k {})",
                self.p, self.k, other.p, other.k
            )));
        }
        for (mine, theirs) in self.registers.iter_mut().zip(&other.registers) {
            *mine = (*mine).max(*theirs);
        }
        Ok(())
    }

    /// khmer's cardinality estimate.
    pub fn estimate(&self) -> u64 {
        let m = self.registers.len() as f64;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if zeros > 0 {
            let linear = m * (m / zeros as f64).ln();
            if linear <= THRESHOLDS[(self.p - MIN_P) as usize] {
                return linear as u64;
            }
        }
        let sum = self.registers.iter().fold(0.0f64, |acc, &r| acc + 2f64.powi(-i32::from(r)));
        let raw = self.alpha() * m * m / sum;
        if raw <= 5.0 * m {
            (raw - self.bias(raw)) as u64
        } else {
            raw as u64
        }
    }

    fn alpha(&self) -> f64 {
        match self.p {
            4 => 0.673,
            5 => 0.697,
            6 => 0.709,
            _ => 0.7213 / (1.0 + 1.079 / self.registers.len() as f64),
        }
    }

    /// Mean measured bias at the raw-estimate points nearest to `raw` (ties by position).
    fn bias(&self, raw: f64) -> f64 {
        let row = &BIAS_ROWS[(self.p - MIN_P) as usize];
        let mut by_distance: Vec<(f64, usize)> =
            row.raw_estimates.iter().enumerate().map(|(i, &point)| ((raw - point).powi(2), i)).collect();
        by_distance.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let nearest = &by_distance[..NEIGHBOURS.min(by_distance.len())];
        nearest.iter().map(|&(_, i)| row.biases[i]).sum::<f64>() / nearest.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` random bases.
    fn random_bases(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                b"ACGT"[(x >> 62) as usize]
            })
            .collect()
    }

    #[test]
    fn the_fast_hash_estimates_within_the_error_and_is_khmers_above_k_32() {
        for distinct in [1_000usize, 50_000, 2_000_000] {
            let seq = random_bases(distinct + 19, distinct as u64);
            let mut fast = HllCounter::with_hash(0.01, 20, HllHash::Fast).unwrap();
            fast.consume_seq(&seq);
            // Twice the reverse complement adds nothing: the hash is canonical.
            let revcomp: Vec<u8> =
                seq.iter().rev().map(|&b| b"TGCA"[b"ACGT".iter().position(|&c| c == b).unwrap()]).collect();
            fast.consume_seq(&revcomp);
            let error = (fast.estimate() as f64 - distinct as f64).abs() / distinct as f64;
            assert!(error < 0.03, "{distinct}: {}", fast.estimate());
        }
        let long = HllCounter::with_hash(0.01, 40, HllHash::Fast).unwrap();
        assert_eq!(long.hash, HllHash::Khmer);
        let mut khmer = HllCounter::new(0.01, 20).unwrap();
        assert!(khmer.merge(&HllCounter::with_hash(0.01, 20, HllHash::Fast).unwrap()).is_err());
    }

    #[test]
    fn a_sequence_longer_than_a_piece_adds_each_kmer_once() {
        let seq = random_bases(2 * PIECE_KMERS + 50, 99);
        let mut pieces = HllCounter::new(0.01, 25).unwrap();
        assert_eq!(pieces.consume_seq(&seq), (seq.len() - 24) as u64);
        let (mut whole, mut revcomp, mut hashes) = (HllCounter::new(0.01, 25).unwrap(), Vec::new(), Vec::new());
        murmur::canonical_hashes(&seq, 25, &mut revcomp, &mut hashes);
        hashes.iter().for_each(|&h| whole.add_hash(h));
        assert_eq!(pieces.registers, whole.registers);
        assert_eq!(pieces.consume_seq(&seq[..24]), 0);
    }
}
