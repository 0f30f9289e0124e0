//! One prefetch pipeline over the k-mers of many reads, for a single writer that decides
//! read by read whether to count it (digital normalization).
//!
//! The hashes of a whole batch are laid end to end; [`KmerPass`] computes each k-mer's bins
//! once, when it prefetches them, a fixed distance ahead of the k-mer being looked at, and runs
//! on across read boundaries, so that the cells of the next read are on their way while the
//! current read is decided. Counting a read increments the bins already computed (their cache
//! lines were just read), with plain stores, since the pass holds the table exclusively.

use super::{BitCells, ByteCells, Cells, KTable, NibbleCells, StorageKind, Tally, PREFETCH_AHEAD};
use std::ops::Range;

/// A pass over the concatenated k-mer hashes of many reads (see the module documentation).
/// Reads are given as ranges of indices into the hashes; they are looked at in order.
pub struct KmerPass<'a> {
    table: &'a mut KTable,
    hashes: &'a [u64],
    /// Bins of k-mers `0..ready`, hash-major (`n_tables` per k-mer).
    bins: &'a mut Vec<u64>,
    ready: usize,
}

impl<'a> KmerPass<'a> {
    /// Starts a pass of `table` over `hashes`; `bins` is scratch space reused between passes.
    pub fn new(table: &'a mut KTable, hashes: &'a [u64], bins: &'a mut Vec<u64>) -> Self {
        bins.clear();
        bins.reserve(hashes.len() * table.n_tables());
        KmerPass { table, hashes, bins, ready: 0 }
    }

    /// Computes and prefetches the bins of every k-mer up to `end + PREFETCH_AHEAD`.
    #[inline(always)]
    fn prepare<C: Cells>(&mut self, end: usize) {
        let target = (end + PREFETCH_AHEAD).min(self.hashes.len());
        let n_tables = self.table.tables.len();
        while self.ready < target {
            let start = self.bins.len();
            let hash = self.hashes[self.ready];
            self.bins.extend(self.table.tables.iter().map(|t| t.modulus.rem(hash)));
            self.table.prefetch_kmer::<C>(&self.bins[start..start + n_tables]);
            self.ready += 1;
        }
    }

    /// khmer's `median_at_least` on the k-mers `kmers` (a read): true iff at least
    /// `(unsigned)(0.5 + n/2.0)` of its n k-mers have count >= `cutoff`. Stops as soon as the
    /// answer is known either way. False for a read without k-mers.
    pub fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
        let n = kmers.len();
        if n == 0 {
            return false;
        }
        let min_req = super::median_min_required(n);
        let n_tables = self.table.tables.len();
        with_cells!(self.table.storage, C => {
            let mut seen = 0;
            for (done, i) in kmers.enumerate() {
                // Not enough k-mers left to reach min_req: the answer is false.
                if seen + (n - done) < min_req {
                    return false;
                }
                self.prepare::<C>(i + 1);
                let kmer_bins = &self.bins[i * n_tables..(i + 1) * n_tables];
                seen += usize::from(self.table.count::<C>(self.hashes[i], |t| kmer_bins[t]) >= cutoff);
                if seen >= min_req {
                    return true;
                }
            }
            false
        })
    }

    /// Counts the k-mers `kmers` (a read), the same as [`KTable::consume`] on the read.
    pub fn add(&mut self, kmers: Range<usize>) {
        let n_tables = self.table.tables.len();
        let mut total = Tally::default();
        with_cells!(self.table.storage, C => {
            for i in kmers {
                self.prepare::<C>(i + 1);
                let kmer_bins = &self.bins[i * n_tables..(i + 1) * n_tables];
                total.add(self.table.update::<C, true>(self.hashes[i], |t| kmer_bins[t]));
            }
        });
        self.table.record(total);
    }
}
