//! trim-low-abund: khmer's streaming two-pass k-mer trimming (docs/khmer-compat.md §4.6).
//!
//! Pass 1, in input order: a bundle whose smallest read median is >= Z is trimmed against the
//! current table and not counted; otherwise its reads are counted and set aside in a temporary
//! file (optionally, with `--diginorm`, bundles already at the diginorm coverage are dropped).
//! Pass 2 re-reads the set-aside reads singly and trims them against the final table; it only
//! reads the table, so workers trim batches in parallel. In pass 1 workers clean and hash the
//! reads; the ordered stage decides batch after batch on the table itself ([`BatchRunner`]).
//! [`run_sharded`] decides pass 1 by the same rule on a table sharded over other processes
//! (the overlapped driver, [`drive::decide_all`]: each batch looked up on the shards, the next
//! one sent before it is decided here, its updates sent to the shards with a later batch), and
//! trims pass 2 from counts looked up on the shards ([`crate::shards::runs::Lookups`]): the
//! table is never gathered, and its `-s` file is the caller's to write shard by shard.
//!
//! R1/R2 files ([`crate::io::mates`]): an input with a `--mate` file is read as the pairs of
//! its interleaved form. With R1/R2 outputs, a bundle's kept reads are routed as a bundle
//! (both kept: to R1 and R2; one kept: to the orphans), in pass 1 as in pass 2, which reads the
//! set-aside file back as bundles (it holds whole bundles, in order): the files equal the
//! one-file output split by split-paired-reads.

use super::diginorm::BATCH_KMERS;
use super::read_filter::{
    self, bundle_source, check_ksize, clean_batch, trim_of_counts, Cleaning, FpLimit, HashedBatch, Trim,
};
use super::reads::{derived_name, is_stdin, stdin_without_output};
use super::sizing::{create_countgraph, target_rate, FpRate, TableParams};
use super::SummaryFormat;
use crate::io::{
    write_record, Compression, MateBuffers, MateCounts, MateFiles, MateWriter, PairMode, PairedInput, PairedOutput,
    PairedReader, Record, Staged,
};
use crate::pipeline::run_ordered;
use crate::run::{metrics, RunContext};
use crate::shards::drive::{self, DrivenLayout, ShardedTable};
use crate::shards::khmer::ShardClient;
use crate::shards::runs::{Cleaning as BatchCleaning, HashedBundles, ShardedDecisions};
use crate::table::batch::spans;
use crate::table::CountingTable;
use crate::table::{median_mean_stddev, BatchRunner, KhmerTable, ReadCounts};
use crate::{Error, Result};
use std::io::Write;
use std::ops::Range;
use std::path::Path;

/// Largest false-positive rate trim-low-abund accepts.
pub const MAX_FP_RATE: f64 = 0.8;
/// Progress is printed every this many reads.
const REPORT_EVERY_N_READS: u64 = 10_000;

/// Options of trim-low-abund.
#[derive(Debug, Clone)]
pub struct Options {
    /// Inputs (distinct names).
    pub inputs: Vec<String>,
    /// The R1/R2 options (`--mate`, `-O`, `--orphans`; see [`crate::io::mates`]).
    pub mates: MateFiles,
    /// Table sizing; `force` also accepts a high FP rate.
    pub table: TableParams,
    /// `-C/--cutoff` (default 2).
    pub cutoff: u32,
    /// `-Z/--trim-at-coverage` (default 20).
    pub trim_at_coverage: u32,
    /// `-V/--variable-coverage`.
    pub variable_coverage: bool,
    /// `--diginorm-coverage` when `--diginorm` is on.
    pub diginorm: Option<u32>,
    /// `--single-pass`: skip pass 2 (set-aside reads are lost).
    pub single_pass: bool,
    /// `--ignore-pairs`.
    pub ignore_pairs: bool,
    /// `-T/--tempdir`.
    pub tempdir: String,
    /// `-l/--loadgraph`.
    pub loadgraph: Option<String>,
    /// `-s/--savegraph`.
    pub savegraph: Option<String>,
    /// `-o/--output` (`-` = stdout); per-input `<basename>.abundtrim` otherwise (for an input
    /// with a mate file, `<R1 basename>.abundtrim` and `<R2 basename>.abundtrim` as R1/R2 outputs).
    pub output: Option<String>,
    /// `--gzip`/`--bzip`; `None` chooses by the output name's extension.
    pub compression: Option<Compression>,
    /// `--summary-info`.
    pub summary_info: Option<SummaryFormat>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            inputs: Vec::new(),
            mates: MateFiles::default(),
            table: TableParams::default(),
            cutoff: 2,
            trim_at_coverage: 20,
            variable_coverage: false,
            diginorm: None,
            single_pass: false,
            ignore_pairs: false,
            tempdir: "./".to_string(),
            loadgraph: None,
            savegraph: None,
            output: None,
            compression: None,
            summary_info: None,
        }
    }
}

