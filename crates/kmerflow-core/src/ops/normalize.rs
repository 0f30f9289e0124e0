//! `normalize`: khmer's normalization protocol in one run, with no intermediate file.
//!
//! With `passes = 2` the run gives what this chain of khmer commands gives (paired input
//! interleaved; `C1` the first target, by default 4 × `target`, as BBNorm's first pass):
//!
//! ```text
//! normalize-by-median -k K -C C1 -s t1.ct IN -o n1          # first pass
//! filter-abund -C MIN_DEPTH -V -Z C1 t1.ct n1 -o f          # error trimming (variable coverage)
//! extract-paired-reads f                                    # -> f.pe, f.se
//! normalize-by-median -k K -C TARGET -p f.pe -u f.se -o OUT # second pass, a new table
//! ```
//!
//! so khmer's protocol (`-C 20`, `filter-abund -V`, `-C 5`) is `--target 5` (first target 20,
//! min depth 2). With `passes = 1` it is the first two commands at `-C TARGET`. That holds for
//! tables of khmer's layout; the blocked layout (the default: one cache line a k-mer instead of
//! one per table) runs the same steps on Count-Min sketches of the same memory, whose counts
//! differ from khmer's where k-mers collide.
//!
//! Nothing is written between the steps: the first pass records which bundles it keeps (one bit
//! each); the input is then read again, the kept bundles are trimmed against the first table by
//! the workers and normalized into the second table in input order, pairs first and single
//! reads (orphans whose mate was trimmed away, unpaired input reads) after them, held in memory
//! until the pairs are done. The passes are [`super::diginorm`]'s normalizer, the trimming is
//! filter-abund's [`trim_record`], the histograms abundance-dist-single's.
//!
//! The passes' tables are made by a [`Tables`]: [`run`] makes them in this process; a caller
//! holding shards of tables in other processes (the Python package's Dask workers) gives its
//! own to [`run_on`], whose tables are [`PassTable::Sharded`]: both passes run on
//! normalize-by-median's overlapped driver ([`drive::normalize_file`]), the first reading the
//! input, the second the trimmed reads, made on a thread of their own (the trimming's look-ups
//! go to the first table's shards batch by batch, [`ShardedDecisions`]), with the decisions,
//! counts, messages and outputs of the one-process run.

use super::abundance_dist::{counted_histogram, write_histogram};
use super::autosize::{self, AutoSize};
use super::count::write_text;
use super::diginorm::{self, BatchHasher, Normalizer};
use super::read_filter::{check_fp_rate, check_ksize, trim_of_counts, trim_record, Cleaning, HashedBatch, Trim};
use super::reads::bundle_batches;
use super::sizing::{create_counting_table, target_rate, FpRate, TableParams};
use crate::io::{
    check_rereadable, mates::refuse_same_mates, refuse_inputs_as_outputs, Bundle, BundleBatch, Compression,
    MateBuffers, MateWriter, PairMode, PairedInput, PairedOutput, PairedReader, Record, RecordBatch, Staged,
};
use crate::kmer::clean::clean_parser;
use crate::pipeline::{run_ordered, Workload};
use crate::run::{CancelToken, RunContext};
use crate::shards::drive::{self, DrivenLayout, KeepBatches, SequenceHasher, ShardedTable};
use crate::shards::runs::{BundleSource, Cleaning as BatchCleaning, HashedBundles, ShardedDecisions};
use crate::table::batch::spans;
use crate::table::{AnyTable, CountingTable, Layout};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Options of `normalize`.
#[derive(Debug, Clone)]
pub struct Options {
    /// The reads: one file (interleaved pairs and/or single reads), or R1 with `mate`.
    pub input: String,
    /// The R2 file: record i is the mate of record i of `input`.
    pub mate: Option<String>,
    /// The output (`-o`): every kept read, or read 1 of the kept pairs with `mate_output`.
    pub output: String,
    /// Read 2 of the kept pairs (`-O`); without it, pairs are written interleaved to `output`.
    pub mate_output: Option<String>,
    /// With `mate_output`: where kept reads without a kept mate go (else they are dropped, counted).
    pub orphans: Option<String>,
    /// The k-mer depth of the output: the last pass's median cutoff (0..=255).
    pub target: u32,
    /// The first pass's cutoff with two passes (default 4 × `target`, at most 255); it is also
    /// the median from which the error trimming applies (filter-abund's `-Z`).
    pub first_target: Option<u32>,
    /// Reads are cut before their first k-mer counted fewer times than this in the first pass's
    /// table (filter-abund's `-C`; 0 or 1: no trimming).
    pub min_depth: u32,
    /// 1: normalize, trim. 2: normalize, trim, normalize again with a new table.
    pub passes: u32,
    /// Table sizing of every table (`auto_memory`: each sized for its k-mers; see [`run`]).
    pub table: TableParams,
    /// The layout of every table (the passes', the trimming's and the histograms').
    pub layout: Layout,
    /// Save the first pass's table (the one the trimming reads), in its layout's format.
    pub save_table: Option<String>,
    /// k-mer abundance histogram of the input (abundance-dist-single's CSV).
    pub hist: Option<String>,
    /// k-mer abundance histogram of the output.
    pub hist_out: Option<String>,
    /// Output compression; `None` chooses by each output name's extension.
    pub compression: Option<Compression>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            input: String::new(),
            mate: None,
            output: String::new(),
            mate_output: None,
            orphans: None,
            target: 20,
            first_target: None,
            min_depth: 2,
            passes: 2,
            table: TableParams { ksize: 20, auto_memory: true, ..TableParams::default() },
            layout: Layout::Blocked,
            save_table: None,
            hist: None,
            hist_out: None,
            compression: None,
        }
    }
}

/// A table of the run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TableSummary {
    /// Its layout.
    pub layout: Layout,
    /// Memory of its counters, in bytes.
    pub bytes: u64,
    /// Counters a k-mer has (hash functions): tables of khmer's layout, probes of the blocked.
    pub n_tables: usize,
    /// The distinct k-mers it was sized for (automatic sizing only).
    pub sized_for_kmers: Option<f64>,
    /// k-mers new to the table when counted (khmer's `n_unique_kmers`).
    pub unique_kmers: u64,
    /// Estimated false-positive rate of the final table.
    pub fp_rate: f64,
}

impl TableSummary {
    fn of(table: &PassTable<'_>, sized_for_kmers: Option<f64>) -> Self {
        let (layout, bytes, n_tables) = match table {
            PassTable::Here(t) => (t.layout(), t.memory_bytes(), t.counters_per_kmer()),
            PassTable::Sharded(s) => s.0.shape(),
        };
        let fp_rate = table.fp().fp_rate();
        TableSummary { layout, bytes, n_tables, sized_for_kmers, unique_kmers: table.n_unique_kmers(), fp_rate }
    }
}

/// A table of a run: in this process, or sharded over other processes (either layout: the
/// remote shards reached through the caller's transport).
pub enum PassTable<'a> {
    /// A table in this process.
    Here(AnyTable),
    /// A table sharded over processes, each batch looked up and counted on its shards.
    Sharded(ShardedPass<'a>),
}

/// A table of a run sharded over processes, of either layout: its [`ShardedDecisions`].
pub struct ShardedPass<'a>(Box<dyn PassShards + Send + 'a>);

