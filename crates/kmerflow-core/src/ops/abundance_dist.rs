//! `abundance-dist` and `abundance-dist-single`: the k-mer abundance histogram of a read set
//! against a countgraph (docs/khmer-compat.md §2.8, §4.3, §4.4).

use super::count::{consume_file, count_owned_file, write_text, ReadTally};
use super::pyfmt;
use super::sizing::{self, FpRate, TableParams};
use crate::io::{FastxReader, PairMode, PairedReader};
use crate::run::metrics;
use crate::run::RunContext;
use crate::shards::drive::DrivenLayout;
use crate::shards::runs::{BundleBatches, Cleaning, ReadHasher, ShardedDecisions};
use crate::table::{
    AllocOptions, AnyTable, BlockedParams, BlockedTable, CounterWidth, CountingTable, HashKind, HugePages, KhmerTable,
    Layout, OwnedBatch, OwnedCounting, StorageKind,
};
use crate::{Error, Result};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

/// Histogram slots khmer reports (`abundance_distribution` returns the first 65535 of 65536).
pub const HISTOGRAM_LEN: usize = 65535;

/// khmer's `abundance_distribution(file, tracking)`: every distinct k-mer of `path` (as far
/// as the tracking Bloom filter with the countgraph's primes can tell) counted once, at its
/// count in `table`. The tracking filter is filled like a countgraph ([`count_owned_file`]):
/// in file order for each of its tables, so which k-mers are new does not depend on the
/// threads of `ctx`.
pub fn histogram(table: &KhmerTable, path: &str, ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)> {
    histogram_of_files(table, &[path], ctx)
}

/// [`histogram`] of several files read in order, each distinct k-mer counted once over all of
/// them (one tracking filter).
pub fn histogram_of_files(table: &KhmerTable, paths: &[&str], ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)> {
    let tracking = khmer_tracking(table.ksize(), HashKind::TwoBit, table.hashsizes().to_vec())?;
    Tracker::new(tracking, table).run(paths, ctx)
}

/// The tracking filter of [`histogram_of_files`] for a countgraph of k `k`, hash family `hash`
/// and tables of `sizes`: a Bloom filter of the same primes.
pub fn khmer_tracking(k: usize, hash: HashKind, sizes: Vec<u64>) -> Result<KhmerTable> {
    KhmerTable::with_sizes(k, hash, StorageKind::Bit, sizes)
}

/// [`histogram_of_files`] of a blocked table: the tracking filter is a blocked Bloom filter
/// (one cache line a k-mer) with as many bits as `table` has counters and as many probes, so
/// a k-mer is new as khmer's tracking tells it: when some probe was unset. Counts stop at the
/// table's largest count (255 for 8-bit counters), which gathers the k-mers counted more.
pub fn blocked_histogram_of_files(
    table: &BlockedTable,
    paths: &[&str],
    ctx: &RunContext,
) -> Result<(Vec<u64>, ReadTally)> {
    Tracker::new(blocked_tracking(table.params())?, table).run(paths, ctx)
}

/// The tracking filter of [`blocked_histogram_of_files`] for a blocked table of shape
/// `params`: a blocked Bloom filter with as many bits as the table has counters, as many probes.
pub fn blocked_tracking(params: &BlockedParams) -> Result<BlockedTable> {
    let bits = CounterWidth::Bits1;
    let shape = BlockedParams { n_lines: params.n_counters().div_ceil(bits.slots_per_line()), width: bits, ..*params };
    // Huge pages whatever its size: a look-up a k-mer at a random line (as the table's).
    BlockedTable::with_params(shape, AllocOptions { huge_pages: HugePages::On, ..AllocOptions::default() })
}

/// The histogram pass: a tracking filter counted by owners; the k-mers new to it are added to
/// the histogram at their count in `table` (sums, so in any batch order).
struct Tracker<'a, T> {
    tracking: T,
    table: &'a T,
    dist: Mutex<Vec<u64>>,
}

