//! filter-abund and filter-abund-single: cut reads at their first low-abundance k-mer
//! (khmer's `trim_record`, docs/khmer-compat.md §4.5).
//!
//! Reads are cleaned with the C++ parser rule, paired-ness is ignored and reads shorter than k
//! are dropped. Filtering only reads the table, so workers trim whole batches in parallel and
//! the ordered stage just writes. filter-abund-single first counts its input (in input order,
//! so the table and its statistics are the same for any number of threads).

use super::count::consume_file;
use super::read_filter::{
    bundle_source, check_ksize, clean_batch, trim_of_counts, trim_record, Cleaning, FpLimit, Trim,
};
use super::reads::{create_output, derived_name, is_stdin, stdin_without_output, write_to};
use super::sizing::{create_countgraph, expected_fp_rate, target_rate, FpRate, TableParams};
use crate::io::{Compression, OutputFile, PairMode, PairedInput, Record};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::shards::drive::DrivenLayout;
use crate::shards::runs::{Cleaning as BatchCleaning, ShardedDecisions};
use crate::table::batch::spans;
use crate::table::CountingTable;
use crate::table::KhmerTable;
use crate::Result;

/// Largest false-positive rate filter-abund-single accepts (checked before filtering).
pub const MAX_FP_RATE: f64 = 0.2;

/// Trimming parameters shared by both commands.
#[derive(Debug, Clone)]
pub struct FilterParams {
    /// `-C/--cutoff` (default 2).
    pub cutoff: u32,
    /// `-V/--variable-coverage`: only trim reads whose median is >= `normalize_to`.
    pub variable_coverage: bool,
    /// `-Z/--normalize-to` (default 20).
    pub normalize_to: u32,
    /// `-o/--output` (`-` = stdout); per-input `<basename>.abundfilt` otherwise.
    pub output: Option<String>,
    /// `--gzip`/`--bzip`; `None` chooses by the output name's extension.
    pub compression: Option<Compression>,
}

impl FilterParams {
    /// Refuses an output (`-o` or `<input>.abundfilt`, `savegraph`, the run's side outputs) that is one
    /// of the `inputs` or the `table` read.
    pub fn refuse_inputs_as_outputs<'a>(
        &'a self,
        ctx: &RunContext,
        table: impl IntoIterator<Item = &'a String>,
        inputs: &'a [String],
        savegraph: Option<&'a String>,
    ) -> Result<()> {
        let filtered: Vec<String> = match &self.output {
            Some(path) => vec![path.clone()],
            None => inputs.iter().map(|f| derived_name(f, ".abundfilt", None)).collect(),
        };
        crate::io::refuse_inputs_as_outputs(ctx, inputs.iter().chain(table), filtered.iter().chain(savegraph))
    }
}

impl Default for FilterParams {
    fn default() -> Self {
        FilterParams { cutoff: 2, variable_coverage: false, normalize_to: 20, output: None, compression: None }
    }
}

/// Options of filter-abund (a saved countgraph).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The saved countgraph.
    pub graph: String,
    /// Inputs.
    pub inputs: Vec<String>,
    /// Trimming parameters.
    pub filter: FilterParams,
    /// The strand the saved countgraph's k-mers must be hashed on (`--single-strand`).
    pub strand: crate::kmer::Strand,
}

/// Options of filter-abund-single (count, then filter, one input).
#[derive(Debug, Clone, Default)]
pub struct SingleOptions {
    /// The input.
    pub input: String,
    /// Table sizing; `force` also accepts a high FP rate.
    pub table: TableParams,
    /// `--savegraph`.
    pub savegraph: Option<String>,
    /// Trimming parameters.
    pub filter: FilterParams,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Reads examined (reads of at least k bases).
    pub reads: u64,
    /// Reads written (whole or truncated).
    pub written: u64,
    /// Reads truncated.
    pub truncated: u64,
    /// Reads dropped by trimming (fewer than k bases left).
    pub removed: u64,
    /// Reads dropped because they are shorter than k.
    pub short_dropped: u64,
    /// k-mers counted (filter-abund-single only).
    pub unique_kmers: u64,
    /// Estimated false-positive rate of the table.
    pub fp_rate: f64,
}

