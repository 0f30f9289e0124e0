//! `readstats`: bases, sequences and average length per file and in total (khmer's
//! readstats.py), as text or CSV.

use super::{create_output, record_batches, write_to};
use crate::io::{FastxReader, RecordBatch};
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::Result;
use std::fmt::Write as _;

/// Options of [`readstats`].
#[derive(Debug, Clone)]
pub struct ReadstatsOptions {
    /// Input files.
    pub inputs: Vec<String>,
    /// Output file, `-` for stdout.
    pub output: String,
    /// CSV output (`bp,seqs,avg_len,filename`) instead of text.
    pub csv: bool,
}

/// Statistics of one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileStats {
    /// The file as given.
    pub path: String,
    /// Total sequence length.
    pub bp: u64,
    /// Number of sequences.
    pub seqs: u64,
}

impl FileStats {
    /// Average sequence length.
    pub fn average(&self) -> f64 {
        self.bp as f64 / self.seqs as f64
    }
}

/// Counts the bases and sequences of one file.
pub fn file_stats(path: &str, ctx: &RunContext) -> Result<FileStats> {
    let reader = FastxReader::open_in(path, ctx)?;
    let mut stats = FileStats { path: path.to_string(), bp: 0, seqs: 0 };
    let count = |batch: RecordBatch| Ok((batch.iter().map(|r| r.seq.len() as u64).sum::<u64>(), batch.len() as u64));
    run_ordered(
        ctx,
        record_batches(reader),
        || count,
        |(bp, n): (u64, u64)| {
            stats.bp += bp;
            stats.seqs += n;
            ctx.progress().set_records(stats.seqs);
            Ok(())
        },
    )?;
    Ok(stats)
}

/// Quotes a CSV field as Python's `csv` module does by default (only when needed).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Formats the report exactly as khmer does (CSV rows end in `\r\n`, like Python's `csv`).
pub fn format_report(stats: &[FileStats], csv: bool, n_files: usize) -> String {
    let mut s = String::new();
    let with_seqs: Vec<&FileStats> = stats.iter().filter(|f| f.seqs > 0).collect();
    if with_seqs.is_empty() {
        let _ = writeln!(s, "No sequences found in {n_files} files");
    } else if csv {
        s.push_str("bp,seqs,avg_len,filename\r\n");
        for f in with_seqs {
            let _ = write!(s, "{},{},{:.1},{}\r\n", f.bp, f.seqs, f.average(), csv_field(&f.path));
        }
    } else {
        s.push_str("---------------\n");
        for f in &with_seqs {
            let _ = writeln!(s, "{} bp / {} seqs; {:.1} average length -- {}", f.bp, f.seqs, f.average(), f.path);
        }
        let total = FileStats {
            path: "total".to_string(),
            bp: with_seqs.iter().map(|f| f.bp).sum(),
            seqs: with_seqs.iter().map(|f| f.seqs).sum(),
        };
        s.push_str("---------------\n");
        let _ = writeln!(s, "{} bp / {} seqs; {:.1} average length -- total", total.bp, total.seqs, total.average());
    }
    s
}

/// Computes the statistics of every input and writes the report; returns the statistics.
pub fn readstats(opts: &ReadstatsOptions, ctx: &RunContext) -> Result<Vec<FileStats>> {
    crate::io::refuse_inputs_as_outputs(ctx, &opts.inputs, [&opts.output])?;
    let stats = opts.inputs.iter().map(|p| file_stats(p, ctx)).collect::<Result<Vec<_>>>()?;
    let mut out = create_output(&opts.output, None, ctx)?;
    write_to(&mut out, format_report(&stats, opts.csv, opts.inputs.len()).as_bytes())?;
    out.finish()?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(path: &str, bp: u64, seqs: u64) -> FileStats {
        FileStats { path: path.into(), bp, seqs }
    }

    #[test]
    fn text_report_matches_khmer() {
        let r = format_report(&[stats("a.fq", 358, 5), stats("b.fq", 916, 11)], false, 2);
        assert_eq!(
            r,
            "---------------\n358 bp / 5 seqs; 71.6 average length -- a.fq\n\
             916 bp / 11 seqs; 83.3 average length -- b.fq\n---------------\n\
             1274 bp / 16 seqs; 79.6 average length -- total\n"
        );
    }

    #[test]
    fn csv_report_quotes_like_python() {
        let r = format_report(&[stats("a,b.fq", 358, 5)], true, 1);
        assert_eq!(r, "bp,seqs,avg_len,filename\r\n358,5,71.6,\"a,b.fq\"\r\n");
    }

    #[test]
    fn half_way_averages_round_like_python() {
        // Python: '%.1f' % 0.25 == '0.2', '%.1f' % 0.75 == '0.8', '%.1f' % 2.25 == '2.2'
        assert_eq!(format!("{:.1}", 1.0f64 / 4.0), "0.2");
        assert_eq!(format!("{:.1}", 3.0f64 / 4.0), "0.8");
        assert_eq!(format!("{:.1}", 9.0f64 / 4.0), "2.2");
    }
}
