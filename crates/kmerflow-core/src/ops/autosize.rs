//! Tables that size themselves (`-M auto`, and `-U` without `-x`/`-M`): the distinct k-mers of
//! the inputs (from `-U`, or a HyperLogLog pre-pass over them) give the memory that reaches the
//! target false-positive rate, refused before counting when it is above the memory cap.

use super::pyfmt::repr;
use super::sizing::{
    graph_size, memory_arg, memory_for_rate, target_rate, GraphKind, TableParams, NODEGRAPH_FP_TARGET,
};
use super::{memory, unique_kmers};
use crate::run::RunContext;
use crate::table::hll::HllHash;
use crate::{Error, Result};
use std::time::Instant;

/// Relative error of the pre-pass estimate (khmer's unique-kmers default; 2^14 registers).
const PREPASS_ERROR_RATE: f64 = 0.01;

/// What an estimated count is multiplied by before sizing: one plus two standard errors of the
/// pre-pass (1.04 / sqrt(2^14) = 0.81 %), so that an estimate below the truth seldom leaves the
/// table above the target rate (1 % fewer k-mers estimated is 2.6 % more false positives at 0.1).
const PREPASS_MARGIN: f64 = 1.0 + 2.0 * 1.04 / 128.0;

/// The share of the available memory an automatically sized table may take by default.
const DEFAULT_CAP_SHARE: f64 = 0.5;

/// The least memory an automatically sized table gets (64 KiB): khmer's tables are the primes
/// below the size, and below a few thousand counters the gaps between primes (and the spread of
/// a few hundred k-mers) leave the smallest table far above the target rate.
const MIN_MEMORY: f64 = 65536.0;

/// How a table was sized automatically.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoSize {
    /// Distinct k-mers the table is sized for.
    pub distinct_kmers: f64,
    /// Whether they were estimated by the pre-pass (else given with `-U`).
    pub estimated: bool,
    /// Seconds the pre-pass took (0 without one).
    pub prepass_seconds: f64,
    /// The target false-positive rate.
    pub fp_rate: f64,
    /// The memory chosen (`-M`), in bytes.
    pub memory: f64,
    /// The memory cap it had to fit in, in bytes.
    pub cap: f64,
    /// The number of tables.
    pub n_tables: usize,
    /// The size of each table in counters (khmer's layout makes it the primes just below).
    pub tablesize: u64,
    /// The false-positive rate `distinct_kmers` give in tables of that size.
    pub expected_fp_rate: f64,
}

/// The default memory cap: half of [`memory::available_memory`].
pub fn default_memory_cap() -> f64 {
    memory::available_memory() as f64 * DEFAULT_CAP_SHARE
}

/// The memory for `distinct_kmers` at the target rate of `params` (`--fp-rate`, default
/// khmer's 0.1; at least [`MIN_MEMORY`]), refused when above the memory cap (`--memory-cap`, default
/// [`default_memory_cap`]) with the `-M` that would reach the rate.
/// The memory serves both layouts: the blocked layout's estimated rate, (occupied / counters)^N
/// with N distinct counters set per k-mer, has the expectation of khmer's N tables of the same
/// total memory.
pub fn size_for(params: &TableParams, distinct_kmers: f64) -> Result<(f64, f64, f64)> {
    size_of_kind(params, counting_kind(params), distinct_kmers)
}

/// The kind of the counting tables of `params` (4-bit counters with `--small-count`).
fn counting_kind(params: &TableParams) -> GraphKind {
    if params.small_count {
        GraphKind::SmallCountgraph
    } else {
        GraphKind::Countgraph
    }
}

/// [`size_for`] tables of `kind`: a nodegraph's target rate is khmer's 0.01 for it unless
/// `--fp-rate`.
fn size_of_kind(params: &TableParams, kind: GraphKind, distinct_kmers: f64) -> Result<(f64, f64, f64)> {
    let fp_rate = match kind {
        GraphKind::Nodegraph => params.fp_rate.filter(|&f| f > 0.0 && f < 1.0).unwrap_or(NODEGRAPH_FP_TARGET),
        _ => target_rate(params),
    };
    let memory = memory_for_rate(distinct_kmers, params.n_tables, fp_rate, kind).max(MIN_MEMORY);
    let cap = params.memory_cap.unwrap_or_else(default_memory_cap);
    if memory > cap {
        return Err(Error::invalid(format!(
            "a table for about {} distinct k-mers at false-positive rate {} needs -M {}, above the memory cap \
             of {} (--memory-cap; default half the available memory)",
            distinct_kmers.round(),
            repr(fp_rate),
            memory_arg(memory),
            memory_arg(cap)
        )));
    }
    Ok((memory, fp_rate, cap))
}

