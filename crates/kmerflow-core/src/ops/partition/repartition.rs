//! khmer's `repartition_largest_partition`: breaking the largest partition of a map at its
//! highly connected k-mers. The partition's tags are taken out of the map; from each of them
//! (ascending) a walk of at most `distance` steps is made; a walk reaching at least
//! `threshold` k-mers is big, and each k-mer it reached is counted in a countgraph, or becomes
//! a stop tag once its count is above `frequency`. A tag whose walk was small is remembered
//! and never walked from again (stop tags only shrink a walk). The stop tags found end later
//! walks. The partition's tags are then joined again, each only to tags of the partition, with
//! the stop tags in place. The order is khmer's, so the stop tags are khmer's.
//!
//! `make-initial-stoptags` and `find-knots` ([`super::knots`]) and the graphs' Python method
//! do it through [`Repartitioner`].

use super::{KmerSet, PartitionMap, Scratch, Traverser};
use crate::ops::load_graph::TAG_DENSITY;
use crate::run::RunContext;
use crate::table::{CountingTable, KhmerTable};
use crate::{Error, Result};
use rustc_hash::FxHashSet;

/// How a repartitioning walks and when a k-mer becomes a stop tag (khmer's `distance`,
/// `threshold` and `frequency` arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Excursions {
    /// Steps a walk goes from its tag.
    pub distance: u32,
    /// k-mers a walk must reach to be big.
    pub threshold: usize,
    /// A k-mer that big walks reached more than this many times becomes a stop tag.
    pub frequency: u32,
}

/// What one repartitioning did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Repartition {
    /// Tags of the largest partition.
    pub tags: usize,
    /// Walks from them that were big.
    pub big_walks: usize,
    /// Stop tags afterwards.
    pub stop_tags: usize,
    /// khmer's return value: the next smaller partition size before repartitioning (0 when
    /// every partition had the largest size).
    pub next_largest: usize,
}

/// A graph being repartitioned: what the walks read (the graph and its tags) and what they
/// change (the stop tags, the tags whose walk was small, the countgraph of walked k-mers).
pub struct Repartitioner<'a> {
    /// The nodegraph (2-bit hashed).
    pub graph: &'a KhmerTable,
    /// Its tags.
    pub tags: &'a KmerSet,
    /// k-mers no walk enters; the stop tags found are added.
    pub stop_tags: &'a mut FxHashSet<u64>,
    /// Tags whose walk was small (khmer's `repart_small_tags`, kept with the graph).
    pub small_tags: &'a mut FxHashSet<u64>,
    /// How often big walks reached each k-mer (a countgraph of the graph's k).
    pub counting: &'a KhmerTable,
}

