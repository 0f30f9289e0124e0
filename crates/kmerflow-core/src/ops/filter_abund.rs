//! filter-abund and filter-abund-single: cut reads at their first low-abundance k-mer
//! (khmer's `trim_record`, docs/khmer-compat.md §4.5).
//!
//! Reads are cleaned with the C++ parser rule, paired-ness is ignored and reads shorter than k
//! are dropped. Filtering only reads the table, so workers trim whole batches in parallel and
//! the ordered stage just writes. filter-abund-single first counts its input (in input order,
//! so the table and its statistics are the same for any number of threads).

use super::count::consume_file;
use super::read_filter::{bundle_source, check_ksize, clean_batch, trim_record, Cleaning};
use super::reads::{create_output, derived_name, is_stdin, write_to};
use super::sizing::{create_countgraph, expected_fp_rate, target_rate, TableParams};
use crate::io::{Compression, OutputFile, PairMode, PairedInput};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::table::CountingTable;
use crate::table::KhmerTable;
use crate::{Error, Result};

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
    fn refuse_inputs_as_outputs<'a>(
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

/// The output of one worker batch: formatted records and counters.
struct Filtered {
    bytes: Vec<u8>,
    reads: u64,
    truncated: u64,
    removed: u64,
    short: u64,
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
                let mut f = Filtered {
                    bytes: Vec::new(),
                    reads: 0,
                    truncated: 0,
                    removed: 0,
                    short: cb.bundles.n_short_dropped,
                };
                for b in cb.bundle_reads() {
                    for i in b.iter() {
                        let rec = cb.record(i);
                        let t = trim_record(table, cb.clean_seq(i), p.cutoff, z);
                        f.reads += 1;
                        match t.write(&rec, &mut f.bytes) {
                            None => f.removed += 1,
                            Some(n) if n < rec.seq.len() => f.truncated += 1,
                            Some(_) => {}
                        }
                    }
                }
                Ok(f)
            }
        },
        |f: Filtered| {
            summary.reads += f.reads;
            summary.removed += f.removed;
            summary.truncated += f.truncated;
            summary.written += f.reads - f.removed;
            summary.short_dropped += f.short;
            write_to(out, &f.bytes)
        },
    )?;
    Ok(())
}

/// Filters every input (into `-o` or `<basename>.abundfilt`).
fn filter_all(
    table: &KhmerTable,
    inputs: &[String],
    p: &FilterParams,
    summary: &mut Summary,
    ctx: &RunContext,
) -> Result<()> {
    if p.output.is_none() && inputs.iter().any(|f| is_stdin(f)) {
        return Err(Error::invalid("reading from stdin requires -o/--output"));
    }
    let mut single = match &p.output {
        Some(path) => Some(create_output(path, p.compression, ctx)?),
        None => None,
    };
    for input in inputs {
        ctx.info(format!("filtering {input}"));
        match single.as_mut() {
            Some(out) => filter_file(table, input, p, out, summary, ctx)?,
            None => {
                let name = derived_name(input, ".abundfilt", None);
                let mut out = create_output(&name, p.compression, ctx)?;
                filter_file(table, input, p, &mut out, summary, ctx)?;
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
        ctx.info(format!("dropped {} reads shorter than k={}", summary.short_dropped, table.ksize()));
    }
    Ok(())
}

/// Runs filter-abund within `ctx`.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    opts.filter.refuse_inputs_as_outputs(ctx, std::iter::once(&opts.graph), &opts.inputs, None)?;
    ctx.info(format!("loading countgraph: {}", opts.graph));
    let table = super::read_filter::load_countgraph(&opts.graph, ctx)?;
    ctx.info(format!("K: {}", table.ksize()));
    let mut summary = Summary::default();
    filter_all(&table, &opts.inputs, &opts.filter, &mut summary, ctx)?;
    summary.fp_rate = expected_fp_rate(&table);
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
    consume_file(&mut table, &opts.input, ctx)?;
    let mut summary =
        Summary { unique_kmers: table.n_unique_kmers(), fp_rate: expected_fp_rate(&table), ..Summary::default() };
    ctx.info(format!("Total number of unique k-mers: {}", summary.unique_kmers));
    ctx.info(format!("fp rate estimated to be {:1.3}", summary.fp_rate));
    super::count::check_fp_rate(&table, MAX_FP_RATE, opts.table.force, target_rate(&opts.table), ctx)?;
    ctx.progress().begin_pass("filtering");
    filter_all(&table, std::slice::from_ref(&opts.input), &opts.filter, &mut summary, ctx)?;
    if let Some(path) = &opts.savegraph {
        ctx.info(format!("Saving k-mer countgraph filename {path}"));
        table.save_in(path, ctx)?;
        ctx.files().add_output(path);
    }
    Ok(summary)
}
