//! The partitioning itself: khmer's traversal from each tag to the tags near it
//! (`SubsetPartition::find_all_tags`) and the partition map joining them
//! (`assign_partition_id`, `merge_from_disk`).

use super::kmer_set::KmerSet;
use crate::run::RunContext;
use crate::table::{CountingTable, KhmerTable};
use crate::{Error, Result};
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

/// Walks one thread keeps in flight: a walk waits for the table lines of its next k-mers
/// while the others test theirs (the walks are bound by memory latency, not by computing).
const WALKS_IN_FLIGHT: usize = 32;

/// Rounds of the walks in flight between two looks at the run's cancellation: a look is one
/// relaxed atomic load, a round up to [`WALKS_IN_FLIGHT`] steps of a few table lookups each, so
/// a walk that never ends (a graph forced past its false-positive ceiling) stops within a
/// millisecond or so of the run being cancelled, at no measurable cost.
const ROUNDS_BETWEEN_STOP_CHECKS: u32 = 1024;

/// Which tags a traversal may reach, and how far, over a nodegraph.
///
/// The walks are breadth-first as khmer's, each in khmer's order; [`Traverser::find_tags_each`]
/// interleaves [`WALKS_IN_FLIGHT`] of them, each advancing one step per round. A step tests
/// the neighbours of the last k-mer a walk expanded in one table of the graph (a neighbour out
/// of one table is out of the graph, as most are), and prefetches the next table's lines of the
/// neighbours left (with their slot in the tag set before the last table): by the walk's next
/// step, a round later, they are in the cache.
///
/// The walks stop early, with [`Error::Cancelled`], once the run they belong to is cancelled.
pub struct Traverser<'a> {
    graph: &'a KhmerTable,
    run: &'a RunContext,
    tags: &'a KmerSet,
    stop_tags: &'a FxHashSet<u64>,
    stop_big_traversals: bool,
    max_breadth: u32,
    mask: u64,
    top: u32,
    /// The graph's k-mers are single-strand: a node is its forward value, not the canonical one.
    single: bool,
}

/// What a walk stops at and collects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// khmer's `find_all_tags`: the tags next to the start.
    Tags,
    /// khmer's `traverse_from_kmer`: every k-mer up to this many steps away.
    Within(u32),
}

/// A k-mer in a walk's queue: its (forward, reverse-complement) values, its distance from the
/// start and whether it is a tag.
#[derive(Debug, Clone, Copy)]
struct Node {
    f: u64,
    r: u64,
    breadth: u32,
    tag: bool,
}

/// A neighbour being looked up: its values, its hash in the graph and whether every table
/// tested so far has it.
#[derive(Debug, Clone, Copy, Default)]
struct Candidate {
    f: u64,
    r: u64,
    hash: u64,
    present: bool,
}

/// One walk: its queue, the k-mers it visited, the neighbours of the k-mer it expanded last
/// (tested one table per step), and what it collects.
#[derive(Default)]
struct Walk {
    /// Position of its start among the starts.
    start: usize,
    visited: KmerSet,
    queue: VecDeque<Node>,
    candidates: [Candidate; 8],
    n_candidates: usize,
    /// The table the candidates are tested in at the next step.
    table: usize,
    /// Distance of the k-mer whose neighbours are the candidates.
    breadth: u32,
    /// No k-mer expanded yet (the start is not taken as a tag reached).
    first: bool,
    found: Vec<u64>,
}

/// Reusable memory of one thread's walks (no allocation per k-mer).
#[derive(Default)]
pub struct Scratch {
    walks: Vec<Walk>,
}