impl Repartitioner<'_> {
    /// khmer's `repartition_largest_partition` of `map` (see the module's doc); `None` when no
    /// tag of `map` has a partition (khmer aborts). Of several largest partitions, the one
    /// holding the smallest tag is taken ([`PartitionMap::take_largest`]).
    pub fn repartition_largest(
        &mut self,
        map: &mut PartitionMap,
        excursions: Excursions,
        ctx: &RunContext,
    ) -> Result<Option<Repartition>> {
        let Some((big_tags, next_largest)) = map.take_largest() else { return Ok(None) };
        let mut scratch = Scratch::default();
        let mut keeper = Vec::new();
        let mut big_walks = 0;
        for &tag in &big_tags {
            if ctx.is_cancelled() {
                return Err(Error::Cancelled);
            }
            if self.small_tags.contains(&tag) {
                continue;
            }
            // a new traverser each time: the stop tags found so far end this walk
            Traverser::new(self.graph, self.tags, self.stop_tags, false, TAG_DENSITY, ctx).traverse_from(
                tag,
                excursions.distance,
                &mut scratch,
                &mut keeper,
            )?;
            if keeper.len() < excursions.threshold {
                self.small_tags.insert(tag);
                continue;
            }
            big_walks += 1;
            for &kmer in &keeper {
                if self.counting.get_hash(kmer) > excursions.frequency {
                    self.stop_tags.insert(kmer);
                } else {
                    self.counting.add_hash(kmer);
                }
            }
        }
        // khmer's `repartition_a_partition`: join the partition's tags again, each only to
        // tags of the partition, stop tags respected.
        let big_set: FxHashSet<u64> = big_tags.iter().copied().collect();
        let traverser = Traverser::new(self.graph, self.tags, self.stop_tags, false, TAG_DENSITY, ctx);
        let mut found = Vec::new();
        for &tag in &big_tags {
            if ctx.is_cancelled() {
                return Err(Error::Cancelled);
            }
            traverser.find_all_tags(tag, &mut scratch, &mut found)?;
            found.retain(|found_tag| big_set.contains(found_tag));
            map.assign(tag, &found);
        }
        Ok(Some(Repartition { tags: big_tags.len(), big_walks, stop_tags: self.stop_tags.len(), next_largest }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmer::{twobit, Strand};
    use crate::table::{HashKind, StorageKind};

    const K: usize = 21;

    /// A nodegraph holding one path of 60 k-mers, its hashes in path order, and a countgraph.
    fn path_graph() -> (KhmerTable, Vec<u64>, KhmerTable) {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let seq: Vec<u8> = (0..60 + K - 1)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                b"ACGT"[(state >> 32) as usize % 4]
            })
            .collect();
        let graph = KhmerTable::new(K, HashKind::TwoBit, StorageKind::Bit, 1_000_003, 2).unwrap();
        graph.consume(&seq);
        let mut path = Vec::new();
        twobit::hashes(&seq, K, Strand::Canonical, &mut path);
        let counting = KhmerTable::new(K, HashKind::TwoBit, StorageKind::Byte, 1_000_003, 2).unwrap();
        (graph, path, counting)
    }

    /// Repartitions `map` once with a fresh context.
    fn repartition(
        graph: &KhmerTable,
        tags: &KmerSet,
        marks: (&mut FxHashSet<u64>, &mut FxHashSet<u64>),
        counting: &KhmerTable,
        map: &mut PartitionMap,
        excursions: Excursions,
    ) -> Option<Repartition> {
        let (stop_tags, small_tags) = marks;
        Repartitioner { graph, tags, stop_tags, small_tags, counting }
            .repartition_largest(map, excursions, &RunContext::new())
            .unwrap()
    }

    #[test]
    fn the_second_big_walk_over_a_path_stops_every_kmer_of_it() {
        let (graph, path, counting) = path_graph();
        let tags: KmerSet = [path[0], path[30], path[59]].into_iter().collect();
        let mut map = PartitionMap::default();
        map.assign(path[0], &[path[30], path[59]]);
        let (mut stop_tags, mut small_tags) = (FxHashSet::default(), FxHashSet::default());
        let walk_all = Excursions { distance: 100, threshold: 1, frequency: 0 };
        let done = repartition(&graph, &tags, (&mut stop_tags, &mut small_tags), &counting, &mut map, walk_all);
        // the first walk counts the path's 60 k-mers once, the second finds each counted:
        // all are stop tags; the third tag is then a stop tag itself, its walk empty (small)
        let done = done.unwrap();
        assert_eq!((done.tags, done.big_walks, done.stop_tags, done.next_largest), (3, 2, 60, 0));
        assert_eq!(stop_tags, path.iter().copied().collect());
        assert_eq!(small_tags.len(), 1);
        // no tag joins another through stop tags: the map is empty
        assert!(map.is_empty());
        assert!(repartition(&graph, &tags, (&mut stop_tags, &mut small_tags), &counting, &mut map, walk_all).is_none());
    }

    #[test]
    fn small_walks_join_again_and_are_never_walked_from_again() {
        let (graph, path, counting) = path_graph();
        let tags: KmerSet = [path[0], path[20], path[40]].into_iter().collect();
        let mut map = PartitionMap::default();
        map.assign(path[0], &[path[20]]);
        map.assign(path[20], &[path[0], path[40]]);
        let (mut stop_tags, mut small_tags) = (FxHashSet::default(), FxHashSet::default());
        // walks of 10 steps reach 21 k-mers at most: none is big
        let short = Excursions { distance: 10, threshold: 22, frequency: 0 };
        let done = repartition(&graph, &tags, (&mut stop_tags, &mut small_tags), &counting, &mut map, short).unwrap();
        assert_eq!((done.tags, done.big_walks, done.stop_tags), (3, 0, 0));
        assert_eq!(small_tags, tags.iter().collect());
        assert_eq!(map.count_partitions(&[path[0], path[20], path[40]]), (1, 0));
        // with walks that would be big, the small tags are still skipped: nothing changes
        let long = Excursions { distance: 100, threshold: 1, frequency: 0 };
        let done = repartition(&graph, &tags, (&mut stop_tags, &mut small_tags), &counting, &mut map, long).unwrap();
        assert_eq!((done.big_walks, done.stop_tags), (0, 0));
        assert_eq!(counting.get_hash(path[5]), 0);
        assert_eq!(map.count_partitions(&[path[0], path[20], path[40]]), (1, 0));
    }
}
