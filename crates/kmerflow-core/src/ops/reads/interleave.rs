//! `interleave-reads`: zips an R1 and an R2 file into one interleaved stream (khmer's
//! interleave-reads.py), by default renaming mates to `name/1`, `name/2` when their names do
//! not already mark them, and checking that each couple is a pair.

use super::{bundle_batches, create_output, write_to};
use crate::io::mates::refuse_same_mates;
use crate::io::pairs::{check_is_pair, mate_name};
use crate::io::{write_record, BundleBatch, Compression, FastxReader, PairedReader, Record};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::{Error, Result};

/// Options of [`interleave_reads`].
#[derive(Debug, Clone)]
pub struct InterleaveOptions {
    /// The R1 file.
    pub left: String,
    /// The R2 file.
    pub right: String,
    /// Output file, `-` for stdout.
    pub output: String,
    /// Keep names as they are and do not check pairing (khmer's `--no-reformat`).
    pub no_reformat: bool,
    /// Explicit output compression; `None` chooses by the output's extension.
    pub compression: Option<Compression>,
}

/// What [`interleave_reads`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct InterleaveSummary {
    /// Pairs written.
    pub pairs: u64,
}

/// Formats the pairs of one batch.
fn interleave_batch(bb: &BundleBatch, reformat: bool, files: &str) -> Result<(Vec<u8>, u64)> {
    let (mut buf, mut n1, mut n2) = (Vec::new(), Vec::new(), Vec::new());
    for b in &bb.bundles {
        let r1 = bb.batch.get(b.first);
        let Some(second) = b.second else {
            return Err(Error::invalid("interleave-reads: the two inputs did not give pairs"));
        };
        let r2 = bb.batch.get(second);
        if !reformat {
            write_record(&mut buf, &r1);
            write_record(&mut buf, &r2);
            continue;
        }
        mate_name(r1.name, true, &mut n1);
        mate_name(r2.name, false, &mut n2);
        let (r1, r2) = (Record { name: &n1, ..r1 }, Record { name: &n2, ..r2 });
        if !check_is_pair(&r1, &r2)? {
            return Err(Error::invalid(format!(
                "{files}: this doesn't look like paired data! {} {}",
                String::from_utf8_lossy(&n1),
                String::from_utf8_lossy(&n2)
            )));
        }
        write_record(&mut buf, &r1);
        write_record(&mut buf, &r2);
    }
    Ok((buf, bb.bundles.len() as u64))
}

/// Interleaves `opts.left` and `opts.right` within `ctx`; one file given as both (by any
/// path or link) is refused before either is opened.
pub fn interleave_reads(opts: &InterleaveOptions, ctx: &RunContext) -> Result<InterleaveSummary> {
    crate::io::refuse_inputs_as_outputs(ctx, [&opts.left, &opts.right], [&opts.output])?;
    refuse_same_mates(&opts.left, &opts.right)?;
    let reader = PairedReader::from_two_files(
        FastxReader::open_in(&opts.left, ctx)?,
        FastxReader::open_in(&opts.right, ctx)?,
        None,
    );
    let mut out = create_output(&opts.output, opts.compression, ctx)?;
    let mut pairs = 0;
    let reformat = !opts.no_reformat;
    let files = format!("{} + {}", opts.left, opts.right);
    let files = files.as_str();
    run_ordered(
        ctx,
        bundle_batches(reader),
        || move |bb: BundleBatch| interleave_batch(&bb, reformat, files),
        |(buf, n): (Vec<u8>, u64)| {
            pairs += n;
            ctx.progress().set_records(2 * pairs);
            write_to(&mut out, &buf)
        },
    )?;
    out.finish()?;
    Ok(InterleaveSummary { pairs })
}
