//! `extract-paired-reads`: separates the pairs of a broken-paired file from its orphans
//! (khmer's extract-paired-reads.py).

use super::{bundle_batches, create_output, route_bundles, two_outputs, write_to, Routed};
use crate::io::{Compression, PairMode, PairedInput};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::{Error, Result};

/// Options of [`extract_paired_reads`].
#[derive(Debug, Clone)]
pub struct ExtractPairedOptions {
    /// The input (an interleaved file, or R1 plus its mate file).
    pub input: PairedInput,
    /// Directory for the derived output names (khmer's `-d`).
    pub output_dir: Option<String>,
    /// Pairs file (`-p`), default `<base>.pe`.
    pub output_paired: Option<String>,
    /// Orphans file (`-s`), default `<base>.se`.
    pub output_single: Option<String>,
    /// Explicit output compression; `None` chooses by each output's extension.
    pub compression: Option<Compression>,
}

/// What [`extract_paired_reads`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExtractPairedSummary {
    /// Pairs written to the paired output.
    pub pairs: u64,
    /// Orphans written to the single output.
    pub singles: u64,
    /// The paired output path.
    pub paired_path: String,
    /// The single output path.
    pub single_path: String,
}

/// Writes the pairs of `opts.input` to the paired output and its orphans to the single one.
/// An input without any pair is an error (and leaves no output).
pub fn extract_paired_reads(opts: &ExtractPairedOptions, ctx: &RunContext) -> Result<ExtractPairedSummary> {
    let input = &opts.input.path;
    let dir = opts.output_dir.as_deref();
    let explicit = [&opts.output_paired, &opts.output_single];
    let [paired_path, single_path] = two_outputs(input, explicit, [".pe", ".se"], dir, "-p and -s")?;
    crate::io::refuse_inputs_as_outputs(ctx, opts.input.paths(), [&paired_path, &single_path])?;
    let reader = opts.input.open(PairMode::BrokenPaired, None, ctx)?;
    let mut paired = create_output(&paired_path, opts.compression, ctx)?;
    let mut single = create_output(&single_path, opts.compression, ctx)?;
    let (mut pairs, mut singles) = (0u64, 0u64);
    let worker = || |bb| Ok(route_bundles(&bb, true));
    run_ordered(ctx, bundle_batches(reader), worker, |r: Routed| {
        pairs += r.pairs;
        singles += r.singles;
        ctx.progress().set_records(2 * pairs + singles);
        write_to(&mut paired, &r.firsts)?;
        write_to(&mut single, &r.orphans)
    })?;
    if pairs == 0 {
        return Err(Error::invalid(format!("{input}: no paired reads found; check the read names")));
    }
    paired.finish()?;
    single.finish()?;
    Ok(ExtractPairedSummary { pairs, singles, paired_path, single_path })
}
