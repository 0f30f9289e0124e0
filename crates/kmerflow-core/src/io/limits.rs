//! The bound on one record's length: a record (its lines as in the file) longer than this stops
//! the run with an error naming the file and the record, instead of growing memory until the
//! machine refuses (a small gzip file can expand to one line of many GiB).

use crate::{Error, Result};

/// The environment variable setting the bound, in bytes (K/M/G/T suffixes are binary: `64M`).
pub const MAX_RECORD_ENV: &str = "KMERFLOW_MAX_RECORD_BYTES";

/// The default bound: 4 GiB, more than the text of any chromosome sequenced so far as one
/// FASTA record (FASTQ records hold each base twice, sequence and quality).
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 1 << 32;

/// The bound in force: [`MAX_RECORD_ENV`] when set, else [`DEFAULT_MAX_RECORD_BYTES`].
pub fn max_record_bytes() -> Result<u64> {
    match std::env::var(MAX_RECORD_ENV) {
        Ok(text) => parse_size(&text).ok_or_else(|| {
            Error::invalid(format!("{MAX_RECORD_ENV}={text:?} is not a size in bytes (such as 1000000 or 64M)"))
        }),
        Err(_) => Ok(DEFAULT_MAX_RECORD_BYTES),
    }
}

/// A positive byte count with an optional binary K/M/G/T suffix.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, shift) = match text.char_indices().last()? {
        (i, 'k' | 'K') => (&text[..i], 10),
        (i, 'm' | 'M') => (&text[..i], 20),
        (i, 'g' | 'G') => (&text[..i], 30),
        (i, 't' | 'T') => (&text[..i], 40),
        _ => (text, 0),
    };
    let n: u64 = digits.parse().ok().filter(|&n| n > 0)?;
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("4g"), Some(4 << 30));
        for bad in ["", "0", "-1", "1.5G", "G", "99999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
