//! `load-into-counting`: count the k-mers of reads into a countgraph and save it (docs/khmer-compat.md §4.2,
//! §3.9), plus the batch-parallel file walker shared by the counting commands.

use super::kmer_slices::{kmer_slices, CleanReads, KmerSlice, MAX_SLICE_KMERS};
use super::memory::{self, Backing};
use super::pyfmt;
use super::read_filter::FpLimit;
use super::reads::record_batches;
use super::sizing::{self, FpRate, TableParams};
use super::SummaryFormat;
use crate::io::{Compression, FastxReader, OutputFile, PairMode, PairedReader, RecordBatch};
use crate::kmer::clean::clean_parser;
use crate::pipeline::run_ordered;
use crate::run::metrics;
use crate::run::RunContext;
use crate::shards::drive::{self, CountBatches, ShardedTable};
use crate::shards::runs::RemoteShards;
use crate::table::{BlockedTable, CountingTable, Layout, OwnedBatch, OwnedCounting};
use crate::{Error, Result};
use std::io::Write;
use std::sync::Arc;

/// Runs the ordered batch pipeline ([`run_ordered`]) over the records of `path`: `make_worker`
/// builds each worker's batch function, `sink` gets the outputs in file order on the calling
/// thread, within the run `ctx`. The first error (reading, working or sinking) stops the walk
/// and is returned.
pub fn for_each_batch<O, M, W, S>(path: &str, ctx: &RunContext, make_worker: M, sink: S) -> Result<()>
where
    O: Send,
    M: Fn() -> W + Sync,
    W: FnMut(RecordBatch) -> Result<O>,
    S: FnMut(O) -> Result<()>,
{
    run_ordered(ctx, record_batches(FastxReader::open_in(path, ctx)?), make_worker, sink).map(drop)
}

/// Read and k-mer tallies of one or more inputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReadTally {
    /// Records read.
    pub reads: u64,
    /// Records shorter than k (they contribute no k-mers).
    pub short_reads: u64,
    /// k-mers seen.
    pub kmers: u64,
}

impl ReadTally {
    /// Adds `other` to this tally.
    pub fn add(&mut self, other: ReadTally) {
        self.reads += other.reads;
        self.short_reads += other.short_reads;
        self.kmers += other.kmers;
    }

    /// Tallies one batch, calling `each` on every read cleaned by the C++-parser rule.
    pub fn of_batch(batch: &RecordBatch, k: usize, mut each: impl FnMut(&[u8])) -> ReadTally {
        let mut tally = ReadTally::default();
        let mut clean = Vec::new();
        for record in batch.iter() {
            tally.reads += 1;
            if record.seq.len() < k {
                tally.short_reads += 1;
                continue;
            }
            tally.kmers += (record.seq.len() - k + 1) as u64;
            clean_parser(record.seq, &mut clean);
            each(&clean);
        }
        tally
    }
}

/// Counts every k-mer of every read of `path` into `table` (reads cleaned by the C++-parser
/// rule, khmer's `consume_seqfile`), for either layout, by [`OwnedCounting`]: with one thread
/// this thread owns every counter (khmer's layout is then updated one table at a time over a
/// batch: 25% faster than all tables k-mer by k-mer on ecoli50_1.fq, probably because the huge
/// pages of one 100 MB table fit the first-level TLB); with more, workers clean and hash batches
/// while owner threads count them, each into the counters it owns. The table and its statistics
/// do not depend on `threads`. With a `limit`, the run stops as soon as the table is over it
/// ([`FpLimit::stop_early`], checked after every batch is counted).
pub fn consume_file<T: CountingTable + OwnedCounting + FpRate>(
    table: &mut T,
    path: &str,
    limit: Option<&FpLimit>,
    ctx: &RunContext,
) -> Result<ReadTally> {
    let table: &T = table;
    let hash = |seq: &[u8], out: &mut Vec<u64>| table.kmer_hashes(seq, out);
    let watch = |reads| limit.map_or(Ok(()), |limit| limit.stop_early(table, path, reads));
    count_owned_file(table, table.ksize(), &hash, path, watch, ctx)
}