impl<'a, T: CountingTable> Tracker<'a, T>
where
    Self: OwnedCounting,
{
    fn new(tracking: T, table: &'a T) -> Self {
        Tracker { tracking, table, dist: Mutex::new(vec![0u64; HISTOGRAM_LEN + 1]) }
    }

    /// Adds the k-mers `new` (hashes of `table`) to the histogram at their counts.
    fn record(&self, new: &[u64]) {
        let mut counts = Vec::with_capacity(new.len());
        self.table.counts_for_hashes(new, &mut counts);
        let mut dist = self.dist.lock().unwrap_or_else(PoisonError::into_inner);
        counts.iter().for_each(|&count| dist[count as usize] += 1);
    }

    /// The histogram of the k-mers of `paths`, read in order.
    fn run(self, paths: &[&str], ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)> {
        let table = self.table;
        let hash = |seq: &[u8], out: &mut Vec<u64>| table.kmer_hashes(seq, out);
        let mut tally = ReadTally::default();
        for path in paths {
            tally.add(count_owned_file(&self, table.ksize(), &hash, path, |_| Ok(()), ctx)?);
        }
        let mut dist = self.dist.into_inner().unwrap_or_else(PoisonError::into_inner);
        dist.truncate(HISTOGRAM_LEN);
        Ok((dist, tally))
    }
}

/// khmer's layout: whether a k-mer is new spans the tables of the filter, so it is told once
/// every owner has counted the batch.
impl OwnedCounting for Tracker<'_, KhmerTable> {
    fn owners(&self, threads: usize) -> usize {
        self.tracking.owners(threads)
    }

    fn split(&self, hashes: &mut Vec<u64>, owners: usize, batch: &mut OwnedBatch) {
        self.tracking.split(hashes, owners, batch);
    }

    fn count_owned(&self, batch: &OwnedBatch, owner: usize, owners: usize) {
        self.tracking.count_owned(batch, owner, owners);
    }

    fn settle(&self, batch: &OwnedBatch) {
        let new: Vec<u64> = self.tracking.new_kmers(batch).collect();
        self.record(&new);
    }
}

/// The blocked layout: a k-mer lives in one line of the filter, so its owner tells at once
/// whether it is new.
impl OwnedCounting for Tracker<'_, BlockedTable> {
    fn owners(&self, threads: usize) -> usize {
        self.tracking.owners(threads)
    }

    fn split(&self, hashes: &mut Vec<u64>, owners: usize, batch: &mut OwnedBatch) {
        self.tracking.split(hashes, owners, batch);
    }

    fn count_owned(&self, batch: &OwnedBatch, owner: usize, _owners: usize) {
        let mut new = Vec::new();
        self.tracking.count_owned_new(batch, owner, &mut new);
        self.record(&new);
    }

    fn settle(&self, _batch: &OwnedBatch) {}
}

/// [`histogram_of_files`] (or [`blocked_histogram_of_files`]) on the sharded table `shards` of
/// either layout: the tracking filter lives in this process (the one-process run's) and is
/// filled in file order by the thread that reads and hashes the batches, which keeps only the
/// k-mers new to it; their counts are looked up on the shards ([`crate::shards::runs::Lookups`],
/// one message per shard and batch) and counted in the histogram. Equal to the one-process
/// histogram of the gathered table.
pub fn sharded_histogram_of_files<C: DrivenLayout>(
    shards: &mut ShardedDecisions<'_, C>,
    paths: &[&str],
    ctx: &RunContext,
) -> Result<(Vec<u64>, ReadTally)> {
    let batch_kmers = shards.batch_kmers();
    let tracking = Arc::new(shards.client().tracking_filter()?);
    // k-mers and reads without one, told by the reading thread.
    let seen = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let (mut dist, mut reads) = (vec![0u64; HISTOGRAM_LEN + 1], 0);
    for path in paths {
        let reader = PairedReader::new(FastxReader::open_in(path, ctx)?, PairMode::ForceSingle, None);
        let (tracking, seen, hash) = (tracking.clone(), seen.clone(), shards.client().hash_fn());
        let new_kmers: ReadHasher = Box::new(move |seq, out| {
            let start = out.len();
            hash(seq, out);
            seen[0].fetch_add((out.len() - start) as u64, Relaxed);
            seen[1].fetch_add(u64::from(out.len() == start), Relaxed);
            let mut kept = start;
            for j in start..out.len() {
                let hash = out[j];
                if tracking.get_hash(hash) == 0 {
                    tracking.add_hash(hash);
                    out[kept] = hash;
                    kept += 1;
                }
            }
            out.truncate(kept);
        });
        let mut lookups =
            shards.lookups(BundleBatches::with_hasher(Box::new(reader), new_kmers, batch_kmers, Cleaning::Parser))?;
        while let Some((batch, counts)) = lookups.next_batch()? {
            reads += batch.read_ends.len() as u64;
            counts.iter().for_each(|&count| dist[count as usize] += 1);
        }
    }
    dist.truncate(HISTOGRAM_LEN);
    let tally = ReadTally { reads, kmers: seen[0].load(Relaxed), short_reads: seen[1].load(Relaxed) };
    ctx.metrics().add_count(metrics::KMERS, tally.kmers);
    Ok((dist, tally))
}

