//! Module-level hash functions and prime helpers, with khmer's names and checks.

use crate::errors::IntoPyResult;
use kmerflow_core::kmer::{murmur, twobit};
use kmerflow_core::table::primes;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Refuses a k-mer whose length is not `k`, or a `k` beyond the 2-bit limit.
pub fn check_kmer(kmer: &str, k: usize) -> PyResult<()> {
    check_ascii(kmer)?;
    if k > twobit::MAX_K {
        return Err(PyValueError::new_err(format!("k-mer size {k} is above {} for 2-bit hashing", twobit::MAX_K)));
    }
    if kmer.len() != k {
        return Err(PyValueError::new_err(format!("k-mer length {} does not match k = {k}", kmer.len())));
    }
    Ok(())
}

/// Refuses a sequence with a non-ASCII character (its bytes would be read as several bases).
pub fn check_ascii(seq: &str) -> PyResult<()> {
    match seq.char_indices().find(|(_, c)| !c.is_ascii()) {
        None => Ok(()),
        Some((at, c)) => Err(PyValueError::new_err(format!(
            "sequence has the non-nucleotide character {c:?} at position {}",
            seq[..at].chars().count()
        ))),
    }
}

/// The reverse complement of `seq`, refusing characters that are not nucleotides (IUPAC codes,
/// either case): khmer's table turns them into spaces or NUL bytes.
fn checked_reverse_complement(seq: &str) -> PyResult<Vec<u8>> {
    check_ascii(seq)?;
    let rc = murmur::reverse_complement(seq.as_bytes());
    match rc.iter().rposition(|b| !b.is_ascii_alphabetic()) {
        None => Ok(rc),
        Some(j) => {
            let at = seq.len() - 1 - j;
            let c = seq.as_bytes()[at] as char;
            Err(PyValueError::new_err(format!("sequence has the non-nucleotide character {c:?} at position {at}")))
        }
    }
}

/// khmer's canonical 2-bit hash of `kmer` (`len(kmer) == k <= 32`).
#[pyfunction]
pub fn forward_hash(kmer: &str, k: usize) -> PyResult<u64> {
    check_kmer(kmer, k)?;
    twobit::forward_hash(kmer.as_bytes()).py()
}

/// The forward-strand 2-bit value of `kmer` (no canonicalisation).
#[pyfunction]
pub fn forward_hash_no_rc(kmer: &str, k: usize) -> PyResult<u64> {
    check_kmer(kmer, k)?;
    twobit::forward_hash_no_rc(kmer.as_bytes()).py()
}

/// The k-mer string of a 2-bit hash value.
#[pyfunction]
pub fn reverse_hash(hash: u64, k: usize) -> PyResult<String> {
    if k > twobit::MAX_K {
        return Err(PyValueError::new_err(format!("k-mer size {k} is above {}", twobit::MAX_K)));
    }
    Ok(twobit::reverse_hash(hash, k))
}

/// khmer's canonical MurmurHash3 of the whole string (nucleotides only: the canonical form
/// needs the reverse complement).
#[pyfunction]
pub fn hash_murmur3(kmer: &str) -> PyResult<u64> {
    checked_reverse_complement(kmer)?;
    Ok(murmur::hash_murmur3(kmer.as_bytes()))
}

/// MurmurHash3 (h1, seed 0) of the string as given.
#[pyfunction]
pub fn hash_no_rc_murmur3(kmer: &str) -> u64 {
    murmur::hash_no_rc_murmur3(kmer.as_bytes())
}

/// khmer's IUPAC-aware reverse complement; `ValueError` for a character that is not a
/// nucleotide code.
#[pyfunction]
pub fn reverse_complement(seq: &str) -> PyResult<String> {
    let rc = checked_reverse_complement(seq)?;
    Ok(String::from_utf8(rc).expect("checked ASCII letters"))
}

/// The `n` largest odd primes below `x` (a float like `1e6` is truncated, as in khmer).
#[pyfunction]
pub fn get_n_primes_near_x(n: usize, x: f64) -> PyResult<Vec<u64>> {
    if x.is_nan() || x < 1.0 {
        return Err(PyValueError::new_err(format!("x must be at least 1, not {x}")));
    }
    primes::get_n_primes_near_x(n, x as u64).py()
}

/// khmer's primality test.
#[pyfunction]
pub fn is_prime(n: u64) -> bool {
    primes::is_prime(n)
}

/// Registers the functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        forward_hash,
        forward_hash_no_rc,
        reverse_hash,
        hash_murmur3,
        hash_no_rc_murmur3,
        reverse_complement,
        get_n_primes_near_x,
        is_prime
    );
    Ok(())
}