impl<'a> ShardedPass<'a> {
    /// The run's table looked up and counted by `decisions`.
    pub fn new<C: DrivenLayout>(decisions: ShardedDecisions<'a, C>) -> Self {
        ShardedPass(Box::new(decisions))
    }

    /// Sends the updates not sent yet: the whole table is then on its shards.
    pub fn flush(&mut self) -> Result<()> {
        self.0.flush()
    }
}

/// What a pass on a sharded table does with each decided batch: given whether each bundle was
/// kept, the batch and the table.
type OnBatch<'a> = dyn FnMut(&[bool], &HashedBundles, &dyn KeepBatches) -> Result<()> + 'a;

/// What a run asks of a sharded table, the same for both layouts ([`DrivenLayout`] holds what
/// differs).
trait PassShards {
    /// The table's false-positive rate and resize hint.
    fn fp(&self) -> &dyn FpRate;
    /// k-mers new to the table when counted.
    fn n_unique_kmers(&self) -> u64;
    /// The k-mer size.
    fn ksize(&self) -> usize;
    /// The table's k-mer hash.
    fn hasher(&self) -> Arc<SequenceHasher>;
    /// Its layout, counter memory in bytes and counters a k-mer has, as the one-process table
    /// of its shape reports them.
    fn shape(&self) -> (Layout, u64, usize);
    /// normalize-by-median of the bundles of `source` to `cutoff` on these shards by the
    /// overlapped driver ([`drive::normalize_file`]), each batch's decisions given to
    /// `on_batch` with the batch and the table (for its false-positive rate); returns the
    /// reads dropped for being shorter than k.
    fn normalize(&mut self, source: BundleSource, cutoff: u32, on_batch: &mut OnBatch<'_>) -> Result<u64>;
    /// Appends the count of each k-mer of `hashes` to `counts`, looked up in pieces of the
    /// shards' batch size.
    fn counts(&mut self, hashes: &[u64], counts: &mut Vec<u32>) -> Result<()>;
    /// See [`ShardedPass::flush`].
    fn flush(&mut self) -> Result<()>;
}

impl<C: DrivenLayout> PassShards for ShardedDecisions<'_, C> {
    fn fp(&self) -> &dyn FpRate {
        self.client()
    }

    fn n_unique_kmers(&self) -> u64 {
        self.client().n_unique_kmers()
    }

    fn ksize(&self) -> usize {
        self.client().ksize()
    }

    fn hasher(&self) -> Arc<SequenceHasher> {
        self.client().hash_fn()
    }

    fn shape(&self) -> (Layout, u64, usize) {
        let (layout, bytes) = self.client().memory();
        (layout, bytes, self.client().batch_probes())
    }

    fn normalize(&mut self, source: BundleSource, cutoff: u32, on_batch: &mut OnBatch<'_>) -> Result<u64> {
        let batch_kmers = self.batch_kmers();
        let (mut shards, remote) = self.shards()?;
        let remote_shards = shards.remote();
        let mut run = shards.decisions(source, BatchCleaning::ScreedWithRecords, batch_kmers)?;
        drive::normalize_file(&mut *run, remote, &remote_shards, cutoff, on_batch)?;
        Ok(run.short_dropped())
    }

    fn counts(&mut self, hashes: &[u64], counts: &mut Vec<u32>) -> Result<()> {
        ShardedDecisions::counts(self, hashes, counts)
    }

    fn flush(&mut self) -> Result<()> {
        ShardedDecisions::flush(self)
    }
}

impl PassTable<'_> {
    /// Its false-positive rate and resize hint.
    fn fp(&self) -> &dyn FpRate {
        match self {
            PassTable::Here(t) => t,
            PassTable::Sharded(s) => s.0.fp(),
        }
    }

    /// k-mers new to the table when counted (khmer's `n_unique_kmers`).
    fn n_unique_kmers(&self) -> u64 {
        match self {
            PassTable::Here(t) => t.n_unique_kmers(),
            PassTable::Sharded(s) => s.0.n_unique_kmers(),
        }
    }

    /// The table's k-mer hash, for the workers.
    fn hasher(&self) -> Arc<SequenceHasher> {
        match self {
            PassTable::Here(t) => {
                let hasher = BatchHasher::of(t);
                Arc::new(move |seq: &[u8], out: &mut Vec<u64>| hasher.hashes(seq, out))
            }
            PassTable::Sharded(s) => s.0.hasher(),
        }
    }
}

/// Where a run's tables are made: [`InProcess`], or shards in other processes (the caller's).
pub trait Tables {
    /// Makes a table of `layout` sized by `params` (as [`create_counting_table`] sizes it),
    /// runs `work` on it (given these tables, to make another one meanwhile), then, once `work`
    /// succeeded, saves it to `save` when given (in its layout's format) and drops it.
    fn with_table(
        &mut self,
        params: &TableParams,
        layout: Layout,
        save: Option<&str>,
        ctx: &RunContext,
        work: &mut dyn FnMut(&mut PassTable<'_>, &mut dyn Tables) -> Result<()>,
    ) -> Result<()>;
}

/// The tables of a one-process run.
pub struct InProcess;

impl Tables for InProcess {
    fn with_table(
        &mut self,
        params: &TableParams,
        layout: Layout,
        save: Option<&str>,
        ctx: &RunContext,
        work: &mut dyn FnMut(&mut PassTable<'_>, &mut dyn Tables) -> Result<()>,
    ) -> Result<()> {
        let mut table = PassTable::Here(create_counting_table(params, layout, 1.0, ctx)?);
        work(&mut table, self)?;
        match (&table, save) {
            (PassTable::Here(t), Some(path)) => t.save_in(path, ctx),
            _ => Ok(()),
        }
    }
}

/// One normalization pass.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PassSummary {
    /// The median cutoff.
    pub cutoff: u32,
    /// Reads examined.
    pub reads: u64,
    /// Reads kept.
    pub kept: u64,
    /// Its table.
    pub table: TableSummary,
    /// Seconds it took (the second pass's include the trimming it runs with; the first pass's,
    /// with `hist` and more than one thread, ran beside the input histogram's counting).
    pub seconds: f64,
}

/// The error trimming.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TrimSummary {
    /// The cutoff (`--min-depth`).
    pub min_depth: u32,
    /// Only reads whose median reaches this are trimmed (filter-abund's `-Z` with `-V`).
    pub from_median: u32,
    /// Reads examined (the first pass's kept reads).
    pub reads: u64,
    /// Reads cut short.
    pub truncated: u64,
    /// Reads dropped (fewer than k bases left).
    pub removed: u64,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Reads in the input (reads shorter than k excluded).
    pub reads_in: u64,
    /// Pairs among them.
    pub pairs_in: u64,
    /// Reads dropped for being shorter than k (a pair of R1/R2 files loses both mates).
    pub short_dropped: u64,
    /// How the first table was sized automatically: seconds of the pre-pass.
    pub prepass_seconds: f64,
    /// The first normalization.
    pub first_pass: PassSummary,
    /// The error trimming.
    pub trim: TrimSummary,
    /// The second normalization (two passes).
    pub second_pass: Option<PassSummary>,
    /// Reads written (to every output).
    pub reads_out: u64,
    /// Pairs written.
    pub pairs_out: u64,
    /// Reads left without their mate by the trimming and not written (R1/R2 output without
    /// `orphans`).
    pub orphans_dropped: u64,
    /// Estimated false-positive rate of the last table.
    pub fp_rate: f64,
    /// Reads after each step: input, first pass, trimming, second pass, written.
    pub steps: Vec<Step>,
    /// The first pass's keep curve: `[examined, kept]` points.
    pub keep_curve: Vec<[u64; 2]>,
    /// k-mer abundance histograms (abundance 0.., trailing zeros left out): `input` with
    /// `hist`, `output` with `hist_out`.
    pub histograms: BTreeMap<String, Vec<u64>>,
    /// Seconds of the whole run.
    pub seconds: f64,
}

