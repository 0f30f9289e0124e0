//! Exact remainder by a fixed divisor without a division instruction (Lemire, Kaser and
//! Kurz, "Faster remainder by direct computation", 2019).
//!
//! With c = ceil(2^128 / d), the fractional part of n / d is (c · n) mod 2^128 (to enough
//! precision), and n mod d = floor(((c · n) mod 2^128) · d / 2^128). Because 128 >= 64 + log2(d)
//! this is exact for every 64-bit n and every divisor d >= 1 (for d = 1, c wraps to 0 and the
//! result is 0, which is right too).

/// A divisor with its precomputed reciprocal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastMod {
    divisor: u64,
    reciprocal: u128,
}

impl FastMod {
    /// Precomputes the reciprocal of `divisor` (must be >= 1).
    pub fn new(divisor: u64) -> Self {
        assert!(divisor >= 1, "FastMod divisor must be at least 1");
        // ceil(2^128 / d) = floor((2^128 - 1) / d) + 1 for every d >= 1 (wraps to 0 for d = 1).
        Self { divisor, reciprocal: (u128::MAX / u128::from(divisor)).wrapping_add(1) }
    }

    /// The divisor.
    pub fn divisor(&self) -> u64 {
        self.divisor
    }

    /// `n % divisor`.
    #[inline(always)]
    pub fn rem(&self, n: u64) -> u64 {
        let low = self.reciprocal.wrapping_mul(u128::from(n));
        // High 64 bits of the 192-bit product low · d.
        let d = u128::from(self.divisor);
        let lo_part = (low as u64 as u128) * d;
        let hi_part = (low >> 64) * d;
        ((hi_part + (lo_part >> 64)) >> 64) as u64
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