/// Appends the k-mer hashes of a cleaned read to a vector.
pub(crate) trait KmerHashes: Fn(&[u8], &mut Vec<u64>) + Sync {}
impl<F: Fn(&[u8], &mut Vec<u64>) + Sync> KmerHashes for F {}

/// [`consume_file`] of any [`OwnedCounting`] table, the reads' k-mers (k = `k`) hashed by `hash`;
/// `watch` gets the reads of the file counted so far once every batch is counted (on the thread
/// that finished counting it), and an error from it ends the walk.
pub(crate) fn count_owned_file<T: OwnedCounting>(
    table: &T,
    k: usize,
    hash: &impl KmerHashes,
    path: &str,
    watch: impl Fn(u64) -> Result<()> + Sync,
    ctx: &RunContext,
) -> Result<ReadTally> {
    let threads = ctx.threads();
    let mut total = ReadTally::default();
    // Bounded work items whatever the record lengths (see `kmer_slices`).
    let slices = || Ok::<_, Error>(kmer_slices(record_batches(FastxReader::open_in(path, ctx)?), k, MAX_SLICE_KMERS));
    if threads <= 1 {
        let (mut reads, mut hashes, mut owned) = (CleanReads::default(), Vec::new(), OwnedBatch::default());
        run_ordered(
            ctx,
            slices()?,
            || |slice: KmerSlice| Ok(slice),
            |slice| {
                total.add(reads.fill(&slice));
                reads.hashes(hash, &mut hashes);
                table.split(&mut hashes, 1, &mut owned);
                table.count_owned(&owned, 0, 1);
                table.settle(&owned);
                watch(total.reads)
            },
        )?;
        ctx.metrics().add_count(metrics::KMERS, total.kmers);
        return Ok(total);
    }
    let owners = table.owners(threads);
    // Counted batches go back to the workers for reuse (their buffers are large).
    let (recycle, reuse) = crossbeam_channel::bounded::<Arc<OwnedBatch>>(2 * owners + threads);
    // The first error of `watch`, from the owner that counted a batch last; the walk ends at
    // its next batch (or when done), and it is the run's error.
    let stopped = std::sync::Mutex::new(None::<Error>);
    let stopped_error = || stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    std::thread::scope(|scope| {
        let mut queues = Vec::with_capacity(owners);
        let mut owner_threads = Vec::with_capacity(owners);
        for owner in 0..owners {
            // Each batch goes with the reads of the file up to its end.
            let (queue, batches) = crossbeam_channel::bounded::<(u64, Arc<OwnedBatch>)>(1);
            queues.push(queue);
            let (recycle, watch, stopped) = (recycle.clone(), &watch, &stopped);
            let spawned =
                std::thread::Builder::new().name(format!("kmerflow-owner{owner}")).spawn_scoped(scope, move || {
                    let (cpu, mut m) = (metrics::thread_cpu_time(), metrics::StageMetrics::default());
                    while let Ok((reads, batch)) = m.time_wait(|| batches.recv()) {
                        m.count_batch();
                        m.time_busy(|| table.count_owned(&batch, owner, owners));
                        if batch.finish_owner() {
                            table.settle(&batch);
                            let _ = recycle.try_send(batch);
                            if let Err(e) = watch(reads) {
                                let mut first = stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                                first.get_or_insert(e);
                            }
                        }
                    }
                    m.set_cpu_since(cpu);
                    m
                });
            owner_threads.push(spawned.map_err(|e| Error::invalid(format!("cannot start a counting thread: {e}")))?);
        }
        let walked = run_ordered(
            ctx,
            slices()?,
            || {
                let (mut reads, mut hashes) = (CleanReads::default(), Vec::new());
                let reuse = reuse.clone();
                move |slice: KmerSlice| {
                    let tally = reads.fill(&slice);
                    reads.hashes(hash, &mut hashes);
                    let mut owned = reuse.try_recv().ok().and_then(Arc::into_inner).unwrap_or_default();
                    table.split(&mut hashes, owners, &mut owned);
                    Ok((tally, Arc::new(owned)))
                }
            },
            |(tally, owned): (ReadTally, Arc<OwnedBatch>)| {
                total.add(tally);
                for queue in &queues {
                    // An owner only stops early by panicking; joining it below passes the panic on.
                    let _ = queue.send((total.reads, Arc::clone(&owned)));
                }
                stopped_error().map_or(Ok(()), Err)
            },
        );
        drop(queues);
        // An owner only fails by panicking: the panic goes on to the caller.
        let owner_metrics =
            owner_threads.into_iter().map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect();
        ctx.metrics().record_threads("count-owners", owner_metrics);
        // The last batches are counted after the walk: a stop they caused is the run's error.
        walked.and_then(|_| stopped_error().map_or(Ok(()), Err))
    })?;
    ctx.metrics().add_count(metrics::KMERS, total.kmers);
    Ok(total)
}

