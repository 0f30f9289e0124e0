//! The 64-bit canonical k-mer hashes of the blocked layout.
//!
//! Three schemes, chosen by k (recorded in the file header by [`BlockedHash::id`]):
//! - [`BlockedHash::TwoBit64`] (k <= 32): the canonical 2-bit value (min of the forward and
//!   reverse-complement encodings, as khmer's 2-bit hash) put through the MurmurHash3 64-bit
//!   finaliser. The finaliser is a bijection, so distinct canonical k-mers never share a hash.
//! - [`BlockedHash::TwoBit128`] (k <= 64): the same canonical 2-bit value in a u128, folded to
//!   64 bits by finalising the high half and adding it to the low half before a final mix.
//! - [`BlockedHash::Rolling`] (any k): a cyclic-polynomial rolling hash in the style of ntHash.
//!   Each base code has a fixed random 64-bit seed; the forward hash of a window is the XOR of
//!   the seeds rotated by their distance to the window end, the reverse-complement hash the XOR
//!   of the complement seeds rotated by their distance to the window start. Both roll in O(1)
//!   per base (rotate, XOR out the leaving base, XOR in the entering one); the canonical value
//!   is the smaller of the two, then finalised. The rotation is "split" (a 33-bit and a 31-bit
//!   half, each rotated by one bit), whose period is 33 * 31 = 1023 positions instead of 64, so
//!   swapping two bases a multiple of 64 apart does not give the same hash; only k-mers longer
//!   than 1023 bases have such structural collisions.
//!
//! A single-strand table ([`Strand::Single`]) takes the forward value of each scheme instead
//! of the smaller of the two strands (then finalised the same way).
//!
//! Base codes are A=0, T=1, C=2 and G=3 for every other byte (callers clean reads first, as
//! for the 2-bit tables); the complement of a code is `code ^ 1`.

use crate::kmer::murmur::fmix64;
use crate::kmer::{twobit, Strand};

/// A hash scheme of the blocked layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockedHash {
    /// Canonical 2-bit value in a u64, finalised (k <= 32).
    TwoBit64,
    /// Canonical 2-bit value in a u128, folded and finalised (k <= 64).
    TwoBit128,
    /// Canonical split-rotation rolling hash, finalised (any k).
    Rolling,
}

impl BlockedHash {
    /// The fastest exact-encoding scheme for `k`.
    pub fn for_k(k: usize) -> Self {
        match k {
            0..=32 => Self::TwoBit64,
            33..=64 => Self::TwoBit128,
            _ => Self::Rolling,
        }
    }

    /// Largest k the scheme supports.
    pub fn max_k(self) -> usize {
        match self {
            Self::TwoBit64 => 32,
            Self::TwoBit128 => 64,
            Self::Rolling => u32::MAX as usize,
        }
    }

    /// Identifier stored in table files.
    pub fn id(self) -> u32 {
        match self {
            Self::TwoBit64 => 1,
            Self::TwoBit128 => 2,
            Self::Rolling => 3,
        }
    }

    /// The scheme of a stored identifier.
    pub fn from_id(id: u32) -> Option<Self> {
        [Self::TwoBit64, Self::TwoBit128, Self::Rolling].into_iter().find(|h| h.id() == id)
    }
}

/// Code of every byte: A0 T1 C2, everything else G3.
static CODE: [u8; 256] = {
    let mut table = [3u8; 256];
    table[b'A' as usize] = 0;
    table[b'T' as usize] = 1;
    table[b'C' as usize] = 2;
    table
};

#[inline(always)]
fn code(b: u8) -> usize {
    CODE[b as usize] as usize
}

#[inline(always)]
fn fold128(v: u128) -> u64 {
    fmix64((v as u64).wrapping_add(fmix64((v >> 64) as u64 ^ 0x9e37_79b9_7f4a_7c15)))
}

/// Random seeds of the rolling hash, one per base code.
const SEEDS: [u64; 4] = [0x3c8b_fbb3_95c6_0474, 0x2955_49f5_4be2_4456, 0x3193_c185_62a0_2b4c, 0x2032_3ed0_8257_2324];

const LOW31: u64 = (1 << 31) - 1;
const LOW33: u64 = (1 << 33) - 1;

/// Split rotation left by one bit: the high 33 bits and the low 31 bits rotate separately.
#[inline(always)]
fn srol(x: u64) -> u64 {
    let (hi, lo) = (x >> 31, x & LOW31);
    ((((hi << 1) | (hi >> 32)) & LOW33) << 31) | (((lo << 1) | (lo >> 30)) & LOW31)
}

