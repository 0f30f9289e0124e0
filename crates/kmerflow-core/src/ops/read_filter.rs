//! Building blocks shared by the read-filtering commands (normalize-by-median, filter-abund,
//! trim-low-abund): hashing a batch of bundles in a worker, khmer's per-read statistics
//! computed from precomputed hashes, `trim_record`, output/report helpers and khmer's number
//! formatting.
//!
//! The split of work follows the ordered pipeline: workers clean reads and compute their
//! k-mer hashes ([`hash_batch`]); the one ordered stage only looks counts up by hash
//! ([`median_at_least`], [`median_count`], [`trim_position`]) and updates the table
//! ([`consume`]), so its per-k-mer work is a few memory accesses.

use crate::io::{BundleBatch, Compression, FastxReader, OutputFile, PairMode, PairedReader, Record};
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
/// `min_length`), as an iterator for the ordered pipeline.
pub fn bundle_source(
    path: &str,
    mode: PairMode,
    min_length: usize,
) -> Result<impl Iterator<Item = Result<BundleBatch>> + Send> {
    let mut reader = PairedReader::new(FastxReader::open(path)?, mode, Some(min_length));
    Ok(std::iter::from_fn(move || reader.next_batch().transpose()))
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

/// The output compression chosen by khmer's `--gzip`/`--bzip` (never by the file name).
pub fn output_compression(gzip: bool, bzip: bool) -> Compression {
    if gzip {
        Compression::Gzip
    } else if bzip {
        Compression::Bzip2
    } else {
        Compression::None
    }
}

/// Opens an output with `--gzip/--bzip` compression.
pub fn create_output(path: &str, compression: Compression) -> Result<OutputFile> {
    OutputFile::create_with(path, compression)
}

/// `<basename of input><suffix>` in the current directory (khmer's default output names).
pub fn default_output_name(input: &str, suffix: &str) -> String {
    let base = std::path::Path::new(input)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| input.to_string());
    format!("{base}{suffix}")
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

/// Python's `'{:.1%}'.format(x)`.
pub fn percent1(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Python's `'{:.4}'.format(x)` for a finite non-negative float: 4 significant digits,
/// scientific notation when the exponent is < -4 or >= 4, trailing zeros removed but at least
/// one digit after the point in fixed notation.
pub fn python_g4(x: f64) -> String {
    if x == 0.0 {
        return "0.0".to_string();
    }
    let sci = format!("{x:.3e}");
    let (mantissa, exp) = sci.split_once('e').expect("scientific notation has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    if !(-4..4).contains(&exp) {
        let m = mantissa.trim_end_matches('0').trim_end_matches('.');
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.abs());
    }
    let decimals = (3 - exp).max(0) as usize;
    let fixed = format!("{x:.decimals$}");
    if fixed.contains('.') {
        let t = fixed.trim_end_matches('0');
        if t.ends_with('.') { format!("{t}0") } else { t.to_string() }
    } else {
        format!("{fixed}.0")
    }
}

/// The ordered pipeline used by the filters: `make_worker()` builds a per-thread function
/// that turns a batch into an output; `sink` receives outputs in input order.
pub fn run_ordered<B, O, I, W, M, S>(source: I, threads: usize, make_worker: M, sink: S) -> Result<()>
where
    I: IntoIterator<Item = Result<B>>,
    I::IntoIter: Send,
    B: Send,
    O: Send,
    M: Fn() -> W + Sync,
    W: FnMut(B) -> Result<O>,
    S: FnMut(O) -> Result<()>,
{
    let _ = threads;
    let mut sink = sink;
    let mut work = make_worker();
    for batch in source {
        sink(work(batch?)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_g4_matches_python() {
        assert_eq!(python_g4(1.0 / 1001.0), "0.000999");
        assert_eq!(python_g4(1.0 / 2002.0), "0.0004995");
        assert_eq!(python_g4(0.25261), "0.2526");
        assert_eq!(python_g4(1.0), "1.0");
        assert_eq!(python_g4(0.5), "0.5");
        assert_eq!(python_g4(0.00001234), "1.234e-05");
        assert_eq!(python_g4(0.1), "0.1");
    }

    #[test]
    fn percent_matches_python() {
        assert_eq!(percent1(0.5), "50.0%");
        assert_eq!(percent1(1.0), "100.0%");
        assert_eq!(percent1(1.0 / 1001.0), "0.1%");
    }

    #[test]
    fn default_names_use_the_basename() {
        assert_eq!(default_output_name("/a/b/reads.fa", ".keep"), "reads.fa.keep");
        assert_eq!(default_output_name("reads.fq.gz", ".abundtrim"), "reads.fq.gz.abundtrim");
    }

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
        let seq = b"ACGTTGCAAA";
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
