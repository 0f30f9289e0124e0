//! Reading a sequence file with khmer's C++ cleaning rule, for the `consume_seqfile`-style
//! methods (always called with the GIL released).

use kmerflow_core::io::fastx::for_each_record;
use kmerflow_core::kmer::clean::clean_parser;
use kmerflow_core::run::RunContext;
use kmerflow_core::Result;

/// Calls `f` on every read of `path`, cleaned as khmer's C++ parser does (non-ACGT → `A`);
/// returns the number of reads. Stops with `Error::Cancelled` once `ctx` is cancelled.
pub fn for_each_clean_read(path: &str, ctx: &RunContext, mut f: impl FnMut(&[u8])) -> Result<u64> {
    let mut clean = Vec::new();
    for_each_record(path, ctx, |rec| {
        clean_parser(rec.seq, &mut clean);
        f(&clean);
        Ok(())
    })
}
