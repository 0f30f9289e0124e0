//! khmer's table sizes: the n largest odd primes below x (KHMER.md §2.2).

use crate::Result;

/// khmer's `is_prime`.
pub fn is_prime(n: u64) -> bool {
    let _ = n;
    todo!()
}

/// khmer's `get_n_primes_near_x(n, x)`: the `n` largest odd primes strictly below `x`, in
/// descending order (`[1]` for x == 1); an error when fewer exist.
pub fn get_n_primes_near_x(n: usize, x: u64) -> Result<Vec<u64>> {
    let _ = (n, x);
    todo!()
}