/// khmer's `calc_expected_collisions` check: an error when the estimated false-positive rate
/// exceeds `max_fp` (with `force`, a warning to `ctx`); returns the rate.
pub fn check_fp_rate(
    table: &(impl FpRate + ?Sized),
    max_fp: f64,
    force: bool,
    target: f64,
    ctx: &RunContext,
) -> Result<f64> {
    let fp = table.fp_rate();
    fp_rate_check(fp, max_fp, force, &table.resize_hint(fp, target), ctx)
}

/// [`check_fp_rate`] of an already estimated rate `fp`, `resize` naming the memory that would do.
fn fp_rate_check(fp: f64, max_fp: f64, force: bool, resize: &str, ctx: &RunContext) -> Result<f64> {
    super::read_filter::check_fp_rate(fp, max_fp, force, resize, ctx).map(|()| fp)
}

/// Largest false-positive rate load-into-counting accepts.
pub const MAX_FP_RATE: f64 = 0.2;

/// Options of `load-into-counting`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Table sizing.
    pub params: TableParams,
    /// The countgraph file to write (gzip when it ends in `.gz`).
    pub output: String,
    /// Input read files, counted in order.
    pub inputs: Vec<String>,
    /// Count above 255 (khmer's default; `-b` turns it off).
    pub bigcount: bool,
    /// `-s json|tsv`.
    pub summary: Option<SummaryFormat>,
    /// Table layout (`--layout`). The blocked layout counts straight into the mapped output
    /// file (kmerflow's native format, never compressed) and has no bigcount.
    pub layout: Layout,
}

/// What `load-into-counting` did (read back from its JSON by the sharded front end).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Reads and k-mers seen, all files.
    pub tally: ReadTally,
    /// khmer's `n_unique_kmers`: adds that found an empty bin (the same for any thread count).
    pub unique_kmers: u64,
    /// Estimated false-positive rate.
    pub fp_rate: f64,
}

/// The first line of khmer's `.info` side files (kept so that tools parsing them still work).
pub const INFO_VERSION_LINE: &str = "khmer version: 3.0.0a3\n";

/// Writes `bytes` to `path` (`-` = stdout) uncompressed whatever its name, through an
/// [`OutputFile`] (temporary name, renamed when complete) of the run `ctx`; errors name the file.
pub fn write_text(path: &str, bytes: impl AsRef<[u8]>, ctx: &RunContext) -> Result<()> {
    let mut out = OutputFile::create_in(path, Compression::None, ctx)?;
    out.write_all(bytes.as_ref()).map_err(|e| Error::io(path, e))?;
    out.finish()
}

/// Refuses, before anything is read, a file load-into-counting would write (the table `output`,
/// its `OUT.info`, `OUT.info.json` and `OUT.info.tsv`, the side outputs declared on `ctx`) that
/// is one of `inputs`. [`run`] checks this first; a front end that reads the inputs elsewhere
/// (the sharded run) calls it before starting.
pub fn refuse_overwrites(inputs: &[String], output: &str, ctx: &RunContext) -> Result<()> {
    let side_files = [".info", ".info.json", ".info.tsv"].map(|suffix| format!("{output}{suffix}"));
    crate::io::refuse_inputs_as_outputs(
        ctx,
        inputs,
        std::iter::once(output).chain(side_files.iter().map(String::as_str)),
    )
}

