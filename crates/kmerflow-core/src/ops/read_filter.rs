//! Building blocks shared by the read-filtering commands (normalize-by-median, filter-abund,
//! trim-low-abund): cleaning a batch of bundles in a worker, khmer's `trim_record` and
//! report helpers.
//!
//! The split of work follows the ordered pipeline ([`crate::pipeline::run_ordered`]): the
//! reader thread parses, workers clean the reads ([`clean_batch`]) and, where the table is
//! only read (filter-abund, trim-low-abund's second pass), trim them too; the ordered stage
//! makes the decisions that depend on earlier reads and updates the table. Table look-ups go
//! through the sequence-level `KhmerTable` methods, which hash a whole read and prefetch its
//! table cells ahead, so that the memory latency of the large tables overlaps.

use super::sizing::{FpRate, TableParams};
use crate::io::{BundleBatch, PairMode, PairedInput, Record};
use crate::kmer::clean::{clean_parser, clean_screed};
use crate::kmer::Strand;
use crate::run::RunContext;
use crate::table::CountingTable;
use crate::table::{median_min_required, trim_position, HashKind, KhmerTable};
use crate::{Error, Result};
use std::ops::Range;

/// Which of khmer's cleaning rules a command applies before hashing (docs/khmer-compat.md §1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleaning {
    /// C++ read parser: non-ACGT → `A` (filter-abund, trim-low-abund).
    Parser,
    /// screed path: upper-case, `N` → `A` (normalize-by-median).
    Screed,
}

/// A batch of bundles with the cleaned sequence of every record (made by a worker).
pub struct CleanBatch {
    /// The records and their bundles.
    pub bundles: BundleBatch,
    /// Cleaned sequences of all records, concatenated.
    clean: Vec<u8>,
    /// For record `i` of the batch, its range in `clean` (empty for records in no bundle).
    spans: Vec<Range<usize>>,
}

impl CleanBatch {
    /// The cleaned sequence of record `i` of the batch (what the table hashes).
    pub fn clean_seq(&self, i: usize) -> &[u8] {
        &self.clean[self.spans[i].clone()]
    }

    /// Record `i` of the batch, as read.
    pub fn record(&self, i: usize) -> Record<'_> {
        self.bundles.batch.get(i)
    }

    /// The record indices of each bundle, in input order (one or two per bundle).
    pub fn bundle_reads(&self) -> impl Iterator<Item = BundleReads> + '_ {
        (0..self.bundles.bundles.len()).map(|i| self.bundle(i))
    }

    /// The record indices of bundle `index`.
    pub fn bundle(&self, index: usize) -> BundleReads {
        let b = self.bundles.bundles[index];
        BundleReads { first: b.first, second: b.second }
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

    /// The record index of read 1 and of its mate, if any.
    pub fn reads(&self) -> [Option<usize>; 2] {
        [Some(self.first), self.second]
    }
}

/// Cleans every bundled record of `bundles` with `cleaning`. Records outside bundles (none,
/// in practice) get an empty sequence.
pub fn clean_batch(bundles: BundleBatch, cleaning: Cleaning) -> CleanBatch {
    let mut spans = vec![0..0; bundles.batch.len()];
    let mut clean = Vec::with_capacity(bundles.batch.iter().map(|r| r.seq.len()).sum());
    let mut one = Vec::new();
    for b in &bundles.bundles {
        for i in std::iter::once(b.first).chain(b.second) {
            let seq = bundles.batch.get(i).seq;
            match cleaning {
                Cleaning::Parser => clean_parser(seq, &mut one),
                Cleaning::Screed => clean_screed(seq, &mut one),
            }
            let start = clean.len();
            clean.extend_from_slice(&one);
            spans[i] = start..clean.len();
        }
    }
    CleanBatch { bundles, clean, spans }
}

/// A cleaned batch with the k-mer hashes of every bundled read (made by a worker), for the
/// commands that decide read by read in the ordered stage (normalize-by-median, trim-low-abund).
pub struct HashedBatch {
    /// The cleaned reads.
    pub reads: CleanBatch,
    /// The hashes of all reads, concatenated.
    pub hashes: Vec<u64>,
    /// For record `i` of the batch, its k-mers' range in `hashes`.
    pub kmers: Vec<Range<usize>>,
}

