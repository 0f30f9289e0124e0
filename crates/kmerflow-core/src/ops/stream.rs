//! Per-batch entry points of the read filters, for callers that hold their reads in memory
//! (the Python streaming API): the decisions of normalize-by-median, filter-abund and
//! trim-low-abund on a batch of raw sequences, in order, against a table that other threads
//! may share (it is counted atomically).
//!
//! Sequences are given as read and cleaned here with the command's rule. Reads shorter than
//! k must be left out by the caller, as the commands' readers drop them before pairing.

use super::read_filter::{trim_record, Trim};
use crate::kmer::clean::{clean_parser, clean_screed};
use crate::table::CountingTable;
use crate::table::{median_mean_stddev, KhmerTable, ReadCounts};
use std::ops::Range;

/// normalize-by-median on `bundles` (one or two reads each), in order, by the one rule
/// ([`ReadCounts::keep_bundle`]): a bundle is kept unless every one of its reads already has an
/// upper-median k-mer count >= `cutoff`, and a kept bundle's reads are counted. Returns whether
/// each bundle is kept.
pub fn normalize_batch<S: AsRef<[u8]>>(table: &KhmerTable, bundles: &[Vec<S>], cutoff: u32) -> Vec<bool> {
    let mut clean = Vec::new();
    let mut bundle = BundleCounts { table, hashes: Vec::new() };
    let mut reads = Vec::new();
    bundles
        .iter()
        .map(|seqs| {
            bundle.hashes.clear();
            reads.clear();
            for seq in seqs {
                clean_screed(seq.as_ref(), &mut clean);
                let start = bundle.hashes.len();
                table.kmer_hashes(&clean, &mut bundle.hashes);
                reads.push(start..bundle.hashes.len());
            }
            bundle.keep_bundle(|| reads.iter().cloned(), cutoff)
        })
        .collect()
}

/// The k-mer hashes of one bundle's reads end to end, counted on a shared table.
struct BundleCounts<'a> {
    table: &'a KhmerTable,
    hashes: Vec<u64>,
}

impl ReadCounts for BundleCounts<'_> {
    fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>) {
        self.table.counts_for_hashes(&self.hashes[kmers], out);
    }

    fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
        self.table.median_at_least_hashes(&self.hashes[kmers], cutoff)
    }

    fn add(&mut self, kmers: Range<usize>) {
        self.table.add_hashes(&self.hashes[kmers]);
    }
}

/// filter-abund on `reads`: each read is cut before its first k-mer with count < `cutoff`
/// (kept whole when `variable_coverage` is `Some(z)` and its median is below z), dropped when
/// fewer than k bases remain. The table is only read.
pub fn filter_batch<S: AsRef<[u8]>>(
    table: &KhmerTable,
    reads: &[S],
    cutoff: u32,
    variable_coverage: Option<u32>,
) -> Vec<Trim> {
    let mut clean = Vec::new();
    reads
        .iter()
        .map(|r| {
            clean_parser(r.as_ref(), &mut clean);
            trim_record(table, &clean, cutoff, variable_coverage)
        })
        .collect()
}

/// What the first pass of trim-low-abund does with a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstPass {
    /// Its coverage is high enough: trimmed now (one [`Trim`] per read), not counted.
    Trimmed(Vec<Trim>),
    /// Counted and set aside, to be trimmed against the final table ([`filter_batch`]).
    SetAside,
}

/// trim-low-abund's first pass on `bundles`, in order: a bundle whose smallest read median
/// reaches `trim_at_coverage` is trimmed at `cutoff` against the current table; any other is
/// counted and set aside.
pub fn trim_first_pass_batch<S: AsRef<[u8]>>(
    table: &KhmerTable,
    bundles: &[Vec<S>],
    cutoff: u32,
    trim_at_coverage: u32,
) -> Vec<FirstPass> {
    let (mut clean, mut sorted) = (Vec::new(), Vec::new());
    let mut counts: Vec<Vec<u32>> = Vec::new();
    bundles
        .iter()
        .map(|reads| {
            counts.resize_with(reads.len(), Vec::new);
            let mut coverage = u32::MAX;
            for (read_counts, r) in counts.iter_mut().zip(reads) {
                clean_parser(r.as_ref(), &mut clean);
                read_counts.clear();
                table.kmer_counts(&clean, read_counts);
                sorted.clone_from(read_counts);
                coverage = coverage.min(median_mean_stddev(&mut sorted).map_or(0, |m| m.0));
            }
            if coverage >= trim_at_coverage {
                let k = table.ksize();
                FirstPass::Trimmed(
                    counts.iter().zip(reads).map(|(c, r)| Trim::of_counts(c, k, r.as_ref().len(), cutoff)).collect(),
                )
            } else {
                for r in reads {
                    clean_parser(r.as_ref(), &mut clean);
                    table.consume(&clean);
                }
                FirstPass::SetAside
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{HashKind, StorageKind};

    fn table() -> KhmerTable {
        KhmerTable::new(4, HashKind::TwoBit, StorageKind::Byte, 100_003, 2).unwrap()
    }

    #[test]
    fn normalization_keeps_until_the_cutoff() {
        let t = table();
        let read: &[u8] = b"ACGTTGCAN";
        let bundles = vec![vec![read]; 4];
        assert_eq!(normalize_batch(&t, &bundles, 2), [true, true, false, false]);
        // A pair is kept while one of its reads is below the cutoff.
        let pair = vec![vec![read, b"GGGGCCCCAT" as &[u8]]];
        assert_eq!(normalize_batch(&t, &pair, 2), [true]);
        assert_eq!(normalize_batch(&t, &pair, 2), [false]);
    }

    #[test]
    fn filtering_and_first_pass_follow_trim_record() {
        let t = table();
        t.consume(b"ACGTTGCA");
        t.consume(b"ACGTTGCA");
        let reads: [&[u8]; 3] = [b"ACGTTGCATT", b"ACGTTGCA", b"TTTTC"];
        assert_eq!(filter_batch(&t, &reads, 2, None), [Trim::Truncate(8), Trim::Keep, Trim::Drop]);
        assert_eq!(filter_batch(&t, &reads, 3, Some(3))[0], Trim::Keep);
        let bundles = vec![vec![reads[0]], vec![reads[2]]];
        assert_eq!(
            trim_first_pass_batch(&t, &bundles, 2, 2),
            [FirstPass::Trimmed(vec![Trim::Truncate(8)]), FirstPass::SetAside]
        );
        assert_eq!(t.get_hash(t.hash_kmer(b"TTTT").unwrap()), 1, "set-aside reads are counted");
    }
}