/// Runs `load-into-counting`: builds the table, counts every input, saves it, writes
/// `OUT.info` (and `OUT.info.json|tsv`). A table over the 0.2 false-positive ceiling ends the
/// run before anything is written (khmer writes the table and `OUT.info` first: a failed run
/// leaving its outputs behind is what kmerflow avoids). With khmer's layout the table is also saved mid-run
/// after every 10th file, as khmer does; a run that then fails or is interrupted (SIGINT,
/// SIGTERM) removes that checkpoint, a killed one (SIGKILL) leaves it. A blocked table is counted in anonymous (huge-page)
/// memory and written once at the end, unless it is larger than half the physical memory:
/// then it is counted straight into a mapped file (which may page to disk) under a temporary
/// name, renamed to the output once its header is written at the end. Counting into the file map is
/// about 2.7× slower where it fits in memory (4 KiB page-cache pages: ecoli50_1.fq k21 N4
/// x1e8, 20.2 s vs 7.4 s at -T 1), hence the threshold. Sizing notes and warnings go to the
/// messages of `ctx`.
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    refuse_overwrites(&opts.inputs, &opts.output, ctx)?;
    ctx.progress().begin_pass("counting");
    let mut summary = Summary::default();
    let fp = match opts.layout {
        Layout::Khmer => {
            let mut table = sizing::create_countgraph(&opts.params, 1.0, ctx)?;
            if opts.bigcount && !opts.params.small_count {
                table.set_use_bigcount(true)?;
            }
            let mut checkpointed = false;
            let counted = count_inputs(ctx, opts, &mut table, &mut summary, |t, index| {
                if index > 0 && index % 10 == 0 {
                    t.save_in(&opts.output, ctx)?;
                    checkpointed = true;
                }
                Ok(())
            });
            let checked = counted.and_then(|()| {
                check_fp_rate(&table, MAX_FP_RATE, opts.params.force, sizing::target_rate(&opts.params), ctx)
            });
            if checked.is_err() && checkpointed {
                // A run that fails or is interrupted leaves no table under the final name.
                let _ = std::fs::remove_file(&opts.output);
            }
            let fp = checked?;
            table.save_in(&opts.output, ctx)?;
            ctx.files().add_output(&opts.output);
            fp
        }
        Layout::Blocked => {
            check_blocked_output(&opts.output)?;
            let shape = sizing::blocked_countgraph_params(&opts.params, 1.0, ctx)?;
            let in_file = shape.data_bytes() > memory::physical_memory() / 2;
            memory::check_table_fits(shape.data_bytes() as f64, if in_file { Backing::File } else { Backing::Memory })?;
            // `file` is bound first so that it is dropped last: a failed or cancelled run unmaps
            // the table before its file is removed, whose blocks are then freed outside this
            // process (see `io::discard`) instead of in the unmapping.
            let (file, mut table) = if in_file {
                let (table, file) = BlockedTable::create_file_backed(&opts.output, shape)?;
                (Some(file), table)
            } else {
                (None, BlockedTable::with_params(shape, opts.params.alloc)?)
            };
            count_inputs(ctx, opts, &mut table, &mut summary, |_, _| Ok(()))?;
            let fp = table.expected_fp_rate();
            let resize = sizing::blocked_resize_hint(table.params(), fp, sizing::target_rate(&opts.params));
            let fp = fp_rate_check(fp, MAX_FP_RATE, opts.params.force, &resize, ctx)?;
            match file {
                Some(file) => table.finish(file)?,
                None => table.save_in(&opts.output, ctx)?,
            }
            ctx.files().add_output(&opts.output);
            fp
        }
    };
    summary.fp_rate = fp;
    write_side_files(&opts.output, &opts.inputs, &summary, opts.summary, ctx)?;
    Ok(summary)
}

/// Counts the `inputs` of `opts` on a sharded table (`table`, its remote shards reached through
/// `remote`, batches of about `batch_kmers` k-mers) within `ctx`, stopping as the one-process
/// run stops once the table is over the false-positive ceiling (checked after each batch), and
/// checks the ceiling at the end; returns the summary. Saving the table (shard by shard) and
/// the side files are the caller's.
pub fn run_sharded(
    opts: &Options,
    table: &mut dyn ShardedTable,
    remote: &mut dyn RemoteShards,
    batch_kmers: usize,
    ctx: &RunContext,
) -> Result<Summary> {
    ctx.progress().begin_pass("counting");
    let limit = FpLimit::of(MAX_FP_RATE, &opts.params);
    let mut summary = Summary {
        tally: count_sharded(&opts.inputs, table, remote, batch_kmers, Some(&limit), ctx)?,
        ..Summary::default()
    };
    summary.unique_kmers = table.n_unique_kmers();
    let fp = table.fp_rate();
    let resize = table.resize_hint(fp, sizing::target_rate(&opts.params));
    summary.fp_rate = fp_rate_check(fp, MAX_FP_RATE, opts.params.force, &resize, ctx)?;
    Ok(summary)
}