impl HashedBatch {
    /// Cleans the reads of `bundles` by `cleaning` and appends the hashes of each read's k-mers
    /// by `hash` (the caller counts them in its run's `kmers` metric).
    pub fn new(bundles: BundleBatch, cleaning: Cleaning, hash: impl Fn(&[u8], &mut Vec<u64>)) -> Self {
        let reads = clean_batch(bundles, cleaning);
        let n = reads.bundles.batch.len();
        let mut hashes = Vec::new();
        let mut kmers = Vec::with_capacity(n);
        for i in 0..n {
            let start = hashes.len();
            hash(reads.clean_seq(i), &mut hashes);
            kmers.push(start..hashes.len());
        }
        HashedBatch { reads, hashes, kmers }
    }

    /// The batch cut at bundle boundaries into pieces of about `max_kmers` k-mers (more when
    /// one bundle has more): each piece's range of bundles and range of k-mers.
    pub fn pieces(&self, max_kmers: usize) -> Vec<(Range<usize>, Range<usize>)> {
        let bundles = &self.reads.bundles.bundles;
        let mut pieces = Vec::new();
        let (mut first, mut start) = (0, 0);
        for (i, b) in bundles.iter().enumerate() {
            let end = self.kmers[b.second.unwrap_or(b.first)].end;
            if end - start >= max_kmers || i + 1 == bundles.len() {
                pieces.push((first..i + 1, start..end));
                (first, start) = (i + 1, end);
            }
        }
        pieces
    }
}

/// The batches of bundles of `input` (one file: khmer's `broken_paired_reader` with `mode` and
/// `min_length`; R1/R2 files: see [`PairedInput::open`]), read within the run `ctx`, as a
/// source for the ordered pipeline.
pub fn bundle_source(
    input: &PairedInput,
    mode: PairMode,
    min_length: usize,
    ctx: &RunContext,
) -> Result<impl Iterator<Item = Result<BundleBatch>> + Send> {
    Ok(super::reads::bundle_batches(input.open(mode, Some(min_length), ctx)?))
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
    /// What happens to a read of `len` bases cut at position `cut`: dropped when fewer than k
    /// bases remain.
    fn at(cut: usize, k: usize, len: usize) -> Trim {
        if cut < k {
            Trim::Drop
        } else if cut == len {
            Trim::Keep
        } else {
            Trim::Truncate(cut)
        }
    }

    /// [`trim_record`] without variable coverage, from the read's k-mer counts (in read order).
    pub fn of_counts(counts: &[u32], k: usize, len: usize, cutoff: u32) -> Trim {
        Trim::at(trim_position(counts, k, len, |count| count >= cutoff), k, len)
    }

    /// True when khmer counts the read as trimmed (`did_trim`: truncated or dropped).
    pub fn did_trim(self) -> bool {
        self != Trim::Keep
    }

    /// Appends the (possibly truncated) record to `out` unless it is dropped; returns the
    /// number of bases written, `None` when dropped.
    pub fn write(self, rec: &Record<'_>, out: &mut Vec<u8>) -> Option<usize> {
        let cut = self.apply(rec)?;
        crate::io::write_record(out, &cut);
        Some(cut.seq.len())
    }

    /// The record as trimmed (its first bases and qualities), `None` when dropped.
    pub fn apply<'r>(self, rec: &Record<'r>) -> Option<Record<'r>> {
        let n = match self {
            Trim::Keep => rec.seq.len(),
            Trim::Truncate(n) => n,
            Trim::Drop => return None,
        };
        Some(Record { name: rec.name, seq: &rec.seq[..n], qual: rec.qual.map(|q| &q[..n]) })
    }
}

/// khmer's `trim_record(graph, read, cutoff, variable_coverage, normalize_to)` on a read's
/// cleaned sequence: [`trim_of_counts`] of its k-mers' counts in `table`, the median test of
/// `variable_coverage` asked of the table first (it stops once decided: counting every k-mer
/// of the reads it keeps whole cost filter-abund -V 45 % more CPU).
pub fn trim_record<T: CountingTable + ?Sized>(
    table: &T,
    clean_seq: &[u8],
    cutoff: u32,
    variable_coverage: Option<u32>,
) -> Trim {
    if variable_coverage.is_some_and(|z| !table.median_at_least(clean_seq, z)) {
        return Trim::Keep;
    }
    let mut counts = Vec::new();
    table.kmer_counts(clean_seq, &mut counts);
    trim_of_counts(&counts, table.ksize(), clean_seq.len(), cutoff, None).0
}

