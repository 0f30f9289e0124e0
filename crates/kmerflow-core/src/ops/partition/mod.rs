//! khmer's graph partitioning (docs/khmer-compat.md §3.4-3.6, §4.10): `partition-graph`
//! splits the tags of a nodegraph into subsets and joins each subset's tags to the tags near
//! them ([`graph::Traverser`]) into `.subset.N.pmap` maps; `merge-partitions` joins the
//! subsets' maps into `.pmap.merged`; `annotate-partitions` labels every read with the
//! partition of its first tagged k-mer (`.part`); `extract-partitions` groups the labelled
//! reads by partition size; `do-partition` runs all but the last in one process;
//! `make-initial-stoptags` and `find-knots` find the highly connected k-mers that join
//! partitions ([`knots`], by [`repartition`]ing the largest partition).
//!
//! Partition ids depend on the order of the joins (in khmer, on thread scheduling); the
//! partitions as sets of tags, and so of reads, do not. kmerflow numbers the partitions of a
//! map from 2 by ascending tag.

pub mod extract;
pub mod files;
pub mod graph;
pub mod kmer_set;
pub mod knots;
pub mod repartition;
pub mod stoptags;

pub use graph::{PartitionMap, Scratch, Traverser, BIG_TRAVERSALS_ARE};
pub use kmer_set::KmerSet;

use super::count::{check_fp_rate, write_text};
use super::load_graph::{self, TAG_DENSITY};
use super::read_filter::check_ksize;
use super::sizing::NODEGRAPH_FP_TARGET;
use crate::io::{write_record, Compression, OutputFile};
use crate::kmer::clean::clean_parser;
use crate::kmer::{twobit, Strand};
use crate::run::RunContext;
use crate::table::{AllocOptions, CountingTable, HashKind, HugePages, KhmerTable};
use crate::{Error, Result};
use rustc_hash::{FxHashMap, FxHashSet};
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// khmer's default number of tags per subset (`-s/--subset-size`).
pub const DEFAULT_SUBSET_SIZE: u64 = 100_000;

/// Tags traversed per task handed to a thread (the walks from them interleaved).
const TAGS_PER_TASK: usize = 2048;

/// A nodegraph with its tags and stop tags, ready to partition.
pub struct TaggedGraph {
    /// The nodegraph (2-bit hashed).
    pub graph: KhmerTable,
    /// The tags, ascending.
    pub tags: Vec<u64>,
    /// The same tags, for lookups.
    pub tag_set: KmerSet,
    /// k-mers no traversal enters.
    pub stop_tags: FxHashSet<u64>,
}

impl TaggedGraph {
    /// A graph with its tags (any order) and stop tags.
    pub fn new(
        graph: KhmerTable,
        tags: impl IntoIterator<Item = u64>,
        stop_tags: impl IntoIterator<Item = u64>,
    ) -> Self {
        let mut tags: Vec<u64> = tags.into_iter().collect();
        tags.sort_unstable();
        tags.dedup();
        let tag_set = tags.iter().copied().collect();
        TaggedGraph { graph, tags, tag_set, stop_tags: stop_tags.into_iter().collect() }
    }

    /// khmer's `divide_tags_into_subsets`: consecutive runs of `subset_size` tags (ascending).
    pub fn subsets(&self, subset_size: u64) -> Vec<Range<usize>> {
        let size = usize::try_from(subset_size.max(1)).unwrap_or(usize::MAX);
        (0..self.tags.len()).step_by(size).map(|start| start..self.tags.len().min(start.saturating_add(size))).collect()
    }

    /// khmer's `do_subset_partition` over the tags `range` (stop tags respected), as
    /// [`partition_tags`] does it.
    pub fn partition_subset(
        &self,
        range: Range<usize>,
        stop_big_traversals: bool,
        ctx: &RunContext,
    ) -> Result<PartitionMap> {
        let traverser =
            Traverser::new(&self.graph, &self.tag_set, &self.stop_tags, stop_big_traversals, TAG_DENSITY, ctx);
        partition_tags(&traverser, &self.tags[range], ctx)
    }
}

