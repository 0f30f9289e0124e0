//! k-mer hashing (khmer's 2-bit and MurmurHash3 hashes, bit-exact) and read cleaning.
