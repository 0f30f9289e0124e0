//! normalize-by-median: khmer's streaming digital normalization (docs/khmer-compat.md §4.1).
//!
//! A bundle (a read or a recognised pair) is discarded when every one of its reads already
//! has an upper-median k-mer count >= C, tested before anything is counted; otherwise all its
//! reads are counted (read 1 then read 2) and written unchanged. Workers clean and hash the
//! reads; the decisions are made in input order, so the output does not depend on the number
//! of threads. The ordered stage's thread decides batch after batch on the table itself
//! ([`BatchRunner`], the [`crate::table::batch::Decider`] of sharded runs too), prefetching the
//! counters of the k-mers ahead.

use super::pyfmt::{general_with_point, percent};
use super::read_filter::{self, bundle_source, check_fp_rate, check_ksize, Cleaning, FpLimit, HashedBatch};
use super::reads::{create_output, derived_name, is_stdin, stdin_without_output, write_to};
use super::sizing::{create_counting_table, target_rate, FpRate, TableParams};
use crate::io::{
    Compression, MateCounts, MateFiles, MateWriter, OutputFile, PairMode, PairedInput, PairedOutput, Staged,
};
use crate::kmer::{twobit, Strand};
use crate::pipeline::run_ordered;
use crate::run::metrics;
use crate::run::RunContext;
use crate::shards::drive::{self, ShardedTable};
use crate::shards::runs::{Cleaning as BatchCleaning, HashedBundles, RemoteShards};
use crate::table::batch::spans;
use crate::table::blocked::KmerHasher;
use crate::table::{AnyTable, BatchRunner, BatchTable, CountingTable, HashKind, Layout, ReadCounts};
use crate::{Error, Result};
use std::io::Write;
use std::ops::Range;

/// k-mers decided at once ([`BatchRunner::run`]).
pub const BATCH_KMERS: usize = 1 << 13;

/// Largest false-positive rate normalize-by-median accepts.
pub const MAX_FP_RATE: f64 = 0.8;

/// Options of normalize-by-median.
#[derive(Debug, Clone)]
pub struct Options {
    /// Input files, in order.
    pub inputs: Vec<String>,
    /// The R1/R2 options (`--mate`, `-O`, `--orphans`; see [`crate::io::mates`]).
    pub mates: MateFiles,
    /// Table sizing (`-k`, `-N`, `-x`, `-M`, `--small-count`, ...). `ksize` is also the
    /// minimum read length, as in khmer (even with `--loadgraph`).
    pub table: TableParams,
    /// `-C/--cutoff` (0..=255).
    pub cutoff: u32,
    /// `-p/--paired`: every record of the main inputs must be in a pair.
    pub paired: bool,
    /// `--force_single`: ignore pairing.
    pub force_single: bool,
    /// `-u/--unpaired-reads`: a file processed last, without the pairing requirement.
    pub unpaired: Option<String>,
    /// `-s/--savegraph`.
    pub savegraph: Option<String>,
    /// `-l/--loadgraph`.
    pub loadgraph: Option<String>,
    /// `-R/--report` CSV file.
    pub report: Option<String>,
    /// `--report-frequency`.
    pub report_frequency: u64,
    /// `-o/--output` (`-` = stdout); per-input `<basename>.keep` otherwise (for an input with a
    /// mate file, `<R1 basename>.keep` and `<R2 basename>.keep` as R1/R2 outputs).
    pub output: Option<String>,
    /// `--gzip`/`--bzip`; `None` chooses by the output name's extension.
    pub compression: Option<Compression>,
    /// `-f/--force`: skip unreadable inputs, accept a high FP rate.
    pub force: bool,
    /// Layout of a new table (`--layout`; a loaded table keeps its own).
    pub layout: Layout,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            inputs: Vec::new(),
            mates: MateFiles::default(),
            table: TableParams::default(),
            cutoff: 20,
            paired: false,
            force_single: false,
            unpaired: None,
            savegraph: None,
            loadgraph: None,
            report: None,
            report_frequency: 100_000,
            output: None,
            compression: None,
            force: false,
            layout: Layout::Khmer,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Reads examined (pairs count 2; short reads excluded, as in khmer).
    pub total: u64,
    /// Reads kept.
    pub kept: u64,
    /// Reads dropped because they are shorter than k (with `-p`, their mates too are gone).
    pub short_dropped: u64,
    /// k-mers new to the table in this run (khmer's `n_unique_kmers`).
    pub unique_kmers: u64,
    /// Estimated false-positive rate of the final table.
    pub fp_rate: f64,
    /// Inputs skipped because of errors (only with `--force`).
    pub skipped_files: Vec<String>,
    /// `[reads examined, reads kept]` every 10,000 reads, at each report point (every
    /// `--report-frequency` reads) and at the end of each file: the keep curve.
    pub keep_curve: Vec<[u64; 2]>,
    /// With R1/R2 outputs: pairs written, and reads without a kept mate written to `--orphans`
    /// or left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mates: Option<MateCounts>,
}