/// khmer's `do_subset_partition` from the tags `starts`: the traversals run on the threads of
/// `ctx`, their joins are applied in the order of `starts`, so the map is the one khmer's single
/// thread builds. `Err(Error::Cancelled)` once `ctx` is cancelled (the traverser's walks stop
/// on its run's cancellation: `ctx`'s, or one `ctx` works within).
pub fn partition_tags(traverser: &Traverser<'_>, starts: &[u64], ctx: &RunContext) -> Result<PartitionMap> {
    let n_tasks = starts.len().div_ceil(TAGS_PER_TASK);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Vec<Vec<u64>>>>> = Mutex::new(vec![None; n_tasks]);
    std::thread::scope(|scope| {
        for _ in 0..ctx.threads().clamp(1, n_tasks.max(1)) {
            scope.spawn(|| {
                let mut scratch = Scratch::default();
                loop {
                    let task = next.fetch_add(1, Ordering::Relaxed);
                    if task >= n_tasks || ctx.is_cancelled() {
                        return;
                    }
                    let chunk = &starts[task * TAGS_PER_TASK..starts.len().min((task + 1) * TAGS_PER_TASK)];
                    let mut found = vec![Vec::new(); chunk.len()];
                    if traverser.find_tags_each(chunk, &mut scratch, |i, tags| found[i] = tags.to_vec()).is_err() {
                        return;
                    }
                    results.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[task] = Some(found);
                }
            });
        }
    });
    if ctx.is_cancelled() {
        return Err(Error::Cancelled);
    }
    let mut map = PartitionMap::default();
    let results = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (found, &tag) in results.into_iter().flat_map(|task| task.unwrap_or_default()).zip(starts) {
        map.assign(tag, &found);
    }
    Ok(map)
}

/// khmer's false-positive ceiling of a nodegraph (load-graph's): past it a walk meets more
/// false neighbours than it leaves behind, and the traversals do not end.
pub const MAX_GRAPH_FP_RATE: f64 = 0.15;

/// Loads the nodegraph `path` (a countgraph, a graph of k-mers hashed on another `strand`, and
/// a graph over [`MAX_GRAPH_FP_RATE`] unless `force`, are refused) with its tagset
/// `path.tagset` and the optional stop tags.
pub fn load_tagged_graph(
    path: &str,
    stoptags: Option<&str>,
    strand: Strand,
    force: bool,
    ctx: &RunContext,
) -> Result<TaggedGraph> {
    // huge pages: every step of the walks looks the graph up at random
    let graph = KhmerTable::load_with(
        path,
        HashKind::TwoBit,
        AllocOptions { huge_pages: HugePages::On, populate: false },
        ctx,
    )?;
    strand.check_table(graph.strand(), path)?;
    if graph.holds_counts() {
        return Err(Error::format(
            path,
            None,
            None,
            "is a countgraph (k-mer counts), not a nodegraph of k-mer presence bits (as load-graph saves)",
        ));
    }
    let k = graph.ksize();
    let tags = files::load_tagset(&format!("{path}.tagset"), k, ctx)?;
    let stop_tags = match stoptags {
        Some(stoptags) => files::load_stoptags(stoptags, k, ctx)?,
        None => Vec::new(),
    };
    check_fp_rate(&graph, MAX_GRAPH_FP_RATE, force, NODEGRAPH_FP_TARGET, ctx).map_err(|e| {
        Error::format(
            path,
            None,
            None,
            format!("is too full to partition (its walks would not end; rebuild it larger with load-graph): {e}"),
        )
    })?;
    Ok(TaggedGraph::new(graph, tags, stop_tags))
}

/// The subset map file `BASE.subset.N.pmap`.
pub fn subset_path(base: &str, index: usize) -> String {
    format!("{base}.subset.{index}.pmap")
}