/// The first of `inputs` that can be read only once (stdin, a FIFO, a character device), so
/// that no pre-pass can count it first; a path that cannot be looked up is not one (reading it
/// fails later, naming it).
pub fn read_once_input(inputs: &[String]) -> Option<&str> {
    inputs.iter().map(String::as_str).find(|path| {
        *path == "-"
            || path.starts_with("/dev/std")
            || std::fs::metadata(path).is_ok_and(|meta| !meta.is_file() && !meta.is_dir())
    })
}

/// Resolves an automatic size (`params.auto_memory`) into `params.max_memory`: the distinct
/// k-mers are `-U` when given, else estimated by a HyperLogLog pass over `inputs` on the
/// threads of `ctx`. The caller tells the size chosen ([`AutoSize::describe`]). Returns `None`
/// (and leaves `params` alone) when the size is not automatic.
pub fn resolve(params: &mut TableParams, inputs: &[String], ctx: &RunContext) -> Result<Option<AutoSize>> {
    resolve_kind(params, counting_kind(params), inputs, ctx)
}

/// The distinct k-mers of `inputs` estimated by one HyperLogLog pass. With `-f/--force` an input
/// that cannot be read is left out, as the command then skips it: the inputs are estimated one
/// by one and the estimates added (shared k-mers counted more than once, so the table errs on
/// the large side).
fn estimate_distinct(params: &TableParams, inputs: &[String], ctx: &RunContext) -> Result<u64> {
    let estimate = |inputs: &[String]| {
        let opts = unique_kmers::Options {
            ksize: params.ksize,
            error_rate: PREPASS_ERROR_RATE,
            inputs: inputs.to_vec(),
            stream_records: false,
            hash: HllHash::Fast,
            strand: params.strand,
        };
        unique_kmers::run(&opts, ctx, |_| Ok(())).map(|summary| summary.total)
    };
    match estimate(inputs) {
        Err(Error::Cancelled) => Err(Error::Cancelled),
        Err(_) if params.force && inputs.len() > 1 => {
            Ok(inputs.iter().filter_map(|input| estimate(std::slice::from_ref(input)).ok()).sum())
        }
        Err(_) if params.force => Ok(0),
        result => result,
    }
}

/// [`resolve`] for tables of `kind` (a nodegraph's presence bits, for load-graph).
pub fn resolve_kind(
    params: &mut TableParams,
    kind: GraphKind,
    inputs: &[String],
    ctx: &RunContext,
) -> Result<Option<AutoSize>> {
    if !params.auto_memory {
        return Ok(None);
    }
    let started = Instant::now();
    let (distinct_kmers, estimated) = if params.unique_kmers > 0.0 {
        (params.unique_kmers, false)
    } else {
        if let Some(stdin) = read_once_input(inputs) {
            return Err(Error::invalid(format!(
                "-M auto reads the inputs twice and {stdin} can be read once; give -U (estimated distinct \
                 k-mers, e.g. from `kmerflow unique-kmers`) or -M"
            )));
        }
        ctx.progress().begin_pass("estimating distinct k-mers");
        (estimate_distinct(params, inputs, ctx)? as f64, true)
    };
    let prepass_seconds = if estimated { started.elapsed().as_secs_f64() } else { 0.0 };
    let margin = if estimated { PREPASS_MARGIN } else { 1.0 };
    let (memory, fp_rate, cap) = size_of_kind(params, kind, distinct_kmers * margin)?;
    params.max_memory = Some(memory);
    params.unique_kmers = 0.0;
    params.auto_memory = false;
    let tablesize = graph_size(params, Some(memory), kind, 1.0) as u64;
    let n_tables = params.n_tables;
    let expected_fp_rate = (-(-distinct_kmers / tablesize.max(1) as f64).exp_m1()).powi(n_tables as i32);
    let chosen = AutoSize {
        distinct_kmers,
        estimated,
        prepass_seconds,
        fp_rate,
        memory,
        cap,
        n_tables,
        tablesize,
        expected_fp_rate,
    };
    Ok(Some(chosen))
}