/// khmer's counters. As in khmer, `reads` and `basepairs` are the first pass's totals (the
/// second look at set-aside reads is not added), while `reads_trimmed` covers both passes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Reads looked at in pass 1.
    pub reads: u64,
    /// Bases looked at in pass 1.
    pub basepairs: u64,
    /// Reads written.
    pub reads_written: u64,
    /// Bases written.
    pub basepairs_written: u64,
    /// Reads set aside for pass 2.
    pub reads_set_aside: u64,
    /// Low-coverage reads written untrimmed in pass 2 (`-V`).
    pub reads_skipped: u64,
    /// Reads trimmed or removed by trimming.
    pub reads_trimmed: u64,
    /// Reads dropped because they are shorter than k.
    pub short_dropped: u64,
    /// Estimated false-positive rate.
    pub fp_rate: f64,
    /// With R1/R2 outputs: pairs written, and reads without a written mate written to
    /// `--orphans` or left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mates: Option<MateCounts>,
}

/// Running counters plus khmer's progress line.
struct Tally<'a> {
    s: Summary,
    /// Reads and bases looked at again in pass 2 (only shown on the progress line).
    pass2_reads: u64,
    pass2_basepairs: u64,
    ctx: &'a RunContext,
    file: &'a str,
    n_start: u64,
    watermark: u64,
}

impl Tally<'_> {
    /// Called before each read is written in pass 1 (khmer's progress check).
    fn progress_pass1(&mut self) {
        if self.s.reads - self.n_start > self.watermark {
            let s = &self.s;
            self.ctx.info(format!(
                "... {} {} {} {} {} {}",
                self.file, s.reads_set_aside, s.reads, s.basepairs, s.reads_written, s.basepairs_written
            ));
            self.watermark += REPORT_EVERY_N_READS;
        }
    }

    /// Called before each read is written in pass 2.
    fn progress_pass2(&mut self, pass2: &str) {
        let reads = self.s.reads + self.pass2_reads;
        if reads - self.n_start > self.watermark {
            let s = &self.s;
            let bases = s.basepairs + self.pass2_basepairs;
            self.ctx.info(format!(
                "... x 2 {} {pass2} {} {reads} {bases} {} {}",
                reads - self.n_start,
                s.reads_set_aside,
                s.reads_written,
                s.basepairs_written
            ));
            self.watermark += REPORT_EVERY_N_READS;
        }
    }

    fn wrote(&mut self, bases: usize) {
        self.s.reads_written += 1;
        self.s.basepairs_written += bases as u64;
    }
}

/// Pass 1 over one hashed batch: formats trimmed reads into `out` and set-aside reads into
/// `aside`.
fn pass1_batch(
    o: &Options,
    table: &KhmerTable,
    runner: &mut BatchRunner,
    hb: &HashedBatch,
    t: &mut Tally<'_>,
    out: &mut MateBuffers,
    aside: &mut Vec<u8>,
) {
    t.s.short_dropped += hb.reads.bundles.n_short_dropped;
    let (k, cb) = (table.ksize(), &hb.reads);
    for (bundles, kmers) in hb.pieces(BATCH_KMERS) {
        let reads = cb.bundle_reads().skip(bundles.start).take(bundles.len());
        let reads = reads.map(|b| b.reads().into_iter().flatten().map(|i| (cb.record(i), hb.kmers[i].clone())));
        runner.run(table, &hb.hashes, kmers, |batch| pass1_bundles(o, k, batch, reads, t, out, aside));
    }
}

