//! Tables sharded over processes: the second backend of the engine's tables, between the
//! in-process tables of [`crate::table`] and the operations of [`crate::ops`].
//!
//! What differs between khmer's layout ([`khmer`]: contiguous ranges of counters) and the
//! blocked one ([`blocked`]: whole cache lines) is behind three traits, [`ShardRouting`],
//! [`ShardKernel`] and [`ShardLayout`]; the runs of [`runs`] (whole files: counting, the
//! decisions in input order, look-ups) and the loops of [`drive`] are written once over them.
//! [`in_flight`] keeps the updates a remote shard's answer lacks while they travel, [`mod@file`]
//! saves and loads a table shard by shard, and [`wire`] is a remote shard's message as bytes.
//!
//! Every result is that of the one-process table with the same sizes.

pub mod blocked;
pub mod drive;
pub mod file;
pub mod in_flight;
pub mod khmer;
pub mod runs;
pub mod wire;

use crate::table::batch::{spans, BatchOutcome, BatchRules};
use crate::table::ReadCounts;
use crate::{Error, Result};
use std::ops::Range;
use std::sync::atomic::AtomicU8;

/// How a layout's counters are cut into shards and how a batch reaches them.
pub trait ShardRouting: Clone + Send + Sync + 'static {
    /// Whether a message names k-mer hashes (all of a k-mer's counters on one shard, which
    /// answers the values of each one's counters, probe-major) rather than counters (one
    /// value each).
    const BY_KMER: bool;

    /// Number of shards.
    fn shards(&self) -> usize;

    /// Counters per k-mer.
    fn probes(&self) -> usize;

    /// Sets `counters` to the counter of every position of `hashes` (probe-major: position
    /// `p * n + o` is probe `p` of k-mer `o`, numbered in the whole table) and `owners` to the
    /// shard of each, refusing a batch too large for the routing's positions. With
    /// `keys_only` (counting, which needs the owners of the keys alone) a layout routing by
    /// k-mer leaves `counters` empty and gives one owner per k-mer.
    fn positions(&self, hashes: &[u64], keys_only: bool, counters: &mut Vec<u64>, owners: &mut Vec<u32>) -> Result<()>;

    /// The shard of every counter, refusing a counter outside the table.
    fn counter_owners(&self, counters: &[u64]) -> Result<Vec<u32>>;
}

/// A shard held in this process, read and counted in place counter by counter (counters
/// numbered as its layout's [`ShardRouting::positions`] numbers them, all held by
/// the shard).
pub trait ShardKernel: Send {
    /// Counters held (the weight of the shard when the local shards are split in two groups).
    fn held(&self) -> u64;
    /// Prefetches the cell of `counter`.
    fn prefetch(&self, counter: u64);
    /// The value of `counter`.
    fn get(&self, counter: u64) -> u8;
    /// Adds one to `counter` (saturating) and returns its value before.
    fn add_one(&mut self, counter: u64) -> u8;
    /// Adds `delta` to `counter`; refused when it would pass the maximum.
    fn add_delta(&mut self, counter: u64, delta: u8) -> Result<()>;
}

/// The client's part of a sharded table of one layout: its routing, its shards' kernel, what
/// counting answers and how the statistics are kept. The runs of [`runs`] are written once
/// over it.
pub trait ShardLayout: BatchRules + Sync {
    /// The map of the shards.
    type Routing: ShardRouting;
    /// A shard's kernel.
    type Shard: ShardKernel;
    /// A shard's answer to a counting message (khmer's layout: the previous value of each
    /// counter; the blocked layout: what the adds did to the statistics).
    type Added: ?Sized + Sync;
    /// What a local shard's adds leave to be recorded with the batch.
    type Tally: Send + Sync;

    /// The map of the shards.
    fn routing(&self) -> &Self::Routing;