/// The k-mer hash function of a table, usable by the workers while the table is updated.
#[derive(Clone)]
pub(crate) enum BatchHasher {
    /// khmer's 2-bit hash of k-mers of this size on this strand.
    Khmer(usize, Strand),
    /// The blocked table's hasher.
    Blocked(KmerHasher),
}

impl BatchHasher {
    /// The hash function of `table`.
    pub(crate) fn of(table: &AnyTable) -> Self {
        match table {
            AnyTable::Khmer(t) => BatchHasher::Khmer(t.ksize(), t.strand()),
            AnyTable::Blocked(t) => BatchHasher::Blocked(t.hasher().clone()),
        }
    }

    /// Appends the hashes of the k-mers of `seq` to `out`.
    pub(crate) fn hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
        match self {
            BatchHasher::Khmer(k, strand) => twobit::hashes(seq, *k, *strand, out),
            BatchHasher::Blocked(h) => h.hashes(seq, out),
        }
    }
}

/// The running state of a normalization: table, counters and the optional report. Besides
/// normalize-by-median, the `normalize` protocol ([`super::normalize`]) runs its passes on it.
pub(crate) struct Normalizer<'a> {
    opts: &'a Options,
    /// The engine that decides batch after batch.
    runner: BatchRunner,
    counts: KeepCounts<'a>,
    /// normalize-by-median's false-positive ceiling, checked after every batch.
    limit: FpLimit,
}

/// normalize-by-median's counts as its bundles are decided, for a table in this process and
/// for a sharded one alike: the totals, the keep curve, the `-R` report lines every
/// `--report-frequency` reads and at the end of each file, and the progress messages.
pub(crate) struct KeepCounts<'a> {
    opts: &'a Options,
    ctx: &'a RunContext,
    summary: Summary,
    report: Option<OutputFile>,
    next_report_at: u64,
    last_report_at: u64,
    /// When the next point of the keep curve is due.
    next_curve_at: u64,
    /// Reads examined before the file being read.
    file_start: u64,
}

/// Reads examined between two points of the keep curve (besides the report points).
const KEEP_CURVE_EVERY: u64 = 10_000;

impl<'a> Normalizer<'a> {
    /// A normalization at `opts.cutoff`, without a report file.
    pub(crate) fn new(opts: &'a Options, ctx: &'a RunContext) -> Self {
        let counts = KeepCounts::new(opts, ctx, None);
        Normalizer { opts, runner: BatchRunner::default(), counts, limit: fp_limit(opts) }
    }

    /// What the normalization did so far.
    pub(crate) fn summary(&self) -> &Summary {
        &self.counts.summary
    }

    /// Decides and counts the bundles of one cleaned batch, in order, calling `kept` with the
    /// index (in `hb`) of each bundle kept; stops the run once the table is over the
    /// false-positive ceiling ([`FpLimit::stop_early`]).
    pub(crate) fn process(
        &mut self,
        path: &str,
        table: &mut AnyTable,
        hb: &HashedBatch,
        kept: &mut dyn FnMut(usize),
    ) -> Result<()> {
        match table {
            AnyTable::Khmer(t) => self.process_in(path, t, hb, kept),
            AnyTable::Blocked(t) => self.process_in(path, t, hb, kept),
        }?;
        self.limit.stop_early(table, path, self.counts.in_file())
    }

    /// Records the decisions `keep` of the bundles of one batch decided on a sharded table
    /// ([`drive::normalize_file`]); stops the run once `table` is over the false-positive
    /// ceiling, as [`Normalizer::process`].
    pub(crate) fn decided(
        &mut self,
        path: &str,
        keep: &[bool],
        batch: &HashedBundles,
        table: &(impl FpRate + ?Sized),
    ) -> Result<()> {
        for (reads, &keep) in spans(&batch.bundle_ends).zip(keep) {
            self.counts.bundle(path, reads.len() as u64, keep)?;
        }
        self.limit.stop_early(table, path, self.counts.in_file())
    }

