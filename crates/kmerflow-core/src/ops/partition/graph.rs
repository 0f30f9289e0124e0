//! The partitioning itself: khmer's traversal from each tag to the tags near it
//! (`SubsetPartition::find_all_tags`) and the partition map joining them
//! (`assign_partition_id`, `merge_from_disk`).

use crate::table::{CountingTable, KhmerTable};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// khmer's `BIG_TRAVERSALS_ARE`: with `--no-big-traverse`, a traversal that visits more k-mers
/// than this joins nothing.
pub const BIG_TRAVERSALS_ARE: usize = 200;

/// khmer's `MAX_KEEPER_SIZE`: a [`Traverser::traverse_from`] walk ends once it has visited more
/// k-mers than this.
pub const MAX_WALK_KMERS: usize = 1_000_000;

/// 2-bit codes of khmer's neighbour order `ACGT` (A=0, T=1, C=2, G=3; a complement flips the
/// low bit).
const NEIGHBOUR_CODES: [u64; 4] = [0, 2, 3, 1];

/// Which tags a traversal may reach, and how far, over a nodegraph.
pub struct Traverser<'a> {
    graph: &'a KhmerTable,
    tags: &'a FxHashSet<u64>,
    stop_tags: &'a FxHashSet<u64>,
    stop_big_traversals: bool,
    max_breadth: u32,
    mask: u64,
    top: u32,
    /// The graph's k-mers are single-strand: a node is its forward value, not the canonical one.
    single: bool,
}

/// Reusable memory of one thread's traversals.
#[derive(Default)]
pub struct Scratch {
    visited: FxHashSet<u64>,
    queue: VecDeque<(u64, u64, u32)>,
    neighbours: Vec<(u64, u64)>,
    hashes: Vec<u64>,
    counts: Vec<u32>,
}

impl<'a> Traverser<'a> {
    /// A traverser of `graph` (2-bit hashed, k <= 32) stopping at `tags`, never entering
    /// `stop_tags`, going at most `2 * tag_density + 1` k-mers from its start (khmer's rule).
    pub fn new(
        graph: &'a KhmerTable,
        tags: &'a FxHashSet<u64>,
        stop_tags: &'a FxHashSet<u64>,
        stop_big_traversals: bool,
        tag_density: u32,
    ) -> Self {
        let k = graph.ksize() as u32;
        let mask = if k >= 32 { u64::MAX } else { (1u64 << (2 * k)) - 1 };
        Traverser {
            graph,
            tags,
            stop_tags,
            stop_big_traversals,
            max_breadth: 2 * tag_density + 1,
            mask,
            top: 2 * k - 2,
            single: graph.strand().is_single(),
        }
    }

    /// The hash of the k-mer of (forward, reverse-complement) values `f`, `r` in the graph.
    #[inline]
    fn node(&self, f: u64, r: u64) -> u64 {
        if self.single {
            f
        } else {
            f.min(r)
        }
    }

    /// The (forward, reverse-complement) values of the k-mer whose canonical hash is `hash`
    /// (khmer's `build_kmer`: the canonical strand is taken as forward; a single-strand hash is
    /// the forward value).
    fn build(&self, hash: u64) -> (u64, u64) {
        let k = (self.top + 2) / 2;
        let rc = (0..k).fold(0u64, |rc, i| (rc << 2) | (((hash >> (2 * i)) & 3) ^ 1));
        (hash, rc)
    }

    /// khmer's `find_all_tags` from the tag `start`: a breadth-first walk that stops at every
    /// other tag (collected, ascending, into `found`), skips stop tags and goes no deeper than
    /// the maximum breadth; with big traversals stopped, a walk that visits more than
    /// [`BIG_TRAVERSALS_ARE`] k-mers finds nothing.
    pub fn find_all_tags(&self, start: u64, scratch: &mut Scratch, found: &mut Vec<u64>) {
        found.clear();
        scratch.start(self.build(start));
        let mut first = true;
        while let Some((f, r, breadth)) = scratch.queue.pop_front() {
            // khmer checks the size before taking the next node off a non-empty queue.
            if self.stop_big_traversals && scratch.visited.len() > BIG_TRAVERSALS_ARE {
                found.clear();
                break;
            }
            let node = self.node(f, r);
            if scratch.visited.contains(&node) || self.stop_tags.contains(&node) {
                continue;
            }
            scratch.visited.insert(node);
            if !first && self.tags.contains(&node) {
                found.push(node);
                continue;
            }
            if breadth >= self.max_breadth {
                continue;
            }
            self.push_neighbours(f, r, breadth, scratch);
            first = false;
        }
        found.sort_unstable();
    }

