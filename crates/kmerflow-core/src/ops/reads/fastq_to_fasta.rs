//! `fastq-to-fasta`: converts records to FASTA, dropping reads that contain `N` unless asked
//! to keep them (khmer's fastq-to-fasta.py).

use super::{create_output, record_batches, write_to};
use crate::io::{write_record, Compression, FastxReader, Record, RecordBatch};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::Result;

/// Options of [`fastq_to_fasta`].
#[derive(Debug, Clone)]
pub struct FastqToFastaOptions {
    /// Input FASTQ (or FASTA) file, `-` for stdin.
    pub input: String,
    /// Output file, `-` for stdout.
    pub output: String,
    /// Keep reads containing `N` (khmer's `-n/--n_keep`).
    pub keep_n: bool,
    /// Explicit output compression; `None` chooses by the output's extension.
    pub compression: Option<Compression>,
}

/// What [`fastq_to_fasta`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FastqToFastaSummary {
    /// Records read.
    pub records: u64,
    /// Records dropped for containing an `N`.
    pub dropped: u64,
}

/// One formatted batch.
struct Chunk {
    fasta: Vec<u8>,
    records: u64,
    dropped: u64,
}

fn convert(batch: RecordBatch, keep_n: bool) -> Chunk {
    let mut chunk = Chunk { fasta: Vec::new(), records: batch.len() as u64, dropped: 0 };
    for rec in batch.iter() {
        if !keep_n && rec.seq.contains(&b'N') {
            chunk.dropped += 1;
        } else {
            write_record(&mut chunk.fasta, &Record { qual: None, ..rec });
        }
    }
    chunk
}

/// Converts `opts.input` to FASTA in `opts.output`.
pub fn fastq_to_fasta(opts: &FastqToFastaOptions, ctx: &RunContext) -> Result<FastqToFastaSummary> {
    crate::io::refuse_inputs_as_outputs(ctx, [&opts.input], [&opts.output])?;
    let reader = FastxReader::open_in(&opts.input, ctx)?;
    let mut out = create_output(&opts.output, opts.compression, ctx)?;
    let mut sum = FastqToFastaSummary::default();
    let keep_n = opts.keep_n;
    run_ordered(
        ctx,
        record_batches(reader),
        || move |batch| Ok(convert(batch, keep_n)),
        |chunk: Chunk| {
            sum.records += chunk.records;
            sum.dropped += chunk.dropped;
            ctx.progress().set_records(sum.records);
            write_to(&mut out, &chunk.fasta)
        },
    )?;
    out.finish()?;
    Ok(sum)
}