    /// [`Normalizer::process`] on a table of either layout.
    fn process_in<T: BatchTable>(
        &mut self,
        path: &str,
        table: &T,
        hb: &HashedBatch,
        kept: &mut dyn FnMut(usize),
    ) -> Result<()> {
        let mut runner = std::mem::take(&mut self.runner);
        let mut decided = Ok(());
        for (bundles, kmers) in hb.pieces(BATCH_KMERS) {
            decided = runner.run(table, &hb.hashes, kmers, |batch| self.decide(path, batch, hb, bundles, kept));
            if decided.is_err() {
                break;
            }
        }
        self.runner = runner;
        decided
    }

    /// Decides and counts (through `pass`) the bundles `bundles` of `hb`, in order, calling
    /// `kept` with the index of each bundle kept.
    fn decide(
        &mut self,
        path: &str,
        pass: &mut impl ReadCounts,
        hb: &HashedBatch,
        bundles: Range<usize>,
        kept: &mut dyn FnMut(usize),
    ) -> Result<()> {
        let cutoff = self.opts.cutoff;
        for (index, b) in bundles.clone().zip(hb.reads.bundle_reads().skip(bundles.start)) {
            let keep = pass.keep_bundle(|| b.iter().map(|i| hb.kmers[i].clone()), cutoff);
            if keep {
                kept(index);
            }
            self.counts.bundle(path, b.len() as u64, keep)?;
        }
        Ok(())
    }

    /// Normalizes one input into `out`.
    fn run_file(
        &mut self,
        table: &mut AnyTable,
        input: &PairedInput,
        mode: PairMode,
        out: &mut MateWriter,
    ) -> Result<()> {
        self.counts.start_file();
        let ctx = self.counts.ctx;
        let name = input.name();
        let path = name.as_str();
        let source = bundle_source(input, mode, self.opts.table.ksize, ctx)?;
        let (mut short, mut kmers) = (0, 0);
        let mut buf = out.buffers();
        let hasher = BatchHasher::of(table);
        run_ordered(
            ctx,
            source,
            || {
                let hasher = hasher.clone();
                move |bb| {
                    Ok(HashedBatch::new(bb, Cleaning::Screed, |seq: &[u8], out: &mut Vec<u64>| hasher.hashes(seq, out)))
                }
            },
            |hb: HashedBatch| {
                short += hb.reads.bundles.n_short_dropped;
                kmers += hb.hashes.len() as u64;
                buf.clear();
                self.process(path, table, &hb, &mut |index| {
                    let [first, second] = hb.reads.bundle(index).reads().map(|i| i.map(|i| hb.reads.record(i)));
                    buf.push(first.as_ref(), second.as_ref())
                })?;
                out.write(&buf)
            },
        )?;
        ctx.metrics().add_count(metrics::KMERS, kmers);
        self.counts.end_file(path, short)
    }
}

/// normalize-by-median's false-positive ceiling ([`MAX_FP_RATE`], passed with `-f`), checked
/// after every batch.
fn fp_limit(opts: &Options) -> FpLimit {
    FpLimit { force: opts.force || opts.table.force, ..FpLimit::of(MAX_FP_RATE, &opts.table) }
}

impl<'a> KeepCounts<'a> {
    /// The counts of a run of `opts` within `ctx`, its report lines written to `report`.
    pub fn new(opts: &'a Options, ctx: &'a RunContext, report: Option<OutputFile>) -> Self {
        KeepCounts {
            opts,
            ctx,
            summary: Summary::default(),
            report,
            next_report_at: opts.report_frequency,
            last_report_at: opts.report_frequency,
            next_curve_at: KEEP_CURVE_EVERY,
            file_start: 0,
        }
    }

    /// The `-R` report of `opts` with its header, when asked for.
    pub fn open_report(opts: &Options, ctx: &RunContext) -> Result<Option<OutputFile>> {
        opts.report
            .as_deref()
            .map(|path| {
                let mut out = create_output(path, Some(Compression::None), ctx)?;
                write_to(&mut out, b"total,kept,f_kept\n")?;
                Ok(out)
            })
            .transpose()
    }