impl<'a> Traverser<'a> {
    /// A traverser of `graph` (2-bit hashed, k <= 32) stopping at `tags`, never entering
    /// `stop_tags`, going at most `2 * tag_density + 1` k-mers from its start (khmer's rule),
    /// its walks ending early once `run` is cancelled.
    pub fn new(
        graph: &'a KhmerTable,
        tags: &'a KmerSet,
        stop_tags: &'a FxHashSet<u64>,
        stop_big_traversals: bool,
        tag_density: u32,
        run: &'a RunContext,
    ) -> Self {
        let k = graph.ksize() as u32;
        let mask = if k >= 32 { u64::MAX } else { (1u64 << (2 * k)) - 1 };
        Traverser {
            graph,
            run,
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
    /// [`BIG_TRAVERSALS_ARE`] k-mers finds nothing. `Err(Error::Cancelled)` (and `found`
    /// unspecified) when the run was cancelled.
    pub fn find_all_tags(&self, start: u64, scratch: &mut Scratch, found: &mut Vec<u64>) -> Result<()> {
        self.walk_each(Rule::Tags, &[start], scratch, |_, tags| {
            found.clear();
            found.extend_from_slice(tags);
        })
    }

    /// [`Traverser::find_all_tags`] from each of `starts`, the walks interleaved: calls
    /// `each(i, found)` for the walk from `starts[i]` as it ends (not in the order of `starts`);
    /// `Err(Error::Cancelled)`, some walks not ended, when the run was cancelled.
    pub fn find_tags_each(&self, starts: &[u64], scratch: &mut Scratch, each: impl FnMut(usize, &[u64])) -> Result<()> {
        self.walk_each(Rule::Tags, starts, scratch, each)
    }

    /// khmer's `traverse_from_kmer` from the k-mer whose canonical hash is `start`: every
    /// k-mer at most `radius` steps away (tags do not stop the walk, stop tags are not
    /// entered; past [`MAX_WALK_KMERS`] the walk ends), collected ascending into `keeper`.
    /// `Err(Error::Cancelled)` (and `keeper` unspecified) when the run was cancelled.
    pub fn traverse_from(&self, start: u64, radius: u32, scratch: &mut Scratch, keeper: &mut Vec<u64>) -> Result<()> {
        self.walk_each(Rule::Within(radius), &[start], scratch, |_, kmers| {
            keeper.clear();
            keeper.extend_from_slice(kmers);
        })
    }

    /// Walks from each of `starts` by `rule`, up to [`WALKS_IN_FLIGHT`] at a time, each
    /// advancing one step per round; `each(i, collected)` as the walk from `starts[i]` ends.
    /// Every [`ROUNDS_BETWEEN_STOP_CHECKS`] rounds, `Err(Error::Cancelled)` if the run was
    /// cancelled.
    fn walk_each(
        &self,
        rule: Rule,
        starts: &[u64],
        scratch: &mut Scratch,
        mut each: impl FnMut(usize, &[u64]),
    ) -> Result<()> {
        let width = WALKS_IN_FLIGHT.min(starts.len());
        if scratch.walks.len() < width {
            scratch.walks.resize_with(width, Walk::default);
        }
        let mut running: Vec<&mut Walk> = scratch.walks[..width].iter_mut().collect();
        let mut next = 0;
        for walk in &mut running {
            self.begin(walk, next, starts[next]);
            next += 1;
        }
        let mut rounds_to_check = ROUNDS_BETWEEN_STOP_CHECKS;
        while !running.is_empty() {
            rounds_to_check -= 1;
            if rounds_to_check == 0 {
                if self.run.is_cancelled() {
                    return Err(Error::Cancelled);
                }
                rounds_to_check = ROUNDS_BETWEEN_STOP_CHECKS;
            }
            let mut i = 0;
            while i < running.len() {
                let walk = &mut *running[i];
                if self.step(rule, walk) {
                    i += 1;
                    continue;
                }
                each(walk.start, &walk.found);
                if next < starts.len() {
                    self.begin(walk, next, starts[next]);
                    next += 1;
                    i += 1;
                } else {
                    running.swap_remove(i);
                }
            }
        }
        Ok(())
    }

    /// Empties `walk` and queues the k-mer `start` (the start `index`) at breadth 0.
    fn begin(&self, walk: &mut Walk, index: usize, start: u64) {
        let (f, r) = self.build(start);
        walk.start = index;
        walk.visited.clear();
        walk.queue.clear();
        walk.queue.push_back(Node { f, r, breadth: 0, tag: false });
        walk.n_candidates = 0;
        walk.first = true;
        walk.found.clear();
    }

    /// One step of `walk`: tests its candidates in the next table (queueing those in the graph
    /// once every table is tested), then takes k-mers off its queue up to the next one to
    /// expand. False when the walk is over, with what it collected in `walk.found`.
    fn step(&self, rule: Rule, walk: &mut Walk) -> bool {
        if walk.n_candidates > 0 {
            let table = walk.table;
            let mut left = false;
            for c in walk.candidates[..walk.n_candidates].iter_mut().filter(|c| c.present) {
                c.present = self.graph.is_set_in(table, c.hash);
                left |= c.present;
            }
            walk.table += 1;
            if left && walk.table < self.graph.n_tables() {
                for c in walk.candidates[..walk.n_candidates].iter().filter(|c| c.present) {
                    self.fetch(rule, walk.table, c.hash);
                }
                return true;
            }
            let breadth = walk.breadth + 1;
            for c in walk.candidates[..walk.n_candidates].iter().filter(|c| c.present) {
                let tag = rule == Rule::Tags && self.tags.contains(c.hash);
                walk.queue.push_back(Node { f: c.f, r: c.r, breadth, tag });
            }
            walk.n_candidates = 0;
        }
        while let Some(node) = walk.queue.pop_front() {
            match rule {
                // khmer checks the size before taking the next node off a non-empty queue.
                Rule::Tags if self.stop_big_traversals && walk.visited.len() > BIG_TRAVERSALS_ARE => {
                    walk.found.clear();
                    return false;
                }
                Rule::Within(radius) if node.breadth > radius || walk.visited.len() > MAX_WALK_KMERS => break,
                _ => {}
            }
            let hash = self.node(node.f, node.r);
            if walk.visited.contains(hash) || self.stop_tags.contains(&hash) {
                continue;
            }
            walk.visited.insert(hash);
            if rule == Rule::Tags {
                if !walk.first && node.tag {
                    walk.found.push(hash);
                    continue;
                }
                if node.breadth >= self.max_breadth {
                    continue;
                }
            }
            walk.first = false;
            if self.expand(rule, node, walk) {
                return true;
            }
        }
        match rule {
            Rule::Tags => walk.found.sort_unstable(),
            Rule::Within(_) => {
                walk.found.clear();
                walk.found.extend(walk.visited.iter());
                walk.found.sort_unstable();
            }
        }
        false
    }

    /// Makes the neighbours of `node` not yet visited the walk's candidates (right then left,
    /// in khmer's base order) and prefetches their lines of the first table; false when all
    /// of them were visited.
    fn expand(&self, rule: Rule, node: Node, walk: &mut Walk) -> bool {
        let Node { f, r, breadth, .. } = node;
        let right = NEIGHBOUR_CODES.map(|code| (((f << 2) & self.mask) | code, (r >> 2) | ((code ^ 1) << self.top)));
        let left = NEIGHBOUR_CODES.map(|code| ((f >> 2) | (code << self.top), ((r << 2) & self.mask) | (code ^ 1)));
        let mut n = 0;
        for (nf, nr) in right.into_iter().chain(left) {
            let hash = self.node(nf, nr);
            if !walk.visited.contains(hash) {
                walk.candidates[n] = Candidate { f: nf, r: nr, hash, present: true };
                self.fetch(rule, 0, hash);
                n += 1;
            }
        }
        walk.n_candidates = n;
        walk.table = 0;
        walk.breadth = breadth;
        n > 0
    }

    /// Prefetches the line of `hash` in the graph's table `table`, and its tag-set slot with
    /// the last table's line when the walk stops at tags.
    #[inline(always)]
    fn fetch(&self, rule: Rule, table: usize, hash: u64) {
        self.graph.prefetch_in(table, hash);
        if rule == Rule::Tags && table + 1 == self.graph.n_tables() {
            self.tags.prefetch(hash);
        }
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
    use crate::table::{HashKind, StorageKind};
    use std::time::{Duration, Instant};

    fn sets(map: &PartitionMap) -> Vec<Vec<u64>> {
        let mut by_id: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
        for (tag, id) in map.assignments() {
            by_id.entry(id).or_default().push(tag);
        }
        let mut sets: Vec<Vec<u64>> = by_id.into_values().collect();
        sets.sort();
        sets
    }

    /// `n` random sequences of 200 bases.
    fn random_seqs(n: usize) -> Vec<Vec<u8>> {
        let mut state = 12345u64;
        (0..n)
            .map(|_| {
                (0..200)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        b"ACGT"[(state >> 62) as usize]
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn interleaved_walks_find_what_each_walk_alone_finds() {
        // random sequences in a nodegraph with a few false neighbours, a tag every 7th k-mer
        let graph = KhmerTable::new(15, HashKind::TwoBit, StorageKind::Bit, 30011, 3).unwrap();
        let seqs = random_seqs(40);
        graph.consume_many(seqs.iter().map(Vec::as_slice));
        let mut hashes = Vec::new();
        for seq in &seqs {
            graph.kmer_hashes(seq, &mut hashes);
        }
        let starts: Vec<u64> = hashes.iter().step_by(7).copied().collect();
        let tags: KmerSet = starts.iter().copied().collect();
        let stop_tags: FxHashSet<u64> = hashes.iter().skip(3).step_by(50).copied().collect();
        for stop_big_traversals in [false, true] {
            let run = RunContext::new();
            let traverser = Traverser::new(&graph, &tags, &stop_tags, stop_big_traversals, 5, &run);
            let mut interleaved = vec![Vec::new(); starts.len()];
            traverser
                .find_tags_each(&starts, &mut Scratch::default(), |i, found| interleaved[i] = found.to_vec())
                .unwrap();
            let mut scratch = Scratch::default();
            for (i, &start) in starts.iter().enumerate() {
                let mut alone = Vec::new();
                traverser.find_all_tags(start, &mut scratch, &mut alone).unwrap();
                assert_eq!(interleaved[i], alone, "walk from start {i}");
            }
            assert!(interleaved.iter().filter(|found| found.len() >= 2).count() > starts.len() / 2);
        }
    }

    #[test]
    fn a_walk_that_would_never_end_stops_once_the_run_is_cancelled() {
        // every bit of the graph set: every k-mer is in it, and a walk of breadth 2001 from a
        // k-mer meets no tag and is not stopped as big
        let graph = KhmerTable::new(21, HashKind::TwoBit, StorageKind::Bit, 101, 1).unwrap();
        let seqs = random_seqs(50);
        graph.consume_many(seqs.iter().map(Vec::as_slice));
        let (tags, stop_tags) = (KmerSet::default(), FxHashSet::default());
        let run = RunContext::new();
        let traverser = Traverser::new(&graph, &tags, &stop_tags, false, 1000, &run);
        let mut scratch = Scratch::default();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                run.cancel();
            });
            let started = Instant::now();
            let walked = traverser.find_all_tags(0, &mut scratch, &mut Vec::new());
            assert!(matches!(walked, Err(Error::Cancelled)), "{walked:?}");
            assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        });
        let walked = traverser.traverse_from(0, 5, &mut scratch, &mut Vec::new());
        assert!(matches!(walked, Err(Error::Cancelled)));
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
