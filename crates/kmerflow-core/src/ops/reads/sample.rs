//! `sample-reads-randomly`: uniform reservoir sampling of reads or pairs (khmer's
//! sample-reads-randomly.py).
//!
//! The units sampled are khmer's bundles (a pair stays together unless `force_single`). The
//! first `num_reads` bundles fill the reservoir; afterwards bundle number `c` (0-based) draws
//! `g` uniformly from `1..=c` per sample and replaces slot `g - 1` when `g <= num_reads`,
//! exactly khmer's rule (acceptance probability N/c). Two deliberate differences:
//! * the random numbers come from our own generator (PCG64 seeded with `seed`, default
//!   [`DEFAULT_SEED`]), so a run is reproducible but does not reproduce khmer's Python stream;
//! * the bundle count runs across all input files (khmer restarts it for each file, which
//!   lets the reservoir grow past `num_reads` with several inputs). The `max_reads` limit is,
//!   as in khmer, checked every 10,000 bundles.
//!
//! A sample is written as one file (its bundles in reservoir order, pairs interleaved) or, with
//! a mate output (a kmerflow extension), as R1/R2 files with the single reads to an orphans
//! file or left out ([`crate::io::mates`]): the one file split by split-paired-reads.

use super::{derived_name, is_stdin, stdin_without_output};
use crate::io::{Compression, MateCounts, MateWriter, OwnedRecord, PairMode, PairedInput, PairedOutput};
use crate::run::RunContext;
use crate::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::rc::Rc;

/// The seed used when the user gives none (or 0): runs are reproducible by default.
pub const DEFAULT_SEED: u64 = 1;

/// How often (in bundles) the `max_reads` limit is checked, as in khmer.
const MAX_CHECK_INTERVAL: u64 = 10_000;

/// Options of [`sample_reads_randomly`].
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Inputs, read one after the other.
    pub inputs: Vec<PairedInput>,
    /// Bundles per sample (khmer's `-N`, default 100,000).
    pub num_reads: u64,
    /// Stop after about this many bundles (khmer's `-M`, default 1e8).
    pub max_reads: u64,
    /// Number of independent samples (khmer's `-S`, default 1).
    pub samples: usize,
    /// Random seed (`-R`); 0 means [`DEFAULT_SEED`].
    pub seed: u64,
    /// Treat every record as a single read (`--force_single`).
    pub force_single: bool,
    /// Output file (`-o`); default `<base of first input>.subset`.
    pub output: Option<String>,
    /// Second mates' file (`-O/--mate-output`, with `output`): samples written as R1/R2 files.
    pub output2: Option<String>,
    /// With `output2`, the sampled single reads (else left out).
    pub orphans: Option<String>,
    /// Allow `-o` with several samples (written to `<output>.<i>`).
    pub force: bool,
    /// Explicit output compression; `None` chooses by each output's extension.
    pub compression: Option<Compression>,
}

/// What [`sample_reads_randomly`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SampleSummary {
    /// Bundles scanned.
    pub scanned: u64,
    /// True when the `max_reads` limit stopped the scan.
    pub hit_limit: bool,
    /// Each output path with the number of records written to it.
    pub outputs: Vec<(String, u64)>,
    /// With R1/R2 outputs: pairs written, single reads written to the orphans files or left
    /// out (all samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mates: Option<MateCounts>,
}

/// A sampled bundle, shared between the samples that hold it.
type Sampled = Rc<(OwnedRecord, Option<OwnedRecord>)>;

/// The outputs of each sample: `-o` (or its default) with `-O` and `--orphans`, each numbered
/// `.0` .. `.S-1` when there are several samples.
fn sample_outputs(opts: &SampleOptions) -> Result<Vec<PairedOutput>> {
    let base = PairedOutput::new(output_base(opts)?, opts.output2.clone(), opts.orphans.clone())?;
    if opts.samples <= 1 {
        return Ok(vec![base]);
    }
    let numbered = |path: &String, i: usize| format!("{path}.{i}");
    Ok((0..opts.samples)
        .map(|i| PairedOutput {
            path: numbered(&base.path, i),
            mate: base.mate.as_ref().map(|m| numbered(m, i)),
            orphans: base.orphans.as_ref().map(|o| numbered(o, i)),
        })
        .collect())
}

