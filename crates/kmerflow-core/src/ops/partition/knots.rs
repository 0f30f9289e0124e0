//! khmer's highly connected k-mers ("knots"): `make-initial-stoptags` and `find-knots`.
//!
//! Both repartition the largest partition of a map ([`super::repartition`]) with khmer's
//! scripts' walks: at most [`EXCURSION_DISTANCE`] steps, big from
//! [`EXCURSION_KMER_THRESHOLD`] k-mers, and the command's frequency.

use super::repartition::{Excursions, Repartition, Repartitioner};
use super::{files, load_tagged_graph, PartitionMap, TaggedGraph};
use crate::ops::count::write_text;
use crate::ops::sizing::{self, TableParams};
use crate::run::RunContext;
use crate::table::{CountingTable, KhmerTable};
use crate::{Error, Result};
use rustc_hash::FxHashSet;

/// How many steps from its tag a walk goes (khmer's `EXCURSION_DISTANCE`).
pub const EXCURSION_DISTANCE: u32 = 40;
/// k-mers a walk must reach to be big (khmer's `EXCURSION_KMER_THRESHOLD`).
pub const EXCURSION_KMER_THRESHOLD: usize = 200;
/// `make-initial-stoptags`' frequency: a k-mer reached by more big walks becomes a stop tag.
pub const INITIAL_FREQUENCY: u32 = 5;
/// `find-knots`' frequency (khmer's `EXCURSION_KMER_COUNT_THRESHOLD` there).
pub const KNOTS_FREQUENCY: u32 = 2;
/// `make-initial-stoptags`' default number of tags pre-partitioned (`-s`).
pub const DEFAULT_INITIAL_SUBSET_SIZE: u64 = 10_000;

/// A search for knots over a tagged graph: the stop tags so far (in the graph), the tags
/// whose walk was small (never walked from again: stop tags only shrink a walk) and the
/// countgraph of how often big walks reached each k-mer.
pub struct KnotFinder {
    tagged: TaggedGraph,
    counting: KhmerTable,
    frequency: u32,
    small_tags: FxHashSet<u64>,
}

impl KnotFinder {
    /// A search over `tagged` (its stop tags included), counting in `counting`, with a k-mer
    /// becoming a stop tag when its count is above `frequency`.
    pub fn new(tagged: TaggedGraph, counting: KhmerTable, frequency: u32) -> Self {
        KnotFinder { tagged, counting, frequency, small_tags: FxHashSet::default() }
    }

    /// The graph, its tags and the stop tags found so far.
    pub fn graph(&self) -> &TaggedGraph {
        &self.tagged
    }

    /// khmer's `repartition_largest_partition` of `map` with the scripts' walks
    /// ([`EXCURSION_DISTANCE`], [`EXCURSION_KMER_THRESHOLD`]) and this search's frequency;
    /// `None` when no tag of `map` has a partition.
    pub fn repartition_largest(&mut self, map: &mut PartitionMap, ctx: &RunContext) -> Result<Option<Repartition>> {
        let excursions =
            Excursions { distance: EXCURSION_DISTANCE, threshold: EXCURSION_KMER_THRESHOLD, frequency: self.frequency };
        let TaggedGraph { graph, tag_set, stop_tags, .. } = &mut self.tagged;
        let mut repartitioner = Repartitioner {
            graph,
            tags: tag_set,
            stop_tags,
            small_tags: &mut self.small_tags,
            counting: &self.counting,
        };
        repartitioner.repartition_largest(map, excursions, ctx)
    }

    /// Writes the stop tags to `path` (khmer's `save_stop_tags`).
    pub fn save_stop_tags(&self, path: &str, ctx: &RunContext) -> Result<()> {
        let t = &self.tagged;
        write_text(path, files::stoptags_bytes(t.stop_tags.iter().copied(), t.graph.ksize()), ctx)
    }
}

/// The stop tags file of a graph base name: `BASE.stoptags`.
pub fn stoptags_path(base: &str) -> String {
    format!("{base}.stoptags")
}

/// Options of `make-initial-stoptags`.
#[derive(Debug, Clone)]
pub struct InitialOptions {
    /// The graph's base name: reads `BASE` and `BASE.tagset`, writes `BASE.stoptags`.
    pub base: String,
    /// Stop tags to start from (`-S`); they are also written out.
    pub stoptags: Option<String>,
    /// Tags pre-partitioned (`-s`): the first this many, ascending.
    pub subset_size: u64,
    /// Use a graph over [`super::MAX_GRAPH_FP_RATE`] (`-f`).
    pub force: bool,
}