/// Pass 1 over one input on a sharded table by the overlapped driver ([`drive::decide_all`]:
/// the next batch sent before one is decided), each batch's trimmed reads (R1/R2 outputs when
/// `split`) and set-aside reads given to `write`; stops once the table is over `limit`.
fn pass1_sharded<C: DrivenLayout>(
    o: &Options,
    shards: &mut ShardedDecisions<'_, C>,
    (reader, split): (PairedReader, bool),
    limit: &FpLimit,
    t: &mut Tally<'_>,
    write: &mut dyn FnMut(&MateBuffers, &[u8]) -> Result<()>,
) -> Result<()> {
    let (k, batch_kmers) = (shards.client().ksize(), shards.batch_kmers());
    let (mut table, remote) = shards.shards()?;
    let remote_shards = table.remote();
    let mut run = table.decisions(Box::new(reader), BatchCleaning::ParserWithRecords, batch_kmers)?;
    let mut state = (t, MateBuffers::new(split), Vec::new());
    let decide = |(t, out, aside): &mut (&mut Tally<'_>, MateBuffers, Vec<u8>),
                  counts: &mut dyn ReadCounts,
                  batch: &HashedBundles| {
        out.clear();
        aside.clear();
        let reads = batch.reads();
        let bundles = spans(&batch.bundle_ends).map(|b| b.map(|i| (batch.record(i), reads[i].clone())));
        pass1_bundles(o, k, counts, bundles, t, out, aside);
    };
    drive::decide_all(&mut *run, remote, &remote_shards, &mut state, decide, |(t, out, aside), batch, run| {
        t.ctx.metrics().add_count(metrics::KMERS, batch.hashes.len() as u64);
        limit.stop_early(run, t.file, t.s.reads - t.n_start)?;
        write(out, aside)
    })?;
    state.0.s.short_dropped += run.short_dropped();
    Ok(())
}

/// Where pass 1 counts: a table in this process, or shards of one held elsewhere; pass 2
/// looks its reads up there too.
enum Pass1<'a, C: DrivenLayout> {
    Here(Box<KhmerTable>, BatchRunner),
    Sharded(ShardedDecisions<'a, C>),
}

impl<C: DrivenLayout> Pass1<'_, C> {
    fn ksize(&self) -> usize {
        match self {
            Pass1::Here(table, _) => table.ksize(),
            Pass1::Sharded(shards) => shards.client().ksize(),
        }
    }

    /// Pass 2 over one non-empty set-aside file (see [`pass2_reads`]), on the table after pass 1.
    fn pass2(&mut self, o: &Options, job: &FileJob, out: &mut MateWriter, t: &mut Tally<'_>) -> Result<()> {
        match self {
            Pass1::Here(table, _) => pass2_reads(o, table, job, out, t),
            Pass1::Sharded(shards) => pass2_reads_sharded(o, shards, job, out, t),
        }
    }

    /// The table, for its estimated false-positive rate.
    fn fp_table(&self) -> &dyn FpRate {
        match self {
            Pass1::Here(table, _) => &**table,
            Pass1::Sharded(shards) => shards.client(),
        }
    }

    /// khmer's check of the estimated false-positive rate against `MAX_FP_RATE`.
    fn check_fp_rate(&self, params: &TableParams, ctx: &RunContext) -> Result<f64> {
        super::count::check_fp_rate(self.fp_table(), MAX_FP_RATE, params.force, target_rate(params), ctx)
    }

    /// Ends the run with the table: saved to `savegraph` here, or, sharded, left whole on the
    /// shards (the updates still held here are sent) for the caller to save shard by shard
    /// once the run has let go of the shards held in its process.
    fn finish(self, savegraph: Option<&str>, ctx: &RunContext) -> Result<()> {
        match (self, savegraph) {
            (Pass1::Here(table, _), Some(path)) => {
                ctx.info(format!("Saving k-mer countgraph to {path}"));
                table.save_in(path, ctx)?;
                ctx.files().add_output(path);
                Ok(())
            }
            (Pass1::Here(..), None) => Ok(()),
            (Pass1::Sharded(mut shards), _) => shards.flush(),
        }
    }
}