    /// Adds a local shard's part of a counting batch to `shard`: `keys[q]` for each of its
    /// `positions` `q` (in input order) of the batch's `keys` (named as
    /// [`ShardRouting::BY_KMER`] says), writing what the client needs at those positions of
    /// `values`.
    fn count_here(shard: &mut Self::Shard, keys: &[u64], positions: &[u32], values: &[AtomicU8])
        -> Result<Self::Tally>;

    /// Whether a counting batch whose shards are all in this process is counted straight from
    /// its hashes ([`ShardLayout::count_straight`]) rather than routed and split. The blocked
    /// layout's is not: its routing computes no counters, and a straight add across its
    /// shards measured slower than the routed one.
    const COUNTS_STRAIGHT: bool = false;

    /// Adds every k-mer of a counting batch's `hashes` whose shard is in `group` (shard `s` as
    /// `group[s]`, the others `None`) straight from the hashes, the map turning each into its
    /// counters and shard on the fly (no routed arrays), in input order, writing what the
    /// client needs at each position of `values` as [`ShardLayout::count_here`] does. Refused
    /// by a layout that does not count straight.
    fn count_straight(
        _map: &Self::Routing,
        _group: &mut [Option<&mut Self::Shard>],
        _hashes: &[u64],
        _values: &[AtomicU8],
    ) -> Result<Vec<Self::Tally>> {
        Err(Error::invalid("this layout counts routed batches only"))
    }

    /// Records a counted batch of `hashes` from the local shards' tallies, the remote shards'
    /// answers (in shard order; values are set at their positions by [`runs::Routed::put`])
    /// and the values the local shards wrote in `routed`. Nothing is recorded when the answers
    /// are not those of the messages.
    fn record_count(
        &self,
        hashes: &[u64],
        here: &[Self::Tally],
        remote: &[&Self::Added],
        routed: &mut runs::Routed<Self::Routing>,
    ) -> Result<()>;

    /// Records the statistics (and bigcounts) of a decided batch.
    fn record_outcome(&self, outcome: &BatchOutcome);

    /// The count of each k-mer of `hashes` from the values of its counters (probe-major): the
    /// minimum, or its bigcount when all are saturated.
    fn kmer_counts(&self, hashes: &[u64], values: &[u8]) -> Result<Vec<u32>> {
        let (n, probes) = (hashes.len(), self.batch_probes());
        if values.len() != n * probes {
            return Err(Error::invalid(format!("{} values for {n} k-mers x {probes} counters", values.len())));
        }
        let (max, big) = (self.counter_max(), self.batch_uses_bigcount());
        Ok((0..n)
            .map(|o| {
                let min = (0..probes).map(|p| values[p * n + o]).min().unwrap_or(0);
                match min == max && big {
                    true => self.bigcount_of(hashes[o]).map_or(u32::from(min), u32::from),
                    false => u32::from(min),
                }
            })
            .collect())
    }
}

/// `total` units (counters, lines) cut into `shards` equal contiguous ranges (shard `s` holds
/// `bounds[s] .. bounds[s + 1]`), refusing no shard or more shards than units (`units` names them).
fn even_bounds(total: u64, shards: usize, units: &str) -> Result<Vec<u64>> {
    if shards == 0 || shards as u64 > total {
        return Err(Error::invalid(format!("the number of shards must be 1..={total}{units}, got {shards}")));
    }
    Ok((0..=shards).map(|s| (u128::from(total) * s as u128 / shards as u128) as u64).collect())
}

/// The shard holding unit `at` of the shards' `bounds`.
#[inline]
fn shard_at(bounds: &[u64], at: u64) -> usize {
    bounds[1..].partition_point(|&end| end <= at)
}

/// normalize-by-median over the bundles of a batch on either layout's shards (bundle `b` holds
/// reads `bundle_ends[b-1] .. bundle_ends[b]`, read `i` the k-mers `reads[i]`), each bundle
/// decided and counted through `counts` by the one rule ([`ReadCounts::keep_bundle`]).
/// Returns whether each bundle is kept.
pub fn keep_bundles(
    mut counts: impl ReadCounts,
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