/// One CSV field as Python's `csv.writer` (minimal quoting) writes it.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Writes khmer's histogram CSV (CRLF line ends, like Python's `csv` module): header, then
/// `abundance,count,cumulative,round(cumulative/total, 3)` per abundance (zero rows only with
/// `output_zero`), stopping at the row where the running sum reaches the total. An all-zero
/// histogram is an error (nothing is written).
pub fn write_histogram(dist: &[u64], output_zero: bool, out: &mut dyn Write) -> Result<()> {
    let total: u64 = dist.iter().sum();
    if total == 0 {
        return Err(Error::invalid(
            "abundance distribution is uniformly zero; nothing to report (are the inputs valid?)",
        ));
    }
    let mut text = String::from("abundance,count,cumulative,cumulative_fraction\r\n");
    let mut sofar = 0;
    for (abundance, &n) in dist.iter().enumerate() {
        if n == 0 && !output_zero {
            continue;
        }
        sofar += n;
        let frac = pyfmt::round_repr(sofar as f64 / total as f64, 3);
        text.push_str(&format!("{abundance},{n},{sofar},{frac}\r\n"));
        if sofar == total {
            break;
        }
    }
    out.write_all(text.as_bytes()).map_err(|e| Error::io("histogram output", e))
}

/// Where a histogram goes: a file (replaced only when `squash`), or stdout for `-`/`/dev/stdout`.
#[derive(Debug, Clone)]
pub struct HistogramOutput {
    /// The path.
    pub path: String,
    /// Overwrite an existing file (`-s/--squash`).
    pub squash: bool,
    /// Include zero rows (off with `-z/--no-zero`).
    pub output_zero: bool,
}

impl HistogramOutput {
    fn is_stdout(&self) -> bool {
        self.path == "-" || self.path == "/dev/stdout"
    }

    /// Refuses to overwrite an existing file unless squashing.
    pub fn check(&self) -> Result<()> {
        if !self.is_stdout() && !self.squash && std::path::Path::new(&self.path).exists() {
            return Err(Error::invalid(format!("{}: exists; not squashing (use -s/--squash)", self.path)));
        }
        Ok(())
    }

    /// Writes the histogram of the k-mers of `seqs` (`tally` says what was read); a histogram
    /// without any k-mer (an empty input, every read shorter than k) is an error naming `seqs`.
    pub fn write(&self, dist: &[u64], seqs: &str, tally: &ReadTally, ctx: &RunContext) -> Result<()> {
        if dist.iter().all(|&n| n == 0) {
            let why = match tally.reads {
                0 => "it holds no reads".to_string(),
                n if n == tally.short_reads => format!("all {n} reads are shorter than k"),
                _ => "none of its k-mers is counted in the table".to_string(),
            };
            return Err(Error::format(seqs, None, None, format!("no abundance distribution to report: {why}")));
        }
        let mut buf = Vec::new();
        write_histogram(dist, self.output_zero, &mut buf)?;
        write_text(if self.is_stdout() { "-" } else { &self.path }, buf, ctx)
    }
}

/// What an abundance-histogram run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Reads and k-mers of the histogram pass.
    pub tally: ReadTally,
    /// The histogram (abundance 0..65534).
    pub histogram: Vec<u64>,
    /// khmer's `n_unique_kmers` of the counting pass (`abundance-dist-single` only).
    pub unique_kmers: u64,
}