/// Counts every read of `inputs`, in order, on a sharded table (as [`run_sharded`]), stopping
/// once the table is over `limit` when given; returns the tally.
pub fn count_sharded(
    inputs: &[String],
    table: &mut dyn ShardedTable,
    remote: &mut dyn RemoteShards,
    batch_kmers: usize,
    limit: Option<&FpLimit>,
    ctx: &RunContext,
) -> Result<ReadTally> {
    let mut tally = ReadTally::default();
    for path in inputs {
        let reader = PairedReader::new(FastxReader::open_in(path, ctx)?, PairMode::ForceSingle, None);
        let mut run = table.count(Box::new(reader), batch_kmers)?;
        let watch = |run: &dyn CountBatches| limit.map_or(Ok(()), |limit| limit.stop_early(run, path, run.totals().0));
        let (reads, kmers, short_reads) = drive::count_file(&mut *run, remote, watch)?;
        tally.add(ReadTally { reads, kmers, short_reads });
    }
    ctx.metrics().add_count(metrics::KMERS, tally.kmers);
    Ok(tally)
}

/// Refuses a blocked table's output path ending in `.gz` (it is saved uncompressed in
/// kmerflow's format).
pub fn check_blocked_output(output: &str) -> Result<()> {
    if output.ends_with(".gz") {
        return Err(Error::invalid(format!(
            "{output}: the blocked layout is saved uncompressed in kmerflow's format; drop the .gz"
        )));
    }
    Ok(())
}

/// Writes what `load-into-counting` writes beside the table `output` counted from `inputs`:
/// `OUT.info` (the inputs, unique k-mers, false-positive rate) and, with `format`,
/// `OUT.info.json` or `OUT.info.tsv` exactly as khmer does. The Python package's run on a table
/// sharded over Dask workers writes them here too.
pub fn write_side_files(
    output: &str,
    inputs: &[String],
    summary: &Summary,
    format: Option<SummaryFormat>,
    ctx: &RunContext,
) -> Result<()> {
    let mut info = String::from(INFO_VERSION_LINE);
    for input in inputs {
        info.push_str(&format!("through {input}\n"));
    }
    info.push_str(&format!("Total number of unique k-mers: {}\n", summary.unique_kmers));
    info.push_str(&format!("fp rate estimated to be {:.3}\n\n", summary.fp_rate));
    write_text(&format!("{output}.info"), &info, ctx)?;
    match format {
        Some(format) => write_summary(output, inputs, summary, format, ctx),
        None => Ok(()),
    }
}

/// Counts every input into `table` in order, calling `after_file` with the file's index;
/// records the tallies and the unique k-mer count in `summary`. Stops as soon as the table is
/// over load-into-counting's false-positive ceiling (unless `-f`).
fn count_inputs<T: CountingTable + OwnedCounting + FpRate>(
    ctx: &RunContext,
    opts: &Options,
    table: &mut T,
    summary: &mut Summary,
    mut after_file: impl FnMut(&T, usize) -> Result<()>,
) -> Result<()> {
    for (index, input) in opts.inputs.iter().enumerate() {
        summary.tally.add(consume_file(table, input, Some(&FpLimit::of(MAX_FP_RATE, &opts.params)), ctx)?);
        after_file(table, index)?;
    }
    summary.unique_kmers = table.n_unique_kmers();
    Ok(())
}