/// khmer's `trim_record` from the counts of a read's k-mers (in read order; the read has
/// `len` bases): with `variable_coverage = Some(Z)` a read whose upper median is below Z is
/// kept untrimmed (and said `skipped`, the second value); otherwise the read is cut before its
/// first k-mer with count < `cutoff` (docs/khmer-compat.md §2.8, `trim_on_abundance`), and
/// dropped if fewer than k bases remain. The one rule of every filtering command, whichever
/// table gave the counts.
pub fn trim_of_counts(
    counts: &[u32],
    k: usize,
    len: usize,
    cutoff: u32,
    variable_coverage: Option<u32>,
) -> (Trim, bool) {
    if let Some(z) = variable_coverage {
        let passed = counts.iter().filter(|&&count| count >= z).count();
        // khmer's `median_at_least`: false for a read without k-mers.
        if counts.is_empty() || passed < median_min_required(counts.len()) {
            return (Trim::Keep, true);
        }
    }
    (Trim::of_counts(counts, k, len, cutoff), false)
}

/// khmer's `check_conflicting_args` for `--loadgraph PATH`: the loaded table's k (and sizes)
/// win over the sizing flags, with a warning to `ctx` when any was given. Returns the table
/// parameters with the table's k.
pub fn loadgraph_params(params: &TableParams, path: &str, table_k: usize, ctx: &RunContext) -> TableParams {
    let defaults = TableParams::default();
    let sized = (params.ksize, params.n_tables, params.max_tablesize)
        != (defaults.ksize, defaults.n_tables, defaults.max_tablesize);
    if sized {
        ctx.warning(format!(
            "WARNING: You are loading a saved k-mer countgraph from {path}: its k ({table_k}), number of tables \
             and table size are used; -k/--ksize, -N/--n_tables and -x/--max-tablesize are ignored"
        ));
    }
    if params.unique_kmers != 0.0 || params.max_memory.is_some_and(|m| m != 0.0) {
        ctx.warning(format!(
            "WARNING: You are loading a saved k-mer countgraph from {path}: -U and -M do not resize it"
        ));
    }
    TableParams { ksize: table_k, ..params.clone() }
}

/// Refuses the table loaded from `path` unless it `holds_counts` (a nodegraph holds presence
/// bits only).
pub fn check_counts(path: &str, holds_counts: bool) -> Result<()> {
    if !holds_counts {
        return Err(Error::format(
            path,
            None,
            None,
            "is a nodegraph (k-mer presence bits, as load-graph saves), not a countgraph of k-mer counts \
             (as load-into-counting saves)",
        ));
    }
    Ok(())
}

/// Loads the khmer-format countgraph at `path` (a nodegraph, and a table of k-mers hashed on
/// another `strand`, are refused) within the run `ctx`.
pub fn load_countgraph(path: &str, strand: Strand, ctx: &RunContext) -> Result<KhmerTable> {
    let table = KhmerTable::load_in(path, HashKind::TwoBit, ctx)?;
    check_counts(path, table.holds_counts())?;
    strand.check_table(table.strand(), path)?;
    Ok(table)
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

/// khmer's `calc_expected_collisions` check: an error when the estimated false-positive rate
/// exceeds `limit`, naming the memory that would do (`resize`, from
/// [`crate::ops::sizing::resize_hint`]); with `force`, a warning to `ctx` and the run goes on.
pub fn check_fp_rate(fp: f64, limit: f64, force: bool, resize: &str, ctx: &RunContext) -> Result<()> {
    if fp <= limit {
        return Ok(());
    }
    let problem = too_small(fp, limit);
    if !force {
        return Err(Error::invalid(format!(
            "** ERROR: {problem}; increase it with {resize} (or -M auto), or use --force"
        )));
    }
    ctx.warning(format!("WARNING: {problem}; do not use these results (going on because of --force)"));
    Ok(())
}

/// The problem [`check_fp_rate`] and [`FpLimit::stop_early`] report.
fn too_small(fp: f64, limit: f64) -> String {
    format!(
        "the graph structure is too small for this data set (estimated false positive rate of {fp:.3}; \
         max recommended {limit:.3})"
    )
}

/// The false-positive ceiling of a run (khmer's `max_false_pos`), checked as its table fills
/// so that a run bound to fail at its end stops as soon as that is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FpLimit {
    /// The largest estimated rate accepted.
    pub max: f64,
    /// `-f/--force`: the run goes on past the ceiling (and warns at its end).
    pub force: bool,
    /// The rate the `-M` hint is for (`--fp-rate`).
    pub target: f64,
}

