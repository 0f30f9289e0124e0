//! `count-median`: per-read median, mean and standard deviation of k-mer counts (docs/khmer-compat.md §4.7).

use super::abundance_dist::csv_field;
use super::count::write_text;
use super::pyfmt;
use crate::io::fastx::for_each_record;
use crate::kmer::clean::clean_screed;
use crate::run::RunContext;
use crate::table::CountingTable;
use crate::table::KhmerTable;
use crate::Result;

/// Options of `count-median`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Saved countgraph.
    pub graph: String,
    /// Reads.
    pub input: String,
    /// CSV output (`-` = stdout).
    pub output: String,
    /// The strand the saved countgraph's k-mers must be hashed on (`--single-strand`).
    pub strand: crate::kmer::Strand,
}

/// What `count-median` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Reads seen.
    pub reads: u64,
    /// Reads shorter than k (no row written).
    pub short_reads: u64,
}

/// One CSV row (CRLF-terminated, as Python's `csv` writes it) for a read, or `None` when the
/// read is shorter than k. `clean` is scratch space.
pub fn median_row(table: &KhmerTable, name: &[u8], seq: &[u8], clean: &mut Vec<u8>) -> Option<String> {
    clean_screed(seq, clean);
    let (median, mean, stddev) = table.median_count(clean)?;
    Some(format!(
        "{},{median},{},{},{}\r\n",
        csv_field(&String::from_utf8_lossy(name)),
        pyfmt::round_repr(f64::from(mean), 9),
        pyfmt::round_repr(f64::from(stddev), 9),
        seq.len()
    ))
}

/// Runs `count-median` within `ctx`.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    crate::io::refuse_inputs_as_outputs(ctx, [&opts.graph, &opts.input], [&opts.output])?;
    let table = super::read_filter::load_countgraph(&opts.graph, opts.strand, ctx)?;
    let mut text = String::from("name,median,average,stddev,seqlen\r\n");
    let mut summary = Summary::default();
    let mut clean = Vec::new();
    for_each_record(&opts.input, ctx, |record| {
        summary.reads += 1;
        match median_row(&table, record.name, record.seq, &mut clean) {
            Some(row) => text.push_str(&row),
            None => summary.short_reads += 1,
        }
        Ok(())
    })?;
    write_text(&opts.output, text, ctx)?;
    Ok(summary)
}
