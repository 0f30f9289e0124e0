//! Building blocks shared by the read-filtering commands (normalize-by-median, filter-abund,
//! trim-low-abund): hashing a batch of bundles in a worker, khmer's per-read statistics
//! computed from precomputed hashes, `trim_record` and report helpers.
//!
//! The split of work follows the ordered pipeline: workers clean reads and compute their
//! k-mer hashes ([`hash_batch`]); the one ordered stage only looks counts up by hash
//! ([`median_at_least`], [`median_count`], [`trim_position`]) and updates the table
//! ([`consume`]), so its per-k-mer work is a few memory accesses. The stages run on
//! [`crate::pipeline::run_ordered`].

use crate::io::{BundleBatch, FastxReader, PairMode, PairedReader, Record};
use crate::kmer::clean::{clean_parser, clean_screed};
use crate::table::KTable;
use crate::{Error, Result};
use std::ops::Range;

/// Which of khmer's cleaning rules a command applies before hashing (KHMER.md §1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleaning {
    /// C++ read parser: non-ACGT → `A` (filter-abund, trim-low-abund).
    Parser,
    /// screed path: upper-case, `N` → `A` (normalize-by-median).
    Screed,
}

/// A batch of bundles with the k-mer hashes of every record (computed by a worker).
pub struct HashedBatch {
    /// The records and their bundles.
    pub bundles: BundleBatch,
    /// Hashes of all records, concatenated.
    hashes: Vec<u64>,
    /// For record `i` of the batch, its range in `hashes` (empty for records in no bundle).
    spans: Vec<Range<usize>>,
}

impl HashedBatch {
    /// The k-mer hashes of record `i` of the batch, in sequence order.
    pub fn hashes(&self, i: usize) -> &[u64] {
        &self.hashes[self.spans[i].clone()]
    }

    /// Record `i` of the batch.
    pub fn record(&self, i: usize) -> Record<'_> {
        self.bundles.batch.get(i)
    }

    /// The record indices of each bundle, in input order (one or two per bundle).
    pub fn bundle_reads(&self) -> impl Iterator<Item = BundleReads> + '_ {
        self.bundles.bundles.iter().map(|b| BundleReads { first: b.first, second: b.second })
    }
}

/// The record indices of one bundle.
#[derive(Debug, Clone, Copy)]
pub struct BundleReads {
    first: usize,
    second: Option<usize>,
}

impl BundleReads {
    /// Number of reads (1 or 2).
    pub fn len(&self) -> usize {
        1 + usize::from(self.second.is_some())
    }

    /// Always false: a bundle has at least one read.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The record indices, read 1 first.
    pub fn iter(&self) -> impl Iterator<Item = usize> {
        std::iter::once(self.first).chain(self.second)
    }
}

/// Cleans every bundled record of `bundles` with `cleaning` and computes its k-mer hashes
/// with `table`'s hash function. Records outside bundles (none, in practice) get no hashes.
pub fn hash_batch(bundles: BundleBatch, table: &KTable, cleaning: Cleaning) -> HashedBatch {
    let n = bundles.batch.len();
    let mut spans = vec![0..0; n];
    let mut hashes = Vec::with_capacity(bundles.batch.iter().map(|r| r.seq.len()).sum());
    let mut clean = Vec::new();
    for b in &bundles.bundles {
        for i in std::iter::once(b.first).chain(b.second) {
            let seq = bundles.batch.get(i).seq;
            match cleaning {
                Cleaning::Parser => clean_parser(seq, &mut clean),
                Cleaning::Screed => clean_screed(seq, &mut clean),
            }
            let start = hashes.len();
            table.kmer_hashes(&clean, &mut hashes);
            spans[i] = start..hashes.len();
        }
    }
    HashedBatch { bundles, hashes, spans }
}

