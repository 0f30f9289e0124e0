//! MurmurHash3_x64_128 and khmer's canonical Murmur k-mer hash (KHMER.md §1.2).

/// MurmurHash3_x64_128 of `data` with `seed`; returns (h1, h2).
pub fn murmur3_x64_128(data: &[u8], seed: u64) -> (u64, u64) {
    let _ = (data, seed);
    todo!()
}

/// khmer's `hash_no_rc_murmur3`: h1 of the bytes as given.
pub fn hash_no_rc_murmur3(kmer: &[u8]) -> u64 {
    murmur3_x64_128(kmer, 0).0
}

/// khmer's canonical `hash_murmur3`: h1(kmer) XOR h1(revcomp(kmer)), or h1(kmer) for a
/// reverse-complement palindrome.
pub fn hash_murmur3(kmer: &[u8]) -> u64 {
    let _ = kmer;
    todo!()
}

/// khmer's table-driven reverse complement (IUPAC aware, lowercase → uppercase complement).
pub fn reverse_complement(seq: &[u8]) -> Vec<u8> {
    let _ = seq;
    todo!()
}