/// Inverse of [`srol`].
#[inline(always)]
fn sror(x: u64) -> u64 {
    let (hi, lo) = (x >> 31, x & LOW31);
    ((((hi >> 1) | (hi << 32)) & LOW33) << 31) | (((lo >> 1) | (lo << 30)) & LOW31)
}

fn srol_n(mut x: u64, n: usize) -> u64 {
    // The split rotation has period 1023.
    for _ in 0..n % 1023 {
        x = srol(x);
    }
    x
}

/// Hashes k-mers of one k with one scheme.
#[derive(Debug, Clone)]
pub struct KmerHasher {
    k: usize,
    scheme: BlockedHash,
    strand: Strand,
    /// Seed of each code rotated k times (the leaving base of the forward hash).
    seeds_rot_k: [u64; 4],
    /// Seed of each code rotated k - 1 times (the entering base of the reverse hash).
    seeds_rot_k1: [u64; 4],
}

impl KmerHasher {
    /// A hasher for `k` (1..=`scheme.max_k()`, checked by the caller) on `strand`.
    pub fn new(k: usize, scheme: BlockedHash, strand: Strand) -> Self {
        debug_assert!(k >= 1 && k <= scheme.max_k());
        Self {
            k,
            scheme,
            strand,
            seeds_rot_k: SEEDS.map(|s| srol_n(s, k)),
            seeds_rot_k1: SEEDS.map(|s| srol_n(s, k - 1)),
        }
    }

    /// The scheme.
    pub fn scheme(&self) -> BlockedHash {
        self.scheme
    }

    /// Which strand it hashes.
    pub fn strand(&self) -> Strand {
        self.strand
    }

    /// Hash of one k-mer (`kmer.len() == k`, checked by the caller).
    pub fn hash(&self, kmer: &[u8]) -> u64 {
        let single = self.strand.is_single();
        match self.scheme {
            BlockedHash::TwoBit64 => {
                let f = kmer.iter().fold(0u64, |h, &b| (h << 2) | code(b) as u64);
                let r = kmer.iter().rev().fold(0u64, |h, &b| (h << 2) | (code(b) ^ 1) as u64);
                fmix64(if single { f } else { f.min(r) })
            }
            BlockedHash::TwoBit128 => {
                let f = kmer.iter().fold(0u128, |h, &b| (h << 2) | code(b) as u128);
                let r = kmer.iter().rev().fold(0u128, |h, &b| (h << 2) | (code(b) ^ 1) as u128);
                fold128(if single { f } else { f.min(r) })
            }
            BlockedHash::Rolling => {
                let f = kmer.iter().fold(0, |h, &b| srol(h) ^ SEEDS[code(b)]);
                let r = kmer.iter().rev().fold(0, |h, &b| srol(h) ^ SEEDS[code(b) ^ 1]);
                fmix64(if single { f } else { f.min(r) })
            }
        }
    }

