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

use super::{create_output, derived_name, is_stdin, write_to};
use crate::io::{write_record, Compression, OwnedRecord, PairMode, PairedInput};
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
}

/// A sampled bundle, shared between the samples that hold it.
type Sampled = Rc<(OwnedRecord, Option<OwnedRecord>)>;

/// The output path of each sample.
fn output_paths(opts: &SampleOptions) -> Result<Vec<String>> {
    let samples = opts.samples.max(1);
    let base = match &opts.output {
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
                return Err(Error::invalid("accepting input from stdin; output filename must be provided with -o"));
            }
            derived_name(first, ".subset", None)
        }
    };
    Ok(if samples == 1 { vec![base] } else { (0..samples).map(|i| format!("{base}.{i}")).collect() })
}

/// Draws `opts.samples` reservoir samples of `opts.num_reads` bundles and writes them.
pub fn sample_reads_randomly(opts: &SampleOptions, ctx: &RunContext) -> Result<SampleSummary> {
    let paths = output_paths(opts)?;
    crate::io::refuse_inputs_as_outputs(ctx, opts.inputs.iter().flat_map(PairedInput::paths), &paths)?;
    let seed = if opts.seed == 0 { DEFAULT_SEED } else { opts.seed };
    let mut rng = Pcg64::seed_from_u64(seed);
    let mode = if opts.force_single { PairMode::ForceSingle } else { PairMode::BrokenPaired };
    let n = opts.num_reads;
    let mut reservoirs: Vec<Vec<Sampled>> = vec![Vec::new(); paths.len()];
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
    for (path, reservoir) in paths.into_iter().zip(&reservoirs) {
        let mut out = create_output(&path, opts.compression, ctx)?;
        let mut buf = Vec::new();
        let mut records = 0;
        for bundle in reservoir {
            write_record(&mut buf, &bundle.0.as_record());
            records += 1;
            if let Some(mate) = &bundle.1 {
                write_record(&mut buf, &mate.as_record());
                records += 1;
            }
        }
        write_to(&mut out, &buf)?;
        out.finish()?;
        sum.outputs.push((path, records));
    }
    Ok(sum)
}
