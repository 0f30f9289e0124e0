//! `load-graph`: build a nodegraph (Bloom filter) of the reads and khmer's tagset for
//! partitioning (docs/khmer-compat.md §3.3, §3.4, §4.10).

use super::count::{check_fp_rate, consume_file, write_text, ReadTally};
use super::kmer_slices::{kmer_slices, CleanReads, KmerSlice, MAX_SLICE_KMERS};
use super::read_filter::FpLimit;
use super::reads::record_batches;
use super::sizing::{self, TableParams};
use crate::io::FastxReader;
use crate::pipeline::run_ordered;
use crate::run::RunContext;
use crate::table::CountingTable;
use crate::table::KhmerTable;
use crate::Result;
use rustc_hash::FxHashSet;

/// Largest false-positive rate load-graph accepts.
pub const MAX_FP_RATE: f64 = 0.15;

/// khmer's default tag density (one tag about every 40 k-mers).
pub const TAG_DENSITY: u32 = 40;

/// khmer's tag set: hashes of k-mers chosen as partitioning anchors. Looked up for nearly
/// every k-mer of the reads, so kept in a hash set (with a B-tree, the lookups among the 694k
/// tags of the bench reads took 38% of load-graph's time); sorted when saved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tagset {
    /// The tags.
    pub tags: FxHashSet<u64>,
}

impl Tagset {
    /// khmer's `consume_sequence_and_tag`, for one piece of a read given as its k-mer hashes
    /// (the pieces of a read in order; see [`ReadTagging`]): adds each k-mer to `graph` and tags
    /// one k-mer in about every [`TAG_DENSITY`], plus the last k-mer of the read when enough
    /// k-mers passed since the previous tag. Returns the number of k-mers new to the graph
    /// (khmer's count).
    pub fn consume_and_tag(&mut self, graph: &mut KhmerTable, hashes: &[u64], read: &mut ReadTagging) -> u64 {
        let mut new_kmers = 0;
        graph.add_hashes_each_exclusive(hashes, |hash, is_new| {
            new_kmers += u64::from(is_new);
            if !is_new && self.tags.contains(&hash) {
                read.since = 1;
            } else {
                read.since += 1;
            }
            if read.since >= TAG_DENSITY {
                self.tags.insert(hash);
                read.since = 1;
            }
        });
        if read.last_piece {
            if let Some(&last) = hashes.last() {
                if read.since >= TAG_DENSITY / 2 - 1 {
                    self.tags.insert(last);
                }
            }
        }
        new_kmers
    }

    /// The tagset file (type 3): `OXLI`, version 4, type 3, k (u32), n (u64), density (u32),
    /// then the tags ascending (u64, little-endian).
    pub fn to_bytes(&self, ksize: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(22 + 8 * self.tags.len());
        out.extend_from_slice(b"OXLI");
        out.extend_from_slice(&[4, 3]);
        out.extend_from_slice(&(ksize as u32).to_le_bytes());
        out.extend_from_slice(&(self.tags.len() as u64).to_le_bytes());
        out.extend_from_slice(&TAG_DENSITY.to_le_bytes());
        let mut tags: Vec<u64> = self.tags.iter().copied().collect();
        tags.sort_unstable();
        for tag in tags {
            out.extend_from_slice(&tag.to_le_bytes());
        }
        out
    }

    /// Saves the tagset file.
    pub fn save(&self, ksize: usize, path: &str, ctx: &RunContext) -> Result<()> {
        write_text(path, self.to_bytes(ksize), ctx)
    }
}

/// Where tagging stands in the read being consumed, so that a long read can be consumed in
/// pieces with the tags of the whole read.
pub struct ReadTagging {
    /// k-mers since the last tag (khmer starts a read at half the density plus one).
    since: u32,
    /// The piece being consumed ends the read.
    last_piece: bool,
}

impl ReadTagging {
    /// Starts a read; `last_piece` says whether its first piece is also its last.
    pub fn start(last_piece: bool) -> Self {
        ReadTagging { since: TAG_DENSITY / 2 + 1, last_piece }
    }

    /// Goes on to the next piece of the read.
    pub fn next_piece(&mut self, last_piece: bool) {
        self.last_piece = last_piece;
    }
}

/// Options of `load-graph`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Table sizing (nodegraph: `-M` gives 8 bits per byte).
    pub params: TableParams,
    /// The nodegraph file; the tagset goes to `OUT.tagset`, the summary to `OUT.info`.
    pub output: String,
    /// Inputs, in order.
    pub inputs: Vec<String>,
    /// Build the tagset (off with `-n/--no-build-tagset`).
    pub build_tagset: bool,
}

/// What `load-graph` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Reads and k-mers seen.
    pub tally: ReadTally,
    /// khmer's `n_unique_kmers`.
    pub unique_kmers: u64,
    /// Number of tags.
    pub tags: usize,
    /// Estimated false-positive rate.
    pub fp_rate: f64,
}