/// The output path of the (one or first) sample before numbering.
fn output_base(opts: &SampleOptions) -> Result<String> {
    let samples = opts.samples.max(1);
    Ok(match &opts.output {
        Some(o) if samples > 1 && !opts.force => {
            return Err(Error::invalid(format!(
                "cannot write {samples} samples to one output ({o}); use --force to write {o}.0 .. {o}.{}",
                samples - 1
            )))
        }
        Some(o) => o.clone(),
        None => {
            let first = &opts.inputs.first().ok_or_else(|| Error::invalid("no input files"))?.path;
            if is_stdin(first) {
                return Err(stdin_without_output(&["-o"]));
            }
            derived_name(first, ".subset", None)
        }
    })
}

/// Draws `opts.samples` reservoir samples of `opts.num_reads` bundles and writes them.
pub fn sample_reads_randomly(opts: &SampleOptions, ctx: &RunContext) -> Result<SampleSummary> {
    let outputs = sample_outputs(opts)?;
    crate::io::refuse_inputs_as_outputs(
        ctx,
        opts.inputs.iter().flat_map(PairedInput::paths),
        outputs.iter().flat_map(PairedOutput::paths),
    )?;
    if opts.force_single && opts.output2.is_some() {
        return Err(Error::invalid("--force_single samples reads alone: R1/R2 outputs need pairs (use one -o)"));
    }
    let seed = if opts.seed == 0 { DEFAULT_SEED } else { opts.seed };
    let mut rng = Pcg64::seed_from_u64(seed);
    let mode = if opts.force_single { PairMode::ForceSingle } else { PairMode::BrokenPaired };
    let n = opts.num_reads;
    let mut reservoirs: Vec<Vec<Sampled>> = vec![Vec::new(); outputs.len()];
    let mut sum = SampleSummary::default();
    'inputs: for input in &opts.inputs {
        let mut reader = input.open(mode, None, ctx)?;
        while let Some(bb) = reader.next_batch()? {
            for b in &bb.bundles {
                let count = sum.scanned;
                if count % MAX_CHECK_INTERVAL == 0 {
                    ctx.progress().set_records(count);
                    if count >= opts.max_reads {
                        sum.hit_limit = true;
                        break 'inputs;
                    }
                }
                sum.scanned += 1;
                let mut item: Option<Sampled> = None;
                let mut bundle = || {
                    item.get_or_insert_with(|| {
                        let first = bb.batch.get(b.first).to_owned_record();
                        Rc::new((first, b.second.map(|s| bb.batch.get(s).to_owned_record())))
                    })
                    .clone()
                };
                for reservoir in &mut reservoirs {
                    if count < n {
                        reservoir.push(bundle());
                    } else {
                        let guess = rng.random_range(1..=count);
                        if guess <= n {
                            reservoir[(guess - 1) as usize] = bundle();
                        }
                    }
                }
            }
        }
    }
    for (output, reservoir) in outputs.into_iter().zip(&reservoirs) {
        let mut out = MateWriter::create(&output, opts.compression, ctx)?;
        let mut bufs = out.buffers();
        for bundle in reservoir {
            bufs.push(Some(&bundle.0.as_record()), bundle.1.as_ref().map(OwnedRecord::as_record).as_ref());
        }
        out.write(&bufs)?;
        let counts = out.finish()?;
        match output.mate {
            Some(mate) => {
                sum.outputs.push((output.path, counts.pairs));
                sum.outputs.push((mate, counts.pairs));
                sum.outputs.extend(output.orphans.map(|path| (path, counts.orphans_written)));
                sum.mates = Some(sum.mates.unwrap_or_default() + counts);
            }
            None => {
                let records = reservoir.iter().map(|b| 1 + u64::from(b.1.is_some())).sum();
                sum.outputs.push((output.path, records));
            }
        }
    }
    if let Some(counts) = &sum.mates {
        counts.tell_dropped(ctx);
    }
    Ok(sum)
}