/// The output of one batch: formatted records and counters.
#[derive(Default)]
struct Filtered {
    bytes: Vec<u8>,
    reads: u64,
    truncated: u64,
    removed: u64,
    short: u64,
}

impl Filtered {
    /// Writes `rec` as `trim` leaves it and counts it (dropped, truncated or whole).
    fn push(&mut self, trim: Trim, rec: &Record<'_>) {
        self.reads += 1;
        match trim.write(rec, &mut self.bytes) {
            None => self.removed += 1,
            Some(n) if n < rec.seq.len() => self.truncated += 1,
            Some(_) => {}
        }
    }

    /// Adds the batch's counters to `summary` and writes its records to `out`.
    fn flush_into(&self, summary: &mut Summary, out: &mut OutputFile) -> Result<()> {
        summary.reads += self.reads;
        summary.removed += self.removed;
        summary.truncated += self.truncated;
        summary.written += self.reads - self.removed;
        summary.short_dropped += self.short;
        write_to(out, &self.bytes)
    }
}

/// Filters `input` through `table` into `out`, adding to `summary`.
fn filter_file(
    table: &KhmerTable,
    input: &str,
    p: &FilterParams,
    out: &mut OutputFile,
    summary: &mut Summary,
    ctx: &RunContext,
) -> Result<()> {
    let z = p.variable_coverage.then_some(p.normalize_to);
    let source = bundle_source(&PairedInput::single(input), PairMode::ForceSingle, table.ksize(), ctx)?;
    run_ordered(
        ctx,
        source,
        || {
            move |bb| {
                let cb = clean_batch(bb, Cleaning::Parser);
                let mut f = Filtered { short: cb.bundles.n_short_dropped, ..Filtered::default() };
                for b in cb.bundle_reads() {
                    for i in b.iter() {
                        f.push(trim_record(table, cb.clean_seq(i), p.cutoff, z), &cb.record(i));
                    }
                }
                Ok(f)
            }
        },
        |f: Filtered| f.flush_into(summary, out),
    )?;
    Ok(())
}

/// Filters `input` on the sharded table `shards` into `out`, adding to `summary`: the reads
/// are read, hashed and looked up on the shards a batch at a time ([`Lookups`]) and trimmed by
/// the one-process rule ([`trim_of_counts`]) from their counts.
fn filter_file_sharded<C: DrivenLayout>(
    shards: &mut ShardedDecisions<'_, C>,
    input: &str,
    p: &FilterParams,
    out: &mut OutputFile,
    summary: &mut Summary,
    ctx: &RunContext,
) -> Result<()> {
    let z = p.variable_coverage.then_some(p.normalize_to);
    let k = shards.client().ksize();
    let reader = PairedInput::single(input).open(PairMode::ForceSingle, Some(k), ctx)?;
    let batch_kmers = shards.batch_kmers();
    let mut lookups =
        shards.lookups(shards.client().batches(Box::new(reader), batch_kmers, BatchCleaning::ParserWithRecords))?;
    while let Some((batch, counts)) = lookups.next_batch()? {
        let mut f = Filtered::default();
        for (i, read) in spans(&batch.read_ends).enumerate() {
            let rec = batch.record(i);
            f.push(trim_of_counts(&counts[read], k, rec.seq.len(), p.cutoff, z).0, &rec);
        }
        f.flush_into(summary, out)?;
    }
    summary.short_dropped += lookups.short_dropped();
    Ok(())
}