/// The reads left after one step.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Step {
    /// The step.
    pub name: String,
    /// Reads after it.
    pub reads: u64,
}

impl Step {
    fn new(name: impl Into<String>, reads: u64) -> Self {
        Step { name: name.into(), reads }
    }
}

/// Largest cutoff (one-byte counters).
const MAX_CUTOFF: u32 = 255;

/// One bit per bundle of the input: kept by the first pass.
#[derive(Default)]
struct KeepBits {
    words: Vec<u64>,
    len: usize,
}

impl KeepBits {
    fn push(&mut self, keep: bool) {
        if self.len / 64 == self.words.len() {
            self.words.push(0);
        }
        if keep {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    fn get(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
}

/// A batch of bundles with the input index of its first bundle.
struct Numbered {
    first: usize,
    bundles: BundleBatch,
}

impl Workload for Numbered {
    fn records(&self) -> u64 {
        self.bundles.records()
    }
    fn bytes(&self) -> u64 {
        self.bundles.bytes()
    }
}

impl Options {
    /// The first pass's cutoff.
    fn first_cutoff(&self) -> u32 {
        match self.passes {
            2 => self.first_target.unwrap_or((4 * self.target).min(MAX_CUTOFF)),
            _ => self.target,
        }
    }

    /// Whether the input histogram is counted beside the first pass (with `hist`, more than one
    /// thread), see [`first_pass_with_input_histogram`].
    fn overlaps_input_histogram(&self, threads: usize) -> bool {
        self.hist.is_some() && threads > 1
    }

    /// The passes over the inputs that a run with `threads` threads shows in its progress (the
    /// `-M auto` pre-pass not included): the two of the normalization and two a histogram
    /// (counting, tracking), but for the input histogram counted beside the first pass, whose
    /// reading the progress does not show.
    pub fn progress_passes(&self, threads: usize) -> usize {
        let hist_in = self.hist.is_some() && !self.overlaps_input_histogram(threads);
        2 + 2 * (usize::from(hist_in) + usize::from(self.hist_out.is_some()))
    }

    fn inputs(&self) -> Vec<String> {
        std::iter::once(&self.input).chain(&self.mate).cloned().collect()
    }

    /// Checks the options and the run's files (an output that is an input, an input that
    /// cannot be read again) before anything is read; [`run_on`] starts with it.
    pub fn check(&self, ctx: &RunContext) -> Result<()> {
        // khmer's k <= 32 limit applies to its layout only (the blocked one hashes any k).
        if self.layout == Layout::Khmer {
            check_ksize(self.table.ksize)?;
        }
        if !(1..=2).contains(&self.passes) {
            return Err(Error::invalid(format!("--passes must be 1 or 2, not {}", self.passes)));
        }
        for (flag, value) in [("--target", Some(self.target)), ("--first-target", self.first_target)] {
            if value.is_some_and(|v| v > MAX_CUTOFF) {
                return Err(Error::invalid(format!("{flag} must be in 0..={MAX_CUTOFF}")));
            }
        }
        if self.orphans.is_some() && self.mate_output.is_none() {
            return Err(Error::invalid(
                "--orphans needs -O/--mate-output (without it, reads without their mate go to -o)",
            ));
        }
        let written = [Some(&self.output), self.mate_output.as_ref(), self.orphans.as_ref()];
        if self.hist_out.is_some() && written.iter().flatten().any(|p| p.as_str() == "-") {
            return Err(Error::invalid("--hist-out reads the outputs back: they must be files, not stdout"));
        }
        if let Some(mate) = &self.mate {
            refuse_same_mates(&self.input, mate)?;
        }
        let inputs = self.inputs();
        let side = [&self.save_table, &self.hist, &self.hist_out];
        refuse_inputs_as_outputs(ctx, &inputs, written.into_iter().flatten().chain(side.into_iter().flatten()))?;
        // Every input is read two to four times.
        inputs.iter().try_for_each(|p| check_rereadable(p))
    }

    /// The input opened: pairs recognised by name in one file (khmer's broken-paired reading),
    /// or R1/R2 files zipped; reads shorter than k dropped.
    fn reader(&self, ctx: &RunContext) -> Result<PairedReader> {
        let input = PairedInput { path: self.input.clone(), mate: self.mate.clone() };
        input.open(PairMode::BrokenPaired, Some(self.table.ksize), ctx)
    }

    /// The input as bundles ([`Options::reader`]) numbered: pairs recognised by name in one file (khmer's broken-paired
    /// reading), or R1/R2 files zipped; reads shorter than k dropped.
    fn bundles(&self, ctx: &RunContext) -> Result<impl Iterator<Item = Result<Numbered>> + Send> {
        let mut next = 0;
        Ok(bundle_batches(self.reader(ctx)?).map(move |bb| {
            bb.map(|bundles| {
                let first = next;
                next += bundles.bundles.len();
                Numbered { first, bundles }
            })
        }))
    }
}

/// The parameters of a table after the first one: with automatic sizing (`auto`), sized for
/// `kmers`, what the table before it counted (an upper bound: later steps only remove reads and
/// k-mers), which is returned too; fixed sizes are kept. One memory serves both layouts (see
/// [`autosize::size_for`]).
fn sized_after(params: &TableParams, auto: bool, kmers: u64) -> Result<(TableParams, Option<f64>)> {
    if !auto {
        return Ok((params.clone(), None));
    }
    let kmers = kmers as f64;
    let (memory, _, _) = autosize::size_for(params, kmers)?;
    Ok((TableParams { max_memory: Some(memory), ..params.clone() }, Some(kmers)))
}

/// A normalization pass's options for [`Normalizer`] (no progress lines of its own).
fn pass_options(params: &TableParams, cutoff: u32) -> diginorm::Options {
    diginorm::Options { table: params.clone(), cutoff, report_frequency: u64::MAX, ..Default::default() }
}

/// Fails when `table`'s rate is over normalize-by-median's ceiling (or warns, with `force`).
fn check_rate(table: &PassTable<'_>, params: &TableParams, ctx: &RunContext) -> Result<()> {
    let fp = table.fp().fp_rate();
    let resize = table.fp().resize_hint(fp, target_rate(params));
    check_fp_rate(fp, diginorm::MAX_FP_RATE, params.force, &resize, ctx)
}

/// The CSV of an abundance histogram (only the header when it is empty).
fn histogram_csv(dist: &[u64]) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    if dist.iter().all(|&n| n == 0) {
        text.extend_from_slice(b"abundance,count,cumulative,cumulative_fraction\r\n");
    } else {
        write_histogram(dist, false, &mut text)?;
    }
    Ok(text)
}

/// A histogram without its trailing zeros.
fn trimmed(mut dist: Vec<u64>) -> Vec<u64> {
    let len = dist.iter().rposition(|&n| n != 0).map_or(0, |i| i + 1);
    dist.truncate(len);
    dist
}

/// The outputs ([`MateWriter`]), the current batch's buffers and the reads written.
struct Sinks {
    writer: MateWriter,
    bufs: MateBuffers,
    reads: u64,
    pairs: u64,
}

impl Sinks {
    fn create(opts: &Options, ctx: &RunContext) -> Result<Self> {
        let out =
            PairedOutput { path: opts.output.clone(), mate: opts.mate_output.clone(), orphans: opts.orphans.clone() };
        let writer = MateWriter::create(&out, opts.compression, ctx)?;
        Ok(Sinks { bufs: writer.buffers(), writer, reads: 0, pairs: 0 })
    }

    /// Formats a pair, or a read without its mate.
    fn push(&mut self, first: &Record<'_>, second: Option<&Record<'_>>) {
        self.bufs.push(Some(first), second);
        self.pairs += u64::from(second.is_some());
        self.reads += 1 + u64::from(second.is_some());
    }

    /// Formats bundle `b` of `batch`.
    fn bundle(&mut self, batch: &RecordBatch, b: Bundle) {
        self.push(&batch.get(b.first), b.second.map(|i| batch.get(i)).as_ref());
    }

    /// Writes what [`Sinks::bundle`] formatted.
    fn flush(&mut self) -> Result<()> {
        self.writer.write(&self.bufs)?;
        self.bufs.clear();
        Ok(())
    }
}

/// The trimmed survivors of one batch: bundles in input order, or, when `split`, pairs here and
/// single reads in `singles`; each hashed for the second pass.
struct Trimmed {
    kept: HashedBatch,
    singles: Option<HashedBatch>,
    reads: u64,
    truncated: u64,
    removed: u64,
}

/// An empty bundle batch of records in `like`'s format.
fn empty_like(like: &RecordBatch) -> BundleBatch {
    BundleBatch {
        batch: RecordBatch::empty(like.format(), like.first_record_number()),
        bundles: Vec::new(),
        n_short_dropped: 0,
    }
}

/// Appends record `rec` (from line `line`) to `bb` as a new single bundle or as the mate of the
/// last one.
fn push_read(bb: &mut BundleBatch, rec: &crate::io::Record<'_>, line: u64, mate_of_last: bool) {
    bb.batch.push(rec, line);
    let i = bb.batch.len() - 1;
    match bb.bundles.last_mut() {
        Some(last) if mate_of_last => last.second = Some(i),
        _ => bb.bundles.push(Bundle { first: i, second: None }),
    }
}

/// A batch to trim on shards: its bundles, and the k-mer hashes of the reads the first pass
/// kept, end to end, read `i` holding `hashes[ends[i]..ends[i + 1]]`.
struct ToLookUp {
    nb: Numbered,
    hashes: Vec<u64>,
    ends: Vec<usize>,
}

/// The trimming step's parameters (read by every worker).
struct Trimming<'a> {
    keep: &'a KeepBits,
    min_depth: u32,
    from_median: u32,
    split: bool,
    /// The first table's hash (for its look-ups on shards).
    first_hasher: Arc<SequenceHasher>,
    /// The second table's hash, when it is held here (a sharded one's driver hashes its reads).
    hasher: Option<Arc<SequenceHasher>>,
}

impl Trimming<'_> {
    /// The kept bundles of `nb` (the first pass's), as their reads' record indices.
    fn kept<'b>(&'b self, nb: &'b Numbered) -> impl Iterator<Item = Vec<usize>> + 'b {
        let bundles = nb.bundles.bundles.iter().enumerate();
        bundles
            .filter(|(j, _)| self.keep.get(nb.first + j))
            .map(|(_, b)| std::iter::once(b.first).chain(b.second).collect())
    }