impl FpLimit {
    /// The ceiling `max` with the `-f` and the target rate of `params`.
    pub fn of(max: f64, params: &TableParams) -> Self {
        FpLimit { max, force: params.force, target: super::sizing::target_rate(params) }
    }

    /// Ends the run, at read `reads` of `path`, once the estimated rate of `table` is above the
    /// ceiling (unless `force`): the rate only grows as the table fills, so the run's final
    /// check would fail. The `-M` named is a lower bound, for the k-mers counted so far (the
    /// share of the input read cannot be told: the reader runs far ahead of the counting).
    /// Cheap enough for every batch: one counter read and a power.
    pub fn stop_early(&self, table: &(impl FpRate + ?Sized), path: &str, reads: u64) -> Result<()> {
        if self.force {
            return Ok(());
        }
        let fp = table.fp_rate();
        if fp <= self.max {
            return Ok(());
        }
        let hint = table.resize_hint(fp, self.target);
        let hint = hint.strip_prefix("at least ").unwrap_or(&hint);
        Err(Error::invalid(format!(
            "{path}: stopped at read {reads}: ** ERROR: {}; increase it with at least {hint} (or -M auto), or use --force",
            too_small(fp, self.max)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_with(reads: &[&[u8]]) -> KhmerTable {
        use crate::table::{HashKind, StorageKind};
        let t = KhmerTable::new(4, HashKind::TwoBit, StorageKind::Byte, 1_000_003, 2).unwrap();
        reads.iter().for_each(|r| {
            t.consume(r);
        });
        t
    }

    #[test]
    fn trim_record_follows_khmer() {
        let t = table_with(&[b"ACGTTGCA", b"ACGTTGCA"]);
        // GCAT and CATT (nor their reverse complements) are not in the table.
        let seq = b"ACGTTGCATT";
        assert_eq!(trim_record(&t, seq, 2, None), Trim::Truncate(8));
        assert_eq!(trim_record(&t, seq, 3, None), Trim::Drop);
        assert_eq!(trim_record(&t, seq, 3, Some(3)), Trim::Keep);
        assert_eq!(trim_record(&t, b"ACGTTGCA", 2, None), Trim::Keep);
        assert_eq!(trim_record(&t, b"ACGT", 1, None), Trim::Drop);
    }

    #[test]
    fn cleaning_follows_the_rule() {
        use crate::io::{FastxReader, PairMode, PairedReader};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.fa");
        std::fs::write(&path, b">a\nACGTNnx\n").unwrap();
        let reader = FastxReader::open(path.to_str().unwrap()).unwrap();
        let mut pairs = PairedReader::new(reader, PairMode::ForceSingle, None);
        let batch = pairs.next_batch().unwrap().unwrap();
        let screed = clean_batch(batch, Cleaning::Screed);
        assert_eq!(screed.clean_seq(0), b"ACGTAAX");
        assert_eq!(screed.record(0).seq, b"ACGTNnx");
    }

    #[test]
    fn a_table_over_the_ceiling_stops_the_run_unless_forced() {
        use crate::table::{HashKind, StorageKind};
        let limit = FpLimit { max: 0.2, force: false, target: 0.1 };
        let t = KhmerTable::new(4, HashKind::TwoBit, StorageKind::Byte, 13, 2).unwrap();
        assert!(limit.stop_early(&t, "r.fa", 0).is_ok());
        t.consume(b"ACGTTGCATTGACCATGGATCCAGTTACGGATTACAGGCATCGATCGGATCCATTGACGATTACCAGT");
        let err = limit.stop_early(&t, "r.fa", 7).unwrap_err().to_string();
        assert!(err.starts_with("r.fa: stopped at read 7: ** ERROR: the graph structure is too small"), "{err}");
        assert!(err.contains("increase it with at least -M "), "{err}");
        assert!(FpLimit { force: true, ..limit }.stop_early(&t, "r.fa", 7).is_ok());
        // At the ceiling, not above it, the run goes on.
        assert!(FpLimit { max: t.fp_rate(), ..limit }.stop_early(&t, "r.fa", 7).is_ok());
    }

    #[test]
    fn large_k_is_refused() {
        assert!(check_ksize(33).is_err());
        assert!(check_ksize(32).is_ok());
    }
}
