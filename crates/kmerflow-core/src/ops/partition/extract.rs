//! `extract-partitions`: the partition size distribution of annotated reads (`.part` files)
//! and the reads grouped by partition into files of about a given number of reads.

use crate::io::fastx::for_each_record;
use crate::io::{write_record, Compression, OutputFile, Record, Staged};
use crate::run::RunContext;
use crate::{Error, Result};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::io::Write;

/// khmer's default `-X/--max-size` (reads per group file before a new one starts).
pub const DEFAULT_MAX_SIZE: u64 = 1_000_000;
/// khmer's default `-m/--min-partition-size` (partitions of at most this many reads are dropped).
pub const DEFAULT_MIN_PARTITION_SIZE: u64 = 5;

/// Options of `extract-partitions`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Output prefix: `PREFIX.dist`, `PREFIX.groupNNNN.fa|fq`, `PREFIX.unassigned.fa|fq`.
    pub prefix: String,
    /// Annotated read files (`name<TAB>pid` headers).
    pub inputs: Vec<String>,
    /// `-X`: a group file is closed once it holds more than this many reads.
    pub max_size: u64,
    /// `-m`: partitions with at most this many reads are not written.
    pub min_partition_size: u64,
    /// Write the group files (off with `-n/--no-output-groups`).
    pub output_groups: bool,
    /// `-U`: write the unassigned reads (partition 0).
    pub output_unassigned: bool,
    /// Compression of the read files (`--gzip`/`--bzip`; none by default, as khmer).
    pub compression: Option<Compression>,
}

/// What `extract-partitions` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Reads read.
    pub total_reads: u64,
    /// Reads written to group files.
    pub grouped_reads: u64,
    /// Reads of partitions too small to keep.
    pub small_partition_reads: u64,
    /// Reads without a partition.
    pub unassigned_reads: u64,
    /// Group files written.
    pub groups: Vec<String>,
}

/// The partition id after the last tab of an annotated read's name.
fn partition_of(rec: &Record<'_>, path: &str, index: u64) -> Result<u32> {
    let bad = |message: &str| Error::format(path, Some(index + 1), None, message.to_string());
    let tab = memchr::memrchr(b'\t', rec.name)
        .ok_or_else(|| bad("no partition id (a tab then a number) in the read name"))?;
    std::str::from_utf8(&rec.name[tab + 1..])
        .ok()
        .and_then(|id| id.trim().parse().ok())
        .ok_or_else(|| bad("the partition id after the last tab of the read name is not a number"))
}