/// The batches of bundles of `path` (khmer's `broken_paired_reader` with `mode` and
/// `min_length`), as a source for the ordered pipeline.
pub fn bundle_source(
    path: &str,
    mode: PairMode,
    min_length: usize,
) -> Result<impl Iterator<Item = Result<BundleBatch>> + Send> {
    let reader = PairedReader::new(FastxReader::open(path)?, mode, Some(min_length));
    Ok(super::reads::bundle_batches(reader))
}

/// khmer's `median_at_least` over precomputed hashes: true when at least half (rounded up) of
/// the k-mers have a count >= `cutoff`, i.e. the upper median is >= `cutoff`.
pub fn median_at_least(table: &KTable, hashes: &[u64], cutoff: u32) -> bool {
    let needed = hashes.len().div_ceil(2);
    if needed == 0 || cutoff == 0 {
        return true;
    }
    let mut found = 0;
    for (i, &h) in hashes.iter().enumerate() {
        if table.get_hash(h) >= cutoff {
            found += 1;
            if found >= needed {
                return true;
            }
        } else if hashes.len() - i - 1 + found < needed {
            return false;
        }
    }
    false
}

/// khmer's `get_median_count(...)[0]`: the upper median of the k-mer counts (0 when empty).
pub fn median_count(table: &KTable, hashes: &[u64], scratch: &mut Vec<u32>) -> u32 {
    if hashes.is_empty() {
        return 0;
    }
    scratch.clear();
    scratch.extend(hashes.iter().map(|&h| table.get_hash(h)));
    let mid = scratch.len() / 2;
    *scratch.select_nth_unstable(mid).1
}

/// Counts every hashed k-mer once.
pub fn consume(table: &KTable, hashes: &[u64]) {
    for &h in hashes {
        table.add_hash(h);
    }
}

/// khmer's `trim_on_abundance` over precomputed hashes (KHMER.md §2.8): the length of the
/// longest prefix whose k-mers all have count >= `cutoff`; 0 when the read has a single k-mer.
pub fn trim_position(table: &KTable, hashes: &[u64], k: usize, cutoff: u32) -> usize {
    if hashes.len() <= 1 || table.get_hash(hashes[0]) < cutoff {
        return 0;
    }
    match hashes[1..].iter().position(|&h| table.get_hash(h) < cutoff) {
        Some(j) => k + j,
        None => k + hashes.len() - 1,
    }
}

/// What khmer's `trim_record` does with one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Output unchanged.
    Keep,
    /// Output the first `n` bases (and qualities).
    Truncate(usize),
    /// Drop the read (trimmed below k).
    Drop,
}

impl Trim {
    /// True when khmer counts the read as trimmed (`did_trim`: truncated or dropped).
    pub fn did_trim(self) -> bool {
        self != Trim::Keep
    }

    /// Appends the (possibly truncated) record to `out` unless it is dropped; returns the
    /// number of bases written, `None` when dropped.
    pub fn write(self, rec: &Record<'_>, out: &mut Vec<u8>) -> Option<usize> {
        let n = match self {
            Trim::Keep => rec.seq.len(),
            Trim::Truncate(n) => n,
            Trim::Drop => return None,
        };
        let cut = Record { name: rec.name, seq: &rec.seq[..n], qual: rec.qual.map(|q| &q[..n]) };
        crate::io::write_record(out, &cut);
        Some(n)
    }
}

/// khmer's `trim_record(graph, read, cutoff, variable_coverage, normalize_to)`: with
/// `variable_coverage = Some(Z)` a read whose median is below Z is kept untrimmed; otherwise
/// the read is cut before its first k-mer with count < `cutoff`, and dropped if fewer than k
/// bases remain.
pub fn trim_record(
    table: &KTable,
    hashes: &[u64],
    seq_len: usize,
    cutoff: u32,
    variable_coverage: Option<u32>,
) -> Trim {
    if let Some(z) = variable_coverage {
        if !median_at_least(table, hashes, z) {
            return Trim::Keep;
        }
    }
    let k = table.ksize();
    let p = trim_position(table, hashes, k, cutoff);
    if p < k {
        Trim::Drop
    } else if p == seq_len {
        Trim::Keep
    } else {
        Trim::Truncate(p)
    }
}