    /// Counts a bundle of `reads` reads of `path`, kept or not, with the curve point, report
    /// line and progress messages due after it.
    pub fn bundle(&mut self, path: &str, reads: u64, kept: bool) -> Result<()> {
        self.summary.total += reads;
        if kept {
            self.summary.kept += reads;
        }
        if self.summary.total >= self.next_curve_at {
            self.next_curve_at = self.summary.total + KEEP_CURVE_EVERY;
            self.curve_point();
        }
        if self.summary.total >= self.next_report_at {
            self.next_report_at += self.opts.report_frequency;
            self.last_report_at = self.summary.total;
            let (kept, total) = (self.summary.kept, self.summary.total);
            let frac = kept as f64 / total as f64;
            self.ctx.info(format!("... kept {kept} of {total} or {} sofar", percent(frac, 1)));
            self.ctx.info(format!("... in file {path}"));
            self.report_line()?;
        }
        Ok(())
    }

    /// Reads examined in the file being read.
    pub fn in_file(&self) -> u64 {
        self.summary.total - self.file_start
    }

    /// A file starts.
    pub fn start_file(&mut self) {
        self.file_start = self.summary.total;
    }

    /// The input `path` failed with `e`: with `-f` (unless the output's reader went away) it is
    /// skipped as khmer skips it, with its error lines, and named at the end; otherwise the
    /// run ends with the error.
    pub fn skip_failed(&mut self, path: &str, e: Error) -> Result<()> {
        if !self.opts.force || e.is_broken_pipe() {
            return Err(e);
        }
        self.ctx.error(format!("** ERROR: {e}"));
        self.ctx.error(format!("** Failed on {path}: "));
        self.ctx.error("*** Skipping error file, moving on...");
        self.summary.skipped_files.push(path.to_string());
        Ok(())
    }

    /// The file `path` is done, `short` of its reads dropped for being shorter than k: its
    /// closing lines and report line.
    pub fn end_file(&mut self, path: &str, short: u64) -> Result<()> {
        self.summary.short_dropped += short;
        let (kept, total) = (self.summary.kept, self.summary.total);
        if total == self.file_start {
            self.ctx.info(format!("SKIPPED empty file {path}"));
        } else {
            let pct = percent(kept as f64 / total as f64, 1);
            self.ctx.info(format!("DONE with {path}; kept {kept} of {total} or {pct}"));
        }
        if short > 0 {
            self.ctx.info(format!("{path}: dropped {short} reads shorter than k"));
        }
        if total != self.last_report_at && total > 0 {
            self.report_line()?;
        }
        Ok(())
    }

    /// Adds the reads examined and kept so far to the keep curve.
    fn curve_point(&mut self) {
        let point = [self.summary.total, self.summary.kept];
        if self.summary.keep_curve.last() != Some(&point) {
            self.summary.keep_curve.push(point);
        }
    }