/// Writes `OUT.info.json` or `OUT.info.tsv` exactly as khmer does.
fn write_summary(
    output: &str,
    inputs: &[String],
    summary: &Summary,
    format: SummaryFormat,
    ctx: &RunContext,
) -> Result<()> {
    let base = std::path::Path::new(output).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (path, text) = match format {
        SummaryFormat::Json => {
            let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
            let files: Vec<String> = inputs.iter().map(|f| quote(f)).collect();
            let text = format!(
                "{{\"ht_name\": {}, \"fpr\": {}, \"num_kmers\": {}, \"files\": [{}], \
                 \"mrinfo_version\": \"0.2.0\", \"num_reads\": {}}}\n",
                quote(&base),
                pyfmt::repr(summary.fp_rate),
                summary.unique_kmers,
                files.join(", "),
                summary.tally.reads
            );
            (format!("{output}.info.json"), text)
        }
        SummaryFormat::Tsv => {
            let text = format!(
                "ht_name\tfpr\tnum_kmers\tnum_reads\tfiles\n{base}\t{:.3}\t{}\t{}\t{}\n",
                summary.fp_rate,
                summary.unique_kmers,
                summary.tally.reads,
                inputs.join(";")
            );
            (format!("{output}.info.tsv"), text)
        }
    };
    write_text(&path, &text, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{CounterWidth, HashKind, KhmerTable, StorageKind};
    use rand::{Rng, SeedableRng};

    /// Seeded random reads with Ns, short reads and one read repeated 300 times (bigcount).
    fn reads_file() -> (tempfile::NamedTempFile, Vec<u8>) {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let repeated: Vec<u8> = (0..60).map(|_| b"ACGT"[rng.random_range(0..4)]).collect();
        for i in 0..6000 {
            let seq: Vec<u8> = if i % 20 == 0 {
                repeated.clone()
            } else {
                let len = rng.random_range(5..150);
                (0..len).map(|_| b"ACGTN"[rng.random_range(0..5)]).collect()
            };
            writeln!(file, ">r{i}\n{}", String::from_utf8(seq).unwrap()).unwrap();
        }
        file.flush().unwrap();
        (file, repeated)
    }

    /// load-into-counting on a sharded table (one shard held here, two answered as a worker
    /// answers, batches of a few reads) counts what the one-process run counts: its summary
    /// and its table, bigcounts included.
    #[test]
    fn a_sharded_run_counts_what_one_process_counts() {
        use crate::shards::drive::KhmerShards;
        use crate::shards::khmer::{Shard, ShardClient};
        use crate::shards::runs::testing::InProcess;
        let (file, repeated) = reads_file();
        let dir = tempfile::tempdir().unwrap();
        let params =
            TableParams { ksize: 12, n_tables: 3, max_tablesize: 5000.0, force: true, ..TableParams::default() };
        let opts = Options {
            params: params.clone(),
            output: dir.path().join("one.ct").to_string_lossy().into_owned(),
            inputs: vec![file.path().to_string_lossy().into_owned(); 2],
            bigcount: true,
            summary: None,
            layout: Layout::Khmer,
        };
        let one = run(&opts, &RunContext::new()).unwrap();

        let sizes = sizing::countgraph_sizes(&params, 1.0, &RunContext::new()).unwrap();
        let client = ShardClient::new(12, HashKind::TwoBit, &sizes, 3, true).unwrap();
        let b = client.map().bounds().to_vec();
        let mut here: Vec<Shard> = (0..3).map(|s| Shard::new(b[s], b[s + 1] - b[s], 255).unwrap()).collect();
        let mut remote = InProcess::new(here.split_off(1));
        let local = here.iter_mut().map(Some).chain([None, None]).collect();
        let mut table = KhmerShards { client: &client, local };
        let sharded = run_sharded(&opts, &mut table, &mut remote, 500, &RunContext::new()).unwrap();

        assert_eq!(serde_json::to_value(&sharded).unwrap(), serde_json::to_value(&one).unwrap());
        assert!(one.tally.short_reads > 0 && one.unique_kmers > 0);
        let cells: Vec<&[u8]> = here.iter().chain(&remote.shards).map(Shard::cells).collect();
        let gathered = client.gather(&cells).unwrap();
        let saved = KhmerTable::load(&opts.output, HashKind::TwoBit).unwrap();
        assert_eq!(gathered.raw_tables(), saved.raw_tables());
        let counts = |table: &KhmerTable| {
            let mut counts = Vec::new();
            table.kmer_counts(&repeated, &mut counts);
            counts
        };
        assert!(counts(&saved).iter().all(|&c| c > 255), "counts past 255");
        assert_eq!(counts(&gathered), counts(&saved));
    }

    /// `count(1)` (what a table of kind `kind` counted with one thread), checked to be
    /// `count(t)` for each of `threads`.
    fn same_with_any_threads<T: PartialEq>(
        threads: &[usize],
        kind: impl std::fmt::Debug,
        count: impl Fn(usize) -> T,
    ) -> T {
        let one = count(1);
        for &t in threads {
            assert!(count(t) == one, "{kind:?}, {t} threads");
        }
        one
    }

    #[test]
    fn khmer_layout_counts_do_not_depend_on_threads() {
        let (file, repeated) = reads_file();
        let path = file.path().to_str().unwrap();
        for storage in [StorageKind::Byte, StorageKind::Nibble, StorageKind::Bit] {
            // Small tables: k-mers collide, bins saturate, bigcount entries appear.
            let count = |threads: usize| {
                let mut table = KhmerTable::new(12, HashKind::TwoBit, storage, 5000, 4).unwrap();
                if storage == StorageKind::Byte {
                    table.set_use_bigcount(true).unwrap();
                }
                let tally = consume_file(&mut table, path, None, &RunContext::new().threads_set_to(threads)).unwrap();
                let mut probes: Vec<u32> = (0..20_000u64).map(|h| table.get_hash(h * 7919)).collect();
                table.kmer_counts(&repeated, &mut probes);
                let tables = table.raw_tables();
                (tally, tables, table.n_unique_kmers(), table.n_occupied(), probes)
            };
            let one = same_with_any_threads(&[2, 3, 4, 7], storage, count);
            assert!(one.2 > 0 && one.3 > 0 && one.0.short_reads > 0);
            if storage == StorageKind::Byte {
                assert!(one.4.iter().rev().take(49).all(|&c| c >= 300), "bigcount reached");
            }
        }
    }

    #[test]
    fn a_limit_stops_at_the_first_batch_counted_with_any_threads() {
        // 6000 reads in one batch and one slice, far over the ceiling of a 13-counter table:
        // the stop names the end of that batch, even when the owners count it after the walk.
        let (file, _) = reads_file();
        let path = file.path().to_str().unwrap();
        let limit = FpLimit { max: 0.2, force: false, target: 0.1 };
        for threads in [1, 2, 4] {
            let ctx = RunContext::new().threads_set_to(threads);
            for layout in 0..2 {
                let err = match layout {
                    0 => consume_file(
                        &mut KhmerTable::new(12, HashKind::TwoBit, StorageKind::Byte, 13, 4).unwrap(),
                        path,
                        Some(&limit),
                        &ctx,
                    ),
                    _ => consume_file(
                        &mut BlockedTable::new(12, 64, CounterWidth::Bits8, 4).unwrap(),
                        path,
                        Some(&limit),
                        &ctx,
                    ),
                }
                .unwrap_err()
                .to_string();
                assert!(err.starts_with(&format!("{path}: stopped at read 6000: ")), "{threads} threads: {err}");
            }
            let mut table = KhmerTable::new(12, HashKind::TwoBit, StorageKind::Byte, 13, 4).unwrap();
            let forced = FpLimit { force: true, ..limit };
            assert_eq!(consume_file(&mut table, path, Some(&forced), &ctx).unwrap().reads, 6000);
        }
    }

    #[test]
    fn blocked_layout_counts_do_not_depend_on_threads() {
        let (file, _) = reads_file();
        let path = file.path().to_str().unwrap();
        for width in [CounterWidth::Bits8, CounterWidth::Bits4, CounterWidth::Bits1] {
            let count = |threads: usize| {
                let mut table = BlockedTable::new(12, 64 * 300, width, 4).unwrap();
                let tally = consume_file(&mut table, path, None, &RunContext::new().threads_set_to(threads)).unwrap();
                (tally, table.raw_bytes(), table.n_unique_kmers(), table.n_occupied())
            };
            let one = same_with_any_threads(&[2, 3, 5], width, count);
            assert!(one.2 > 0 && one.3 > 0);
        }
    }
}
