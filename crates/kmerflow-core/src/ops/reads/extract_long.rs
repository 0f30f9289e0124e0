//! `extract-long-sequences`: keeps the records at least `min_length` long (khmer's
//! extract-long-sequences.py).

use super::{create_output, record_batches, write_to};
use crate::io::{write_record, Compression, FastxReader};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::Result;

/// Options of [`extract_long_sequences`].
#[derive(Debug, Clone)]
pub struct ExtractLongOptions {
    /// Input files, read one after the other.
    pub inputs: Vec<String>,
    /// Output file, `-` for stdout.
    pub output: String,
    /// Minimum sequence length kept (khmer's `-l`, default 200).
    pub min_length: usize,
    /// Explicit output compression; `None` chooses by the output's extension.
    pub compression: Option<Compression>,
}

/// What [`extract_long_sequences`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExtractLongSummary {
    /// Records read.
    pub records: u64,
    /// Records written.
    pub kept: u64,
}

/// Writes the records of all inputs that are at least `min_length` long.
pub fn extract_long_sequences(opts: &ExtractLongOptions, ctx: &RunContext) -> Result<ExtractLongSummary> {
    crate::io::refuse_inputs_as_outputs(ctx, &opts.inputs, [&opts.output])?;
    let mut out = create_output(&opts.output, opts.compression, ctx)?;
    let mut sum = ExtractLongSummary::default();
    let min = opts.min_length;
    for input in &opts.inputs {
        let reader = FastxReader::open_in(input, ctx)?;
        run_ordered(
            ctx,
            record_batches(reader),
            || {
                move |batch: crate::io::RecordBatch| {
                    let mut buf = Vec::new();
                    let mut kept = 0u64;
                    for rec in batch.iter().filter(|r| r.seq.len() >= min) {
                        write_record(&mut buf, &rec);
                        kept += 1;
                    }
                    Ok((buf, batch.len() as u64, kept))
                }
            },
            |(buf, n, kept): (Vec<u8>, u64, u64)| {
                sum.records += n;
                sum.kept += kept;
                ctx.progress().set_records(sum.records);
                write_to(&mut out, &buf)
            },
        )?;
    }
    out.finish()?;
    Ok(sum)
}
