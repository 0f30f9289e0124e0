//! `extract-paired-reads`: separates the pairs of a broken-paired file from its orphans
//! (khmer's extract-paired-reads.py). With a mate output (a kmerflow extension) the pairs are
//! written as R1/R2 files instead of interleaved: the paired output gets the first mates, the
//! mate output the second ones, as split-paired-reads would split the interleaved file.

use super::{bundle_batches, create_output, route_bundles, two_outputs, write_to, Routed};
use crate::io::{Compression, OutputFile, PairMode, PairedInput};
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
    /// Second mates' file (`-O/--mate-output`): the pairs as R1/R2 files, first mates to the
    /// pairs file.
    pub mate_output: Option<String>,
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
    /// The paired output path (the first mates' with a mate output).
    pub paired_path: String,
    /// The second mates' output path, when pairs are written as R1/R2 files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mate_path: Option<String>,
    /// The single output path.
    pub single_path: String,
}

/// Writes the pairs of `opts.input` to the paired output and its orphans to the single one.
/// An input without any pair is an error (and leaves no output).
pub fn extract_paired_reads(opts: &ExtractPairedOptions, ctx: &RunContext) -> Result<ExtractPairedSummary> {
    let input = &opts.input.path;
    let dir = opts.output_dir.as_deref();
    let explicit = [&opts.output_paired, &opts.output_single];
    let [paired_path, single_path] = two_outputs(input, explicit, [".pe", ".se"], dir, ["-p", "-s"])?;
    let outputs = [Some(&paired_path), opts.mate_output.as_ref(), Some(&single_path)];
    let outputs: Vec<&String> = outputs.into_iter().flatten().collect();
    crate::io::refuse_inputs_as_outputs(ctx, opts.input.paths(), &outputs)?;
    crate::io::mates::refuse_shared_outputs(&outputs)?;
    let reader = opts.input.open(PairMode::BrokenPaired, None, ctx)?;
    let mut paired = create_output(&paired_path, opts.compression, ctx)?;
    let mut mate = opts.mate_output.as_deref().map(|path| create_output(path, opts.compression, ctx)).transpose()?;
    let mut single = create_output(&single_path, opts.compression, ctx)?;
    let (mut pairs, mut singles) = (0u64, 0u64);
    let interleave = mate.is_none();
    let worker = || move |bb| Ok(route_bundles(&bb, interleave));
    run_ordered(ctx, bundle_batches(reader), worker, |r: Routed| {
        pairs += r.pairs;
        singles += r.singles;
        ctx.progress().set_records(2 * pairs + singles);
        write_to(&mut paired, &r.firsts)?;
        if let Some(mate) = &mut mate {
            write_to(mate, &r.seconds)?;
        }
        write_to(&mut single, &r.orphans)
    })?;
    if pairs == 0 && singles > 0 {
        // Reads, none of them paired: the names are not mates'. An empty input is no such
        // sign (empty outputs, as from any command on an empty file).
        return Err(Error::invalid(format!(
            "{input}: no paired reads!? check file formats... (pairs are found by their read names)"
        )));
    }
    paired.finish()?;
    mate.map(OutputFile::finish).transpose()?;
    single.finish()?;
    Ok(ExtractPairedSummary { pairs, singles, paired_path, mate_path: opts.mate_output.clone(), single_path })
}
