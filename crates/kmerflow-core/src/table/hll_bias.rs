//! Empirical bias-correction tables of HyperLogLog++ (Heule, Nunkesser and Hall, 2013,
//! appendix), for precisions p = 4..=18, as used by khmer's HyperLogLog: for each p, the raw
//! estimates at which the bias was measured and the measured bias at each of them. The numbers
//! are data (`hll_bias.txt`, built into the library), read once on first use.

use std::sync::LazyLock;

/// The smallest precision of the tables (row 0).
const FIRST_P: usize = 4;
/// The number of precisions, `FIRST_P..FIRST_P + ROWS`.
const ROWS: usize = 15;

/// The measurements of one precision.
pub(super) struct BiasRow {
    /// Raw estimates at the measurement points.
    pub raw_estimates: Vec<f64>,
    /// Measured bias at each raw-estimate point.
    pub biases: Vec<f64>,
}

/// The rows for p = 4..=18 (index p - 4).
pub(super) static BIAS_ROWS: LazyLock<Vec<BiasRow>> = LazyLock::new(|| parse(include_str!("hll_bias.txt")));

/// The rows of `text`: lines `p raw x...` then `p bias y...` for each p in order (`#` starts a
/// comment line). The text is built in, so a malformed one is a bug, not an input error.
fn parse(text: &str) -> Vec<BiasRow> {
    let mut lines = text.lines().filter(|line| !line.starts_with('#'));
    let mut numbers = |p: usize, kind: &str| -> Vec<f64> {
        let line = lines.next().unwrap_or_else(|| panic!("hll_bias.txt: no `{p} {kind}` line"));
        let mut words = line.split_ascii_whitespace();
        assert_eq!(
            (words.next(), words.next()),
            (Some(p.to_string().as_str()), Some(kind)),
            "hll_bias.txt: {line:.20}"
        );
        words.map(|w| w.parse().unwrap_or_else(|_| panic!("hll_bias.txt: `{w}` is not a number"))).collect()
    };
    let rows: Vec<BiasRow> = (FIRST_P..FIRST_P + ROWS)
        .map(|p| BiasRow { raw_estimates: numbers(p, "raw"), biases: numbers(p, "bias") })
        .collect();
    assert!(lines.next().is_none(), "hll_bias.txt: lines after p = {}", FIRST_P + ROWS - 1);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_precision_has_a_bias_at_each_raw_estimate() {
        assert_eq!(BIAS_ROWS.len(), ROWS);
        for (p, row) in (FIRST_P..).zip(BIAS_ROWS.iter()) {
            assert!(!row.raw_estimates.is_empty(), "p = {p}");
            assert_eq!(row.raw_estimates.len(), row.biases.len(), "p = {p}");
        }
        // The first and last measurements of the paper's table.
        assert_eq!((BIAS_ROWS[0].raw_estimates[0], BIAS_ROWS[0].biases[0]), (11.0, 10.0));
        assert_eq!(BIAS_ROWS[ROWS - 1].raw_estimates.last(), Some(&1303455.691));
    }
}