impl AutoSize {
    /// The line telling what was chosen.
    pub fn describe(&self) -> String {
        let source = if self.estimated {
            format!("estimated in {:.2} s", self.prepass_seconds)
        } else {
            "given with -U".to_string()
        };
        format!(
            "table sized automatically: about {} distinct k-mers ({source}), -M {} for a false-positive rate of {} \
             ({} tables of {} counters)",
            self.distinct_kmers.round(),
            memory_arg(self.memory),
            repr(self.fp_rate),
            self.n_tables,
            self.tablesize
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(edit: impl FnOnce(&mut TableParams)) -> TableParams {
        let mut p = TableParams { auto_memory: true, memory_cap: Some(1e12), ..TableParams::default() };
        edit(&mut p);
        p
    }

    #[test]
    fn unique_kmers_give_the_memory_for_the_rate() {
        let mut p = auto(|p| p.unique_kmers = 1e6);
        let chosen = resolve(&mut p, &[], &RunContext::new()).unwrap().unwrap();
        // 4 tables reaching 0.1: each of 1e6 / -ln(1 - 0.1^(1/4)) counters.
        let per_table = 1e6 / -(1.0 - 0.1f64.powf(0.25)).ln();
        assert!((chosen.memory - 4.0 * per_table).abs() <= 1.0, "{chosen:?}");
        assert_eq!(p.max_memory, Some(chosen.memory));
        assert!(!p.auto_memory && p.unique_kmers == 0.0 && !chosen.estimated);
        let rate = (1.0 - (-1e6 / (chosen.memory / 4.0)).exp()).powi(4);
        assert!((rate - 0.1).abs() < 1e-6, "{rate}");
        assert_eq!((chosen.n_tables, chosen.tablesize), (4, (chosen.memory / 4.0) as u64));
        assert!((chosen.expected_fp_rate - 0.1).abs() < 1e-6, "{chosen:?}");
        let mut small = auto(|p| {
            p.unique_kmers = 1e6;
            p.small_count = true;
        });
        assert!(
            (resolve(&mut small, &[], &RunContext::new()).unwrap().unwrap().memory - chosen.memory / 2.0).abs() <= 1.0
        );
    }

    #[test]
    fn the_memory_for_a_rate_serves_the_blocked_layout() {
        use crate::table::{BlockedTable, CounterWidth, CountingTable};
        use rand::{Rng, SeedableRng};
        // A blocked table's rate is (occupied / counters)^N and a k-mer sets N distinct counters of
        // its line: after n k-mers a counter is still zero with probability (1 - N/C)^n, as in N
        // tables of C/N counters, so the memory khmer's layout needs gives the blocked rate too.
        let kmers = 200_000;
        for rate in [0.1, 0.02] {
            let (memory, _, _) = size_for(&auto(|p| p.fp_rate = Some(rate)), kmers as f64).unwrap();
            let table = BlockedTable::new(20, memory as u64, CounterWidth::Bits8, 4).unwrap();
            let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
            (0..kmers).for_each(|_| _ = table.add_hash(rng.random()));
            assert!((table.expected_fp_rate() / rate - 1.0).abs() < 0.03, "{rate}: {}", table.expected_fp_rate());
        }
    }

    #[test]
    fn a_table_above_the_cap_is_refused_naming_the_memory() {
        let mut p = auto(|p| {
            p.unique_kmers = 1e8;
            p.memory_cap = Some(1e6);
        });
        let err = resolve(&mut p, &[], &RunContext::new()).unwrap_err().to_string();
        assert!(err.contains("needs -M 485M") && err.contains("--memory-cap"), "{err}");
        let mut stdin = auto(|_| ());
        assert!(resolve(&mut stdin, &["-".to_string()], &RunContext::new()).unwrap_err().to_string().contains("-U"));
    }

    #[test]
    fn inputs_read_once_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("reads.fa");
        std::fs::write(&file, ">r\nACGT\n").unwrap();
        let file = file.to_string_lossy().into_owned();
        let missing = format!("{file}.missing");
        assert_eq!(read_once_input(&[file.clone(), missing.clone()]), None);
        assert_eq!(read_once_input(&[file.clone(), "-".to_string()]), Some("-"));
        assert_eq!(read_once_input(&["/dev/stdin".to_string()]), Some("/dev/stdin"));
        // A character device (read only for its file type here).
        assert_eq!(read_once_input(&["/dev/zero".to_string(), file]), Some("/dev/zero"));
    }

    #[test]
    fn a_few_kmers_get_the_least_memory() {
        let mut p = auto(|p| p.unique_kmers = 100.0);
        let chosen = resolve(&mut p, &[], &RunContext::new()).unwrap().unwrap();
        assert_eq!(chosen.memory, MIN_MEMORY);
        assert!(chosen.expected_fp_rate < 1e-6, "{chosen:?}");
    }

    #[test]
    fn fixed_sizes_are_left_alone() {
        let mut p = TableParams::default();
        assert_eq!(resolve(&mut p, &["-".to_string()], &RunContext::new()).unwrap(), None);
        assert_eq!(p, TableParams::default());
    }
}