    /// Appends `total,kept,f_kept` to the report (and the point to the keep curve).
    fn report_line(&mut self) -> Result<()> {
        self.curve_point();
        let (kept, total) = (self.summary.kept, self.summary.total);
        if let (Some(fp), Some(path)) = (self.report.as_mut(), self.opts.report.as_deref()) {
            let frac = if total == 0 { 0.0 } else { kept as f64 / total as f64 };
            writeln!(fp, "{total},{kept},{}", general_with_point(frac, 4))
                .and_then(|_| fp.flush())
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(())
    }

    /// The run's end, once every file is done, on a table holding `unique_kmers` new k-mers at
    /// the estimated false-positive rate of `table`: its closing lines, the table saved to
    /// `-s` by `save` (unless over the ceiling), the report staged into `staged`, the check of
    /// the ceiling (an error unless `-f`); returns the summary.
    pub fn finish(
        mut self,
        unique_kmers: u64,
        table: &(impl FpRate + ?Sized),
        save: impl FnOnce(&str) -> Result<()>,
        staged: &mut Vec<Staged>,
    ) -> Result<Summary> {
        let (opts, ctx) = (self.opts, self.ctx);
        staged.extend(self.report.take().map(OutputFile::close).transpose()?);
        let mut summary = self.summary;
        summary.unique_kmers = unique_kmers;
        ctx.info(format!("Total number of unique k-mers: {}", summary.unique_kmers));
        summary.fp_rate = table.fp_rate();
        let resize = table.resize_hint(summary.fp_rate, target_rate(&opts.table));
        let fp_checked = check_fp_rate(summary.fp_rate, MAX_FP_RATE, opts.force, &resize, ctx);
        if let Some(path) = &opts.savegraph {
            ctx.info(format!("...saving to {path}"));
            if fp_checked.is_ok() {
                save(path)?;
            }
        }
        ctx.info(format!("fp rate estimated to be {:1.3}", summary.fp_rate));
        if summary.short_dropped > 0 {
            ctx.info(format!("dropped {} reads shorter than k={}", summary.short_dropped, opts.table.ksize));
        }
        if !summary.skipped_files.is_empty() {
            ctx.warning("** WARNING: Finished with errors!");
            ctx.warning("** I/O Errors occurred in the following files:");
            ctx.warning(format!("\t{}", summary.skipped_files.join(" ")));
        }
        fp_checked.map(|()| summary)
    }
}

/// The files of a normalize-by-median run ([`checked_files`]).
pub struct Files {
    /// The inputs in order: the main ones (with their mate files), then `-u`.
    pub inputs: Vec<PairedInput>,
    /// The one output `-o` (R1/R2 with `-O`), if given.
    pub single: Option<PairedOutput>,
    /// The output of each input: `single`, or `<basename>.keep` (`<R1 basename>.keep` and
    /// `<R2 basename>.keep` for an input with a mate file).
    pub keep: Vec<PairedOutput>,
}

/// The files of the run of `opts`, checked before anything is read: an output, `-s`, `-R` or a
/// side output declared on `ctx` that is an input or the loaded table is refused, naming both.
/// [`run`] starts with it; the sharded front end calls it before it starts a cluster.
pub fn checked_files(opts: &Options, ctx: &RunContext) -> Result<Files> {
    let mut inputs = opts.mates.inputs(&opts.inputs)?;
    inputs.extend(opts.unpaired.iter().map(PairedInput::single));
    let single = opts.mates.output(opts.output.clone())?;
    let keep: Vec<PairedOutput> = match &single {
        Some(out) => vec![out.clone()],
        None => inputs.iter().map(|input| input.derived_output(|f| derived_name(f, ".keep", None))).collect(),
    };
    let side = [&opts.savegraph, &opts.report].into_iter().flatten();
    crate::io::refuse_inputs_as_outputs(
        ctx,
        inputs.iter().flat_map(PairedInput::paths).chain(&opts.loadgraph),
        keep.iter().flat_map(PairedOutput::paths).chain(side),
    )?;
    Ok(Files { inputs, single, keep })
}

/// The files of the run of `opts` ([`checked_files`]), its options checked together.
fn checked_run(opts: &Options, ctx: &RunContext) -> Result<Files> {
    if opts.cutoff > 255 {
        return Err(Error::invalid(format!("cutoff {} must be in 0..256", opts.cutoff)));
    }
    let files = checked_files(opts, ctx)?;
    if opts.paired && opts.force_single {
        return Err(Error::invalid("-p/--paired and --force_single cannot both be set"));
    }
    if opts.force_single && files.keep.iter().any(PairedOutput::is_split) {
        return Err(Error::invalid("--force_single decides reads alone: R1/R2 outputs need pairs (use one -o)"));
    }
    if opts.output.is_none() {
        let mut seen = std::collections::HashSet::new();
        for f in files.inputs.iter().flat_map(PairedInput::paths) {
            if is_stdin(f) {
                return Err(stdin_without_output(&["-o"]));
            }
            if !seen.insert(derived_name(f, "", None)) {
                return Err(Error::invalid(format!("duplicate input file name {f}; use -o")));
            }
        }
    }
    Ok(files)
}

/// How each of the `n` inputs of `opts` is paired: the main ones as `-p`/`--force_single`
/// say, `-u`'s without the pairing requirement.
fn pair_modes(opts: &Options, n: usize) -> impl Iterator<Item = PairMode> {
    let main_mode = if opts.force_single {
        PairMode::ForceSingle
    } else if opts.paired {
        PairMode::RequirePaired
    } else {
        PairMode::BrokenPaired
    };
    let extra_mode = if opts.force_single { PairMode::ForceSingle } else { PairMode::BrokenPaired };
    let n_main = opts.inputs.len();
    (0..n).map(move |i| if i < n_main { main_mode } else { extra_mode })
}

/// Runs normalize-by-median on a sharded table (`table`, its remote shards reached through
/// `remote`, batches of about `batch_kmers` k-mers) within `ctx`: the one-process run's
/// checks, messages, keep curve, `-R` report, false-positive ceiling (checked after each
/// batch, as [`FpLimit::stop_early`]) and summary ([`KeepCounts`]); the outputs are written
/// uncompressed and appear only once the run has passed its final check. The updates of
/// each file reach the remote shards before the next file starts, so that at the end the
/// shards hold the whole table. `-s` is the caller's to save, shard by shard, once this
/// returns without an error (the one-process run's `...saving to` line is given here).
pub fn run_sharded(
    opts: &Options,
    table: &mut dyn ShardedTable,
    remote: &mut dyn RemoteShards,
    batch_kmers: usize,
    ctx: &RunContext,
) -> Result<Summary> {
    ctx.progress().begin_pass("normalizing");
    let Files { inputs, single, keep } = checked_run(opts, ctx)?;
    let counts = KeepCounts::new(opts, ctx, KeepCounts::open_report(opts, ctx)?);
    let mut norm = Normalizer { opts, runner: BatchRunner::default(), counts, limit: fp_limit(opts) };
    let remote_shards = table.remote();
    let create = |out: &PairedOutput| create_output(&out.path, Some(Compression::None), ctx);
    let mut single = single.as_ref().map(create).transpose()?;
    let mut staged = Vec::new();
    for (i, (input, mode)) in inputs.iter().zip(pair_modes(opts, inputs.len())).enumerate() {
        let path = input.name();
        norm.counts.start_file();
        // An input that cannot be opened is skipped with -f before any of it is sent; one that
        // fails once read ends the run (its batches in flight cannot be taken back).
        let reader = match input.open(mode, Some(opts.table.ksize), ctx) {
            Ok(reader) => reader,
            Err(e) => {
                norm.counts.skip_failed(&input.path, e)?;
                continue;
            }
        };
        let mut own = if single.is_none() { Some(create(&keep[i])?) } else { None };
        let out = own.as_mut().or(single.as_mut()).expect("one output or one per input");
        let mut run = table.decisions(Box::new(reader), BatchCleaning::ScreedWithRecords, batch_kmers)?;
        let mut text = Vec::new();
        drive::normalize_file(&mut *run, remote, &remote_shards, opts.cutoff, |keep, batch, run| {
            text.clear();
            batch.write_kept(keep, &mut text);
            write_to(out, &text)?;
            norm.decided(&path, keep, batch, run)
        })?;
        norm.counts.end_file(&path, run.short_dropped())?;
        if let Some(out) = own {
            ctx.info(format!("output in {}", keep[i].path));
            staged.push(out.close()?);
        }
    }
    staged.extend(single.map(OutputFile::close).transpose()?);
    let summary = norm.counts.finish(table.n_unique_kmers(), table, |_| Ok(()), &mut staged)?;
    staged.into_iter().try_for_each(Staged::commit)?;
    Ok(summary)
}

/// Runs normalize-by-median within `ctx` (threads, messages, cancellation).
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    // khmer's k <= 32 limit applies to its layout only (checked again once a loaded table's
    // layout is known).
    if opts.layout == Layout::Khmer && opts.loadgraph.is_none() {
        check_ksize(opts.table.ksize)?;
    }
    ctx.progress().begin_pass("normalizing");
    let Files { inputs, single, keep } = checked_run(opts, ctx)?;
    let mut table = match &opts.loadgraph {
        Some(path) => {
            ctx.info(format!("loading k-mer countgraph from {path}"));
            let table = AnyTable::load_in(path, HashKind::TwoBit, ctx)?;
            read_filter::check_counts(path, table.holds_counts())?;
            opts.table.strand.check_table(table.strand(), path)?;
            table
        }
        None => {
            ctx.info("making countgraph");
            create_counting_table(&opts.table, opts.layout, 1.0, ctx)?
        }
    };
    // As in khmer, a loaded table's k wins over -k (reads shorter than it are dropped).
    let loaded;
    let opts = match &opts.loadgraph {
        Some(path) => {
            loaded =
                Options { table: read_filter::loadgraph_params(&opts.table, path, table.ksize(), ctx), ..opts.clone() };
            &loaded
        }
        None => opts,
    };
    let report = KeepCounts::open_report(opts, ctx)?;
    let mut norm = Normalizer::new(opts, ctx);
    norm.counts.report = report;