    /// Trims the bundles of `nb` on `table` (in this process) with [`Trimming::batch`].
    fn here(&self, table: &AnyTable, nb: Numbered) -> Trimmed {
        self.batch(nb, |clean| trim_record(table, clean, self.min_depth, Some(self.from_median)))
    }

    /// The bundles of `nb` to trim on shards, with their reads' k-mers hashed by the first
    /// table's hash (by the workers, for [`Trimming::on_shards`]).
    fn to_look_up(&self, nb: Numbered) -> ToLookUp {
        let (mut clean, mut hashes, mut ends) = (Vec::new(), Vec::new(), vec![0]);
        for i in self.kept(&nb).flatten() {
            clean_parser(nb.bundles.batch.get(i).seq, &mut clean);
            (self.first_hasher)(&clean, &mut hashes);
            ends.push(hashes.len());
        }
        ToLookUp { nb, hashes, ends }
    }

    /// Trims the bundles of `nb` with [`Trimming::batch`], the counts of their reads' k-mers
    /// looked up on `shards` (in pieces of the shards' batch size, see
    /// [`ShardedDecisions::counts`]), by the same rule ([`trim_of_counts`]).
    fn on_shards(&self, shards: &mut ShardedPass<'_>, ToLookUp { nb, hashes, ends }: ToLookUp) -> Result<Trimmed> {
        let mut counts = Vec::with_capacity(hashes.len());
        shards.0.counts(&hashes, &mut counts)?;
        let (k, mut read) = (shards.0.ksize(), 0);
        Ok(self.batch(nb, |clean| {
            read += 1;
            let counts = &counts[ends[read - 1]..ends[read]];
            trim_of_counts(counts, k, clean.len(), self.min_depth, Some(self.from_median)).0
        }))
    }

    /// Trims the bundles of `nb` the first pass kept (filter-abund `-V`), each read (cleaned)
    /// by `trim_read`, in order: a pair whose two reads survive stays a pair; a read whose
    /// mate was removed becomes a single read.
    fn batch(&self, nb: Numbered, mut trim_read: impl FnMut(&[u8]) -> Trim) -> Trimmed {
        let input = &nb.bundles.batch;
        let (mut kept, mut singles) = (empty_like(input), empty_like(input));
        let mut clean = Vec::new();
        let (mut reads, mut truncated, mut removed) = (0, 0, 0);
        for bundle in self.kept(&nb) {
            let mut survivors = Vec::with_capacity(2);
            for i in bundle {
                let rec = input.get(i);
                clean_parser(rec.seq, &mut clean);
                let trim = trim_read(&clean);
                reads += 1;
                match trim {
                    Trim::Drop => removed += 1,
                    Trim::Truncate(_) => truncated += 1,
                    Trim::Keep => {}
                }
                survivors.extend(trim.apply(&rec).map(|r| (r, input.line_of(i))));
            }
            let pair = survivors.len() == 2;
            let dest = if self.split && !pair { &mut singles } else { &mut kept };
            for (n, (rec, line)) in survivors.iter().enumerate() {
                push_read(dest, rec, *line, pair && n == 1);
            }
        }
        Trimmed {
            kept: self.hashed(kept),
            singles: self.split.then(|| self.hashed(singles)),
            reads,
            truncated,
            removed,
        }
    }

