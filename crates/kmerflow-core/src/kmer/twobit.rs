//! khmer's 2-bit k-mer hash (k <= 32), bit-exact (docs/khmer-compat.md §1.1).
//!
//! Base codes are A=0, T=1, C=2, G=3 (complementary bases differ in the low bit). Like khmer's
//! release build, any byte that is not exactly `A`, `T` or `C` is encoded as `G` on the forward
//! strand and as `C` on the complement strand, so callers clean reads first (see
//! [`super::clean`]).

use super::Strand;
use crate::{Error, Result};

/// Largest k of the 2-bit hash.
pub const MAX_K: usize = 32;

/// Forward-strand code of every byte: A0 T1 C2, everything else G3.
static FORWARD_CODE: [u8; 256] = code_table(3, [(b'A', 0), (b'T', 1), (b'C', 2)]);

/// Complement-strand code of every byte: A→T(1), T→A(0), C→G(3), everything else C(2).
static COMPLEMENT_CODE: [u8; 256] = code_table(2, [(b'A', 1), (b'T', 0), (b'C', 3)]);

const fn code_table(default: u8, exceptions: [(u8, u8); 3]) -> [u8; 256] {
    let mut table = [default; 256];
    let mut i = 0;
    while i < exceptions.len() {
        table[exceptions[i].0 as usize] = exceptions[i].1;
        i += 1;
    }
    table
}

/// The error for a 2-bit table or hash asked for with k > 32.
pub fn k_too_large(k: usize) -> Error {
    Error::invalid(format!(
        "k-mer size {k} is not supported by 2-bit tables (max {MAX_K}); use a Murmur-hashed table \
         (Counttable/Nodetable) for larger k"
    ))
}

fn check_kmer(kmer: &[u8]) -> Result<()> {
    if kmer.len() > MAX_K {
        return Err(k_too_large(kmer.len()));
    }
    if kmer.is_empty() {
        return Err(Error::invalid("cannot hash an empty k-mer"));
    }
    Ok(())
}

/// Canonical 2-bit hash of `kmer` (`len == k`, k <= 32): min(forward, reverse complement).
/// Bytes other than `A`, `T`, `C` count as `G` (forward) / `C` (complement), as in khmer.
pub fn forward_hash(kmer: &[u8]) -> Result<u64> {
    check_kmer(kmer)?;
    let forward = forward_value(kmer);
    let reverse = kmer.iter().rev().fold(0u64, |r, &b| (r << 2) | u64::from(COMPLEMENT_CODE[b as usize]));
    Ok(forward.min(reverse))
}

/// Forward-strand 2-bit value of `kmer` (no canonicalisation).
pub fn forward_hash_no_rc(kmer: &[u8]) -> Result<u64> {
    check_kmer(kmer)?;
    Ok(forward_value(kmer))
}

fn forward_value(kmer: &[u8]) -> u64 {
    kmer.iter().fold(0u64, |h, &b| (h << 2) | u64::from(FORWARD_CODE[b as usize]))
}

/// Like [`forward_hash`], but checks that `kmer.len() == k` first (khmer's `forward_hash(kmer, k)`).
pub fn forward_hash_k(kmer: &[u8], k: usize) -> Result<u64> {
    check_length(kmer, k)?;
    forward_hash(kmer)
}

/// The error for a k-mer string whose length is not k.
pub fn check_length(kmer: &[u8], k: usize) -> Result<()> {
    if kmer.len() != k {
        return Err(Error::invalid(format!("k-mer length {} does not match k = {k}", kmer.len())));
    }
    Ok(())
}

/// khmer's `reverse_hash`: the k-mer string of a 2-bit value.
pub fn reverse_hash(hash: u64, k: usize) -> String {
    const BASES: [char; 4] = ['A', 'T', 'C', 'G'];
    (0..k.min(MAX_K)).rev().map(|i| BASES[((hash >> (2 * i)) & 3) as usize]).collect()
}

/// Appends the canonical 2-bit hash of every k-mer of `seq` to `out`, rolling one base at a
/// time (shift-and-mask). `k` must be in 1..=32 (checked by the caller); a sequence shorter
/// than k yields nothing.
pub fn canonical_hashes(seq: &[u8], k: usize, out: &mut Vec<u64>) {
    rolling_hashes::<true>(seq, k, out);
}

/// [`canonical_hashes`] for `strand`: the forward-strand values for [`Strand::Single`].
#[inline]
pub fn hashes(seq: &[u8], k: usize, strand: Strand, out: &mut Vec<u64>) {
    match strand {
        Strand::Canonical => rolling_hashes::<true>(seq, k, out),
        Strand::Single => rolling_hashes::<false>(seq, k, out),
    }
}

/// Hash of one k-mer for `strand` ([`forward_hash`] or [`forward_hash_no_rc`]).
pub fn hash_for(kmer: &[u8], strand: Strand) -> Result<u64> {
    match strand {
        Strand::Canonical => forward_hash(kmer),
        Strand::Single => forward_hash_no_rc(kmer),
    }
}

