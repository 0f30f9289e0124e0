//! `filter-stoptags`: trim reads at the first k-mer that is a stop tag.

use super::files;
use crate::io::{write_record, Compression, OutputFile, Record};
use crate::kmer::{twobit, Strand};
use crate::ops::read_filter::check_ksize;
use crate::run::RunContext;
use crate::{Error, Result};
use rustc_hash::FxHashSet;
use std::io::Write;

/// khmer's `trim_on_stoptags` on the sequence as read (2-bit codes of the raw bytes, no
/// cleaning), its k-mers hashed on `strand`: where to cut `seq`, `j + k - 2` for the first
/// k-mer `j` that is a stop tag, or the whole length.
pub fn trim_on_stoptags(
    seq: &[u8],
    k: usize,
    strand: Strand,
    stop_tags: &FxHashSet<u64>,
    hashes: &mut Vec<u64>,
) -> usize {
    hashes.clear();
    twobit::hashes(seq, k, strand, hashes);
    hashes.iter().position(|h| stop_tags.contains(h)).map_or(seq.len(), |j| j + k - 2)
}

/// Options of `filter-stoptags`.
#[derive(Debug, Clone)]
pub struct Options {
    /// k of the stop tags (`-k`).
    pub ksize: usize,
    /// The stop tags file.
    pub stoptags: String,
    /// Read files; each gets `<basename>.stopfilt` in the current directory.
    pub inputs: Vec<String>,
    /// The strand the stop tags' k-mers were hashed on (`--single-strand`).
    pub strand: Strand,
}

/// What `filter-stoptags` did, per input: (input, output, reads read, reads kept).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Per input file.
    pub files: Vec<(String, String, u64, u64)>,
}

/// Runs `filter-stoptags`: reads with an `N` are dropped; the others are cut where
/// [`trim_on_stoptags`] says (qualities too) and kept when at least k bases remain. Reads
/// are written in input order (khmer's threads write them in any order).
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    check_ksize(opts.ksize)?;
    let stop_tags: FxHashSet<u64> = files::load_stoptags(&opts.stoptags, opts.ksize, ctx)?.into_iter().collect();
    let outputs: Vec<String> = opts.inputs.iter().map(|input| super::output_name(input, "stopfilt")).collect();
    crate::io::refuse_inputs_as_outputs(ctx, opts.inputs.iter().chain([&opts.stoptags]), &outputs)?;
    let mut summary = Summary::default();
    for (input, output) in opts.inputs.iter().zip(outputs) {
        let mut out = OutputFile::create_in(&output, Compression::None, ctx)?;
        let (mut hashes, mut buf, mut kept) = (Vec::new(), Vec::new(), 0);
        let reads = crate::io::fastx::for_each_record(input, ctx, |rec| {
            if rec.seq.contains(&b'N') {
                return Ok(());
            }
            let cut = trim_on_stoptags(rec.seq, opts.ksize, opts.strand, &stop_tags, &mut hashes);
            if cut < opts.ksize {
                return Ok(());
            }
            kept += 1;
            buf.clear();
            write_record(&mut buf, &Record { name: rec.name, seq: &rec.seq[..cut], qual: rec.qual.map(|q| &q[..cut]) });
            out.write_all(&buf).map_err(|e| Error::io(&output, e))
        })?;
        out.finish()?;
        summary.files.push((input.clone(), output, reads, kept));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// khmer's stop tag (k = 20) and a read holding it at 5.
    const STOP: &[u8] = b"GCTGGATTCTAGAGGCAGAG";
    const READ: &[u8] = b"CGCAGGCTGGATTCTAGAGGCAGAGGTGAGCTATAAG";

    /// Where `seq` is cut with the one stop tag `stop` (its hash in `strand`'s form).
    fn cut(seq: &[u8], strand: Strand, stop: u64) -> usize {
        let tags: FxHashSet<u64> = [stop].into_iter().collect();
        trim_on_stoptags(seq, STOP.len(), strand, &tags, &mut Vec::new())
    }

    #[test]
    fn cuts_k_minus_2_bases_after_the_stop_tags_start() {
        let stop = twobit::forward_hash(STOP).unwrap();
        // khmer: 'CGCAGGCTGGATTCTAGAGGCAG', 23
        assert_eq!(cut(READ, Strand::Canonical, stop), 23);
        assert_eq!(cut(b"ACGTACGTACGTACGTACGTAC", Strand::Canonical, stop), 22);
    }

    #[test]
    fn single_strand_stop_tags_match_their_own_strand_only() {
        let stop = twobit::forward_hash_no_rc(STOP).unwrap();
        assert_eq!(cut(READ, Strand::Single, stop), 23);
        // The reverse complement holds the tag's reverse complement: another k-mer.
        let reverse = crate::kmer::murmur::reverse_complement(READ);
        assert_eq!(cut(&reverse, Strand::Single, stop), reverse.len());
    }
}