/// Pass 1 over `bundles` (each its reads' records and k-mers), in order, the counts read and
/// made through `pass`.
fn pass1_bundles<'r, B: Iterator<Item = (Record<'r>, Range<usize>)> + Clone>(
    o: &Options,
    k: usize,
    mut pass: impl ReadCounts,
    bundles: impl Iterator<Item = B>,
    t: &mut Tally<'_>,
    out: &mut MateBuffers,
    aside: &mut Vec<u8>,
) {
    // The k-mer counts of each read of a bundle, read once for its median and its trimming (the
    // table does not change in between).
    let (mut counts, mut sorted): (Vec<Vec<u32>>, Vec<u32>) = (Vec::new(), Vec::new());
    for b in bundles {
        counts.resize_with(b.clone().count(), Vec::new);
        let mut cov = u32::MAX;
        for (read_counts, (record, kmers)) in counts.iter_mut().zip(b.clone()) {
            t.s.reads += 1;
            t.s.basepairs += record.seq.len() as u64;
            read_counts.clear();
            pass.counts(kmers, read_counts);
            sorted.clone_from(read_counts);
            cov = cov.min(median_mean_stddev(&mut sorted).map_or(0, |m| m.0));
        }
        if o.diginorm.is_some_and(|d| cov >= d) {
            continue;
        }
        if cov >= o.trim_at_coverage {
            let mut kept: [Option<Record<'_>>; 2] = [None, None];
            for ((read_counts, (record, _)), slot) in counts.iter().zip(b).zip(&mut kept) {
                // The cleaned read has the length of the read.
                let trim = Trim::of_counts(read_counts, k, record.seq.len(), o.cutoff);
                if trim.did_trim() {
                    t.s.reads_trimmed += 1;
                }
                *slot = trim.apply(&record);
                if let Some(read) = slot {
                    t.progress_pass1();
                    t.wrote(read.seq.len());
                }
            }
            out.push(kept[0].as_ref(), kept[1].as_ref());
        } else {
            for (record, kmers) in b {
                pass.add(kmers);
                write_record(aside, &record);
                t.s.reads_set_aside += 1;
            }
        }
    }
}

/// Pass-2 result of one read: its length and what trimming did.
struct Pass2Read {
    len: usize,
    trim: Trim,
    /// Kept untrimmed because of low coverage (`-V`).
    skipped: bool,
}

/// Where one input's reads go.
struct FileJob {
    input: String,
    pass2: String,
    out: usize,
    /// Reads set aside in pass 1 (an empty set-aside file is not read back).
    set_aside: u64,
}

/// Pass 2 over one set-aside file, on the table after pass 1.
fn pass2_file<C: DrivenLayout>(
    o: &Options,
    table: &mut Pass1<'_, C>,
    job: &FileJob,
    out: &mut MateWriter,
    t: &mut Tally<'_>,
) -> Result<()> {
    t.ctx.info(format!("second pass: looking at sequences kept aside in {}", job.pass2));
    t.watermark = REPORT_EVERY_N_READS;
    if job.set_aside > 0 {
        table.pass2(o, job, out, t)?;
    }
    std::fs::remove_file(&job.pass2).map_err(|e| Error::io(&job.pass2, e))
}

/// How pass 2 reads a set-aside file: as the bundles it was set aside in when `out` writes
/// R1/R2 files (so that pairs stay pairs), else read by read.
fn pass2_mode(out: &MateWriter) -> PairMode {
    if out.is_split() {
        PairMode::BrokenPaired
    } else {
        PairMode::ForceSingle
    }
}

/// Pass 2's decision on one set-aside read of `len` bases from its k-mer counts
/// ([`trim_of_counts`] with `-V`'s coverage).
fn pass2_read(o: &Options, counts: &[u32], k: usize, len: usize) -> Pass2Read {
    let coverage = o.variable_coverage.then_some(o.trim_at_coverage);
    let (trim, skipped) = trim_of_counts(counts, k, len, o.cutoff, coverage);
    Pass2Read { len, trim, skipped }
}

/// Trims the reads of one non-empty set-aside file into `out` (read as [`pass2_mode`] says)
/// against a table in this process; workers trim batches in parallel.
fn pass2_reads(o: &Options, table: &KhmerTable, job: &FileJob, out: &mut MateWriter, t: &mut Tally<'_>) -> Result<()> {
    let ctx = t.ctx;
    let split = out.is_split();
    let source = bundle_source(&PairedInput::single(&job.pass2), pass2_mode(out), table.ksize(), ctx)?;
    run_ordered(
        ctx,
        source,
        || {
            move |bb| {
                let cb = clean_batch(bb, Cleaning::Parser);
                let mut bufs = MateBuffers::new(split);
                let (mut reads, mut counts) = (Vec::new(), Vec::new());
                for b in cb.bundle_reads() {
                    let mut kept: [Option<Record<'_>>; 2] = [None, None];
                    for (i, slot) in b.iter().zip(&mut kept) {
                        let rec = cb.record(i);
                        counts.clear();
                        table.kmer_counts(cb.clean_seq(i), &mut counts);
                        let read = pass2_read(o, &counts, table.ksize(), rec.seq.len());
                        *slot = read.trim.apply(&rec);
                        reads.push(read);
                    }
                    bufs.push(kept[0].as_ref(), kept[1].as_ref());
                }
                Ok((bufs, reads))
            }
        },
        |(bufs, reads): (MateBuffers, Vec<Pass2Read>)| {
            pass2_tally(&reads, job, t);
            out.write(&bufs)
        },
    )?;
    Ok(())
}

/// [`pass2_reads`] against a sharded table: the set-aside reads are read, hashed and looked
/// up on the shards a batch at a time ([`crate::shards::runs::Lookups`]) and trimmed here
/// by the same rule; the table stays on the shards.
fn pass2_reads_sharded<C: DrivenLayout>(
    o: &Options,
    shards: &mut ShardedDecisions<'_, C>,
    job: &FileJob,
    out: &mut MateWriter,
    t: &mut Tally<'_>,
) -> Result<()> {
    let k = shards.client().ksize();
    let reader = PairedInput::single(&job.pass2).open(pass2_mode(out), Some(k), t.ctx)?;
    let batches = shards.client().batches(Box::new(reader), shards.batch_kmers(), BatchCleaning::ParserWithRecords);
    let mut lookups = shards.lookups(batches)?;
    let mut bufs = MateBuffers::new(out.is_split());
    while let Some((batch, counts)) = lookups.next_batch()? {
        bufs.clear();
        let reads: Vec<Range<usize>> = spans(&batch.read_ends).collect();
        let mut decided = Vec::with_capacity(reads.len());
        for bundle in spans(&batch.bundle_ends) {
            let mut kept: [Option<Record<'_>>; 2] = [None, None];
            for (i, slot) in bundle.zip(&mut kept) {
                let rec = batch.record(i);
                let read = pass2_read(o, &counts[reads[i].clone()], k, rec.seq.len());
                *slot = read.trim.apply(&rec);
                decided.push(read);
            }
            bufs.push(kept[0].as_ref(), kept[1].as_ref());
        }
        pass2_tally(&decided, job, t);
        out.write(&bufs)?;
    }
    Ok(())
}

/// Counts the pass-2 reads `reads` of `job` (in order) into the tally, with khmer's progress
/// lines.
fn pass2_tally(reads: &[Pass2Read], job: &FileJob, t: &mut Tally<'_>) {
    for r in reads {
        t.pass2_reads += 1;
        t.pass2_basepairs += r.len as u64;
        if r.skipped {
            t.s.reads_skipped += 1;
        } else if r.trim.did_trim() {
            t.s.reads_trimmed += 1;
        }
        let written = match r.trim {
            Trim::Keep => r.len,
            Trim::Truncate(n) => n,
            Trim::Drop => continue,
        };
        t.progress_pass2(&job.pass2);
        t.wrote(written);
    }
}

/// Validates the option combinations khmer refuses.
fn check_options(o: &Options) -> Result<()> {
    if o.loadgraph.is_none() {
        check_ksize(o.table.ksize)?;
    }
    let mut seen = std::collections::HashSet::new();
    if !o.inputs.iter().all(|f| seen.insert(f)) {
        return Err(Error::invalid("Cannot input the same filename multiple times."));
    }
    if o.trim_at_coverage != 20 && !o.variable_coverage {
        return Err(Error::invalid("--trim-at-coverage/-Z given, but --variable-coverage/-V not specified."));
    }
    if o.diginorm.is_some() && o.single_pass {
        return Err(Error::invalid("--diginorm and --single-pass are incompatible!"));
    }
    if o.output.is_none() && o.inputs.iter().chain(&o.mates.mate).any(|f| is_stdin(f)) {
        return Err(stdin_without_output(&["-o"]));
    }
    Ok(())
}

/// A fresh temporary directory under `parent` (khmer's `mkdtemp('khmer', 'tmp', parent)`).
fn make_tempdir(parent: &str) -> Result<std::path::PathBuf> {
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    for attempt in 0..100u32 {
        let dir = std::path::Path::new(parent).join(format!("tmp{}-{stamp}-{attempt}kmerflow", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(parent, e)),
        }
    }
    Err(Error::invalid(format!("{parent}: cannot create a temporary directory")))
}

/// Runs trim-low-abund within `ctx`; its temporary directory is removed however the run ends.
pub fn run(o: &Options, ctx: &RunContext) -> Result<Summary> {
    run_on::<ShardClient>(o, None, ctx)
}

/// [`run`] with pass 1 deciding on the sharded table `shards` (sized as `o.table` sizes it, or
/// loaded from `o.loadgraph` by the caller), pass 2 looking its reads up on the shards; the
/// outputs are those of [`run`] with a table of the same sizes. The
/// table is not saved here: `o.savegraph` is the caller's to write (shard by shard, see
/// [`crate::shards::file`]) once this returns, the shards holding every update; it is
/// checked against the inputs, and the false-positive check that stops a run comes first.
pub fn run_sharded<C: DrivenLayout>(o: &Options, shards: ShardedDecisions<'_, C>, ctx: &RunContext) -> Result<Summary> {
    run_on(o, Some(shards), ctx)
}

/// The inputs of the run of `o` (with their mate files) and the output of each (`-o`, or
/// `<basename>.abundtrim`), checked before anything is read: an output, `-s` or a side output
/// declared on `ctx` that is an input or the loaded table is refused, naming both. The runs
/// start with it; the sharded front end calls it before it starts a cluster.
pub fn checked_files(o: &Options, ctx: &RunContext) -> Result<(Vec<PairedInput>, Vec<PairedOutput>)> {
    let inputs = o.mates.inputs(&o.inputs)?;
    let outputs: Vec<PairedOutput> = match o.mates.output(o.output.clone())? {
        Some(out) => vec![out],
        None => inputs.iter().map(|input| input.derived_output(|f| derived_name(f, ".abundtrim", None))).collect(),
    };
    crate::io::refuse_inputs_as_outputs(
        ctx,
        inputs.iter().flat_map(PairedInput::paths).chain(&o.loadgraph),
        outputs.iter().flat_map(PairedOutput::paths).chain(&o.savegraph),
    )?;
    Ok((inputs, outputs))
}

/// [`run`] with pass 1 on `shards` when given.
fn run_on<C: DrivenLayout>(o: &Options, shards: Option<ShardedDecisions<'_, C>>, ctx: &RunContext) -> Result<Summary> {
    check_options(o)?;
    ctx.progress().begin_pass("trimming");
    let (inputs, outputs) = checked_files(o, ctx)?;
    if o.ignore_pairs && outputs.iter().any(PairedOutput::is_split) {
        return Err(Error::invalid("--ignore-pairs trims reads alone: R1/R2 outputs need pairs (use one -o)"));
    }
    let pass1 = match shards {
        Some(shards) => Pass1::Sharded(shards),
        None => {
            let table = match &o.loadgraph {
                Some(path) => {
                    ctx.info(format!("loading countgraph from {path}"));
                    let table = read_filter::load_countgraph(path, o.table.strand, ctx)?;
                    read_filter::loadgraph_params(&o.table, path, table.ksize(), ctx);
                    table
                }
                None => {
                    ctx.info("making countgraph");
                    create_countgraph(&o.table, 1.0, ctx)?
                }
            };
            Pass1::Here(Box::new(table), BatchRunner::default())
        }
    };
    let k = pass1.ksize();
    let tempdir = make_tempdir(&o.tempdir)?;
    ctx.info(format!("created temporary directory {};\nuse -T to change location", tempdir.display()));
    let result = run_passes(o, &inputs, &outputs, pass1, &tempdir, ctx);
    let _ = crate::io::discard::remove_dir_all(&tempdir);
    let (mut t, staged, table) = result?;
    if let Some(counts) = &t.s.mates {
        counts.tell_dropped(ctx);
    }
    let s = &mut t.s;
    s.fp_rate = table.fp_table().fp_rate();
    print_summary(o, s, ctx);
    if s.short_dropped > 0 {
        ctx.info(format!("dropped {} reads shorter than k={k}", s.short_dropped));
    }
    // As in khmer, a too-full table ends the run before the graph and summary are saved; the
    // trimmed reads, complete under temporary names, are removed too.
    table.check_fp_rate(&o.table, ctx)?;
    staged.into_iter().try_for_each(Staged::commit)?;
    match o.output.as_deref() {
        None => ctx.info("output in *.abundtrim"),
        Some("-") => ctx.info("output streamed to stdout"),
        Some(name) => ctx.info(format!("output in {name}")),
    }
    table.finish(o.savegraph.as_deref(), ctx)?;
    if let Some(format) = o.summary_info {
        write_summary_info(o, s, format, ctx)?;
    }
    Ok(t.s)
}

/// Both passes over all `inputs`, written to `outputs` (one, or one per input); the outputs
/// are complete under their temporary names on success. Returns the final table too (where
/// pass 1 counted).
fn run_passes<'a, 'b, C: DrivenLayout>(
    o: &'a Options,
    inputs: &'a [PairedInput],
    outputs: &[PairedOutput],
    mut pass1: Pass1<'b, C>,
    tempdir: &Path,
    ctx: &'a RunContext,
) -> Result<(Tally<'a>, Vec<Staged>, Pass1<'b, C>)> {
    let mut outs: Vec<MateWriter> = Vec::new();
    let mut jobs = Vec::new();
    let mut t =
        Tally { s: Summary::default(), pass2_reads: 0, pass2_basepairs: 0, ctx, file: "", n_start: 0, watermark: 0 };
    let mode = if o.ignore_pairs { PairMode::ForceSingle } else { PairMode::BrokenPaired };
    let limit = FpLimit::of(MAX_FP_RATE, &o.table);
    for (input, output) in inputs.iter().zip(outputs.iter().cycle()) {
        let pass2 = tempdir.join(format!("{}.pass2", input.path.replace('/', "-"))).to_string_lossy().into_owned();
        if outs.is_empty() || o.output.is_none() {
            outs.push(MateWriter::create(output, o.compression, ctx)?);
        }
        let mut job = FileJob { input: input.name(), pass2, out: outs.len() - 1, set_aside: 0 };
        let mut aside_file =
            std::io::BufWriter::new(std::fs::File::create(&job.pass2).map_err(|e| Error::io(&job.pass2, e))?);
        t.file = &input.path;
        t.n_start = t.s.reads;
        t.watermark = REPORT_EVERY_N_READS;
        let save_start = t.s.reads_set_aside;
        let out = &mut outs[job.out];
        let split = out.is_split();
        let mut write = |bufs: &MateBuffers, aside: &[u8]| {
            out.write(bufs)?;
            aside_file.write_all(aside).map_err(|e| Error::io(&job.pass2, e))
        };
        let reader = input.open(mode, Some(pass1.ksize()), ctx)?;
        match &mut pass1 {
            Pass1::Here(table, runner) => {
                let (hasher, mut bufs, mut aside) = (table.kmer_hasher(), MateBuffers::new(split), Vec::new());
                run_ordered(
                    ctx,
                    reader,
                    || |bb| Ok(HashedBatch::new(bb, Cleaning::Parser, &hasher)),
                    |hb: HashedBatch| {
                        ctx.metrics().add_count(metrics::KMERS, hb.hashes.len() as u64);
                        bufs.clear();
                        aside.clear();
                        pass1_batch(o, table, runner, &hb, &mut t, &mut bufs, &mut aside);
                        limit.stop_early(&**table, &input.path, t.s.reads - t.n_start)?;
                        write(&bufs, &aside)
                    },
                )?;
            }
            Pass1::Sharded(shards) => pass1_sharded(o, shards, (reader, split), &limit, &mut t, &mut write)?,
        }
        aside_file.flush().map_err(|e| Error::io(&job.pass2, e))?;
        job.set_aside = t.s.reads_set_aside - save_start;
        ctx.info(format!("{}: kept aside {} of {} from first pass", job.input, job.set_aside, t.s.reads - t.n_start));
        jobs.push(job);
    }
    if !o.single_pass {
        ctx.progress().begin_pass("second pass");
        for job in &jobs {
            pass2_file(o, &mut pass1, job, &mut outs[job.out], &mut t)?;
        }
    }
    let split = outs.iter().filter(|w| w.is_split()).map(MateWriter::counts);
    t.s.mates = split.reduce(|a, b| a + b);
    let staged = outs.into_iter().map(MateWriter::close).collect::<Result<Vec<_>>>()?.into_iter().flatten().collect();
    Ok((t, staged, pass1))
}

/// khmer's closing report lines, up to the false-positive rate.
fn print_summary(o: &Options, s: &Summary, ctx: &RunContext) {
    let ratio = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
    let (reads, wr) = (s.reads as f64, s.reads_written as f64);
    ctx.info(format!("read {} reads, {} bp", s.reads, s.basepairs));
    ctx.info(format!("wrote {} reads, {} bp", s.reads_written, s.basepairs_written));
    ctx.info(format!(
        "looked at {} reads twice ({:.2} passes)",
        s.reads_set_aside,
        1.0 + ratio(s.reads_set_aside as f64, reads)
    ));
    let pct = ratio(s.reads_trimmed as f64 + reads - wr, reads) * 100.0;
    ctx.info(format!("removed {} reads and trimmed {} reads ({pct:.2}%)", s.reads - s.reads_written, s.reads_trimmed));
    let bases = (1.0 - ratio(s.basepairs_written as f64, s.basepairs as f64)) * 100.0;
    ctx.info(format!("trimmed or removed {bases:.2}%% of bases ({} total)", s.basepairs - s.basepairs_written));
    if o.variable_coverage {
        ctx.info(format!("{} reads were high coverage ({:.2}%);", s.reads, 100.0 * ratio(reads, reads)));
        ctx.info("skipped 0 reads/0 bases because of low coverage");
    }
    ctx.info(format!("fp rate estimated to be {:1.3}", s.fp_rate));
}

/// Local time as `%Y-%m-%dT%H:%M:%S`.
fn timestamp() -> String {
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: `tm` is plain data filled by localtime_r from a valid time_t.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&now, &mut tm) };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Writes khmer's `--summary-info` file (`<-o name or trim-low-abund-<time>>.info.<fmt>`).
/// As in khmer, `reads_skipped`/`basepairs_skipped` are reported as 0.
fn write_summary_info(o: &Options, s: &Summary, format: SummaryFormat, ctx: &RunContext) -> Result<()> {
    let base = match o.output.as_deref() {
        Some(name) if name != "-" => name.to_string(),
        _ => format!("trim-low-abund-{}", timestamp()),
    };
    let fields: [(&str, String); 10] = [
        ("fpr", super::pyfmt::repr(s.fp_rate)),
        ("reads", s.reads.to_string()),
        ("basepairs", s.basepairs.to_string()),
        ("reads_written", s.reads_written.to_string()),
        ("basepairs_written", s.basepairs_written.to_string()),
        ("reads_skipped", "0".to_string()),
        ("basepairs_skipped", "0".to_string()),
        ("reads_removed", (s.reads - s.reads_written).to_string()),
        ("reads_trimmed", s.reads_trimmed.to_string()),
        ("basepairs_removed_or_trimmed", (s.basepairs - s.basepairs_written).to_string()),
    ];
    let (path, text) = match format {
        SummaryFormat::Json => {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            (format!("{base}.info.json"), format!("{{{}}}\n", body.join(", ")))
        }
        SummaryFormat::Tsv => {
            let keys: Vec<&str> = fields.iter().map(|(k, _)| *k).collect();
            let vals: Vec<&str> = fields.iter().map(|(_, v)| v.as_str()).collect();
            (format!("{base}.info.tsv"), format!("{}\r\n{}\r\n", keys.join("\t"), vals.join("\t")))
        }
    };
    super::count::write_text(&path, text, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::khmer::{Shard, ShardClient};
    use crate::shards::runs::testing::InProcess;
    use crate::table::HashKind;
    use rand::{Rng, SeedableRng};

    /// FASTQ pairs and singles from a 300-base genome with errors (tables of ~90 bins collide).
    fn fastq(seed: u64, n: usize) -> String {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let genome: Vec<u8> = (0..300).map(|_| b"ACGT"[rng.random_range(0..4)]).collect();
        let mut text = String::new();
        for i in 0..n {
            let mates: &[&str] = if i % 3 == 0 { &[""] } else { &["/1", "/2"] };
            for mate in mates {
                let start = rng.random_range(0..240);
                let mut seq = genome[start..start + rng.random_range(15..60)].to_vec();
                if rng.random_range(0..4) == 0 {
                    let at = rng.random_range(0..seq.len());
                    seq[at] = b"ACGTN"[rng.random_range(0..5)];
                }
                let seq = String::from_utf8(seq).unwrap();
                text += &format!("@r{i}{mate}\n{seq}\n+\n{}\n", "I".repeat(seq.len()));
            }
        }
        text
    }

    #[test]
    fn sharded_pass_one_trims_like_one_table() {
        let dir = tempfile::tempdir().unwrap();
        let reads = dir.path().join("reads.fq");
        std::fs::write(&reads, fastq(3, 600)).unwrap();
        let table = TableParams { ksize: 20, n_tables: 3, max_tablesize: 90.0, force: true, ..TableParams::default() };
        // `--single-pass` leaves the last updates of pass 1 unsent until the run's end.
        let options = |tag: &str, single_pass: bool| Options {
            inputs: vec![reads.to_string_lossy().into_owned()],
            table: table.clone(),
            cutoff: 3,
            trim_at_coverage: 12,
            variable_coverage: true,
            single_pass,
            tempdir: dir.path().to_string_lossy().into_owned(),
            output: Some(dir.path().join(format!("{tag}.fq")).to_string_lossy().into_owned()),
            savegraph: Some(dir.path().join(format!("{tag}.ct")).to_string_lossy().into_owned()),
            ..Options::default()
        };
        let sizes = crate::ops::sizing::countgraph_sizes(&table, 1.0, &RunContext::new()).unwrap();
        for single_pass in [false, true] {
            let one = run(&options("one", single_pass), &RunContext::new()).unwrap();
            assert!(one.reads_set_aside > 0 && one.reads_trimmed > 0 && one.reads_written < one.reads);
            for (shards, batch_kmers) in [(1, 1), (3, 40), (3, 100_000)] {
                let client = ShardClient::new(20, HashKind::TwoBit, &sizes, shards, false).unwrap();
                let b = client.map().bounds().to_vec();
                let mut all: Vec<Shard> =
                    (0..shards).map(|s| Shard::new(b[s], b[s + 1] - b[s], 255).unwrap()).collect();
                let mut remote = InProcess::new(all.split_off(shards / 2));
                let local = all.iter_mut().map(Some).chain((shards / 2..shards).map(|_| None)).collect();
                let decisions = ShardedDecisions::new(&client, local, &mut remote, batch_kmers).unwrap();
                let tag = format!("s{shards}-{batch_kmers}-{single_pass}");
                let sharded = run_sharded(&options(&tag, single_pass), decisions, &RunContext::new()).unwrap();
                assert_eq!(sharded, one, "{tag}");
                // The table is the caller's to save: the shards hold all of it, the last updates too.
                let ct = dir.path().join(format!("{tag}.ct"));
                assert!(!ct.exists(), "{tag}");
                let cells: Vec<&[u8]> = all.iter().chain(&remote.shards).map(Shard::cells).collect();
                let gathered = client.gather(&cells).unwrap();
                crate::table::khmer_format::save(&gathered, &ct.to_string_lossy(), &RunContext::new()).unwrap();
                for suffix in ["fq", "ct"] {
                    let read = |t: &str| std::fs::read(dir.path().join(format!("{t}.{suffix}"))).unwrap();
                    assert!(read(&tag) == read("one"), "{tag}.{suffix}");
                }
            }
        }
    }

    #[test]
    fn z_without_v_is_refused() {
        let o = Options { trim_at_coverage: 25, inputs: vec!["a".into()], ..Options::default() };
        assert!(check_options(&o).is_err());
    }
}