/// Runs `load-graph` within `ctx` (its threads hash; the graph and tags are updated in file
/// order); a graph over the 0.15 false-positive ceiling ends the run before any output is
/// written.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    let side_files = [".info", ".tagset"].map(|suffix| format!("{}{suffix}", opts.output));
    crate::io::refuse_inputs_as_outputs(ctx, &opts.inputs, std::iter::once(&opts.output).chain(&side_files))?;
    let (graph, tagset, summary) = build(opts, ctx)?;
    graph.save_in(&opts.output, ctx)?;
    ctx.files().add_output(&opts.output);
    if opts.build_tagset {
        tagset.save(graph.ksize(), &format!("{}.tagset", opts.output), ctx)?;
    }
    let info =
        format!("{} unique k-mers\nfalse positive rate estimated to be {:.3}\n", summary.unique_kmers, summary.fp_rate);
    write_text(&format!("{}.info", opts.output), &info, ctx)?;
    Ok(summary)
}

/// Builds the nodegraph of `opts.inputs` and (with `opts.build_tagset`) its tagset without
/// saving them (`load-graph`, and `do-partition`, which partitions them in memory); fails when
/// the graph is over the 0.15 false-positive ceiling (unless forced), as soon as it is.
pub fn build(opts: &Options, ctx: &RunContext) -> Result<(KhmerTable, Tagset, Summary)> {
    let mut summary = Summary::default();
    let mut graph = sizing::create_nodegraph(&opts.params, ctx)?;
    let limit = FpLimit { target: sizing::NODEGRAPH_FP_TARGET, ..FpLimit::of(MAX_FP_RATE, &opts.params) };
    let mut tagset = Tagset::default();
    for input in &opts.inputs {
        if !opts.build_tagset {
            // Without tags, the graph is filled like a countgraph (owner threads, in file order).
            summary.tally.add(consume_file(&mut graph, input, Some(&limit), ctx)?);
            continue;
        }
        summary.tally.add(consume_file_and_tag(&mut graph, &mut tagset, input, Some(&limit), ctx)?.0);
    }
    summary.unique_kmers = graph.n_unique_kmers();
    summary.tags = tagset.tags.len();
    summary.fp_rate = check_fp_rate(&graph, limit.max, limit.force, limit.target, ctx)?;
    Ok((graph, tagset, summary))
}

/// khmer's `consume_seqfile_and_tag`: adds every k-mer of the reads of `input` (cleaned) to
/// `graph` and tags them into `tagset` (see [`Tagset::consume_and_tag`]), in file order;
/// returns the reads and k-mers read and the number of k-mers new to the graph.
pub fn consume_file_and_tag(
    graph: &mut KhmerTable,
    tagset: &mut Tagset,
    input: &str,
    limit: Option<&FpLimit>,
    ctx: &RunContext,
) -> Result<(ReadTally, u64)> {
    let k = graph.ksize();
    let (mut total, mut new_kmers) = (ReadTally::default(), 0);
    // Pieces of at most MAX_SLICE_KMERS k-mers (a chromosome is not hashed at once); the
    // tagging of a read goes on from piece to piece.
    let slices = kmer_slices(record_batches(FastxReader::open_in(input, ctx)?), k, MAX_SLICE_KMERS);
    let mut read = ReadTagging::start(true);
    // The workers hash without borrowing the graph, which the sink updates alone.
    let hasher = graph.kmer_hasher();
    run_ordered(
        ctx,
        slices,
        || {
            let (mut reads, hasher) = (CleanReads::default(), &hasher);
            move |slice: KmerSlice| {
                let tally = reads.fill(&slice);
                let pieces: Vec<_> = reads
                    .pieces()
                    .map(|piece| {
                        let mut hashes = Vec::new();
                        hasher(piece.bases, &mut hashes);
                        (hashes, piece.first, piece.last)
                    })
                    .collect();
                Ok((pieces, tally))
            }
        },
        |(pieces, tally)| {
            total.add(tally);
            for (hashes, first, last) in &pieces {
                if *first {
                    read = ReadTagging::start(*last);
                } else {
                    read.next_piece(*last);
                }
                new_kmers += tagset.consume_and_tag(graph, hashes, &mut read);
            }
            limit.map_or(Ok(()), |limit| limit.stop_early(&*graph, input, total.reads))
        },
    )?;
    Ok((total, new_kmers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagset_file_layout() {
        let tags = Tagset { tags: [7u64, 3].into_iter().collect() };
        let bytes = tags.to_bytes(20);
        assert_eq!(&bytes[..6], b"OXLI\x04\x03");
        assert_eq!(u32::from_le_bytes(bytes[6..10].try_into().unwrap()), 20);
        assert_eq!(u64::from_le_bytes(bytes[10..18].try_into().unwrap()), 2);
        assert_eq!(u32::from_le_bytes(bytes[18..22].try_into().unwrap()), 40);
        assert_eq!(u64::from_le_bytes(bytes[22..30].try_into().unwrap()), 3);
        assert_eq!(u64::from_le_bytes(bytes[30..38].try_into().unwrap()), 7);
    }
}