/// The rolling 2-bit values of every k-mer of `seq`: canonical (min of both strands) when
/// `CANONICAL`, else the forward strand's (the reverse complement is then never computed).
#[inline(always)]
fn rolling_hashes<const CANONICAL: bool>(seq: &[u8], k: usize, out: &mut Vec<u64>) {
    debug_assert!((1..=MAX_K).contains(&k));
    if seq.len() < k {
        return;
    }
    let mask = if k == MAX_K { u64::MAX } else { (1u64 << (2 * k)) - 1 };
    let top = 2 * (k as u32) - 2;
    out.reserve(seq.len() - k + 1);
    let (mut f, mut r) = (0u64, 0u64);
    for &b in &seq[..k - 1] {
        f = (f << 2) | u64::from(FORWARD_CODE[b as usize]);
        if CANONICAL {
            r = (r >> 2) | (u64::from(COMPLEMENT_CODE[b as usize]) << top);
        }
    }
    out.extend(seq[k - 1..].iter().map(|&b| {
        f = ((f << 2) | u64::from(FORWARD_CODE[b as usize])) & mask;
        if CANONICAL {
            r = (r >> 2) | (u64::from(COMPLEMENT_CODE[b as usize]) << top);
            f.min(r)
        } else {
            f
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_canonical_values() {
        let cases: [(&str, u64); 8] = [
            ("AAAA", 0),
            ("TTTT", 0),
            ("CCCC", 170),
            ("GGGG", 170),
            ("ACGT", 45),
            ("GGGGGGGGGGGG", 11_184_810),
            ("AAACGTATGACT", 184_777),
            ("GGTTGACGGGGCTCAGGGGGCGGCTGACTCCG", 13_607_885_392_109_549_066),
        ];
        for (kmer, want) in cases {
            assert_eq!(forward_hash(kmer.as_bytes()).unwrap(), want, "{kmer}");
        }
    }

    #[test]
    fn pinned_forward_values() {
        assert_eq!(forward_hash_no_rc(b"TTTT").unwrap(), 85);
        assert_eq!(forward_hash_no_rc(b"GGGG").unwrap(), 255);
        assert_eq!(forward_hash_no_rc(b"ACGT").unwrap(), 45);
    }

    #[test]
    fn unknown_bytes_hash_like_g() {
        assert_eq!(forward_hash(b"acgt").unwrap(), 170);
        assert_eq!(forward_hash(b"NNNN").unwrap(), 170);
        assert_eq!(forward_hash_no_rc(b"ANNT").unwrap(), forward_hash_no_rc(b"AGGT").unwrap());
    }

    #[test]
    fn size_errors_are_clear() {
        let err = forward_hash(&[b'A'; 33]).unwrap_err().to_string();
        assert!(err.contains("33") && err.contains("max 32"), "{err}");
        let err = forward_hash_k(b"ACG", 4).unwrap_err().to_string();
        assert!(err.contains("length 3") && err.contains("k = 4"), "{err}");
    }

    #[test]
    fn reverse_hash_gives_smaller_strand() {
        assert_eq!(reverse_hash(45, 4), "ACGT");
        assert_eq!(reverse_hash(forward_hash(b"GGGG").unwrap(), 4), "CCCC");
        let h = forward_hash(b"AAACGTATGACT").unwrap();
        assert_eq!(reverse_hash(h, 12), "AAACGTATGACT");
    }

    #[test]
    fn rolling_matches_direct_hash_for_all_k() {
        let seq = b"GGTTGACGGGGCTCAGGGGGCGGCTGACTCCGAGAGACAGCNacgtRYTTAGC";
        for k in 1..=MAX_K {
            let mut rolled = Vec::new();
            canonical_hashes(seq, k, &mut rolled);
            let direct: Vec<u64> = seq.windows(k).map(|w| forward_hash(w).unwrap()).collect();
            assert_eq!(rolled, direct, "k = {k}");
        }
        let mut none = Vec::new();
        canonical_hashes(b"ACG", 4, &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn single_strand_rolling_matches_forward_values() {
        let seq = b"GGTTGACGGGGCTCAGGGGGCGGCTGACTCCGAGAGACAGCNacgtRYTTAGC";
        for k in 1..=MAX_K {
            let mut rolled = Vec::new();
            hashes(seq, k, Strand::Single, &mut rolled);
            let direct: Vec<u64> = seq.windows(k).map(|w| forward_hash_no_rc(w).unwrap()).collect();
            assert_eq!(rolled, direct, "k = {k}");
        }
        // A k-mer and its reverse complement: one canonical value, two single-strand values.
        let (kmer, rc) = (b"AAACGTATGACT", b"AGTCATACGTTT");
        assert_eq!(hash_for(kmer, Strand::Canonical).unwrap(), hash_for(rc, Strand::Canonical).unwrap());
        assert_ne!(hash_for(kmer, Strand::Single).unwrap(), hash_for(rc, Strand::Single).unwrap());
    }
}