/// What `make-initial-stoptags` or `find-knots` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct KnotsSummary {
    /// The stop tags file written.
    pub output: String,
    /// Stop tags written.
    pub stop_tags: usize,
    /// Per repartitioning: which map it was of, and what it did (`None`: no partition in it).
    pub repartitions: Vec<(String, Option<Repartition>)>,
}

/// Runs `make-initial-stoptags`: partitions the first subset of tags (ignoring stop tags, as
/// khmer does), repartitions its largest partition with a countgraph sized by `counting` and frequency
/// [`INITIAL_FREQUENCY`], writes the stop tags (those of `-S` included) to `BASE.stoptags`.
pub fn make_initial_stoptags(opts: &InitialOptions, counting: &TableParams, ctx: &RunContext) -> Result<KnotsSummary> {
    super::check_subset_size(opts.subset_size)?;
    let output = stoptags_path(&opts.base);
    let inputs = [opts.base.clone(), format!("{}.tagset", opts.base)];
    crate::io::refuse_inputs_as_outputs(ctx, &inputs, [&output])?;
    let counting = sizing::create_countgraph(counting, 1.0, ctx)?;
    let mut tagged = load_tagged_graph(&opts.base, None, counting.strand(), opts.force, ctx)?;
    let initial = match &opts.stoptags {
        Some(path) => files::load_stoptags(path, tagged.graph.ksize(), ctx)?,
        None => Vec::new(),
    };
    let first = tagged.subsets(opts.subset_size).into_iter().next().unwrap_or(0..0);
    let label = format!("the first {} tags", first.len());
    let mut map = tagged.partition_subset(first, false, ctx)?;
    tagged.stop_tags.extend(initial);
    let mut finder = KnotFinder::new(tagged, counting, INITIAL_FREQUENCY);
    let repartition = finder.repartition_largest(&mut map, ctx)?;
    finder.save_stop_tags(&output, ctx)?;
    let stop_tags = finder.graph().stop_tags.len();
    Ok(KnotsSummary { output, stop_tags, repartitions: vec![(label, repartition)] })
}

/// Runs `find-knots` (a countgraph sized by `counting`; a graph over
/// [`super::MAX_GRAPH_FP_RATE`] only if `force`) on `BASE`, `BASE.tagset`, `BASE.stoptags` when it exists and every
/// `BASE.subset.N.pmap` (by N): each map is read (stop tags left out) and its largest
/// partition repartitioned, it is merged into the maps so far, whose largest partition is
/// repartitioned too; then `BASE.stoptags` is written (the stop tags loaded included, which it
/// says as khmer does) and the map renamed `BASE.subset.N.pmap.processed`, so that a stopped
/// run resumes where it was.
pub fn find_knots(base: &str, counting: &TableParams, force: bool, ctx: &RunContext) -> Result<KnotsSummary> {
    let output = stoptags_path(base);
    let stoptags = std::path::Path::new(&output).exists().then_some(output.as_str());
    let paths = super::subset_files(base)?;
    if paths.is_empty() {
        return Err(Error::invalid(format!("no partition subsets {base}.subset.*.pmap to find knots in")));
    }
    let inputs = [base.to_string(), format!("{base}.tagset")];
    crate::io::refuse_inputs_as_outputs(ctx, inputs.iter().chain(&paths), [&output])?;
    let counting = sizing::create_countgraph(counting, 1.0, ctx)?;
    let tagged = load_tagged_graph(base, stoptags, counting.strand(), force, ctx)?;
    if stoptags.is_some() {
        ctx.info(format!(
            "loading stoptags {output}: {} stop tags (these output stoptags will include the already-loaded set)",
            tagged.stop_tags.len()
        ));
    }
    let k = tagged.graph.ksize();
    let mut finder = KnotFinder::new(tagged, counting, KNOTS_FREQUENCY);
    let mut merged = PartitionMap::default();
    let mut repartitions = Vec::new();
    for path in &paths {
        let mut subset = PartitionMap::default();
        subset.merge(&files::load_pmap_records(path, k, ctx)?, &finder.graph().stop_tags);
        let first = finder.repartition_largest(&mut subset, ctx)?;
        merged.merge(&subset.assignments(), &finder.graph().stop_tags);
        let second = finder.repartition_largest(&mut merged, ctx)?;
        finder.save_stop_tags(&output, ctx)?;
        let processed = format!("{path}.processed");
        std::fs::rename(path, &processed).map_err(|e| Error::io(path, e))?;
        if let Some(done) = &second {
            ctx.info(format!("{path}: repartitioned size {}; {} stop tags", done.next_largest, done.stop_tags));
        }
        repartitions.push((path.clone(), first));
        repartitions.push((format!("all maps up to {path}"), second));
    }
    let stop_tags = finder.graph().stop_tags.len();
    Ok(KnotsSummary { output, stop_tags, repartitions })
}
