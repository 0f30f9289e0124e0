//! Tables sharded over processes: the second backend of the engine's tables, between the
//! in-process tables of [`crate::table`] and the operations of [`crate::ops`].
//!
//! - [`khmer`]: khmer's layout cut into shards, contiguous ranges of its counters: the shard
//!   map (`ShardMap`: counter indices split by shard with one counting sort), a shard's kernel
//!   (`Shard`: add, look up, step) and the client's part (`ShardClient`: bigcounts, statistics);
//! - [`blocked`]: the blocked layout cut into shards of whole cache lines, with its counting
//!   ([`blocked::count`]) and normalization ([`blocked::normalize`]) runs;
//! - [`runs`]: whole files through a sharded table (reading, hashing and routing batches,
//!   counting, normalize-by-median, look-ups), the transport to the remote shards
//!   (`RemoteShards`) and the driver of the native commands' decisions (`ShardedDecisions`);
//! - [`drive`]: the counting and normalize-by-median loops over either layout, the remote
//!   shards reached only through the transport;
//! - [`in_flight`]: the updates a remote shard's answer lacks while they travel;
//! - [`mod@file`]: a saved table written and read shard by shard at the shards' places.
//!
//! Every result is that of the one-process table with the same sizes.

pub mod blocked;
pub mod drive;
pub mod file;
pub mod in_flight;
pub mod khmer;
pub mod runs;

use crate::table::batch::spans;
use crate::table::ReadCounts;
use std::ops::Range;

/// normalize-by-median over the bundles of a batch on either layout's shards (bundle `b` holds
/// reads `bundle_ends[b-1] .. bundle_ends[b]`, read `i` the k-mers `reads[i]`), each bundle
/// decided and counted through `counts` by the one rule ([`ReadCounts::keep_bundle`]).
/// Returns whether each bundle is kept.
pub fn keep_bundles(
    counts: &mut impl ReadCounts,
    reads: &[Range<usize>],
    bundle_ends: &[u64],
    cutoff: u32,
) -> Vec<bool> {
    spans(bundle_ends).map(|bundle| counts.keep_bundle(|| reads[bundle.clone()].iter().cloned(), cutoff)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of one counter a k-mer (`counts`), recording the k-mers added.
    struct Flat {
        counts: Vec<u32>,
        added: Vec<usize>,
    }

    impl ReadCounts for Flat {
        fn counts(&mut self, kmers: Range<usize>, out: &mut Vec<u32>) {
            out.extend(kmers.map(|o| self.counts[o]));
        }

        fn median_at_least(&mut self, kmers: Range<usize>, cutoff: u32) -> bool {
            let mut counts = Vec::new();
            self.counts(kmers, &mut counts);
            counts.sort_unstable();
            counts.get(counts.len() / 2).is_some_and(|&median| median >= cutoff)
        }

        fn add(&mut self, kmers: Range<usize>) {
            for o in kmers {
                self.counts[o] += 1;
                self.added.push(o);
            }
        }
    }

    #[test]
    fn a_bundle_is_dropped_only_when_every_read_is_covered_and_kept_bundles_are_counted() {
        // Reads 0..5 (one k-mer each): a pair (0, 1), a single 2, a pair (3, 4).
        let reads: Vec<Range<usize>> = (0..5).map(|i| i..i + 1).collect();
        let mut flat = Flat { counts: vec![5, 1, 5, 5, 5], added: Vec::new() };
        assert_eq!(keep_bundles(&mut flat, &reads, &[2, 3, 5], 5), [true, false, false]);
        assert_eq!(flat.added, [0, 1]);
        assert_eq!(flat.counts, [6, 2, 5, 5, 5]);
    }
}
