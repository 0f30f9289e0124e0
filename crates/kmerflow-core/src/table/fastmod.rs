//! Exact remainder by a fixed divisor without a division instruction (Barrett reduction with a
//! 64-bit reciprocal).
//!
//! With m = floor((2^64 - 1) / d) >= 2^64 / d - 1, the estimate q = floor(n · m / 2^64) of
//! floor(n / d) is never too large and at most one too small (n · m / 2^64 > n / d - 1 for
//! every n < 2^64), so r = n - q · d lies in [0, 2d) and one conditional subtraction gives
//! n mod d. Cost: one high multiply, one multiply, a compare (Lemire's direct remainder needs a
//! 128-bit reciprocal and five multiplies for 64-bit numerators).

/// A divisor with its precomputed reciprocal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastMod {
    divisor: u64,
    reciprocal: u64,
}

impl FastMod {
    /// Precomputes the reciprocal of `divisor` (must be >= 1).
    pub fn new(divisor: u64) -> Self {
        assert!(divisor >= 1, "FastMod divisor must be at least 1");
        Self { divisor, reciprocal: u64::MAX / divisor }
    }

    /// The divisor.
    pub fn divisor(&self) -> u64 {
        self.divisor
    }

    /// `n % divisor`.
    #[inline(always)]
    pub fn rem(&self, n: u64) -> u64 {
        let q = ((u128::from(n) * u128::from(self.reciprocal)) >> 64) as u64;
        // r <= n, so the subtraction cannot wrap.
        let r = n - q * self.divisor;
        if r >= self.divisor {
            r - self.divisor
        } else {
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn check(d: u64, n: u64) {
        assert_eq!(FastMod::new(d).rem(n), n % d, "{n} % {d}");
    }

    #[test]
    fn edge_values() {
        let divisors = [1, 2, 3, 7, 11, 97, 999_983, 1 << 32, (1 << 32) + 15, (1 << 62) - 57, 1 << 63, (1 << 63) - 25];
        let numerators = [0, 1, 2, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1, u32::MAX as u64];
        for d in divisors {
            for n in numerators {
                check(d, n);
                check(d, n.wrapping_add(d));
                check(d, d.wrapping_mul(5).wrapping_sub(1));
            }
        }
    }

    #[test]
    fn random_values() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(42);
        for _ in 0..2_000 {
            let d = match rng.random_range(0..3) {
                0 => rng.random_range(1..1_000_000u64),
                1 => rng.random_range(1..=u64::MAX >> 1),
                _ => rng.random::<u64>() >> rng.random_range(0..64),
            }
            .max(1);
            let fm = FastMod::new(d);
            for _ in 0..200 {
                let n: u64 = rng.random();
                assert_eq!(fm.rem(n), n % d, "{n} % {d}");
            }
        }
    }
}