/// Writes `BASE.info` as khmer does (`N subsets total`).
fn write_subset_info(base: &str, n_subsets: usize, ctx: &RunContext) -> Result<()> {
    write_text(&format!("{base}.info"), format!("{n_subsets} subsets total\n"), ctx)
}

/// Options of `partition-graph`.
#[derive(Debug, Clone)]
pub struct PartitionOptions {
    /// The graph's base name (`BASE` and `BASE.tagset` are read).
    pub base: String,
    /// Stop tags file (`-S`).
    pub stoptags: Option<String>,
    /// Tags per subset (`-s`).
    pub subset_size: u64,
    /// `--no-big-traverse`.
    pub stop_big_traversals: bool,
    /// The strand the graph's k-mers must be hashed on (`--single-strand`).
    pub strand: Strand,
    /// Partition a graph over [`MAX_GRAPH_FP_RATE`] (`-f`).
    pub force: bool,
}

/// What `partition-graph` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PartitionSummary {
    /// Tags in the tagset.
    pub tags: usize,
    /// Subsets.
    pub subsets: usize,
    /// Subsets whose map already existed (left as they were, as khmer does).
    pub skipped: Vec<String>,
    /// Subset maps written.
    pub written: Vec<String>,
}

/// Runs `partition-graph`: `BASE.info`, then one `BASE.subset.N.pmap` per subset of tags
/// (an existing one is kept and its subset skipped, as khmer does, to resume a run).
pub fn partition_graph(opts: &PartitionOptions, ctx: &RunContext) -> Result<PartitionSummary> {
    check_subset_size(opts.subset_size)?;
    let tagged = load_tagged_graph(&opts.base, opts.stoptags.as_deref(), opts.strand, opts.force, ctx)?;
    let k = tagged.graph.ksize();
    let subsets = tagged.subsets(opts.subset_size);
    let mut summary = PartitionSummary { tags: tagged.tags.len(), subsets: subsets.len(), ..Default::default() };
    // a subset map that exists is kept; anything else of its name (a folder) is refused first
    for index in 0..subsets.len() {
        let path = subset_path(&opts.base, index);
        if !std::path::Path::new(&path).is_file() {
            crate::io::output::check_writable(&path, crate::run::files::OutputKind::File, &|_| false)?;
        }
    }
    write_subset_info(&opts.base, subsets.len(), ctx)?;
    for (index, range) in subsets.into_iter().enumerate() {
        let path = subset_path(&opts.base, index);
        if std::path::Path::new(&path).is_file() {
            ctx.info(format!("SKIPPING {path} -- already exists"));
            summary.skipped.push(path);
            continue;
        }
        let map = tagged.partition_subset(range, opts.stop_big_traversals, ctx)?;
        write_text(&path, files::pmap_bytes(&map, k), ctx)?;
        summary.written.push(path);
    }
    Ok(summary)
}

/// Refuses a subset size of zero.
fn check_subset_size(subset_size: u64) -> Result<()> {
    if subset_size == 0 {
        return Err(Error::invalid("subset size (-s/--subset-size) must be at least 1"));
    }
    Ok(())
}

/// The `BASE.subset.*.pmap` files (khmer's glob), by subset number then name.
pub fn subset_files(base: &str) -> Result<Vec<String>> {
    let path = std::path::Path::new(base);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!("{name}.subset.");
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    let mut found: Vec<(Option<u64>, String)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir.display().to_string(), e))?;
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(middle) = file.strip_prefix(&prefix).and_then(|rest| rest.strip_suffix(".pmap")) {
            let full = if path.parent().is_some_and(|p| !p.as_os_str().is_empty()) {
                dir.join(&file).to_string_lossy().into_owned()
            } else {
                file.clone()
            };
            found.push((middle.parse().ok(), full));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

/// Options of `merge-partitions`.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Base name: reads `BASE.subset.*.pmap`, writes `BASE.pmap.merged`.
    pub base: String,
    /// k of the maps (`-k`; a map of another k is refused).
    pub ksize: usize,
    /// Keep the subset maps (`--keep-subsets`); otherwise they are removed once merged.
    pub keep_subsets: bool,
}

