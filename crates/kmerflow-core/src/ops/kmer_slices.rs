//! Record batches cut into slices of at most [`MAX_SLICE_KMERS`] k-mers, for counting.
//!
//! A counting worker turns every k-mer of its work item into a hash (and, in khmer's layout,
//! flags per table): 9-12 bytes per k-mer, against about 3 bytes of FASTQ text. A record batch
//! is one chunk of text, or one whole record when the record is longer (a chromosome of a
//! reference genome); hashing it at once would hold a hash per base of the chromosome. Cutting
//! the batches into slices bounds what a work item holds, so the memory in flight does not
//! depend on the record lengths. A record longer than a slice is cut into pieces that overlap
//! by k - 1 bases, so that every k-mer is in exactly one piece; the parser's cleaning rule
//! works base by base, so a cleaned piece is the piece of the cleaned record.

use super::count::ReadTally;
use crate::io::RecordBatch;
use crate::kmer::clean::clean_parser;
use crate::pipeline::Workload;
use crate::Result;
use std::sync::Arc;

/// The most k-mers in one slice: 4 MiB of hashes.
pub const MAX_SLICE_KMERS: usize = 1 << 19;

/// A position in a batch: (record index, k-mer index within the record). Record `r` "starts"
/// at `(r, 0)`, so a record without k-mers (shorter than k) still has a position.
type Position = (usize, usize);

/// The k-mers of `batch` from position `start` up to (not including) position `end`.
pub struct KmerSlice {
    batch: Arc<RecordBatch>,
    k: usize,
    start: Position,
    end: Position,
}

impl KmerSlice {
    /// The pieces of the slice: (record index, first k-mer, one past the last k-mer); records
    /// shorter than k give empty pieces.
    fn pieces(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let last = self.end.0.min(self.batch.len().saturating_sub(1));
        (self.start.0..=last).filter_map(move |r| {
            let from = if r == self.start.0 { self.start.1 } else { 0 };
            let to = if r == self.end.0 { self.end.1 } else { kmers_of(self.batch.get(r).seq.len(), self.k) };
            // The end record contributes only when the slice ends inside it.
            (r < self.end.0 || to > from).then_some((r, from, to))
        })
    }

    /// True when record `r` starts in this slice (it is tallied there).
    fn starts_here(&self, r: usize) -> bool {
        self.start <= (r, 0) && (r, 0) < self.end
    }
}

impl Workload for KmerSlice {
    fn records(&self) -> u64 {
        self.pieces().filter(|&(r, ..)| self.starts_here(r)).count() as u64
    }
    fn bytes(&self) -> u64 {
        self.pieces().filter(|&(r, ..)| self.starts_here(r)).map(|(r, ..)| self.batch.get(r).seq.len() as u64).sum()
    }
}

/// Number of k-mers of a sequence of `len` bases.
fn kmers_of(len: usize, k: usize) -> usize {
    (len + 1).saturating_sub(k)
}

/// Cuts every batch of `batches` into slices of at most `max_kmers` k-mers (k = `k`), in order.
pub fn kmer_slices(
    batches: impl Iterator<Item = Result<RecordBatch>>,
    k: usize,
    max_kmers: usize,
) -> impl Iterator<Item = Result<KmerSlice>> {
    let max_kmers = max_kmers.max(1);
    batches.flat_map(move |batch| -> Box<dyn Iterator<Item = Result<KmerSlice>> + Send> {
        match batch {
            Err(e) => Box::new(std::iter::once(Err(e))),
            Ok(batch) => Box::new(slice_batch(Arc::new(batch), k, max_kmers).map(Ok)),
        }
    })
}

/// The slices of one batch.
fn slice_batch(batch: Arc<RecordBatch>, k: usize, max_kmers: usize) -> impl Iterator<Item = KmerSlice> + Send {
    let records = batch.len();
    let mut at: Position = (0, 0);
    std::iter::from_fn(move || {
        if at.0 >= records {
            return None;
        }
        let start = at;
        let mut budget = max_kmers;
        while at.0 < records {
            let left = kmers_of(batch.get(at.0).seq.len(), k) - at.1;
            // Records without k-mers join the slice before them.
            if budget == 0 && left > 0 {
                break;
            }
            let take = left.min(budget);
            budget -= take;
            at = if take == left { (at.0 + 1, 0) } else { (at.0, at.1 + take) };
        }
        Some(KmerSlice { batch: Arc::clone(&batch), k, start, end: at })
    })
}

/// Cleaned pieces of reads laid end to end (one slice), reused from slice to slice.
#[derive(Default)]
pub struct CleanReads {
    bases: Vec<u8>,
    ends: Vec<usize>,
    /// Of each piece: whether it is the first and whether it is the last piece of its read.
    edges: Vec<(bool, bool)>,
    clean: Vec<u8>,
}

