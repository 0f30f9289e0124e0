//! khmer's table sizes: the n largest odd primes below x (docs/khmer-compat.md §2.2).

use crate::{Error, Result};

/// khmer's `is_prime`.
pub fn is_prime(n: u64) -> bool {
    match n {
        0 | 1 => false,
        2 => true,
        _ if n & 1 == 0 => false,
        _ => {
            // Odd divisors d with d * d <= n (khmer loops while d < sqrt(n) + 1: the same set).
            let mut d = 3u64;
            #[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87 (MSRV 1.80)
            while d.saturating_mul(d) <= n {
                if n % d == 0 {
                    return false;
                }
                d += 2;
            }
            true
        }
    }
}

/// khmer's `get_n_primes_near_x(n, x)`: the `n` largest odd primes strictly below `x`, in
/// descending order (`[1]` for x == 1); an error when fewer exist.
pub fn get_n_primes_near_x(n: usize, x: u64) -> Result<Vec<u64>> {
    if x == 1 {
        return Ok(vec![1]);
    }
    // The vector grows with the primes found: a huge n is refused below, never allocated.
    let mut primes = Vec::with_capacity(n.min(256));
    let mut i = x.saturating_sub(1);
    if i & 1 == 0 {
        i = i.saturating_sub(1);
    }
    while primes.len() < n && i > 1 {
        if is_prime(i) {
            primes.push(i);
        }
        i -= 2;
    }
    if primes.len() < n {
        return Err(Error::invalid(format!("unable to find {n} prime numbers < {x}")));
    }
    Ok(primes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_khmer_examples() {
        assert_eq!(get_n_primes_near_x(4, 1_000_000).unwrap(), [999_983, 999_979, 999_961, 999_959]);
        assert_eq!(get_n_primes_near_x(2, 1_000).unwrap(), [997, 991]);
        assert_eq!(get_n_primes_near_x(4, 10_000_000).unwrap(), [9_999_991, 9_999_973, 9_999_971, 9_999_943]);
        assert_eq!(get_n_primes_near_x(4, 250_000_000).unwrap(), [249_999_991, 249_999_941, 249_999_917, 249_999_889]);
        assert_eq!(get_n_primes_near_x(7, 20).unwrap(), [19, 17, 13, 11, 7, 5, 3]);
        assert_eq!(get_n_primes_near_x(1, 4).unwrap(), [3]);
        assert_eq!(get_n_primes_near_x(3, 1).unwrap(), [1]);
        let err = get_n_primes_near_x(1, 3).unwrap_err().to_string();
        assert_eq!(err, "unable to find 1 prime numbers < 3");
        assert!(get_n_primes_near_x(1, 0).is_err());
    }

    #[test]
    fn is_prime_small_numbers() {
        let primes: Vec<u64> = (0..40).filter(|&n| is_prime(n)).collect();
        assert_eq!(primes, [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]);
        assert!(is_prime(18_446_744_073_709_551_557)); // largest 64-bit prime
        assert!(!is_prime(999_983 * 999_979));
    }
}