/// Calls `f` on every read of `inputs` with its partition id.
fn for_each_partitioned(
    inputs: &[String],
    ctx: &RunContext,
    mut f: impl FnMut(&Record<'_>, u32) -> Result<()>,
) -> Result<()> {
    for input in inputs {
        let mut index = 0;
        for_each_record(input, ctx, |rec| {
            let pid = partition_of(&rec, input, index)?;
            index += 1;
            f(&rec, pid)
        })?;
    }
    Ok(())
}

/// khmer's grouping: partitions (id 0 aside) of more than `min` reads, by ascending size
/// (ties in order of first appearance), packed into groups until a group holds more than
/// `max` reads. Returns each kept partition's group and the number of groups.
pub fn develop_groups(counts: &[(u32, u64)], min: u64, max: u64) -> (FxHashMap<u32, usize>, usize) {
    let mut kept: Vec<(u32, u64)> = counts.iter().copied().filter(|&(pid, n)| pid != 0 && n > min).collect();
    kept.sort_by_key(|&(_, n)| n);
    let (mut groups, mut n_groups, mut total, mut open) = (FxHashMap::default(), 0, 0, false);
    for (pid, n) in kept {
        groups.insert(pid, n_groups);
        open = true;
        total += n;
        if total > max {
            n_groups += 1;
            total = 0;
            open = false;
        }
    }
    (groups, n_groups + usize::from(open))
}

/// khmer's `.dist` lines: `size partitions cumulative_partitions cumulative_reads` by size
/// (the unassigned reads count as one partition, as in khmer).
pub fn distribution(counts: &[(u32, u64)]) -> String {
    let mut by_size: BTreeMap<u64, u64> = BTreeMap::new();
    for &(_, n) in counts {
        *by_size.entry(n).or_default() += 1;
    }
    let (mut partitions, mut reads, mut out) = (0, 0, String::new());
    for (size, n) in by_size {
        partitions += n;
        reads += size * n;
        out.push_str(&format!("{size} {n} {partitions} {reads}\n"));
    }
    out
}

/// Runs `extract-partitions`: one pass counts the reads of each partition (and writes the
/// unassigned ones with `-U`), a second pass writes the groups; `PREFIX.dist` and every other
/// output appear together at the end (a failed run leaves none).
pub fn run(opts: &Options, ctx: &RunContext) -> Result<Summary> {
    let mut fastq = None;
    for input in &opts.inputs {
        let mut reader = crate::io::FastxReader::open_in(input, ctx)?;
        let Some(batch) = reader.next_batch()? else { continue };
        let Some(first) = batch.iter().next() else { continue };
        match fastq {
            Some(q) if q != first.qual.is_some() => {
                return Err(Error::format(
                    input,
                    Some(1),
                    None,
                    "Input files must have consistent format. Give all FASTA or all FASTQ.",
                ))
            }
            _ => fastq = Some(first.qual.is_some()),
        }
    }
    let suffix = if fastq == Some(true) { "fq" } else { "fa" };
    let compression = opts.compression.unwrap_or(Compression::None);
    let unassigned_path = format!("{}.unassigned.{suffix}", opts.prefix);
    let dist_path = format!("{}.dist", opts.prefix);
    crate::io::refuse_inputs_as_outputs(ctx, &opts.inputs, [&unassigned_path, &dist_path])?;

    let mut summary = Summary::default();
    let mut counts: Vec<(u32, u64)> = Vec::new();
    let mut index: FxHashMap<u32, usize> = FxHashMap::default();
    // every output is opened before the reads are, and appears only once all are written
    let mut dist = OutputFile::create_in(&dist_path, Compression::None, ctx)?;
    let mut unassigned =
        if opts.output_unassigned { Some(OutputFile::create_in(&unassigned_path, compression, ctx)?) } else { None };
    let mut buf = Vec::new();
    for_each_partitioned(&opts.inputs, ctx, |rec, pid| {
        summary.total_reads += 1;
        let slot = *index.entry(pid).or_insert_with(|| {
            counts.push((pid, 0));
            counts.len() - 1
        });
        counts[slot].1 += 1;
        if pid == 0 {
            summary.unassigned_reads += 1;
            if let Some(out) = &mut unassigned {
                buf.clear();
                write_record(&mut buf, rec);
                out.write_all(&buf).map_err(|e| Error::io(&unassigned_path, e))?;
            }
        }
        Ok(())
    })?;
    dist.write_all(distribution(&counts).as_bytes()).map_err(|e| Error::io(&dist_path, e))?;
    let mut done = vec![dist];
    done.extend(unassigned);
    if !opts.output_groups {
        commit_all(done)?;
        ctx.info("NOT outputting groups! Beware!");
        return Ok(summary);
    }
    let (groups, n_groups) = develop_groups(&counts, opts.min_partition_size, opts.max_size);
    let paths: Vec<String> = (0..n_groups).map(|i| format!("{}.group{i:04}.{suffix}", opts.prefix)).collect();
    crate::io::refuse_inputs_as_outputs(ctx, &opts.inputs, &paths)?;
    let mut outs =
        paths.iter().map(|path| OutputFile::create_in(path, compression, ctx)).collect::<Result<Vec<_>>>()?;
    let (mut grouped, mut small) = (0, 0);
    for_each_partitioned(&opts.inputs, ctx, |rec, pid| {
        if pid == 0 {
            return Ok(());
        }
        let Some(&group) = groups.get(&pid) else {
            small += 1;
            return Ok(());
        };
        buf.clear();
        write_record(&mut buf, rec);
        outs[group].write_all(&buf).map_err(|e| Error::io(&paths[group], e))?;
        grouped += 1;
        Ok(())
    })?;
    done.extend(outs);
    commit_all(done)?;
    summary.grouped_reads = grouped;
    summary.small_partition_reads = small;
    summary.groups = paths;
    Ok(summary)
}

/// Closes every output, then renames them all to their final names: a failure before leaves
/// none of them.
fn commit_all(outputs: Vec<OutputFile>) -> Result<()> {
    let staged = outputs.into_iter().map(OutputFile::close).collect::<Result<Vec<_>>>()?;
    staged.into_iter().try_for_each(Staged::commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_pack_partitions_by_size_until_over_the_maximum() {
        let counts = [(0, 9), (2, 3), (3, 10), (4, 6), (5, 7), (6, 1)];
        let (groups, n) = develop_groups(&counts, 1, 12);
        assert_eq!(n, 2);
        // sizes 3, 6, 7 -> 16 > 12 closes group 0; 10 opens group 1
        assert_eq!([groups[&2], groups[&4], groups[&5], groups[&3]], [0, 0, 0, 1]);
        assert!(!groups.contains_key(&6) && !groups.contains_key(&0));
        assert_eq!(distribution(&counts), "1 1 1 1\n3 1 2 4\n6 1 3 10\n7 1 4 17\n9 1 5 26\n10 1 6 36\n");
    }
}