impl CleanReads {
    /// Cleans (C++-parser rule) the pieces of `slice`, replacing the contents; returns the
    /// tally of the slice (reads that start in it, their k-mers in it).
    pub fn fill(&mut self, slice: &KmerSlice) -> ReadTally {
        self.bases.clear();
        self.ends.clear();
        self.edges.clear();
        let mut tally = ReadTally::default();
        for (r, from, to) in slice.pieces() {
            let seq = slice.batch.get(r).seq;
            if slice.starts_here(r) {
                tally.reads += 1;
                tally.short_reads += u64::from(seq.len() < slice.k);
            }
            if to > from {
                tally.kmers += (to - from) as u64;
                clean_parser(&seq[from..to + slice.k - 1], &mut self.clean);
                self.bases.extend_from_slice(&self.clean);
                self.ends.push(self.bases.len());
                self.edges.push((from == 0, to == kmers_of(seq.len(), slice.k)));
            }
        }
        tally
    }

    /// Replaces `out` with the k-mer hashes of all the pieces, in order, by `hash`.
    pub fn hashes(&self, hash: &impl Fn(&[u8], &mut Vec<u64>), out: &mut Vec<u64>) {
        out.clear();
        self.pieces().for_each(|piece| hash(piece.bases, out));
    }

    /// The cleaned pieces, in order.
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).zip(&self.edges).map(|((start, &end), &(first, last))| Piece {
            bases: &self.bases[start..end],
            first,
            last,
        })
    }
}

/// A cleaned piece of a read (at least k bases).
pub struct Piece<'a> {
    /// The bases.
    pub bases: &'a [u8],
    /// The piece starts its read.
    pub first: bool,
    /// The piece ends its read.
    pub last: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{Format, OwnedRecord};

    fn batch(seqs: &[&str]) -> RecordBatch {
        let mut b = RecordBatch::empty(Format::Fasta, 1);
        for (i, s) in seqs.iter().enumerate() {
            let rec = OwnedRecord { name: format!("r{i}").into_bytes(), seq: s.as_bytes().to_vec(), qual: None };
            b.push(&rec.as_record(), 1 + 2 * i as u64);
        }
        b
    }

    /// Every k-mer of the cleaned reads, in order, from the slices of `seqs`.
    fn sliced_kmers(seqs: &[&str], k: usize, max: usize) -> (Vec<String>, ReadTally, usize) {
        let slices: Vec<_> = slice_batch(Arc::new(batch(seqs)), k, max).collect();
        let (mut kmers, mut total, mut reads) = (Vec::new(), ReadTally::default(), CleanReads::default());
        for slice in &slices {
            let tally = reads.fill(slice);
            assert!(tally.kmers as usize <= max);
            assert_eq!(tally.reads, slice.records());
            let hash = |seq: &[u8], out: &mut Vec<u64>| out.extend((0..=seq.len() - k).map(|i| i as u64));
            let mut offsets = Vec::new();
            reads.hashes(&hash, &mut offsets);
            for piece in reads.pieces() {
                kmers.extend(piece.bases.windows(k).map(|w| String::from_utf8(w.to_vec()).unwrap()));
            }
            assert_eq!(offsets.len() as u64, tally.kmers);
            total.add(tally);
        }
        (kmers, total, slices.len())
    }

    #[test]
    fn slices_hold_every_kmer_once_and_every_read_once() {
        let seqs = ["ACGTACGTAC", "AC", "ggtTNNACGTAA", "", "TTTTG", "ACG"];
        let k = 3;
        let expected: Vec<String> = seqs
            .iter()
            .flat_map(|s| {
                let mut clean = Vec::new();
                clean_parser(s.as_bytes(), &mut clean);
                clean.windows(k).map(|w| String::from_utf8(w.to_vec()).unwrap()).collect::<Vec<_>>()
            })
            .collect();
        for max in [1, 2, 3, 7, 8, 100] {
            let (kmers, tally, n) = sliced_kmers(&seqs, k, max);
            assert_eq!(kmers, expected, "max {max}");
            assert_eq!((tally.reads, tally.short_reads, tally.kmers), (6, 2, expected.len() as u64), "max {max}");
            assert_eq!(n, expected.len().div_ceil(max), "max {max}");
        }
    }

    #[test]
    fn a_long_record_is_cut_and_errors_pass_through() {
        let (kmers, tally, n) = sliced_kmers(&["ACGTTGCAAC"], 4, 2);
        assert_eq!(kmers, ["ACGT", "CGTT", "GTTG", "TTGC", "TGCA", "GCAA", "CAAC"]);
        assert_eq!((tally.reads, n), (1, 4));
        let mut reads = CleanReads::default();
        let edges: Vec<_> = slice_batch(Arc::new(batch(&["ACGTTGCAAC", "AC", "ACGT"])), 4, 3)
            .flat_map(|slice| {
                reads.fill(&slice);
                reads.pieces().map(|p| (p.bases.to_vec(), p.first, p.last)).collect::<Vec<_>>()
            })
            .collect();
        let piece = |b: &str, first, last| (b.as_bytes().to_vec(), first, last);
        assert_eq!(
            edges,
            [
                piece("ACGTTG", true, false),
                piece("TTGCAA", false, false),
                piece("CAAC", false, true),
                piece("ACGT", true, true)
            ]
        );
        let batches = vec![Ok(batch(&["ACGT", "AC"])), Err(crate::Error::invalid("bad"))];
        let items: Vec<_> = kmer_slices(batches.into_iter(), 3, 1).collect();
        assert_eq!(items.len(), 3);
        assert!(items[2].is_err());
    }
}