/// What `merge-partitions` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MergeSummary {
    /// The subset maps merged.
    pub merged: Vec<String>,
    /// Tags with a partition.
    pub tags: usize,
    /// Partitions.
    pub partitions: usize,
}

/// Merges the partition-map files `paths` (k-mer size `k`) into one map.
pub fn merge_files(paths: &[String], k: usize, ctx: &RunContext) -> Result<PartitionMap> {
    let mut map = PartitionMap::default();
    for path in paths {
        if ctx.is_cancelled() {
            return Err(Error::Cancelled);
        }
        map.merge(&files::load_pmap_records(path, k, ctx)?, &FxHashSet::default());
    }
    Ok(map)
}

/// Runs `merge-partitions`.
pub fn merge_partitions(opts: &MergeOptions, ctx: &RunContext) -> Result<MergeSummary> {
    check_ksize(opts.ksize)?;
    let paths = subset_files(&opts.base)?;
    if paths.is_empty() {
        return Err(Error::invalid(format!("no partition subsets {}.subset.*.pmap to merge", opts.base)));
    }
    let output = format!("{}.pmap.merged", opts.base);
    crate::io::refuse_inputs_as_outputs(ctx, &paths, [&output])?;
    let map = merge_files(&paths, opts.ksize, ctx)?;
    write_text(&output, files::pmap_bytes(&map, opts.ksize), ctx)?;
    if !opts.keep_subsets {
        for path in &paths {
            std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
        }
    }
    Ok(MergeSummary { tags: map.len(), partitions: count_ids(&map), merged: paths })
}

/// Number of partitions of a map.
fn count_ids(map: &PartitionMap) -> usize {
    map.assignments().iter().map(|&(_, id)| id).collect::<FxHashSet<_>>().len()
}

/// khmer's output name for `input`: `<basename>.<suffix>` in the current directory
/// (`.part` of annotate-partitions, `.stopfilt` of filter-stoptags).
pub fn output_name(input: &str, suffix: &str) -> String {
    let name = std::path::Path::new(input).file_name().map(|n| n.to_string_lossy().into_owned());
    format!("{}.{suffix}", name.unwrap_or_else(|| input.to_string()))
}

/// khmer's `output_partitions`: writes each read of `input` that has a tagged k-mer in `lookup`
/// to `output` as `name<TAB>pid` with its cleaned sequence (the first tagged k-mer decides);
/// returns the number of partitions seen.
pub fn annotate_file(
    lookup: &FxHashMap<u64, u32>,
    k: usize,
    strand: Strand,
    input: &str,
    output: &str,
    ctx: &RunContext,
) -> Result<usize> {
    let mut out = OutputFile::create_in(output, Compression::None, ctx)?;
    let (mut clean, mut hashes, mut buf) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = FxHashSet::default();
    let mut name = Vec::new();
    crate::io::fastx::for_each_record(input, ctx, |rec| {
        clean_parser(rec.seq, &mut clean);
        hashes.clear();
        twobit::hashes(&clean, k, strand, &mut hashes);
        let Some(pid) = hashes.iter().find_map(|h| lookup.get(h).copied()) else { return Ok(()) };
        seen.insert(pid);
        name.clear();
        name.extend_from_slice(rec.name);
        name.extend_from_slice(format!("\t{pid}").as_bytes());
        write_record(&mut buf, &crate::io::Record { name: &name, seq: &clean, qual: rec.qual });
        if buf.len() >= 1 << 16 {
            out.write_all(&buf).map_err(|e| Error::io(output, e))?;
            buf.clear();
        }
        Ok(())
    })?;
    out.write_all(&buf).map_err(|e| Error::io(output, e))?;
    out.finish()?;
    Ok(seen.len())
}