    /// khmer's `traverse_from_kmer` from the k-mer whose canonical hash is `start`: every
    /// k-mer at most `radius` steps away (tags do not stop the walk, stop tags are not
    /// entered; past [`MAX_WALK_KMERS`] the walk ends), collected ascending into `keeper`.
    pub fn traverse_from(&self, start: u64, radius: u32, scratch: &mut Scratch, keeper: &mut Vec<u64>) {
        scratch.start(self.build(start));
        while let Some((f, r, breadth)) = scratch.queue.pop_front() {
            if breadth > radius || scratch.visited.len() > MAX_WALK_KMERS {
                break;
            }
            let node = self.node(f, r);
            if scratch.visited.contains(&node) || self.stop_tags.contains(&node) {
                continue;
            }
            scratch.visited.insert(node);
            self.push_neighbours(f, r, breadth, scratch);
        }
        keeper.clear();
        keeper.extend(scratch.visited.iter().copied());
        keeper.sort_unstable();
    }

    /// Queues, one step deeper, the neighbours of the k-mer (`f`, `r`) that are in the graph
    /// and not yet visited: right then left in khmer's base order, looked up in the graph
    /// together (their bins prefetched).
    fn push_neighbours(&self, f: u64, r: u64, breadth: u32, scratch: &mut Scratch) {
        let Scratch { visited, queue, neighbours, hashes, counts } = scratch;
        neighbours.clear();
        for code in NEIGHBOUR_CODES {
            neighbours.push((((f << 2) & self.mask) | code, (r >> 2) | ((code ^ 1) << self.top)));
        }
        for code in NEIGHBOUR_CODES {
            neighbours.push(((f >> 2) | (code << self.top), ((r << 2) & self.mask) | (code ^ 1)));
        }
        neighbours.retain(|&(nf, nr)| !visited.contains(&self.node(nf, nr)));
        hashes.clear();
        hashes.extend(neighbours.iter().map(|&(nf, nr)| self.node(nf, nr)));
        counts.clear();
        self.graph.counts_for_hashes(hashes, counts);
        for (&(nf, nr), &count) in neighbours.iter().zip(counts.iter()) {
            if count != 0 {
                queue.push_back((nf, nr, breadth + 1));
            }
        }
    }
}

impl Scratch {
    /// Empties the memory of the last walk and queues the k-mer (`f`, `r`) at breadth 0.
    fn start(&mut self, (f, r): (u64, u64)) {
        self.visited.clear();
        self.queue.clear();
        self.queue.push_back((f, r, 0));
    }
}

/// A partition map: which partition each tag is in. Partitions are joined with a union-find
/// (khmer re-points shared partition ids); the ids written out are renumbered from 2 by
/// ascending tag, so that a map's file does not depend on the order of the joins.
#[derive(Debug, Default, Clone)]
pub struct PartitionMap {
    tags: FxHashMap<u64, u32>,
    parent: Vec<u32>,
}

