//! `kmerflow sample-reads-randomly`.

use super::mate_args::MateArgs;
use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::io::mates::paired_inputs;
use kmerflow_core::ops::reads::sample::{sample_reads_randomly, SampleOptions, DEFAULT_SEED};
use serde_json::Value;

/// Arguments of `sample-reads-randomly` (khmer's sample-reads-randomly.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Subsamples -N reads uniformly with reservoir sampling, stopping after about -M reads; pairs
(recognised by name) count as one unit and stay together unless --force_single. The output is
<first file>.subset in the current directory, or <first file>.subset.0 .. .subset.S-1 with
-S S, or -o FILE.

Random numbers: kmerflow's own generator (PCG64). -R/--seed makes a run reproducible; without
it (or with 0) the seed is 1, so repeated runs give the same sample. Samples are not the
reads khmer would pick for the same seed. The read count runs across all input files.

R1/R2 files (kmerflow extension): give one --mate R2 per input file to sample pairs from
R1/R2 files; -o OUT1 -O OUT2 write each sample's pairs as R1/R2 files (with -S S: OUT1.i and
OUT2.i), its single reads to --orphans FILE or left out and counted.

Examples:
  kmerflow sample-reads-randomly -N 1000 reads.fq.gz
  kmerflow sample-reads-randomly -N 100 -S 3 -R 42 reads.fq
  kmerflow sample-reads-randomly -N 1000 R1.fq.gz --mate R2.fq.gz -o sample.fq
  kmerflow sample-reads-randomly -N 1000 R1.fq.gz --mate R2.fq.gz -o sample_1.fq -O sample_2.fq")]
pub struct Args {
    /// Input FASTA/FASTQ files
    #[arg(required = true)]
    pub filenames: Vec<String>,
    /// Number of reads (or pairs) per sample
    #[arg(short = 'N', long = "num_reads", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub num_reads: u64,
    /// Stop after this many reads (checked every 10,000 reads)
    #[arg(short = 'M', long = "max_reads", default_value_t = 100_000_000, allow_negative_numbers = true)]
    pub max_reads: u64,
    /// Number of samples
    #[arg(short = 'S', long = "samples", default_value_t = 1, value_parser = crate::flags::positive, allow_negative_numbers = true)]
    pub samples: usize,
    /// Random seed (0 = the default seed)
    #[arg(short = 'R', long = "random-seed", visible_alias = "seed", default_value_t = DEFAULT_SEED, allow_negative_numbers = true)]
    pub random_seed: u64,
    /// Ignore read pair information if present
    #[arg(long = "force_single")]
    pub force_single: bool,
    /// Output file (with -S > 1 and --force: FILE.0 .. FILE.S-1)
    #[arg(short, long, value_name = "filename")]
    pub output: Option<String>,
    /// Allow -o with more than one sample
    #[arg(short, long)]
    pub force: bool,
    #[command(flatten)]
    pub compression: CompressionArgs,
    #[command(flatten)]
    pub mates: MateArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `sample-reads-randomly`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = SampleOptions {
        inputs: paired_inputs(&args.filenames, &args.mates.mate)?,
        num_reads: args.num_reads,
        max_reads: args.max_reads,
        samples: args.samples,
        seed: args.random_seed,
        force_single: args.force_single,
        output: args.output,
        output2: args.mates.output2,
        orphans: args.mates.orphans,
        force: args.force,
        compression: args.compression.compression(),
    };
    let s = sample_reads_randomly(&opts, &ctx.run)?;
    if s.hit_limit {
        ctx.info(format_args!("reached upper limit of {} reads (see -M)", opts.max_reads));
    }
    for (path, n) in &s.outputs {
        ctx.info(format_args!("Writing {n} sequences to {path}"));
    }
    summary_json(&s)
}