/// Options of `annotate-partitions`.
#[derive(Debug, Clone)]
pub struct AnnotateOptions {
    /// Base name: reads `BASE.pmap.merged`.
    pub base: String,
    /// k of the map (`-k`).
    pub ksize: usize,
    /// Read files; each gets `<basename>.part` in the current directory.
    pub inputs: Vec<String>,
    /// The strand the map's k-mers were hashed on (`--single-strand`).
    pub strand: Strand,
}

/// Partitions found per annotated file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AnnotateSummary {
    /// (input, output, partitions) per input.
    pub files: Vec<(String, String, usize)>,
}

/// Annotates every input with the partitions of `lookup`.
fn annotate_all(
    lookup: &FxHashMap<u64, u32>,
    k: usize,
    strand: Strand,
    inputs: &[String],
    ctx: &RunContext,
) -> Result<AnnotateSummary> {
    let outputs: Vec<String> = inputs.iter().map(|input| output_name(input, "part")).collect();
    crate::io::refuse_inputs_as_outputs(ctx, inputs, &outputs)?;
    let mut summary = AnnotateSummary::default();
    for (input, output) in inputs.iter().zip(outputs) {
        let n = annotate_file(lookup, k, strand, input, &output, ctx)?;
        summary.files.push((input.clone(), output, n));
    }
    Ok(summary)
}

/// Runs `annotate-partitions`.
pub fn annotate_partitions(opts: &AnnotateOptions, ctx: &RunContext) -> Result<AnnotateSummary> {
    check_ksize(opts.ksize)?;
    let map = merge_files(&[format!("{}.pmap.merged", opts.base)], opts.ksize, ctx)?;
    annotate_all(&map.lookup(), opts.ksize, opts.strand, &opts.inputs, ctx)
}

/// Options of `do-partition`.
#[derive(Debug, Clone)]
pub struct DoPartitionOptions {
    /// Graph building (as `load-graph`; the graph and tagset are not saved).
    pub graph: load_graph::Options,
    /// Tags per subset (`-s`).
    pub subset_size: u64,
    /// `--no-big-traverse`.
    pub stop_big_traversals: bool,
    /// Write `BASE.subset.N.pmap` (`--keep-subsets`).
    pub keep_subsets: bool,
}

/// What `do-partition` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DoPartitionSummary {
    /// The graph built.
    pub graph: load_graph::Summary,
    /// Subsets partitioned.
    pub subsets: usize,
    /// Partitions in the merged map.
    pub partitions: usize,
    /// The annotated files.
    pub annotated: AnnotateSummary,
}

/// Runs `do-partition`: builds the graph and tags of the inputs, partitions each subset,
/// merges them in memory and annotates the inputs (`<basename>.part`); writes `BASE.info`
/// (and the subset maps with `keep_subsets`).
pub fn do_partition(opts: &DoPartitionOptions, ctx: &RunContext) -> Result<DoPartitionSummary> {
    check_subset_size(opts.subset_size)?;
    let base = &opts.graph.output;
    let (graph, tagset, graph_summary) = load_graph::build(&opts.graph, ctx)?;
    let k = graph.ksize();
    let tagged = TaggedGraph::new(graph, tagset.tags, []);
    let subsets = tagged.subsets(opts.subset_size);
    write_subset_info(base, subsets.len(), ctx)?;
    let mut merged = PartitionMap::default();
    for (index, range) in subsets.iter().enumerate() {
        let map = tagged.partition_subset(range.clone(), opts.stop_big_traversals, ctx)?;
        if opts.keep_subsets {
            write_text(&subset_path(base, index), files::pmap_bytes(&map, k), ctx)?;
        }
        merged.merge(&map.assignments(), &FxHashSet::default());
    }
    let annotated = annotate_all(&merged.lookup(), k, tagged.graph.strand(), &opts.graph.inputs, ctx)?;
    Ok(DoPartitionSummary { graph: graph_summary, subsets: subsets.len(), partitions: count_ids(&merged), annotated })
}