/// Filters every input (into `-o` or `<basename>.abundfilt`), each by `filter_file(input,
/// output, summary)`, on a table of k `k`.
fn filter_all(
    k: usize,
    inputs: &[String],
    p: &FilterParams,
    summary: &mut Summary,
    ctx: &RunContext,
    mut filter_file: impl FnMut(&str, &mut OutputFile, &mut Summary) -> Result<()>,
) -> Result<()> {
    if p.output.is_none() && inputs.iter().any(|f| is_stdin(f)) {
        return Err(stdin_without_output(&["-o"]));
    }
    let mut single = match &p.output {
        Some(path) => Some(create_output(path, p.compression, ctx)?),
        None => None,
    };
    for input in inputs {
        ctx.info(format!("filtering {input}"));
        match single.as_mut() {
            Some(out) => filter_file(input, out, summary)?,
            None => {
                let name = derived_name(input, ".abundfilt", None);
                let mut out = create_output(&name, p.compression, ctx)?;
                filter_file(input, &mut out, summary)?;
                out.finish()?;
                ctx.info(format!("output in {name}"));
            }
        }
    }
    if let Some(out) = single {
        let name = out.path().to_string();
        out.finish()?;
        ctx.info(format!("output in {name}"));
    }
    if summary.short_dropped > 0 {
        ctx.info(format!("dropped {} reads shorter than k={k}", summary.short_dropped));
    }
    Ok(())
}

/// [`filter_all`] on a table in this process.
fn filter_all_here(
    table: &KhmerTable,
    inputs: &[String],
    p: &FilterParams,
    summary: &mut Summary,
    ctx: &RunContext,
) -> Result<()> {
    filter_all(table.ksize(), inputs, p, summary, ctx, |input, out, summary| {
        filter_file(table, input, p, out, summary, ctx)
    })
}

/// Runs filter-abund's filtering of `inputs` within `ctx` on `shards`, a sharded table that
/// holds the counts already (filter-abund-single's after its counting pass, or a saved
/// table's): the outputs, messages and summary (less `unique_kmers`, the caller's) are those
/// of the one-process filtering on the same table, and no table is gathered here.
pub fn run_sharded<C: DrivenLayout>(
    inputs: &[String],
    filter: &FilterParams,
    mut shards: ShardedDecisions<'_, C>,
    ctx: &RunContext,
) -> Result<Summary> {
    filter.refuse_inputs_as_outputs(ctx, None, inputs, None)?;
    let k = shards.client().ksize();
    let mut summary = Summary { fp_rate: shards.client().fp_rate(), ..Summary::default() };
    ctx.progress().begin_pass("filtering");
    filter_all(k, inputs, filter, &mut summary, ctx, |input, out, summary| {
        filter_file_sharded(&mut shards, input, filter, out, summary, ctx)
    })?;
    Ok(summary)
}

/// Runs filter-abund within `ctx`.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    opts.filter.refuse_inputs_as_outputs(ctx, std::iter::once(&opts.graph), &opts.inputs, None)?;
    ctx.info(format!("loading countgraph: {}", opts.graph));
    let table = super::read_filter::load_countgraph(&opts.graph, opts.strand, ctx)?;
    ctx.info(format!("K: {}", table.ksize()));
    let mut summary = Summary::default();
    filter_all_here(&table, &opts.inputs, &opts.filter, &mut summary, ctx)?;
    summary.fp_rate = expected_fp_rate(&table);
    Ok(summary)
}

/// filter-abund-single once its input is counted into `table` (in this process or sharded),
/// `unique_kmers` of them new: its lines and the check of its false-positive ceiling (an error
/// unless `-f`); the summary so far.
pub fn counted(
    table: &(impl FpRate + ?Sized),
    unique_kmers: u64,
    params: &TableParams,
    ctx: &RunContext,
) -> Result<Summary> {
    let summary = Summary { unique_kmers, fp_rate: table.fp_rate(), ..Summary::default() };
    ctx.info(format!("Total number of unique k-mers: {}", summary.unique_kmers));
    ctx.info(format!("fp rate estimated to be {:1.3}", summary.fp_rate));
    let resize = table.resize_hint(summary.fp_rate, target_rate(params));
    super::read_filter::check_fp_rate(summary.fp_rate, MAX_FP_RATE, params.force, &resize, ctx)?;
    Ok(summary)
}