/// Options of `abundance-dist`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Saved countgraph.
    pub graph: String,
    /// Reads.
    pub seqs: String,
    /// Output.
    pub output: HistogramOutput,
    /// Report counts above 255 (`-b` turns it off).
    pub bigcount: bool,
    /// The strand the saved countgraph's k-mers must be hashed on (`--single-strand`).
    pub strand: crate::kmer::Strand,
}

/// Runs `abundance-dist` within `ctx`.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    crate::io::refuse_inputs_as_outputs(ctx, [&opts.graph, &opts.seqs], [&opts.output.path])?;
    let mut summary = Summary::default();
    let mut table = super::read_filter::load_countgraph(&opts.graph, opts.strand, ctx)?;
    if table.storage_kind() == StorageKind::Byte {
        if !table.use_bigcount() && opts.bigcount {
            ctx.warning(
                "WARNING: The loaded graph has bigcount DISABLED while bigcount reporting is ENABLED--counts \
                 higher than 255 will not be reported.",
            );
        }
        table.set_use_bigcount(opts.bigcount)?;
    }
    opts.output.check()?;
    let (histogram, tally) = histogram(&table, &opts.seqs, ctx)?;
    opts.output.write(&histogram, &opts.seqs, &tally, ctx)?;
    summary.tally = tally;
    summary.histogram = histogram;
    Ok(summary)
}

/// Options of `abundance-dist-single`.
#[derive(Debug, Clone)]
pub struct SingleOptions {
    /// Table sizing (`-M` is scaled by 8/9.3 to leave room for the tracking filter).
    pub params: TableParams,
    /// Reads (read twice).
    pub seqs: String,
    /// Output.
    pub output: HistogramOutput,
    /// Count above 255 (`-b` turns it off).
    pub bigcount: bool,
    /// Save the countgraph here after the histogram.
    pub savegraph: Option<String>,
}

/// khmer's memory multiplier for `abundance-dist-single` (countgraph + tracking nodegraph).
pub const SINGLE_MULTIPLIER: f64 = 8.0 / 9.3;

/// Checks, before anything is read, the files abundance-dist-single would write: the histogram
/// `output` ([`HistogramOutput::check`]) and `savegraph`, neither of which (nor a side output
/// declared on `ctx`) may be the input `seqs`. Both runs check this first; the sharded front end
/// also before it starts.
pub fn check_single_outputs(
    seqs: &str,
    output: &HistogramOutput,
    savegraph: Option<&String>,
    ctx: &RunContext,
) -> Result<()> {
    crate::io::refuse_inputs_as_outputs(ctx, [seqs], std::iter::once(&output.path).chain(savegraph))?;
    output.check()
}

/// Runs `abundance-dist-single` within `ctx`: count, then histogram, then optionally save.
pub fn run_single(opts: &SingleOptions, ctx: &RunContext) -> Result<Summary> {
    check_single_outputs(&opts.seqs, &opts.output, opts.savegraph.as_ref(), ctx)?;
    crate::io::check_rereadable(&opts.seqs)?;
    let mut summary = Summary::default();
    let (table, histogram, tally) = counted_histogram(&opts.params, Layout::Khmer, opts.bigcount, &[&opts.seqs], ctx)?;
    summary.unique_kmers = table.n_unique_kmers();
    opts.output.write(&histogram, &opts.seqs, &tally, ctx)?;
    if let Some(path) = &opts.savegraph {
        table.save_in(path, ctx)?;
        ctx.files().add_output(path);
    }
    summary.tally = tally;
    summary.histogram = histogram;
    Ok(summary)
}

/// abundance-dist-single's histogram of `seqs` into `output` on `shards`, a sharded table
/// that holds the counts of `seqs` already (counted by the caller, who saves the table if
/// asked to: `savegraph`, refused as one of the inputs): the histogram file and summary are
/// those of [`run_single`] on the same table, and no table is gathered here.
pub fn run_single_sharded<C: DrivenLayout>(
    seqs: &str,
    output: &HistogramOutput,
    savegraph: Option<&String>,
    mut shards: ShardedDecisions<'_, C>,
    ctx: &RunContext,
) -> Result<Summary> {
    check_single_outputs(seqs, output, savegraph, ctx)?;
    ctx.progress().begin_pass("histogram");
    let (histogram, tally) = sharded_histogram_of_files(&mut shards, &[seqs], ctx)?;
    output.write(&histogram, seqs, &tally, ctx)?;
    Ok(Summary { tally, histogram, unique_kmers: shards.client().n_unique_kmers() })
}

