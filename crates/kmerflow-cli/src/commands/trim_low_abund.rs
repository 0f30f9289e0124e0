//! `kmerflow trim-low-abund`: streaming two-pass k-mer trimming (khmer's trim-low-abund.py).

use super::counting_args::{CountingArgs, SummaryFormatArg};
use super::mate_args::MateArgs;
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::sizing::TableParams;
use kmerflow_core::ops::trim_low_abund;
use kmerflow_core::Result;
use serde_json::Value;

/// Trim low-abundance k-mers from reads in two streaming passes.
#[derive(ClapArgs, Debug, Clone)]
// -V is --variable-coverage and -T the temporary directory, as in khmer: the version is
// `--version` alone and the threads `--threads`
#[command(disable_version_flag = true, mut_arg("threads", |a| a.short(None)))]
#[command(after_help = "\
Pass 1 counts the reads and trims those whose k-mers already reached -Z; reads of lower
coverage are set aside in the temporary directory (-T) and trimmed in pass 2, when the table
holds the whole input. -V keeps low-coverage reads untrimmed (variable-coverage data);
--diginorm also normalizes to --diginorm-coverage while counting. Identical for any --threads
and equal to khmer's.

R1/R2 files: --mate R2 gives the R2 file of the input before it (one per input); its records
are the mates of the input's records, in order and by name, and are trimmed as the pairs of
the interleaved file. -o OUT1 -O OUT2 write kept pairs as R1/R2 files (else -o gets the kept
reads interleaved, as khmer writes them; without -o, an input with a mate gets <R1>.abundtrim
and <R2>.abundtrim). A read whose mate is trimmed away (or an orphan of an interleaved input)
goes to --orphans FILE, or is left out and counted.

Examples:
  kmerflow trim-low-abund -k 20 -M 4G -C 3 -Z 18 -o reads.trim.fq reads.fq.gz
  kmerflow trim-low-abund -k 20 -M 4G -V --threads 4 -T /scratch -o out.fq a.fq b.fq
  kmerflow trim-low-abund -k 20 -M 4G --diginorm --diginorm-coverage 20 -o out.fq reads.fq
  kmerflow trim-low-abund -k 20 -M auto -V R1.fq.gz --mate R2.fq.gz -o out1.fq.gz -O out2.fq.gz")]
pub struct Args {
    #[command(flatten)]
    pub counting: CountingArgs,
    /// Cut reads before the first k-mer with a count below C.
    #[arg(short = 'C', long = "cutoff", default_value_t = 2, allow_negative_numbers = true)]
    pub cutoff: u32,
    /// Coverage from which reads are trimmed (requires -V when changed).
    #[arg(
        short = 'Z',
        long = "trim-at-coverage",
        visible_alias = "normalize-to",
        default_value_t = 20,
        allow_negative_numbers = true
    )]
    pub trim_at_coverage: u32,
    /// Keep low-coverage reads untrimmed.
    #[arg(short = 'V', long = "variable-coverage")]
    pub variable_coverage: bool,
    /// Single output file (`-` = stdout) instead of `<input>.abundtrim`.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Start from this saved countgraph.
    #[arg(short = 'l', long = "loadgraph")]
    pub loadgraph: Option<String>,
    /// Save the final countgraph.
    #[arg(short = 's', long = "savegraph")]
    pub savegraph: Option<String>,
    /// Write `<output>.info.json|tsv` with the read and base counts.
    #[arg(long = "summary-info", value_enum)]
    pub summary_info: Option<SummaryFormatArg>,
    /// Accept a high false-positive rate.
    #[arg(long = "force")]
    pub force: bool,
    /// Treat every read alone.
    #[arg(long = "ignore-pairs")]
    pub ignore_pairs: bool,
    /// Directory for the second-pass temporary files (khmer's -T).
    #[arg(short = 'T', long = "tempdir", default_value = "./")]
    pub tempdir: String,
    #[command(flatten)]
    pub compression: CompressionArgs,
    /// Drop bundles already at the diginorm coverage during pass 1.
    #[arg(long = "diginorm")]
    pub diginorm: bool,
    /// Coverage for --diginorm.
    #[arg(long = "diginorm-coverage", default_value_t = 20, requires = "diginorm", allow_negative_numbers = true)]
    pub diginorm_coverage: u32,
    /// Skip the second pass (reads set aside are lost).
    #[arg(long = "single-pass", conflicts_with = "diginorm")]
    pub single_pass: bool,
    /// Accepted for compatibility: every run decides batch by batch (the engine of sharded
    /// tables too).
    #[arg(long = "batched")]
    pub batched: bool,
    #[command(flatten)]
    pub mates: MateArgs,
    /// Input sequence files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    /// Sharding over Dask workers (run by the Python package).
    pub sharding: ShardArgs,
    /// `-q` and `--threads` (khmer's `-T` is the temporary directory here).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `trim-low-abund` (output is identical for any number of threads).
pub fn run(args: Args, ctx: &mut Ctx) -> Result<Value> {
    let opts = options(args, ctx)?;
    trim_low_abund::run(&opts, &ctx.run).and_then(|s| summary_json(&s))
}

/// The core's options of the command line `args` (the table sized within `ctx`).
pub fn options(args: Args, ctx: &mut Ctx) -> Result<trim_low_abund::Options> {
    // Pass 2 reads the reads set aside, a pass of its own on the progress line.
    ctx.run.progress().plan_passes(if args.single_pass { 1 } else { 2 });
    let inputs: Vec<String> = args.inputs.iter().chain(&args.mates.mate).cloned().collect();
    let table = args.counting.resolved_params(args.force, &inputs, args.loadgraph.is_some(), ctx)?;
    Ok(sized_options(args, table))
}

/// The core's options of the command line `args` with the table `table`.
pub fn sized_options(args: Args, table: TableParams) -> trim_low_abund::Options {
    trim_low_abund::Options {
        table,
        cutoff: args.cutoff,
        trim_at_coverage: args.trim_at_coverage,
        variable_coverage: args.variable_coverage,
        diginorm: args.diginorm.then_some(args.diginorm_coverage),
        single_pass: args.single_pass,
        ignore_pairs: args.ignore_pairs,
        tempdir: args.tempdir,
        loadgraph: args.loadgraph,
        savegraph: args.savegraph,
        output: args.output,
        mates: args.mates.into(),
        compression: args.compression.compression(),
        summary_info: args.summary_info.map(Into::into),
        inputs: args.inputs,
    }
}