    let files = inputs.iter().zip(pair_modes(opts, inputs.len()));

    let mut single = single.map(|out| MateWriter::create(&out, opts.compression, ctx)).transpose()?;
    let mut mates: Option<MateCounts> = single.as_ref().filter(|w| w.is_split()).map(MateWriter::counts);
    // Every output appears only once the run has passed its final check.
    let mut staged = Vec::new();
    for (i, (input, mode)) in files.enumerate() {
        let path = &input.path;
        let result = match single.as_mut() {
            Some(writer) => norm.run_file(&mut table, input, mode, writer),
            None => MateWriter::create(&keep[i], opts.compression, ctx).and_then(|mut writer| {
                norm.run_file(&mut table, input, mode, &mut writer)?;
                let names: Vec<&str> = keep[i].paths().map(String::as_str).collect();
                ctx.info(format!("output in {}", names.join(" and ")));
                if writer.is_split() {
                    mates = Some(mates.unwrap_or_default() + writer.counts());
                }
                staged.extend(writer.close()?);
                Ok(())
            }),
        };
        if let Err(e) = result {
            norm.counts.skip_failed(path, e)?;
        }
    }
    if let Some(writer) = single {
        mates = mates.map(|_| writer.counts());
        staged.extend(writer.close()?);
    }
    if let Some(m) = &mates {
        m.tell_dropped(ctx);
    }
    let unique = table.n_unique_kmers();
    let save = |path: &str| {
        table.save_in(path, ctx)?;
        ctx.files().add_output(path);
        Ok(())
    };
    let mut summary = norm.counts.finish(unique, &table, save, &mut staged)?;
    summary.mates = mates;
    staged.into_iter().try_for_each(Staged::commit)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::drive::KhmerShards;
    use crate::shards::khmer::{Shard, ShardClient};
    use crate::shards::runs::testing::{fastq_of, InProcess};