/// Refuses k above the 2-bit hash limit with a clear message.
pub fn check_ksize(k: usize) -> Result<()> {
    if k > crate::kmer::twobit::MAX_K {
        return Err(Error::invalid(format!(
            "k-mer size {k} is not supported: khmer-compatible tables allow k <= {}",
            crate::kmer::twobit::MAX_K
        )));
    }
    if k == 0 {
        return Err(Error::invalid("k-mer size must be at least 1"));
    }
    Ok(())
}

/// khmer's `calc_expected_collisions` check: an error with khmer's banner when the estimated
/// false-positive rate exceeds `limit` (unless `force`).
pub fn check_fp_rate(fp: f64, limit: f64, force: bool) -> Result<()> {
    if fp > limit && !force {
        return Err(Error::invalid(format!(
            "the graph structure is too small for this data set (estimated false positive rate \
             of {fp:.3}; max recommended {limit:.3}); increase it with -M, or use --force"
        )));
    }
    Ok(())
}

/// Prints one of khmer's informational lines on stderr unless `quiet`.
pub fn info(quiet: bool, line: impl AsRef<str>) {
    if !quiet {
        eprintln!("{}", line.as_ref());
    }
}

/// Writes `value` as pretty JSON to `path` (the `--report-json` file).
pub fn write_json_report(path: &str, value: &impl serde::Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::invalid(format!("{path}: cannot encode report: {e}")))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_with(reads: &[&[u8]]) -> KTable {
        use crate::table::{HashKind, StorageKind};
        let t = KTable::new(4, HashKind::TwoBit, StorageKind::Byte, 1_000_003, 2).unwrap();
        reads.iter().for_each(|r| {
            t.consume(r);
        });
        t
    }

    fn hashes(t: &KTable, seq: &[u8]) -> Vec<u64> {
        let mut h = Vec::new();
        t.kmer_hashes(seq, &mut h);
        h
    }

    #[test]
    fn hash_based_statistics_match_the_table() {
        let t = table_with(&[b"ACGTTGCA", b"ACGTTG"]);
        for seq in [&b"ACGTTGCA"[..], b"ACGTTGCAAA", b"TTTTACGT", b"ACGT"] {
            let h = hashes(&t, seq);
            let mut scratch = Vec::new();
            assert_eq!(Some(median_count(&t, &h, &mut scratch)), t.median_count(seq).map(|m| m.0));
            for c in 0..4 {
                assert_eq!(median_at_least(&t, &h, c), t.median_at_least(seq, c), "{seq:?} {c}");
                assert_eq!(trim_position(&t, &h, 4, c), t.trim_on_abundance(seq, c), "{seq:?} {c}");
            }
        }
    }

    #[test]
    fn trim_record_follows_khmer() {
        let t = table_with(&[b"ACGTTGCA", b"ACGTTGCA"]);
        // GCAT and CATT (nor their reverse complements) are not in the table.
        let seq = b"ACGTTGCATT";
        let h = hashes(&t, seq);
        assert_eq!(trim_record(&t, &h, seq.len(), 2, None), Trim::Truncate(8));
        assert_eq!(trim_record(&t, &h, seq.len(), 3, None), Trim::Drop);
        assert_eq!(trim_record(&t, &h, seq.len(), 3, Some(3)), Trim::Keep);
        let exact_k = hashes(&t, b"ACGT");
        assert_eq!(trim_record(&t, &exact_k, 4, 1, None), Trim::Drop);
    }

    #[test]
    fn large_k_is_refused() {
        assert!(check_ksize(33).is_err());
        assert!(check_ksize(32).is_ok());
    }
}
