//! `split-paired-reads`: splits an interleaved file into left and right files, orphans
//! optionally to a third (khmer's split-paired-reads.py).

use super::{bundle_batches, create_output, route_bundles, two_outputs, write_to, Routed};
use crate::io::{Compression, FastxReader, PairMode, PairedReader};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::Result;

/// Options of [`split_paired_reads`].
#[derive(Debug, Clone)]
pub struct SplitPairedOptions {
    /// The interleaved input (`-` or `/dev/stdin` for stdin).
    pub input: String,
    /// Directory for the derived output names (khmer's `-d`).
    pub output_dir: Option<String>,
    /// Left reads file (`-1`), default `<base>.1`.
    pub output_first: Option<String>,
    /// Right reads file (`-2`), default `<base>.2`.
    pub output_second: Option<String>,
    /// Orphans file (`-0`); without it an orphan is an error.
    pub output_orphans: Option<String>,
    /// Explicit output compression; `None` chooses by each output's extension.
    pub compression: Option<Compression>,
}

/// What [`split_paired_reads`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SplitPairedSummary {
    /// Left reads written.
    pub left: u64,
    /// Right reads written.
    pub right: u64,
    /// Orphans written.
    pub orphans: u64,
    /// The left, right and orphan output paths.
    pub paths: [Option<String>; 3],
}

/// Splits `opts.input` into left/right (and orphan) files.
pub fn split_paired_reads(opts: &SplitPairedOptions, ctx: &RunContext) -> Result<SplitPairedSummary> {
    let dir = opts.output_dir.as_deref();
    let explicit = [&opts.output_first, &opts.output_second];
    let [out1, out2] = two_outputs(&opts.input, explicit, [".1", ".2"], dir, ["-1", "-2"])?;
    crate::io::refuse_inputs_as_outputs(
        ctx,
        [&opts.input],
        [Some(&out1), Some(&out2), opts.output_orphans.as_ref()].into_iter().flatten(),
    )?;
    let mode = if opts.output_orphans.is_some() { PairMode::BrokenPaired } else { PairMode::RequirePaired };
    let reader = PairedReader::new(FastxReader::open_in(&opts.input, ctx)?, mode, None);
    let mut outs =
        [Some(create_output(&out1, opts.compression, ctx)?), Some(create_output(&out2, opts.compression, ctx)?), None];
    if let Some(o) = &opts.output_orphans {
        outs[2] = Some(create_output(o, opts.compression, ctx)?);
    }
    let mut counts = [0u64; 3];
    let worker = || |bb| Ok(route_bundles(&bb, false));
    run_ordered(ctx, bundle_batches(reader), worker, |r: Routed| {
        counts[0] += r.pairs;
        counts[1] += r.pairs;
        counts[2] += r.singles;
        for (out, buf) in outs.iter_mut().zip([&r.firsts, &r.seconds, &r.orphans]) {
            if let Some(out) = out {
                write_to(out, buf)?;
            }
        }
        ctx.progress().set_records(counts.iter().sum());
        Ok(())
    })?;
    for out in outs.into_iter().flatten() {
        out.finish()?;
    }
    Ok(SplitPairedSummary {
        left: counts[0],
        right: counts[1],
        orphans: counts[2],
        paths: [Some(out1), Some(out2), opts.output_orphans.clone()],
    })
}