impl PartitionMap {
    fn new_partition(&mut self) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(id);
        id
    }

    fn find(&mut self, mut id: u32) -> u32 {
        while self.parent[id as usize] != id {
            let grand = self.parent[self.parent[id as usize] as usize];
            self.parent[id as usize] = grand;
            id = grand;
        }
        id
    }

    fn root(&self, mut id: u32) -> u32 {
        while self.parent[id as usize] != id {
            id = self.parent[id as usize];
        }
        id
    }

    fn union(&mut self, a: u32, b: u32) -> u32 {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[b as usize] = a;
        }
        a
    }

    /// khmer's `assign_partition_id` after a traversal from `start` found the tags `found`:
    /// nothing found unassigns `start`; otherwise `start` and every found tag end up in one
    /// partition (the first assigned found tag's, or a new one), joining the partitions met.
    pub fn assign(&mut self, start: u64, found: &[u64]) {
        if found.is_empty() {
            self.tags.remove(&start);
            return;
        }
        let existing = found.iter().find_map(|tag| self.tags.get(tag).copied());
        let mut partition = match existing {
            Some(id) => self.find(id),
            None => self.new_partition(),
        };
        for &tag in found {
            match self.tags.get(&tag).copied() {
                None => {
                    self.tags.insert(tag, partition);
                }
                Some(id) => partition = self.union(partition, id),
            }
        }
        // khmer points the start tag at the partition without joining its previous one.
        self.tags.insert(start, partition);
    }

    /// khmer's `merge_from_disk` of one map's records (tag, partition id in that map): each of
    /// its partitions joins the partitions of ours that share a tag with it; stop tags are
    /// not merged.
    pub fn merge(&mut self, records: &[(u64, u32)], stop_tags: &FxHashSet<u64>) {
        let mut theirs: FxHashMap<u32, u32> = FxHashMap::default();
        for &(tag, their_id) in records {
            if stop_tags.contains(&tag) {
                continue;
            }
            let ours = self.tags.get(&tag).copied();
            let mapped = theirs.get(&their_id).copied();
            let partition = match (ours, mapped) {
                (Some(a), Some(b)) => self.union(a, b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => self.new_partition(),
            };
            self.tags.insert(tag, partition);
            theirs.insert(their_id, partition);
        }
    }

    /// Every assigned tag with its partition id, by ascending tag; ids are numbered from 2 in
    /// the order their partitions first appear.
    pub fn assignments(&self) -> Vec<(u64, u32)> {
        let mut tags: Vec<(u64, u32)> = self.tags.iter().map(|(&tag, &id)| (tag, self.root(id))).collect();
        tags.sort_unstable();
        let mut numbers: FxHashMap<u32, u32> = FxHashMap::default();
        for (_, id) in &mut tags {
            let next = numbers.len() as u32 + 2;
            *id = *numbers.entry(*id).or_insert(next);
        }
        tags
    }

    /// The tag → partition id lookup of [`PartitionMap::assignments`].
    pub fn lookup(&self) -> FxHashMap<u64, u32> {
        self.assignments().into_iter().collect()
    }

    /// Number of tags with a partition.
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    /// True when no tag has a partition.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// Removes the largest partition from the map (khmer's `_clear_partition` of the partition
    /// `repartition_largest_partition` picks) and returns its tags, ascending, with the size of
    /// the next smaller partition size present (0 when every partition has the largest size);
    /// `None` when no tag has a partition. Of several largest partitions the one holding the
    /// smallest tag is taken (khmer takes the one with the highest partition id, which
    /// depends on the order of its joins).
    pub fn take_largest(&mut self) -> Option<(Vec<u64>, usize)> {
        // size and smallest tag of each partition
        let mut partitions: FxHashMap<u32, (usize, u64)> = FxHashMap::default();
        for (&tag, &id) in &self.tags {
            let entry = partitions.entry(self.root(id)).or_insert((0, tag));
            entry.0 += 1;
            entry.1 = entry.1.min(tag);
        }
        let (&largest, &(size, _)) =
            partitions.iter().max_by_key(|&(_, &(size, smallest))| (size, std::cmp::Reverse(smallest)))?;
        let next = partitions.values().map(|&(n, _)| n).filter(|&n| n < size).max().unwrap_or(0);
        let mut tags: Vec<u64> =
            self.tags.iter().filter(|&(_, &id)| self.root(id) == largest).map(|(&t, _)| t).collect();
        tags.sort_unstable();
        for tag in &tags {
            self.tags.remove(tag);
        }
        Some((tags, next))
    }

    /// khmer's `count_partitions` over the tags `all_tags`: (partitions, tags without one).
    pub fn count_partitions(&self, all_tags: &[u64]) -> (usize, usize) {
        let mut partitions = FxHashSet::default();
        let mut unassigned = 0;
        for tag in all_tags {
            match self.tags.get(tag) {
                Some(&id) => {
                    partitions.insert(self.root(id));
                }
                None => unassigned += 1,
            }
        }
        (partitions.len(), unassigned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(map: &PartitionMap) -> Vec<Vec<u64>> {
        let mut by_id: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
        for (tag, id) in map.assignments() {
            by_id.entry(id).or_default().push(tag);
        }
        let mut sets: Vec<Vec<u64>> = by_id.into_values().collect();
        sets.sort();
        sets
    }

    #[test]
    fn assign_joins_partitions_and_unassigns_lonely_tags() {
        let mut map = PartitionMap::default();
        map.assign(1, &[2]);
        map.assign(3, &[4]);
        map.assign(5, &[]);
        assert_eq!(sets(&map), vec![vec![1, 2], vec![3, 4]]);
        map.assign(6, &[2, 4]);
        assert_eq!(sets(&map), vec![vec![1, 2, 3, 4, 6]]);
        map.assign(2, &[]);
        assert_eq!(sets(&map), vec![vec![1, 3, 4, 6]]);
        assert_eq!(map.count_partitions(&[1, 2, 3, 4, 5, 6]), (1, 2));
    }

    #[test]
    fn take_largest_removes_the_biggest_partition() {
        let mut map = PartitionMap::default();
        map.assign(1, &[2, 3]);
        map.assign(10, &[11]);
        map.assign(20, &[21]);
        assert_eq!(map.take_largest(), Some((vec![1, 2, 3], 2)));
        assert_eq!(sets(&map), vec![vec![10, 11], vec![20, 21]]);
        // of two largest partitions, the one with the smallest tag; no smaller size left
        assert_eq!(map.take_largest(), Some((vec![10, 11], 0)));
        assert_eq!(map.take_largest(), Some((vec![20, 21], 0)));
        assert_eq!(map.take_largest(), None);
    }

    #[test]
    fn merge_joins_partitions_sharing_a_tag() {
        let mut map = PartitionMap::default();
        map.merge(&[(1, 7), (2, 7), (3, 9)], &FxHashSet::default());
        map.merge(&[(3, 2), (4, 2), (5, 3)], &FxHashSet::default());
        assert_eq!(sets(&map), vec![vec![1, 2], vec![3, 4], vec![5]]);
        map.merge(&[(2, 5), (4, 5), (6, 6)], &[6].into_iter().collect());
        assert_eq!(sets(&map), vec![vec![1, 2, 3, 4], vec![5]]);
        assert_eq!(map.assignments()[0], (1, 2));
    }
}
