//! `abundance-dist` and `abundance-dist-single`: the k-mer abundance histogram of a read set
//! against a countgraph (docs/khmer-compat.md §2.8, §4.3, §4.4).

use super::count::{consume_file, count_owned_file, write_text, ReadTally};
use super::pyfmt;
use super::sizing::{self, TableParams};
use crate::run::RunContext;
use crate::table::CountingTable;
use crate::table::{HashKind, KhmerTable, OwnedBatch, OwnedCounting, StorageKind};
use crate::{Error, Result};
use std::io::Write;
use std::sync::{Mutex, PoisonError};

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
    let tracker = Tracker {
        tracking: KhmerTable::with_sizes(
            table.ksize(),
            HashKind::TwoBit,
            StorageKind::Bit,
            table.hashsizes().to_vec(),
        )?,
        table,
        dist: Mutex::new(vec![0u64; HISTOGRAM_LEN + 1]),
    };
    let hash = |seq: &[u8], out: &mut Vec<u64>| table.kmer_hashes(seq, out);
    let mut tally = ReadTally::default();
    for path in paths {
        tally.add(count_owned_file(&tracker, table.ksize(), &hash, path, ctx)?);
    }
    let mut dist = tracker.dist.into_inner().unwrap_or_else(PoisonError::into_inner);
    dist.truncate(HISTOGRAM_LEN);
    Ok((dist, tally))
}

/// The histogram pass: a tracking filter counted by owners; settling a batch adds its new
/// k-mers to the histogram at their count in `table` (sums, so in any batch order).
struct Tracker<'a> {
    tracking: KhmerTable,
    table: &'a KhmerTable,
    dist: Mutex<Vec<u64>>,
}

impl OwnedCounting for Tracker<'_> {
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
        let mut counts = Vec::with_capacity(new.len());
        self.table.counts_for_hashes(&new, &mut counts);
        let mut dist = self.dist.lock().unwrap_or_else(PoisonError::into_inner);
        counts.iter().for_each(|&count| dist[count as usize] += 1);
    }
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

    /// Writes the histogram.
    pub fn write(&self, dist: &[u64], ctx: &RunContext) -> Result<()> {
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
}

/// Runs `abundance-dist` within `ctx`.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    crate::io::refuse_inputs_as_outputs(ctx, [&opts.graph, &opts.seqs], [&opts.output.path])?;
    let mut summary = Summary::default();
    let mut table = super::read_filter::load_countgraph(&opts.graph, ctx)?;
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
    opts.output.write(&histogram, ctx)?;
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

/// Runs `abundance-dist-single` within `ctx`: count, then histogram, then optionally save.
pub fn run_single(opts: &SingleOptions, ctx: &RunContext) -> Result<Summary> {
    crate::io::refuse_inputs_as_outputs(ctx, [&opts.seqs], std::iter::once(&opts.output.path).chain(&opts.savegraph))?;
    crate::io::check_rereadable(&opts.seqs)?;
    opts.output.check()?;
    let mut summary = Summary::default();
    let (table, histogram, tally) = counted_histogram(&opts.params, opts.bigcount, &[&opts.seqs], ctx)?;
    summary.unique_kmers = table.n_unique_kmers();
    opts.output.write(&histogram, ctx)?;
    if let Some(path) = &opts.savegraph {
        table.save_in(path, ctx)?;
        ctx.files().add_output(path);
    }
    summary.tally = tally;
    summary.histogram = histogram;
    Ok(summary)
}

/// abundance-dist-single's counting and histogram over `paths` (each read twice): a countgraph
/// sized from `params` (with the tracking filter within its memory), counting above 255 with
/// `bigcount`; returns the table, the histogram and the histogram pass's tally.
pub fn counted_histogram(
    params: &TableParams,
    bigcount: bool,
    paths: &[&str],
    ctx: &RunContext,
) -> Result<(KhmerTable, Vec<u64>, ReadTally)> {
    let mut table = sizing::create_countgraph(params, SINGLE_MULTIPLIER, ctx)?;
    if bigcount && table.storage_kind() == StorageKind::Byte {
        table.set_use_bigcount(true)?;
    }
    ctx.progress().begin_pass("counting");
    for path in paths {
        consume_file(&mut table, path, ctx)?;
    }
    ctx.progress().begin_pass("histogram");
    let (histogram, tally) = histogram_of_files(&table, paths, ctx)?;
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

    #[test]
    fn histogram_equals_the_kmer_by_kmer_definition_for_any_thread_count() {
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
}