    /// Appends the hash of every k-mer of `seq` (in order) to `out`; nothing when `seq` is
    /// shorter than k.
    pub fn hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
        let k = self.k;
        if seq.len() < k {
            return;
        }
        out.reserve(seq.len() - k + 1);
        match self.scheme {
            BlockedHash::TwoBit64 => {
                let start = out.len();
                twobit::hashes(seq, k, self.strand, out);
                out[start..].iter_mut().for_each(|h| *h = fmix64(*h));
            }
            BlockedHash::TwoBit128 if self.strand.is_single() => self.hashes_u128::<false>(seq, out),
            BlockedHash::TwoBit128 => self.hashes_u128::<true>(seq, out),
            BlockedHash::Rolling if self.strand.is_single() => self.hashes_rolling::<false>(seq, out),
            BlockedHash::Rolling => self.hashes_rolling::<true>(seq, out),
        }
    }

    /// The values of `seq`'s k-mers in the 128-bit scheme: canonical when `CANONICAL`, else
    /// the forward strand's.
    fn hashes_u128<const CANONICAL: bool>(&self, seq: &[u8], out: &mut Vec<u64>) {
        let k = self.k;
        let mask = if k == 64 { u128::MAX } else { (1u128 << (2 * k)) - 1 };
        let top = 2 * k as u32 - 2;
        let (mut f, mut r) = (0u128, 0u128);
        for &b in &seq[..k - 1] {
            f = (f << 2) | code(b) as u128;
            r = (r >> 2) | (((code(b) ^ 1) as u128) << top);
        }
        out.extend(seq[k - 1..].iter().map(|&b| {
            f = ((f << 2) | code(b) as u128) & mask;
            r = (r >> 2) | (((code(b) ^ 1) as u128) << top);
            fold128(if CANONICAL { f.min(r) } else { f })
        }));
    }

    /// The values of `seq`'s k-mers in the rolling scheme: canonical when `CANONICAL`, else
    /// the forward strand's.
    fn hashes_rolling<const CANONICAL: bool>(&self, seq: &[u8], out: &mut Vec<u64>) {
        let k = self.k;
        let mut f = seq[..k].iter().fold(0, |h, &b| srol(h) ^ SEEDS[code(b)]);
        let mut r = seq[..k].iter().rev().fold(0, |h, &b| srol(h) ^ SEEDS[code(b) ^ 1]);
        out.push(fmix64(if CANONICAL { f.min(r) } else { f }));
        out.extend(seq.iter().zip(&seq[k..]).map(|(&leaving, &entering)| {
            let (out_code, in_code) = (code(leaving), code(entering));
            f = srol(f) ^ self.seeds_rot_k[out_code] ^ SEEDS[in_code];
            r = sror(r ^ SEEDS[out_code ^ 1]) ^ self.seeds_rot_k1[in_code ^ 1];
            fmix64(if CANONICAL { f.min(r) } else { f })
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEQ: &[u8] = b"GGTTGACGGGGCTCAGGGGGCGGCTGACTCCGAGAGACAGCNacgtRYTTAGCAGTCAGTTGACCAGTAGCATGACAGTACGATTAGACAAATTTGGGCCAGCAGACGATCGACGGACTAGCCGCATAGCGACTAGCGACTACGGCATAGATCAGCTGACTAGC";

    fn revcomp(s: &[u8]) -> Vec<u8> {
        s.iter().rev().map(|&b| b"TAGC"[code(b)]).collect()
    }

    #[test]
    fn split_rotations_invert_each_other_and_have_period_1023() {
        let x = 0x0123_4567_89ab_cdef;
        assert_eq!(sror(srol(x)), x);
        assert_eq!(srol(sror(x)), x);
        assert_ne!(srol_n(x, 64), x);
        let mut y = x;
        (0..1023).for_each(|_| y = srol(y));
        assert_eq!(y, x);
    }

    #[test]
    fn rolling_equals_direct_and_is_canonical_for_every_scheme() {
        for k in [1, 2, 5, 21, 31, 32, 33, 50, 63, 64, 65, 100, 150] {
            let schemes: &[BlockedHash] = match k {
                0..=32 => &[BlockedHash::TwoBit64, BlockedHash::TwoBit128, BlockedHash::Rolling],
                33..=64 => &[BlockedHash::TwoBit128, BlockedHash::Rolling],
                _ => &[BlockedHash::Rolling],
            };
            for (&scheme, strand) in schemes.iter().flat_map(|s| [(s, Strand::Canonical), (s, Strand::Single)]) {
                let hasher = KmerHasher::new(k, scheme, strand);
                let mut rolled = Vec::new();
                hasher.hashes(SEQ, &mut rolled);
                let direct: Vec<u64> = SEQ.windows(k).map(|w| hasher.hash(w)).collect();
                assert_eq!(rolled, direct, "k = {k}, {scheme:?}, {strand:?}");
                // Reverse complements share the canonical hash; single-strand ones (other than
                // palindromes) do not.
                let rc_same =
                    SEQ.windows(k).filter(|w| revcomp(w) != **w).all(|w| hasher.hash(&revcomp(w)) == hasher.hash(w));
                assert_eq!(rc_same, strand == Strand::Canonical, "reverse complements, k = {k}, {scheme:?}");
            }
        }
    }

    #[test]
    fn distinct_kmers_get_distinct_hashes() {
        for (k, scheme) in [(21, BlockedHash::TwoBit64), (63, BlockedHash::TwoBit128), (100, BlockedHash::Rolling)] {
            let hasher = KmerHasher::new(k, scheme, Strand::Canonical);
            let long: Vec<u8> = SEQ.iter().chain(&revcomp(SEQ)).map(|&b| b"ATCG"[code(b)]).collect();
            let mut kmers: Vec<Vec<u8>> = long.windows(k).map(<[u8]>::to_vec).collect();
            kmers.iter_mut().for_each(|w| {
                let rc = revcomp(w);
                if rc < *w {
                    *w = rc
                }
            });
            kmers.sort();
            kmers.dedup();
            let mut hashes: Vec<u64> = kmers.iter().map(|w| hasher.hash(w)).collect();
            hashes.sort_unstable();
            hashes.dedup();
            assert_eq!(hashes.len(), kmers.len(), "k = {k}");
        }
    }

    #[test]
    fn ids_round_trip() {
        for h in [BlockedHash::TwoBit64, BlockedHash::TwoBit128, BlockedHash::Rolling] {
            assert_eq!(BlockedHash::from_id(h.id()), Some(h));
        }
        assert_eq!(BlockedHash::from_id(0), None);
    }
}