    /// normalize-by-median on a sharded table (one shard held here, two answered as a worker
    /// answers, batches of a few reads) writes the output, `-R` report and summary of the
    /// one-process run and says the same lines after the table is made; with `-f` an input
    /// that cannot be read is skipped by both with the same lines.
    #[test]
    fn a_sharded_run_is_the_one_process_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(path("a.fq"), fastq_of(3, 900, 300)).unwrap();
        std::fs::write(path("b.fq"), fastq_of(4, 600, 300)).unwrap();
        let table =
            TableParams { ksize: 20, n_tables: 3, max_tablesize: 2000.0, force: true, ..TableParams::default() };
        let opts = |tag: &str| Options {
            inputs: vec![path("a.fq"), path("missing.fq"), path("b.fq")],
            table: table.clone(),
            force: true,
            cutoff: 5,
            report: Some(path(&format!("{tag}.csv"))),
            report_frequency: 97,
            output: Some(path(&format!("{tag}.fq"))),
            ..Options::default()
        };
        let said = |ctx: &RunContext| ctx.messages().into_iter().map(|m| m.text).collect::<Vec<_>>();
        let one_ctx = RunContext::new();
        let one = run(&opts("one"), &one_ctx).unwrap();

        let sizes = crate::ops::sizing::countgraph_sizes(&table, 1.0, &RunContext::new()).unwrap();
        let client = ShardClient::new(20, HashKind::TwoBit, &sizes, 3, false).unwrap();
        let b = client.map().bounds().to_vec();
        let mut here: Vec<Shard> = (0..3).map(|s| Shard::new(b[s], b[s + 1] - b[s], 255).unwrap()).collect();
        let mut remote = InProcess::new(here.split_off(1));
        let local = here.iter_mut().map(Some).chain([None, None]).collect();
        let ctx = RunContext::new();
        let sharded =
            run_sharded(&opts("sharded"), &mut KhmerShards { client: &client, local }, &mut remote, 300, &ctx);

        assert_eq!(sharded.unwrap(), one);
        assert!(one.kept > 10 && one.kept < one.total && one.short_dropped > 0 && one.keep_curve.len() > 10);
        assert_eq!(one.skipped_files, [path("missing.fq")]);
        assert!(said(&ctx).iter().any(|line| line == "*** Skipping error file, moving on..."));
        for ext in ["fq", "csv"] {
            let read = |tag: &str| std::fs::read(path(&format!("{tag}.{ext}"))).unwrap();
            assert_eq!(read("sharded"), read("one"), "{ext}");
        }
        assert_eq!(said(&one_ctx)[0], "making countgraph");
        assert_eq!(said(&ctx), said(&one_ctx)[1..]);
    }
}