/// A table of either layout that gives the histogram of files against itself.
trait Histogram: CountingTable + OwnedCounting + FpRate + Sized {
    /// [`histogram_of_files`] of this layout.
    fn histogram_of_files(&self, paths: &[&str], ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)>;

    /// Counts the k-mers of `paths` into this table, then gives their histogram.
    fn count_then_histogram(&mut self, paths: &[&str], ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)> {
        ctx.progress().begin_pass("counting");
        for path in paths {
            consume_file(self, path, None, ctx)?;
        }
        ctx.progress().begin_pass("histogram");
        self.histogram_of_files(paths, ctx)
    }
}

impl Histogram for KhmerTable {
    fn histogram_of_files(&self, paths: &[&str], ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)> {
        histogram_of_files(self, paths, ctx)
    }
}

impl Histogram for BlockedTable {
    fn histogram_of_files(&self, paths: &[&str], ctx: &RunContext) -> Result<(Vec<u64>, ReadTally)> {
        blocked_histogram_of_files(self, paths, ctx)
    }
}

/// abundance-dist-single's counting and histogram over `paths` (each read twice): a countgraph
/// of `layout` sized from `params` (with the tracking filter within its memory), counting
/// above 255 with `bigcount` (khmer's layout only); returns the table, the histogram and the
/// histogram pass's tally.
pub fn counted_histogram(
    params: &TableParams,
    layout: Layout,
    bigcount: bool,
    paths: &[&str],
    ctx: &RunContext,
) -> Result<(AnyTable, Vec<u64>, ReadTally)> {
    let mut table = sizing::create_counting_table(params, layout, SINGLE_MULTIPLIER, ctx)?;
    let (histogram, tally) = match &mut table {
        AnyTable::Khmer(t) => {
            if bigcount && t.storage_kind() == StorageKind::Byte {
                t.set_use_bigcount(true)?;
            }
            t.count_then_histogram(paths, ctx)?
        }
        AnyTable::Blocked(t) => t.count_then_histogram(paths, ctx)?,
    };
    Ok((table, histogram, tally))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(dist: &[u64], zero: bool) -> String {
        let mut out = Vec::new();
        write_histogram(dist, zero, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn histogram_csv_matches_khmer() {
        let mut dist = vec![0u64; 1002];
        dist[1] = 96;
        dist[1001] = 2;
        assert_eq!(
            csv(&dist, false),
            "abundance,count,cumulative,cumulative_fraction\r\n1,96,96,0.98\r\n1001,2,98,1.0\r\n"
        );
        assert!(csv(&dist, true).starts_with("abundance,count,cumulative,cumulative_fraction\r\n0,0,0,0.0\r\n1,96"));
        assert!(write_histogram(&[0, 0], true, &mut Vec::new()).is_err());
    }

    #[test]
    fn csv_fields_quote_like_python() {
        assert_eq!(csv_field("read 1"), "read 1");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("a\"b"), "\"a\"\"b\"");
    }

    /// Random reads of 8 to 119 bases and a FASTA file of them.
    fn random_reads() -> (Vec<Vec<u8>>, tempfile::NamedTempFile) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let reads: Vec<Vec<u8>> = (0..3000)
            .map(|_| (0..rng.random_range(8..120)).map(|_| b"ACGT"[rng.random_range(0..4)]).collect())
            .collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        for (i, read) in reads.iter().enumerate() {
            writeln!(file, ">r{i}\n{}", String::from_utf8_lossy(read)).unwrap();
        }
        file.flush().unwrap();
        (reads, file)
    }

    #[test]
    fn histogram_equals_the_kmer_by_kmer_definition_for_any_thread_count() {
        let (reads, file) = random_reads();
        // Small tables: the tracking filter has false positives, so the order of its updates matters.
        let table = KhmerTable::new(12, HashKind::TwoBit, StorageKind::Byte, 20_000, 4).unwrap();
        reads.iter().for_each(|read| _ = table.consume(read));
        let tracking =
            KhmerTable::with_sizes(12, HashKind::TwoBit, StorageKind::Bit, table.hashsizes().to_vec()).unwrap();
        let mut expected = vec![0u64; HISTOGRAM_LEN + 1];
        reads.iter().for_each(|read| table.abundance_distribution_seq(read, &tracking, &mut expected));
        expected.truncate(HISTOGRAM_LEN);
        assert!(tracking.n_occupied() > 0 && expected.iter().sum::<u64>() > 1000);
        for threads in [1, 2, 3] {
            let (dist, _) =
                histogram(&table, file.path().to_str().unwrap(), &RunContext::new().threads_set_to(threads)).unwrap();
            assert!(dist == expected, "{threads} threads");
        }
    }

    /// abundance-dist-single's histogram on shards (counts past 255, a colliding tracking
    /// filter, with and without bigcount) equals the one-process run's.
    #[test]
    fn sharded_histogram_matches_one_process() {
        use crate::shards::runs::testing::{counted_shards, fastq_of};
        use crate::shards::runs::ShardedDecisions;
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(path("reads.fq"), fastq_of(8, 1500, 70) + &fastq_of(9, 500, 4000)).unwrap();
        let params = TableParams { ksize: 20, n_tables: 3, max_tablesize: 200.0, ..TableParams::default() };
        let sizes = create_countgraph_sizes(&params);
        let output = |name: &str| HistogramOutput { path: path(name), squash: true, output_zero: false };
        let opts = SingleOptions {
            params,
            seqs: path("reads.fq"),
            output: output("one.csv"),
            bigcount: true,
            savegraph: None,
        };
        let one = run_single(&opts, &RunContext::new()).unwrap();
        assert!(one.histogram.iter().skip(256).sum::<u64>() > 0, "counts past 255");
        for (shards, held, batch_kmers) in [(1, 0, 3), (3, 1, 400), (5, 3, 100_000)] {
            let (client, mut here, mut remote) = counted_shards(&sizes, shards, held, &path("reads.fq"));
            let local = here.iter_mut().map(Some).chain((held..shards).map(|_| None)).collect();
            let decisions = ShardedDecisions::new(&client, local, &mut remote, batch_kmers).unwrap();
            let sharded = run_single_sharded(&path("reads.fq"), &output("s.csv"), None, decisions, &RunContext::new());
            let sharded = sharded.unwrap();
            assert_eq!((sharded.tally, sharded.unique_kmers), (one.tally, one.unique_kmers), "{shards} {held}");
            assert!(sharded.histogram == one.histogram);
            assert!(std::fs::read(path("s.csv")).unwrap() == std::fs::read(path("one.csv")).unwrap());
        }
    }

    fn create_countgraph_sizes(params: &TableParams) -> Vec<u64> {
        sizing::create_countgraph(params, SINGLE_MULTIPLIER, &RunContext::new()).unwrap().hashsizes().to_vec()
    }

    #[test]
    fn blocked_histogram_equals_the_kmer_by_kmer_definition_for_any_thread_count() {
        let (reads, file) = random_reads();
        let table = BlockedTable::new(12, 20_000, CounterWidth::Bits8, 4).unwrap();
        reads.iter().for_each(|read| _ = table.consume(read));
        // The filter of blocked_histogram_of_files: one bit per counter of the table.
        let shape =
            BlockedParams { n_lines: table.n_counters().div_ceil(512), width: CounterWidth::Bits1, ..*table.params() };
        let tracking = BlockedTable::with_params(shape, AllocOptions::default()).unwrap();
        let mut expected = vec![0u64; HISTOGRAM_LEN];
        let mut hashes = Vec::new();
        for read in &reads {
            hashes.clear();
            table.kmer_hashes(read, &mut hashes);
            for &hash in hashes.iter().filter(|&&hash| tracking.add_hash(hash)) {
                expected[table.get_hash(hash) as usize] += 1;
            }
        }
        assert!(expected.iter().sum::<u64>() > 1000);
        for threads in [1, 2, 3] {
            let ctx = RunContext::new().threads_set_to(threads);
            let (dist, _) = blocked_histogram_of_files(&table, &[file.path().to_str().unwrap()], &ctx).unwrap();
            assert!(dist == expected, "{threads} threads");
        }
    }
}