    /// `bb` cleaned (screed's rule) and hashed for the second table here, if any.
    fn hashed(&self, bb: BundleBatch) -> HashedBatch {
        match &self.hasher {
            Some(h) => HashedBatch::new(bb, Cleaning::Screed, |seq: &[u8], out: &mut Vec<u64>| h(seq, out)),
            None => HashedBatch::new(bb, Cleaning::Screed, |_: &[u8], _: &mut Vec<u64>| {}),
        }
    }
}

/// What the trimming gives each batch of survivors to (see [`trim_kept`]).
type Emit<'a> = dyn FnMut(HashedBatch) -> Result<()> + 'a;

/// Trims the first pass's kept bundles of the input against the first table (`here`, by the
/// workers, or `sharded`, looked up in input order) and gives each batch of survivors to `emit`
/// in input order: bundles as they come, or, when `trimming.split`, the pairs as they come and
/// the single reads, held until then, at the end. Returns the trimming's summary.
fn trim_kept(
    opts: &Options,
    trimming: &Trimming<'_>,
    (here, mut sharded): (Option<&AnyTable>, Option<&mut ShardedPass<'_>>),
    ctx: &RunContext,
    emit: &mut Emit<'_>,
) -> Result<TrimSummary> {
    let mut trim =
        TrimSummary { min_depth: trimming.min_depth, from_median: trimming.from_median, ..Default::default() };
    let mut deferred: Option<BundleBatch> = None;
    run_ordered(
        ctx,
        opts.bundles(ctx)?,
        || {
            |nb: Numbered| {
                Ok(match here {
                    Some(table) => Ok(trimming.here(table, nb)),
                    None => Err(trimming.to_look_up(nb)),
                })
            }
        },
        |t: std::result::Result<Trimmed, ToLookUp>| {
            let t = match (t, sharded.as_deref_mut()) {
                (Ok(t), _) => t,
                (Err(asked), Some(shards)) => trimming.on_shards(shards, asked)?,
                (Err(_), None) => unreachable!("trimmed by the workers without shards"),
            };
            trim.reads += t.reads;
            trim.truncated += t.truncated;
            trim.removed += t.removed;
            emit(t.kept)?;
            if let Some(singles) = t.singles {
                let singles = singles.reads.bundles;
                let held = deferred.get_or_insert_with(|| empty_like(&singles.batch));
                for b in &singles.bundles {
                    push_read(held, &singles.batch.get(b.first), singles.batch.line_of(b.first), false);
                }
            }
            Ok(())
        },
    )?;
    deferred.map_or(Ok(()), |held| emit(trimming.hashed(held)))?;
    Ok(trim)
}

/// Writes the bundles of `hb` the second pass (on a table here) keeps, all of them with one
/// pass, into `sinks`.
fn write_kept(
    norm2: Option<(&mut Normalizer<'_>, &mut AnyTable)>,
    path: &str,
    hb: &HashedBatch,
    sinks: &mut Sinks,
) -> Result<()> {
    let bundles = &hb.reads.bundles;
    match norm2 {
        Some((norm, table)) => {
            norm.process(path, table, hb, &mut |i| sinks.bundle(&bundles.batch, bundles.bundles[i]))?
        }
        None => bundles.bundles.iter().for_each(|&b| sinks.bundle(&bundles.batch, b)),
    }
    sinks.flush()
}

/// The trimming ([`trim_kept`], run by `trim`) on a thread of its own, its survivors normalized
/// into the sharded second table `t2` on this thread by the overlapped driver
/// ([`drive::normalize_file`]), the kept bundles written into `sinks`. An error of either
/// stops the other and is the run's ([`first_cause`]).
fn second_pass_on_shards(
    opts: &Options,
    trim: impl FnOnce(&mut Emit<'_>) -> Result<TrimSummary> + Send,
    (norm, t2): (&mut Normalizer<'_>, &mut ShardedPass<'_>),
    sinks: &mut Sinks,
) -> Result<TrimSummary> {
    std::thread::scope(|scope| {
        let (send, receive) = crossbeam_channel::bounded(1);
        // Sent as read: the driver's reading thread hashes them for the second table.
        let trimming =
            scope.spawn(move || trim(&mut |hb| send.send(Ok(hb.reads.bundles)).map_err(|_| Error::Cancelled)));
        let second = t2.0.normalize(Box::new(receive.into_iter()), opts.target, &mut |keep, batch, run| {
            norm.decided(&opts.input, keep, batch, run)?;
            batch.kept(keep).for_each(|(first, second)| sinks.push(&first, second.as_ref()));
            sinks.flush()
        });
        let trimmed = trimming.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        first_cause(trimmed, second).map(|(trim, _)| trim)
    })
}

/// The results of two steps run together, each stopping the other on an error: the error of
/// either, the cause rather than the other's [`Error::Cancelled`].
fn first_cause<A, B>(a: Result<A>, b: Result<B>) -> Result<(A, B)> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(e), Err(other)) if e.is_cancelled() => Err(other),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// What the first pass leaves: the bundles it kept, the pairs and short reads of the input, its
/// summary (without the table's) and its keep curve.
struct FirstPass {
    keep: KeepBits,
    pairs_in: u64,
    short: u64,
    pass: PassSummary,
    keep_curve: Vec<[u64; 2]>,
}

/// The first pass: normalizes the input to `cutoff` in `table` (made from `params`), keeping one
/// bit per bundle; stops with [`Error::Cancelled`] once `stop` is cancelled (checked between
/// batches) as well as with `ctx`.
fn first_pass(
    opts: &Options,
    (table, params): (&mut PassTable<'_>, &TableParams),
    cutoff: u32,
    stop: &CancelToken,
    ctx: &RunContext,
) -> Result<FirstPass> {
    let started = Instant::now();
    let first_opts = pass_options(params, cutoff);
    let mut keep = KeepBits::default();
    let (mut pairs_in, mut short) = (0, 0);
    let mut norm = Normalizer::new(&first_opts, ctx);
    let hasher = table.hasher();
    let table = match table {
        PassTable::Here(table) => table,
        PassTable::Sharded(shards) => {
            // Read and decided by the overlapped driver, the next batch sent before this one is decided.
            short = shards.0.normalize(Box::new(opts.reader(ctx)?), cutoff, &mut |kept, batch, run| {
                stop.check()?;
                ctx.check_cancelled()?;
                pairs_in += spans(&batch.bundle_ends).filter(|reads| reads.len() == 2).count() as u64;
                norm.decided(&opts.input, kept, batch, run)?;
                kept.iter().for_each(|&k| keep.push(k));
                Ok(())
            })?;
            return Ok(first_pass_of(cutoff, &norm, started, (keep, pairs_in, short)));
        }
    };
    run_ordered(
        ctx,
        opts.bundles(ctx)?,
        || {
            let hasher = hasher.clone();
            move |nb: Numbered| {
                let hash = |seq: &[u8], out: &mut Vec<u64>| hasher(seq, out);
                Ok(HashedBatch::new(nb.bundles, Cleaning::Screed, hash))
            }
        },
        |hb: HashedBatch| {
            stop.check()?;
            let bundles = &hb.reads.bundles;
            short += bundles.n_short_dropped;
            pairs_in += bundles.bundles.iter().filter(|b| b.second.is_some()).count() as u64;
            let mut kept = vec![false; bundles.bundles.len()];
            norm.process(&opts.input, table, &hb, &mut |i| kept[i] = true)?;
            kept.into_iter().for_each(|k| keep.push(k));
            Ok(())
        },
    )?;
    Ok(first_pass_of(cutoff, &norm, started, (keep, pairs_in, short)))
}

/// The first pass to `cutoff` that `norm` made since `started`, keeping `keep`, with the pairs
/// and short reads of the input.
fn first_pass_of(
    cutoff: u32,
    norm: &Normalizer<'_>,
    started: Instant,
    (keep, pairs_in, short): (KeepBits, u64, u64),
) -> FirstPass {
    let s = norm.summary();
    let pass = PassSummary {
        cutoff,
        reads: s.total,
        kept: s.kept,
        seconds: started.elapsed().as_secs_f64(),
        ..Default::default()
    };
    FirstPass { keep, pairs_in, short, pass, keep_curve: s.keep_curve.clone() }
}

/// The input histogram (with `opts.hist`) of `paths`, in a table of its own made from `params`.
fn input_histogram(opts: &Options, params: &TableParams, paths: &[&str], ctx: &RunContext) -> Result<Vec<u64>> {
    ctx.info("k-mer abundance histogram of the input");
    Ok(counted_histogram(params, opts.layout, true, paths, ctx)?.1)
}

/// The first pass (see [`first_pass`]) in `table` and, with `opts.hist`, the input histogram. With more
/// than one thread the histogram is counted on a thread of its own, with one worker until the
/// first pass is done, while the first pass runs with all of them (its ordered normalization
/// leaves a core mostly idle); its table is then held beside the first pass's. An error of
/// either stops the other and is the run's (the cause rather than the other's
/// [`Error::Cancelled`]). The histogram does not depend on the threads, so the results are
/// those of the two run one after the other.
fn first_pass_with_input_histogram(
    opts: &Options,
    (table, params): (&mut PassTable<'_>, &TableParams),
    cutoff: u32,
    paths: &[&str],
    ctx: &RunContext,
) -> Result<(FirstPass, Option<Vec<u64>>)> {
    let stop = CancelToken::new();
    let mut first_pass = || {
        ctx.info(format!("first pass: normalizing to a median k-mer count of {cutoff}"));
        first_pass(opts, (&mut *table, params), cutoff, &stop, ctx)
    };
    if !opts.overlaps_input_histogram(ctx.threads()) {
        let hist = opts.hist.as_ref().map(|_| input_histogram(opts, params, paths, ctx)).transpose()?;
        ctx.progress().begin_pass("first pass");
        return Ok((first_pass()?, hist));
    }
    ctx.progress().begin_pass("first pass, input histogram");
    let beside = ctx.beside(1, stop.clone());
    std::thread::scope(|scope| {
        let hist = scope.spawn(|| input_histogram(opts, params, paths, &beside).inspect_err(|_| stop.cancel()));
        let first = first_pass().inspect_err(|_| stop.cancel());
        // The files the histogram opens from now on are read with every thread.
        beside.set_threads(ctx.threads());
        let hist = hist.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        first_cause(first, hist).map(|(first, hist)| (first, Some(hist)))
    })
}

/// What the trimming and the second pass leave: the staged outputs, which of them hold reads,
/// and the k-mers new to the last table.
struct Written {
    staged: Vec<Staged>,
    holds_reads: Vec<bool>,
    last_unique: u64,
}

/// The trimming of the first pass's kept bundles against `t1` and, with `second` (its table,
/// made from `p2`, sized for `sized_for` k-mers), the second normalization, in one stream into
/// the outputs (staged); fills the trimming's and the second pass's parts of `summary`.
fn trim_and_normalize(
    opts: &Options,
    (t1, keep): (&mut PassTable<'_>, &KeepBits),
    second: Option<(&mut PassTable<'_>, &TableParams, Option<f64>)>,
    summary: &mut Summary,
    ctx: &RunContext,
) -> Result<Written> {
    let c1 = opts.first_cutoff();
    let pass_started = Instant::now();
    let split = opts.passes == 2 && summary.pairs_in > 0;
    ctx.info(match second {
        Some(_) => format!(
            "trimming reads at k-mers counted fewer than {} times (reads of median >= {c1}), normalizing to {}",
            opts.min_depth, opts.target
        ),
        None => {
            format!("trimming reads at k-mers counted fewer than {} times (reads of median >= {c1})", opts.min_depth)
        }
    });
    ctx.progress().begin_pass(if second.is_some() { "trimming, second pass" } else { "trimming" });
    let trimming = Trimming {
        keep,
        min_depth: opts.min_depth,
        from_median: c1,
        split,
        first_hasher: t1.hasher(),
        hasher: second.as_ref().and_then(|(t, ..)| matches!(t, PassTable::Here(_)).then(|| t.hasher())),
    };
    // Trimmed by the workers against a table here; looked up on the shards in input order.
    let (here, sharded) = match t1 {
        PassTable::Here(t) => (Some(&*t), None),
        PassTable::Sharded(s) => (None, Some(s)),
    };
    let mut last_unique = t1_unique(here, sharded.as_deref());
    let mut sinks = Sinks::create(opts, ctx)?;
    let (second_table, p2, sized_for) = match second {
        Some((t, p2, sized_for)) => (Some(t), Some(p2), sized_for),
        None => (None, None, None),
    };
    let second_opts = p2.map(|p2| pass_options(p2, opts.target));
    let mut norm2 = second_opts.as_ref().zip(second_table).map(|(o, t)| (Normalizer::new(o, ctx), t));
    let trim_all = |emit: &mut Emit<'_>| trim_kept(opts, &trimming, (here, sharded), ctx, emit);
    let trim = match &mut norm2 {
        Some((norm, PassTable::Sharded(t2))) => second_pass_on_shards(opts, trim_all, (norm, t2), &mut sinks)?,
        Some((norm, PassTable::Here(t2))) => {
            trim_all(&mut |hb| write_kept(Some((&mut *norm, &mut *t2)), &opts.input, &hb, &mut sinks))?
        }
        None => trim_all(&mut |hb| write_kept(None, &opts.input, &hb, &mut sinks))?,
    };
    summary.trim = trim;
    summary.orphans_dropped = sinks.writer.counts().orphans_dropped;
    summary.reads_out = sinks.reads - summary.orphans_dropped;
    summary.pairs_out = sinks.pairs;
    // Which outputs (R1, R2 and orphans, or the one -o) hold reads: the output histogram reads
    // only those (an empty one would be warned about as an empty input).
    let counts = sinks.writer.counts();
    let holds_reads = if sinks.writer.is_split() {
        vec![counts.pairs > 0, counts.pairs > 0, counts.orphans_written > 0]
    } else {
        vec![summary.reads_out > 0]
    };
    let staged = sinks.writer.close()?;
    summary.fp_rate = summary.first_pass.table.fp_rate;
    if let (Some((norm, t2)), Some(p2)) = (norm2, p2) {
        let (reads, kept) = (norm.summary().total, norm.summary().kept);
        let table = TableSummary::of(t2, sized_for);
        ctx.info(format!("second pass: kept {kept} of {reads} reads; table fp rate {:.3}", table.fp_rate));
        let seconds = pass_started.elapsed().as_secs_f64();
        summary.fp_rate = table.fp_rate;
        summary.second_pass = Some(PassSummary { cutoff: opts.target, reads, kept, table, seconds });
        check_rate(t2, p2, ctx)?;
        last_unique = t2.n_unique_kmers();
    }
    Ok(Written { staged, holds_reads, last_unique })
}

/// k-mers new to the first table (held here, or sharded).
fn t1_unique(here: Option<&AnyTable>, sharded: Option<&ShardedPass<'_>>) -> u64 {
    here.map(|t| t.n_unique_kmers()).or(sharded.map(|s| s.0.n_unique_kmers())).unwrap_or(0)
}

/// Runs the protocol within `ctx`, its tables in this process (see [`run_on`]).
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    run_on(opts, &mut InProcess, ctx)
}

/// Runs the protocol within `ctx` on tables made by `tables`. Tables are of `opts.layout`;
/// with `opts.table.auto_memory` the first is sized for the distinct k-mers of the input (a
/// HyperLogLog pre-pass, as `-M auto`), each later one for the k-mers the table before it
/// counted. The outputs appear only once every table has passed its false-positive check.
pub fn run_on(opts: &Options, tables: &mut dyn Tables, ctx: &RunContext) -> Result<Summary> {
    let started = Instant::now();
    opts.check(ctx)?;
    let c1 = opts.first_cutoff();
    let mut summary = Summary::default();
    let mut params = opts.table.clone();
    let auto: Option<AutoSize> = autosize::resolve(&mut params, &opts.inputs(), ctx)?;
    if let Some(chosen) = &auto {
        ctx.info(chosen.describe());
    }
    summary.prepass_seconds = auto.as_ref().map_or(0.0, |a| a.prepass_seconds);
    let inputs = opts.inputs();
    let input_paths: Vec<&str> = inputs.iter().map(String::as_str).collect();

    let (mut hist_in, mut hist_out, mut staged) = (None, None, Vec::new());
    tables.with_table(&params, opts.layout, opts.save_table.as_deref(), ctx, &mut |t1, tables| {
        let (first, hist) = first_pass_with_input_histogram(opts, (&mut *t1, &params), c1, &input_paths, ctx)?;
        hist_in = hist;
        let FirstPass { keep, pairs_in, short, pass, keep_curve } = first;
        let sized_for = auto.as_ref().map(|a| a.distinct_kmers);
        summary.first_pass = PassSummary { table: TableSummary::of(t1, sized_for), ..pass };
        summary.keep_curve = keep_curve;
        summary.reads_in = summary.first_pass.reads;
        summary.pairs_in = pairs_in;
        summary.short_dropped = short;
        ctx.info(format!(
            "first pass: kept {} of {} reads; table fp rate {:.3}",
            summary.first_pass.kept, summary.first_pass.reads, summary.first_pass.table.fp_rate
        ));
        check_rate(t1, &params, ctx)?;

        // Trimming, then (two passes) the second normalization into a new table, in one stream.
        let written = match opts.passes {
            2 => {
                let (p2, sized_for) = sized_after(&params, auto.is_some(), t1.n_unique_kmers())?;
                let mut written = None;
                tables.with_table(&p2, opts.layout, None, ctx, &mut |t2, _| {
                    let second = Some((t2, &p2, sized_for));
                    written = Some(trim_and_normalize(opts, (&mut *t1, &keep), second, &mut summary, ctx)?);
                    Ok(())
                })?;
                written.expect("the second pass ran")
            }
            _ => trim_and_normalize(opts, (&mut *t1, &keep), None, &mut summary, ctx)?,
        };
        if summary.orphans_dropped > 0 {
            ctx.warning(format!(
                "{} reads whose mate was trimmed away were not written (give --orphans FILE to keep them)",
                summary.orphans_dropped
            ));
        }
        ctx.info(format!("wrote {} reads ({} pairs)", summary.reads_out, summary.pairs_out));
        if opts.hist_out.is_some() {
            ctx.info("k-mer abundance histogram of the output");
            let paths: Vec<String> = written
                .staged
                .iter()
                .zip(&written.holds_reads)
                .filter(|(_, holds)| **holds)
                .map(|(s, _)| s.written_path().to_string_lossy().into_owned())
                .collect();
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            let (hist_params, _) = sized_after(&params, auto.is_some(), written.last_unique)?;
            let (_, dist, _) = counted_histogram(&hist_params, opts.layout, true, &paths, ctx)?;
            hist_out = Some(dist);
        }
        staged = written.staged;
        if let Some(path) = &opts.save_table {
            ctx.info(format!("saving the first pass's table to {path}"));
        }
        Ok(())
    })?;
    if let Some(path) = &opts.save_table {
        ctx.files().add_output(path);
    }
    for (path, dist) in [(&opts.hist, &hist_in), (&opts.hist_out, &hist_out)] {
        if let (Some(path), Some(dist)) = (path, dist) {
            write_text(path, histogram_csv(dist)?, ctx)?;
        }
    }
    for (name, dist) in [("input", hist_in), ("output", hist_out)] {
        if let Some(dist) = dist {
            summary.histograms.insert(name.to_string(), trimmed(dist));
        }
    }
    summary.steps = vec![Step::new("input", summary.reads_in), Step::new("first pass", summary.first_pass.kept)];
    summary.steps.push(Step::new("trimming", summary.trim.reads - summary.trim.removed));
    if let Some(second) = &summary.second_pass {
        summary.steps.push(Step::new("second pass", second.kept));
    }
    summary.steps.push(Step::new("written", summary.reads_out));
    summary.seconds = started.elapsed().as_secs_f64();
    staged.into_iter().try_for_each(Staged::commit)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::sizing::{blocked_countgraph_params, countgraph_sizes};
    use crate::shards::blocked::{BlockedShard, BlockedShardClient};
    use crate::shards::drive::{ShardedTable, Shards};
    use crate::shards::khmer::{Shard, ShardClient};
    use crate::shards::runs::testing::{fastq_of, Answering, InProcess};
    use crate::shards::runs::{Answer, RemoteShards};
    use crate::table::HashKind;

    /// Tables of either layout cut into `shards` shards, the first `held` in this process and
    /// the others answered as a worker answers them, looked up in pieces of `batch_kmers`; with
    /// `lost`, the second table's remote shards are lost after answering that many messages.
    #[derive(Default)]
    struct TestShards {
        shards: usize,
        held: usize,
        batch_kmers: usize,
        lost: Option<usize>,
        made: usize,
    }

    /// Remote shards that answer `left` more messages, then are lost as a worker is.
    struct Lost<'a> {
        shards: &'a mut dyn RemoteShards,
        left: usize,
    }

    impl RemoteShards for Lost<'_> {
        fn send(&mut self, messages: Vec<Vec<u8>>) -> Result<()> {
            self.left = self.left.checked_sub(1).ok_or_else(|| Error::invalid("shard 1 was lost"))?;
            self.shards.send(messages)
        }

        fn answers(&mut self) -> Result<Vec<Answer>> {
            self.shards.answers()
        }
    }

    impl TestShards {
        /// Runs `work` on `client`'s table cut into the shards `all`, then returns them.
        fn run<C: DrivenLayout<Shard: Answering>>(
            &mut self,
            client: &C,
            mut all: Vec<C::Shard>,
            work: &mut dyn FnMut(&mut PassTable<'_>, &mut dyn Tables) -> Result<()>,
        ) -> Result<Vec<C::Shard>> {
            let mut remote = InProcess::new(all.split_off(self.held));
            self.made += 1;
            let left = self.lost.filter(|_| self.made == 2).unwrap_or(usize::MAX);
            let mut lost = Lost { shards: &mut remote, left };
            let local = all.iter_mut().map(Some).chain((self.held..self.shards).map(|_| None)).collect();
            let mut shards = Shards { client, local };
            let mut pass = PassTable::Sharded(shards.pass(&mut lost, self.batch_kmers)?);
            work(&mut pass, self)?;
            if let PassTable::Sharded(sharded) = &mut pass {
                sharded.flush()?;
            }
            drop(pass);
            all.append(&mut remote.shards);
            Ok(all)
        }
    }

    impl Tables for TestShards {
        fn with_table(
            &mut self,
            params: &TableParams,
            layout: Layout,
            save: Option<&str>,
            ctx: &RunContext,
            work: &mut dyn FnMut(&mut PassTable<'_>, &mut dyn Tables) -> Result<()>,
        ) -> Result<()> {
            let table = match layout {
                Layout::Khmer => {
                    let sizes = countgraph_sizes(params, 1.0, ctx)?;
                    let client = ShardClient::new(params.ksize, HashKind::TwoBit, &sizes, self.shards, false)?;
                    let b = client.map().bounds().to_vec();
                    let all =
                        (0..self.shards).map(|s| Shard::new(b[s], b[s + 1] - b[s], 255)).collect::<Result<_>>()?;
                    let all = self.run(&client, all, work)?;
                    AnyTable::Khmer(client.gather(&all.iter().map(Shard::cells).collect::<Vec<_>>())?)
                }
                Layout::Blocked => {
                    let shape = blocked_countgraph_params(params, 1.0, ctx)?;
                    let client = BlockedShardClient::new(shape, self.shards)?;
                    let lines = |s| BlockedShard::new(shape, client.map().lines(s));
                    let all = (0..self.shards).map(lines).collect::<Result<_>>()?;
                    let all = self.run(&client, all, work)?;
                    let bytes: Vec<Vec<u8>> = all.iter().map(BlockedShard::bytes).collect();
                    AnyTable::Blocked(client.gather(&bytes.iter().map(Vec::as_slice).collect::<Vec<_>>())?)
                }
            };
            save.map_or(Ok(()), |path| table.save_in(path, ctx))
        }
    }

    /// Interleaved reads of a 300-base genome: pairs named /1 /2, every fifth read alone.
    fn interleaved(seed: u64, n: usize) -> String {
        let text = fastq_of(seed, n, 300);
        let records: Vec<&str> = text.split_inclusive('\n').collect();
        let mut out = String::new();
        for (i, record) in records.chunks(4).enumerate() {
            let name = match i % 5 {
                4 => format!("@single{i}\n"),
                _ => format!("@p{}/{}\n", i / 5 * 2 + i % 5 / 2, 1 + i % 5 % 2),
            };
            out += &name;
            out += &record[1..].concat();
        }
        out
    }

    /// The run's outputs (the kept reads, the saved table, the histograms) and its summary
    /// without timings.
    fn outcome(dir: &std::path::Path, tag: &str, opts: &Options, tables: &mut dyn Tables) -> (Vec<Vec<u8>>, String) {
        let opts = Options {
            output: dir.join(format!("{tag}.fq")).display().to_string(),
            save_table: Some(dir.join(format!("{tag}.ct")).display().to_string()),
            hist: Some(dir.join(format!("{tag}.in.csv")).display().to_string()),
            hist_out: Some(dir.join(format!("{tag}.out.csv")).display().to_string()),
            ..opts.clone()
        };
        let mut summary = run_on(&opts, tables, &RunContext::new()).unwrap();
        summary.seconds = 0.0;
        summary.first_pass.seconds = 0.0;
        if let Some(second) = &mut summary.second_pass {
            second.seconds = 0.0;
        }
        let files = [Some(&opts.output), opts.save_table.as_ref(), opts.hist.as_ref(), opts.hist_out.as_ref()];
        (files.into_iter().flatten().map(|p| std::fs::read(p).unwrap()).collect(), format!("{summary:?}"))
    }

    /// normalize on sharded tables (shards here and remote, one to three, look-ups in pieces
    /// smaller and larger than a batch) gives the one-process run's outputs, saved table,
    /// histograms and summary, with either layout, one pass or two, tables sized for the input
    /// or small enough to collide and saturate.
    #[test]
    fn a_sharded_run_is_the_one_process_run() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("reads.fq");
        std::fs::write(&input, interleaved(5, 3000)).unwrap();
        let runs = [(2, 1e5, 5), (1, 400.0, 10), (2, 2000.0, 3)];
        for (layout, (passes, max_tablesize, target)) in
            [Layout::Khmer, Layout::Blocked].into_iter().flat_map(|l| runs.map(|r| (l, r)))
        {
            let opts = Options {
                input: input.display().to_string(),
                target,
                passes,
                layout,
                table: TableParams { ksize: 20, n_tables: 3, max_tablesize, ..TableParams::default() },
                ..Options::default()
            };
            let (one, one_summary) = outcome(dir.path(), "one", &opts, &mut InProcess);
            assert!(one_summary.contains("second_pass: Some") == (passes == 2), "{one_summary}");
            for (shards, held, batch_kmers) in [(1, 1, 100_000), (2, 0, 500), (3, 1, 7)] {
                let tag = format!("s{shards}");
                let mut tables = TestShards { shards, held, batch_kmers, ..TestShards::default() };
                let (sharded, summary) = outcome(dir.path(), &tag, &opts, &mut tables);
                assert!(one == sharded, "{layout:?} {passes} {max_tablesize} {shards} {held}");
                assert_eq!(summary, one_summary);
            }
        }
    }

    /// A shard of the second table lost while the trimming runs on its own thread (at the
    /// second pass's first message, or later) ends the run with the shard's error, not the
    /// trimming's stop, and leaves no output.
    #[test]
    fn a_shard_lost_in_the_second_pass_ends_the_run_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("reads.fq");
        std::fs::write(&input, interleaved(5, 3000)).unwrap();
        let output = dir.path().join("out.fq");
        let opts = Options {
            input: input.display().to_string(),
            output: output.display().to_string(),
            target: 5,
            table: TableParams { ksize: 20, n_tables: 3, max_tablesize: 1e5, ..TableParams::default() },
            ..Options::default()
        };
        for lost in [0, 5] {
            let mut tables = TestShards { shards: 2, batch_kmers: 500, lost: Some(lost), ..TestShards::default() };
            let err = run_on(&opts, &mut tables, &RunContext::new()).unwrap_err();
            assert!(err.to_string().contains("shard 1 was lost"), "{lost}: {err}");
            assert_eq!(tables.made, 2, "{lost}");
            assert!(!output.exists(), "{lost}");
        }
    }
}
