//! MurmurHash3_x64_128 and khmer's canonical Murmur k-mer hash (docs/khmer-compat.md §1.2).
//!
//! MurmurHash3 (Austin Appleby, public domain) is implemented here from its algorithm
//! description: 16-byte blocks mixed into two 64-bit lanes, a tail of up to 15 bytes, then the
//! length and the 64-bit finaliser.

use super::Strand;

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

#[inline(always)]
fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

#[inline(always)]
fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// MurmurHash3's 64-bit finaliser: a bijection whose every output bit depends on every input bit.
#[inline(always)]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// Little-endian value of up to 8 bytes.
#[inline(always)]
fn le_u64(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0u64, |v, &b| (v << 8) | u64::from(b))
}

/// MurmurHash3_x64_128 of `data` with `seed`; returns (h1, h2).
pub fn murmur3_x64_128(data: &[u8], seed: u64) -> (u64, u64) {
    let (mut h1, mut h2) = (seed, seed);
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        h1 ^= mix_k1(le_u64(&block[..8]));
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(le_u64(&block[8..]));
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    if tail.len() > 8 {
        h2 ^= mix_k2(le_u64(&tail[8..]));
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(le_u64(&tail[..tail.len().min(8)]));
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

/// khmer's `hash_no_rc_murmur3`: h1 of the bytes as given.
pub fn hash_no_rc_murmur3(kmer: &[u8]) -> u64 {
    murmur3_x64_128(kmer, 0).0
}

/// khmer's canonical `hash_murmur3`: h1(kmer) XOR h1(revcomp(kmer)), or h1(kmer) for a
/// reverse-complement palindrome.
pub fn hash_murmur3(kmer: &[u8]) -> u64 {
    let mut rc = Vec::with_capacity(kmer.len());
    reverse_complement_into(kmer, &mut rc);
    canonical_from_parts(kmer, &rc)
}

/// The canonical hash of `kmer` given its reverse complement `rc`.
#[inline]
fn canonical_from_parts(kmer: &[u8], rc: &[u8]) -> u64 {
    let forward = hash_no_rc_murmur3(kmer);
    if rc == kmer {
        forward
    } else {
        forward ^ hash_no_rc_murmur3(rc)
    }
}

/// Appends khmer's canonical Murmur hash of every k-mer of `seq` to `out` (nothing when `seq`
/// is shorter than k). `rc` is a scratch buffer (its content is replaced).
pub fn canonical_hashes(seq: &[u8], k: usize, rc: &mut Vec<u8>, out: &mut Vec<u64>) {
    if k == 0 || seq.len() < k {
        return;
    }
    // The reverse complement of the window at i is the window of the whole read's reverse
    // complement that ends len - i bytes in.
    reverse_complement_into(seq, rc);
    let n = seq.len();
    out.extend(seq.windows(k).enumerate().map(|(i, kmer)| canonical_from_parts(kmer, &rc[n - k - i..n - i])));
}

/// [`canonical_hashes`] for `strand`: khmer's `hash_no_rc_murmur3` of each k-mer as read for
/// [`Strand::Single`].
pub fn hashes(seq: &[u8], k: usize, strand: Strand, rc: &mut Vec<u8>, out: &mut Vec<u64>) {
    match strand {
        Strand::Canonical => canonical_hashes(seq, k, rc, out),
        Strand::Single if k > 0 => out.extend(seq.windows(k).map(hash_no_rc_murmur3)),
        Strand::Single => {}
    }
}

/// Hash of one k-mer for `strand` ([`hash_murmur3`] or [`hash_no_rc_murmur3`]).
pub fn hash_for(kmer: &[u8], strand: Strand) -> u64 {
    match strand {
        Strand::Canonical => hash_murmur3(kmer),
        Strand::Single => hash_no_rc_murmur3(kmer),
    }
}

/// Complement of each byte, khmer's table: IUPAC aware, lowercase → uppercase complement,
/// other bytes below `z` → space; `z` and above → NUL (khmer's table is zero there).
static COMPLEMENT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < b'z' as usize {
        t[i] = b' ';
        i += 1;
    }
    let pairs = [
        (b'A', b'T'),
        (b'T', b'A'),
        (b'C', b'G'),
        (b'G', b'C'),
        (b'U', b'A'),
        (b'R', b'Y'),
        (b'Y', b'R'),
        (b'K', b'M'),
        (b'M', b'K'),
        (b'B', b'V'),
        (b'V', b'B'),
        (b'D', b'H'),
        (b'H', b'D'),
        (b'S', b'S'),
        (b'W', b'W'),
        (b'N', b'N'),
        (b'F', b'F'),
    ];
    let mut j = 0;
    while j < pairs.len() {
        let (from, to) = pairs[j];
        t[from as usize] = to;
        t[from.to_ascii_lowercase() as usize] = to;
        j += 1;
    }
    t
};

/// Writes khmer's reverse complement of `seq` into `out` (cleared first).
pub fn reverse_complement_into(seq: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(seq.iter().rev().map(|&b| COMPLEMENT[b as usize]));
}

/// khmer's table-driven reverse complement (IUPAC aware, lowercase → uppercase complement).
pub fn reverse_complement(seq: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(seq.len());
    reverse_complement_into(seq, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_khmer_values() {
        assert_eq!(hash_no_rc_murmur3(b"AAAA"), 5_231_866_503_566_620_412);
        assert_eq!(hash_no_rc_murmur3(b"TTTT"), 5_753_003_579_327_329_651);
        assert_eq!(hash_murmur3(b"AAAA"), 526_240_128_537_019_279);
        assert_eq!(hash_murmur3(b"TTTT"), 526_240_128_537_019_279);
        assert_eq!(hash_murmur3(b"CCCC"), 14_391_997_331_386_449_225);
        assert_eq!(hash_murmur3(b"ACGT"), 11_375_041_580_139_570_462);
        assert_eq!(hash_murmur3(b"ACGT"), hash_no_rc_murmur3(b"ACGT"));
    }

    #[test]
    fn counttable_k33_hashes() {
        let s = b"ATGGATATGGAGGACAAGTATATGGAGGACAAGTATATGGAGGACAAGTAT";
        let mut out = Vec::new();
        canonical_hashes(&s[..34], 33, &mut Vec::new(), &mut out);
        assert_eq!(out, [4_743_239_192_574_154_715, 2_122_462_908_541_313_313]);
    }

    #[test]
    fn all_tail_lengths_match_khmer() {
        // Values from khmer.hash_no_rc_murmur3 for prefixes of one string (lengths 1..=34),
        // covering every tail length and one and two full blocks.
        let s = b"GATTACAGATTACAGATTACAGATTACAGATTAC";
        for (i, want) in EXPECTED_PREFIX_HASHES.iter().enumerate() {
            assert_eq!(hash_no_rc_murmur3(&s[..=i]), *want, "length {}", i + 1);
        }
    }

    const EXPECTED_PREFIX_HASHES: [u64; 34] = [
        585625305377507626,
        7373407780695664725,
        11948246026241321996,
        10503483064176486633,
        9478880675311318110,
        5403385495945852162,
        4701016742052311728,
        10527813004742426434,
        8633923417743240132,
        12492357234885754573,
        5597099295385447885,
        9265960827065658668,
        17181450788866553557,
        723877423107253237,
        3201561573992705486,
        13681304702358336412,
        16986097979206541843,
        15836382695928450590,
        3071808131446454083,
        10575102363430570850,
        10287901421855124815,
        17786480103459814861,
        18404364586111421873,
        14510635322038821663,
        18376352426207534581,
        11527869403763170009,
        8425037009589769801,
        5214669151236788512,
        391391295885989347,
        13829203464808868524,
        7398503722028296103,
        9445345055325077066,
        9470299288374062261,
        2582295486464505497,
    ];

    #[test]
    fn reverse_complement_table() {
        assert_eq!(reverse_complement(b"ACGTURYKMBVDHSWNF"), b"FNWSDHBVKMRYAACGT");
        assert_eq!(reverse_complement(b"acgtn"), b"NACGT");
        assert_eq!(reverse_complement(b"E.z"), b"\0  ");
    }
}