/// Runs filter-abund-single within `ctx`.
pub fn run_single(opts: &SingleOptions, ctx: &RunContext) -> Result<Summary> {
    opts.filter.refuse_inputs_as_outputs(ctx, None, std::slice::from_ref(&opts.input), opts.savegraph.as_ref())?;
    crate::io::check_rereadable(&opts.input)?;
    check_ksize(opts.table.ksize)?;
    ctx.info("making countgraph");
    let mut table = create_countgraph(&opts.table, 1.0, ctx)?;
    ctx.info(format!("consuming input, round 1 -- {}", opts.input));
    ctx.progress().begin_pass("counting");
    let limit = FpLimit::of(MAX_FP_RATE, &opts.table);
    consume_file(&mut table, &opts.input, Some(&limit), ctx)?;
    let mut summary = counted(&table, table.n_unique_kmers(), &opts.table, ctx)?;
    ctx.progress().begin_pass("filtering");
    filter_all_here(&table, std::slice::from_ref(&opts.input), &opts.filter, &mut summary, ctx)?;
    if let Some(path) = &opts.savegraph {
        ctx.info(format!("Saving k-mer countgraph filename {path}"));
        table.save_in(path, ctx)?;
        ctx.files().add_output(path);
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::runs::testing::{counted_shards, fastq_of};

    /// filter-abund-single on shards (counts past 255, colliding tables, reads shorter than k,
    /// with and without -V) writes the reads and summary of the one-process run.
    #[test]
    fn sharded_filtering_matches_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        // A 70-base genome at high coverage and reads of a 4 kb one (k-mers seen once or twice).
        std::fs::write(path("reads.fq"), fastq_of(5, 1500, 70) + &fastq_of(6, 500, 4000)).unwrap();
        let table =
            TableParams { ksize: 20, n_tables: 3, max_tablesize: 3000.0, force: true, ..TableParams::default() };
        let sizes = crate::ops::sizing::countgraph_sizes(&table, 1.0, &RunContext::new()).unwrap();
        for (variable_coverage, cutoff) in [(false, 3), (true, 100)] {
            let filter = |out: &str| FilterParams {
                cutoff,
                variable_coverage,
                normalize_to: 200,
                output: Some(path(out)),
                ..FilterParams::default()
            };
            let opts = SingleOptions {
                input: path("reads.fq"),
                table: table.clone(),
                savegraph: None,
                filter: filter("one.fq"),
            };
            let one = run_single(&opts, &RunContext::new()).unwrap();
            // With -V the reads of the 4 kb genome are kept whole, those of the other trimmed.
            assert!(one.removed > 0 && one.short_dropped > 0, "{one:?}");
            assert!(one.truncated > 0 || variable_coverage, "{one:?}");
            for (shards, held, batch_kmers) in [(1, 0, 7), (3, 1, 500), (4, 2, 100_000)] {
                let (client, mut here, mut remote) = counted_shards(&sizes, shards, held, &path("reads.fq"));
                let local = here.iter_mut().map(Some).chain((held..shards).map(|_| None)).collect();
                let decisions = ShardedDecisions::new(&client, local, &mut remote, batch_kmers).unwrap();
                let mut sharded =
                    run_sharded(&[path("reads.fq")], &filter("s.fq"), decisions, &RunContext::new()).unwrap();
                sharded.unique_kmers = client.n_unique_kmers();
                assert_eq!(sharded, one, "{shards} {held} {batch_kmers}");
                assert!(std::fs::read(path("s.fq")).unwrap() == std::fs::read(path("one.fq")).unwrap());
            }
        }
    }
}
