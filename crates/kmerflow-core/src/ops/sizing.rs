//! khmer's table-sizing arguments (`-k -N -x -M -U --fp-rate --small-count`) and checks
//! (docs/khmer-compat.md §2.1, `calc_expected_collisions` §2.8).

use super::memory::{check_table_fits, Backing};
use super::pyfmt::{general, repr};
use crate::kmer::Strand;
use crate::run::RunContext;
use crate::shards::blocked::BlockedShardClient;
use crate::shards::khmer::ShardClient;
use crate::table::CountingTable;
use crate::table::{
    AllocOptions, AnyTable, BlockedParams, BlockedTable, CounterWidth, HashKind, KhmerTable, Layout, StorageKind,
};
use crate::{Error, Result};

/// khmer's defaults.
pub const DEFAULT_K: usize = 32;
/// Default number of tables.
pub const DEFAULT_N_TABLES: usize = 4;
/// Default `-x`.
pub const DEFAULT_MAX_TABLESIZE: f64 = 1e6;

/// The table parameters common to all counting commands.
#[derive(Debug, Clone, PartialEq)]
pub struct TableParams {
    /// `-k/--ksize`.
    pub ksize: usize,
    /// `-N/--n_tables`.
    pub n_tables: usize,
    /// `-x/--max-tablesize`.
    pub max_tablesize: f64,
    /// `-M/--max-memory-usage` in bytes (decimal suffixes parsed by [`parse_memory`]).
    pub max_memory: Option<f64>,
    /// `-U/--unique-kmers` (0 = unknown).
    pub unique_kmers: f64,
    /// `--fp-rate` override.
    pub fp_rate: Option<f64>,
    /// `--small-count` (4-bit counters).
    pub small_count: bool,
    /// `-f/--force` (allows N > 20 and FP-rate overruns).
    pub force: bool,
    /// How the table memory is allocated (`--huge-pages`).
    pub alloc: AllocOptions,
    /// Size the table for the rate from the distinct k-mers (`-M auto`, or `-U` without `-x`/`-M`);
    /// [`crate::ops::autosize::resolve`] turns this into `max_memory` before a table is made.
    pub auto_memory: bool,
    /// `--memory-cap`: the most bytes an automatically sized table may take (default: half the
    /// available memory).
    pub memory_cap: Option<f64>,
    /// `--single-strand`: k-mers are hashed as read, not canonically.
    pub strand: Strand,
}

impl Default for TableParams {
    fn default() -> Self {
        TableParams {
            ksize: DEFAULT_K,
            n_tables: DEFAULT_N_TABLES,
            max_tablesize: DEFAULT_MAX_TABLESIZE,
            max_memory: None,
            unique_kmers: 0.0,
            fp_rate: None,
            small_count: false,
            force: false,
            alloc: AllocOptions::default(),
            auto_memory: false,
            memory_cap: None,
            strand: Strand::Canonical,
        }
    }
}

/// khmer's `memory_setting`: a float, scientific notation, or a K/M/G/T (decimal) suffix.
pub fn parse_memory(text: &str) -> Result<f64> {
    let bad = || Error::invalid(format!("cannot parse memory setting \"{text}\""));
    if let Some(value) = parse_python_float(text) {
        return Ok(value);
    }
    let mut chars = text.chars();
    let suffix = chars.next_back().ok_or_else(bad)?;
    let scale = match suffix.to_ascii_uppercase() {
        'K' => 1e3,
        'M' => 1e6,
        'G' => 1e9,
        'T' => 1e12,
        _ => return Err(bad()),
    };
    parse_python_float(chars.as_str()).map(|v| v * scale).ok_or_else(bad)
}

/// Python's `float(text)` for the spellings a user types (surrounding whitespace allowed).
fn parse_python_float(text: &str) -> Option<f64> {
    let t = text.trim();
    let plain = t.trim_start_matches(['+', '-']);
    let ok = !plain.is_empty()
        && (plain.starts_with(|c: char| c.is_ascii_digit() || c == '.')
            || ["inf", "infinity", "nan"].contains(&plain.to_ascii_lowercase().as_str()));
    if ok {
        t.parse().ok()
    } else {
        None
    }
}

/// The table families khmer sizes, with their buckets per byte (`khmer._buckets_per_byte`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphKind {
    /// Byte counters (1 bucket per byte).
    Countgraph,
    /// Nibble counters (2 buckets per byte).
    SmallCountgraph,
    /// Bits (8 buckets per byte).
    Nodegraph,
}

impl GraphKind {
    /// The family of a table with `storage` counters.
    pub fn of_storage(storage: StorageKind) -> Self {
        match storage {
            StorageKind::Byte => GraphKind::Countgraph,
            StorageKind::Nibble => GraphKind::SmallCountgraph,
            StorageKind::Bit => GraphKind::Nodegraph,
        }
    }

    /// Counters per byte.
    pub fn buckets_per_byte(self) -> f64 {
        match self {
            GraphKind::Countgraph => 1.0,
            GraphKind::SmallCountgraph => 2.0,
            GraphKind::Nodegraph => 8.0,
        }
    }
}

/// khmer's default FP-rate ceiling for `-U` sizing of countgraphs.
pub const COUNTGRAPH_FP_TARGET: f64 = 0.1;
/// khmer's default FP-rate ceiling for `-U` sizing of nodegraphs.
pub const NODEGRAPH_FP_TARGET: f64 = 0.01;

/// One of khmer's sizing estimates (`estimate_optimal_with_K_and_*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeEstimate {
    /// Number of tables (Z).
    pub n_tables: u64,
    /// Size of each table (H).
    pub table_size: u64,
    /// Z * H.
    pub memory: u64,
    /// Expected false-positive rate.
    pub fp_rate: f64,
}

fn estimate(n_kmers: f64, n_tables: f64, table_size: impl Fn(f64) -> f64) -> SizeEstimate {
    let z = (n_tables as u64).max(1);
    let h = table_size(z as f64) as u64;
    let fp = (1.0 - (-n_kmers / h as f64).exp()).powf(z as f64);
    SizeEstimate { n_tables: z, table_size: h, memory: h * z, fp_rate: fp }
}

/// khmer's `estimate_optimal_with_K_and_M(n, M)`.
pub fn estimate_with_memory(n_kmers: f64, memory: f64) -> SizeEstimate {
    estimate(n_kmers, std::f64::consts::LN_2 * (memory / n_kmers), |z| memory / z)
}

/// khmer's `estimate_optimal_with_K_and_f(n, f)`.
pub fn estimate_with_fp_rate(n_kmers: f64, fp_rate: f64) -> SizeEstimate {
    estimate(n_kmers, fp_rate.ln() / 0.5f64.ln(), |z| -n_kmers / (1.0 - fp_rate.powf(1.0 / z)).ln())
}

/// The total memory in bytes (`-M`) of `n_tables` tables of `kind` that hold `n_kmers`
/// distinct k-mers at false-positive rate `fp_rate`: each table has m counters with
/// `fp_rate = (1 - exp(-n/m))^N`, so `m = -n / ln(1 - fp_rate^(1/N))`.
pub fn memory_for_rate(n_kmers: f64, n_tables: usize, fp_rate: f64, kind: GraphKind) -> f64 {
    let n = n_tables.max(1) as f64;
    let per_table = -n_kmers.max(1.0) / (-fp_rate.powf(1.0 / n)).ln_1p();
    (per_table * n / kind.buckets_per_byte()).ceil()
}

/// A byte count as a `-M` value a user can paste: three significant digits, rounded up, with
/// a decimal K/M/G/T suffix (`69.6M`, `485M`, `1.21G`).
pub fn memory_arg(bytes: f64) -> String {
    let bytes = bytes.max(1.0);
    let (scale, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")]
        .into_iter()
        .find(|&(scale, _)| bytes >= scale)
        .unwrap_or((1.0, ""));
    let value = bytes / scale;
    let decimals = 2 - (value.log10().floor() as i32).clamp(0, 2);
    let step = 10f64.powi(-decimals);
    let rounded = (value / step - 1e-9).ceil() * step;
    format!("{rounded:.prec$}{suffix}", prec = decimals as usize)
}

/// Occupancy above which a table's contents are only a lower bound.
const NEARLY_FULL: f64 = 0.9;

/// The memory that would bring a table whose estimated rate is `fp` (`n_tables` tables of
/// `per_table` counters of `kind`) to `target`, as a `-M` value; "at least" when the table is
/// nearly full and what it holds can hardly be told from its occupancy.
fn memory_to_reach(fp: f64, n_tables: usize, per_table: f64, kind: GraphKind, target: f64) -> String {
    let full = 1.0 - 1.0 / per_table.max(2.0);
    let occupancy = fp.powf(1.0 / n_tables.max(1) as f64).min(full);
    let kmers = -per_table * (-occupancy).ln_1p();
    let value = memory_arg(memory_for_rate(kmers, n_tables, target, kind));
    if occupancy >= NEARLY_FULL {
        format!("at least -M {value}")
    } else {
        format!("-M {value}")
    }
}

/// [`memory_to_reach`] for a table of either layout whose estimated rate is `fp`.
pub fn resize_hint(table: &AnyTable, fp: f64, target: f64) -> String {
    match table {
        AnyTable::Khmer(t) => khmer_resize_hint(t, fp, target),
        AnyTable::Blocked(t) => blocked_resize_hint(t.params(), fp, target),
    }
}

/// [`resize_hint`] of a blocked table of `shape`, here or sharded (its rate taken as that of N
/// tables sharing its counters).
pub fn blocked_resize_hint(shape: &BlockedParams, fp: f64, target: f64) -> String {
    let kind = GraphKind::of_storage(shape.width.storage());
    let per_table = shape.data_bytes() as f64 * kind.buckets_per_byte() / shape.probes.max(1) as f64;
    memory_to_reach(fp, shape.probes, per_table, kind, target)
}

/// [`resize_hint`] of a table of khmer's layout.
pub fn khmer_resize_hint(table: &KhmerTable, fp: f64, target: f64) -> String {
    let kind = GraphKind::of_storage(table.storage_kind());
    let per_table = table.hashsizes().iter().min().copied().unwrap_or(1) as f64;
    memory_to_reach(fp, table.n_tables(), per_table, kind, target)
}

/// [`khmer_resize_hint`] of a Countgraph (8-bit counters) of tables of `sizes`, held
/// elsewhere (sharded).
pub fn countgraph_resize_hint(sizes: &[u64], fp: f64, target: f64) -> String {
    let per_table = sizes.iter().min().copied().unwrap_or(1) as f64;
    memory_to_reach(fp, sizes.len(), per_table, GraphKind::Countgraph, target)
}

/// A table whose false-positive rate is estimated from its occupancy as it fills (khmer's
/// `calc_expected_collisions`; the occupancy is a running counter, so the estimate is cheap).
pub trait FpRate {
    /// The estimated rate now.
    fn fp_rate(&self) -> f64;
    /// The `-M` that would bring this table, now at rate `fp`, to `target` ([`resize_hint`]).
    fn resize_hint(&self, fp: f64, target: f64) -> String;
}

impl FpRate for KhmerTable {
    fn fp_rate(&self) -> f64 {
        expected_fp_rate(self)
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        khmer_resize_hint(self, fp, target)
    }
}

impl FpRate for BlockedTable {
    fn fp_rate(&self) -> f64 {
        self.expected_fp_rate()
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        blocked_resize_hint(self.params(), fp, target)
    }
}

impl FpRate for AnyTable {
    fn fp_rate(&self) -> f64 {
        any_fp_rate(self)
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        resize_hint(self, fp, target)
    }
}

impl FpRate for ShardClient {
    fn fp_rate(&self) -> f64 {
        sharded_fp_rate(self)
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        countgraph_resize_hint(&self.map().sizes(), fp, target)
    }
}

impl FpRate for BlockedShardClient {
    fn fp_rate(&self) -> f64 {
        self.expected_fp_rate()
    }
    fn resize_hint(&self, fp: f64, target: f64) -> String {
        blocked_resize_hint(self.map().params(), fp, target)
    }
}

/// The false-positive rate a table is sized for: `--fp-rate`, default khmer's 0.1 for counting.
pub fn target_rate(params: &TableParams) -> f64 {
    params.fp_rate.filter(|&f| f > 0.0 && f < 1.0).unwrap_or(COUNTGRAPH_FP_TARGET)
}

/// khmer's `_check_fp_rate`: with `-U`, either verifies `-M` against the FP ceiling or derives
/// `-M` from the recommended size (when that fits under `-x`). Returns the effective `-M`.
fn check_fp_rate(params: &TableParams, kind: GraphKind, default_fp: f64, ctx: &RunContext) -> Result<Option<f64>> {
    let memory = params.max_memory.filter(|&m| m != 0.0);
    if params.unique_kmers == 0.0 {
        return Ok(memory);
    }
    let mut target = default_fp;
    if let Some(fp) = params.fp_rate.filter(|&f| f != 0.0) {
        ctx.info(format!("*** INFO: Overriding default fp {} with new fp: {}", repr(default_fp), repr(fp)));
        target = fp;
    }
    if let Some(memory) = memory {
        let res = estimate_with_memory(params.unique_kmers, memory);
        if res.fp_rate > target {
            let problem = format!(
                "the given restrictions (-U {}, -M {}) yield an estimated false positive rate of {}, \
                 which is above the recommended false positive ceiling of {}! -M {} would reach it",
                repr(params.unique_kmers),
                repr(memory),
                repr(res.fp_rate),
                repr(target),
                memory_arg(memory_for_rate(params.unique_kmers, params.n_tables, target, kind))
            );
            if !params.force {
                return Err(Error::invalid(format!("{problem}; use --force to override")));
            }
            ctx.error(format!("*** ERROR: {problem}"));
        }
        return Ok(Some(memory));
    }
    let res = estimate_with_fp_rate(params.unique_kmers, target);
    if params.max_tablesize != 0.0 && params.max_tablesize < res.table_size as f64 {
        let current = estimate_with_memory(params.unique_kmers, params.max_tablesize);
        ctx.warning("\n*** Warning: The given tablesize is too small!");
        ctx.warning(format!("*** Recommended tablesize is: {} bytes", general(res.table_size as f64, 5, 6)));
        ctx.warning(format!("*** Current is: {} bytes", general(params.max_tablesize, 5, 6)));
        ctx.warning(format!("*** Estimated FP rate with current config is: {}\n", repr(current.fp_rate)));
        Ok(None)
    } else {
        let ceiling = (res.memory as f64).max(1e6);
        ctx.info("*** INFO: set memory ceiling automatically.");
        ctx.info(format!("*** Ceiling is: {} bytes\n", general(ceiling, 3, 6)));
        Ok(Some(ceiling))
    }
}

/// khmer's `calculate_graphsize`: the requested size of each table, in buckets
/// (`multiplier * buckets_per_byte * M / N` with `-M`, else `-x`).
pub fn graph_size(params: &TableParams, memory: Option<f64>, kind: GraphKind, multiplier: f64) -> f64 {
    match memory {
        Some(m) => multiplier * (kind.buckets_per_byte() * m / params.n_tables as f64),
        None => params.max_tablesize,
    }
}

/// The checks shared by all table constructors: `-U` sizing, `N <= 20` unless forced, a
/// usable size. Returns the per-table size in buckets as khmer computes it (not truncated).
fn checked_size(
    params: &TableParams,
    kind: GraphKind,
    multiplier: f64,
    default_fp: f64,
    ctx: &RunContext,
) -> Result<f64> {
    if params.auto_memory {
        return Err(Error::invalid("-M auto is not supported by this command; give -M or -x"));
    }
    let memory = check_fp_rate(params, kind, default_fp, ctx)?;
    if params.n_tables == 0 {
        return Err(Error::invalid("the number of tables (-N) must be at least 1"));
    }
    if params.n_tables > 20 {
        if !params.force {
            return Err(Error::invalid(format!(
                "khmer only supports number of tables <= 20 (got -N {}); use --force to override",
                params.n_tables
            )));
        }
        ctx.warning("\n*** Warning: Maximum recommended number of tables is 20, discarded by force nonetheless!\n");
    }
    let size = graph_size(params, memory, kind, multiplier);
    if size.is_nan() || size < 1.0 {
        return Err(Error::invalid(format!("table size {} is too small (check -x / -M)", repr(size))));
    }
    Ok(size)
}

/// [`checked_size`] for khmer's layout, which also needs 1 <= k <= 32; returns the per-table
/// starting size as khmer passes it to the table (truncated to an integer).
fn checked_khmer_size(
    params: &TableParams,
    kind: GraphKind,
    multiplier: f64,
    default_fp: f64,
    ctx: &RunContext,
) -> Result<u64> {
    let size = checked_size(params, kind, multiplier, default_fp, ctx)?;
    check_table_fits(size * params.n_tables as f64 / kind.buckets_per_byte(), Backing::Memory)?;
    if params.ksize == 0 || params.ksize > 32 {
        return Err(Error::invalid(format!(
            "k-mer size {} is not supported: khmer only supports k-mer sizes <= 32 (and >= 1)",
            params.ksize
        )));
    }
    Ok(size as u64)
}

/// A countgraph (or small countgraph with `--small-count`) sized as khmer's
/// `create_countgraph(args, multiplier)` does, including the `-U` / FP-rate logic; the
/// warnings and notes khmer prints are emitted to `ctx`.
/// Bigcount is left off (the caller turns it on).
pub fn create_countgraph(params: &TableParams, multiplier: f64, ctx: &RunContext) -> Result<KhmerTable> {
    let (kind, storage) = if params.small_count {
        (GraphKind::SmallCountgraph, StorageKind::Nibble)
    } else {
        (GraphKind::Countgraph, StorageKind::Byte)
    };
    let size = checked_khmer_size(params, kind, multiplier, COUNTGRAPH_FP_TARGET, ctx)?;
    KhmerTable::new_with_options(params.ksize, HashKind::TwoBit, storage, size, params.n_tables, params.alloc)
        .map(|table| table.with_strand(params.strand))
}

/// The table sizes (primes) of the countgraph [`create_countgraph`] makes for `params` (8-bit
/// counters), with the same checks and messages, without allocating it: for a table whose
/// counters are held elsewhere (the Python package's tables sharded over Dask workers).
pub fn countgraph_sizes(params: &TableParams, multiplier: f64, ctx: &RunContext) -> Result<Vec<u64>> {
    let size = checked_khmer_size(params, GraphKind::Countgraph, multiplier, COUNTGRAPH_FP_TARGET, ctx)?;
    crate::table::primes::get_n_primes_near_x(params.n_tables, size)
}

/// The shape of a blocked countgraph of the same total memory as khmer's countgraph for
/// `params` (`-x` × `-N` bytes of 8-bit counters, or `-M` bytes; 4-bit with `--small-count`),
/// with `-N` counters per k-mer. Any k >= 1 is accepted.
pub fn blocked_countgraph_params(params: &TableParams, multiplier: f64, ctx: &RunContext) -> Result<BlockedParams> {
    let (kind, width) = if params.small_count {
        (GraphKind::SmallCountgraph, CounterWidth::Bits4)
    } else {
        (GraphKind::Countgraph, CounterWidth::Bits8)
    };
    let size = checked_size(params, kind, multiplier, COUNTGRAPH_FP_TARGET, ctx)?;
    let bytes = size * params.n_tables as f64 / kind.buckets_per_byte();
    let shape = BlockedParams {
        strand: params.strand,
        ..BlockedParams::new(params.ksize, bytes as u64, width, params.n_tables)
    };
    shape.check()?;
    Ok(shape)
}

/// A countgraph of `layout`, sized from `params` ([`create_countgraph`] or
/// [`blocked_countgraph_params`]), in anonymous memory.
pub fn create_counting_table(
    params: &TableParams,
    layout: Layout,
    multiplier: f64,
    ctx: &RunContext,
) -> Result<AnyTable> {
    match layout {
        Layout::Khmer => create_countgraph(params, multiplier, ctx).map(AnyTable::Khmer),
        Layout::Blocked => {
            let shape = blocked_countgraph_params(params, multiplier, ctx)?;
            check_table_fits(shape.data_bytes() as f64, Backing::Memory)?;
            BlockedTable::with_params(shape, params.alloc).map(AnyTable::Blocked)
        }
    }
}

/// A nodegraph sized as khmer's `create_nodegraph`.
pub fn create_nodegraph(params: &TableParams, ctx: &RunContext) -> Result<KhmerTable> {
    let size = checked_khmer_size(params, GraphKind::Nodegraph, 1.0, NODEGRAPH_FP_TARGET, ctx)?;
    KhmerTable::new_with_options(params.ksize, HashKind::TwoBit, StorageKind::Bit, size, params.n_tables, params.alloc)
        .map(|table| table.with_strand(params.strand))
}

/// khmer's `calc_expected_collisions`: (n_occupied / min(hashsizes)) ^ n_tables.
pub fn expected_fp_rate(table: &KhmerTable) -> f64 {
    occupancy_fp_rate(table.n_occupied(), table.hashsizes())
}

/// [`expected_fp_rate`] of a table sharded over other processes (its client's statistics).
pub fn sharded_fp_rate(client: &ShardClient) -> f64 {
    occupancy_fp_rate(client.n_occupied(), &client.map().sizes())
}

/// khmer's estimate of the false-positive rate of tables of `sizes` with `n_occupied` non-zero
/// counters in table 0.
fn occupancy_fp_rate(n_occupied: u64, sizes: &[u64]) -> f64 {
    let min = sizes.iter().copied().min().unwrap_or(1) as f64;
    (n_occupied as f64 / min).powf(sizes.len() as f64)
}

/// The estimated false-positive rate of a table of either layout ([`expected_fp_rate`] for
/// khmer's, the blocked table's own estimate otherwise).
pub fn any_fp_rate(table: &AnyTable) -> f64 {
    match table {
        AnyTable::Khmer(t) => expected_fp_rate(t),
        AnyTable::Blocked(t) => t.expected_fp_rate(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Message;

    fn params(edit: impl FnOnce(&mut TableParams)) -> TableParams {
        let mut p = TableParams::default();
        edit(&mut p);
        p
    }

    fn size_of(p: &TableParams, kind: GraphKind, multiplier: f64) -> Result<u64> {
        let default_fp = if kind == GraphKind::Nodegraph { NODEGRAPH_FP_TARGET } else { COUNTGRAPH_FP_TARGET };
        checked_khmer_size(p, kind, multiplier, default_fp, &RunContext::new())
    }

    #[test]
    fn memory_settings_parse_like_khmer() {
        assert_eq!(parse_memory("1e9").unwrap(), 1e9);
        assert_eq!(parse_memory("1000").unwrap(), 1000.0);
        assert_eq!(parse_memory("2G").unwrap(), 2e9);
        assert_eq!(parse_memory("1.5m").unwrap(), 1.5e6);
        assert_eq!(parse_memory("3k").unwrap(), 3000.0);
        assert_eq!(parse_memory("1T").unwrap(), 1e12);
        for bad in ["", "1GB", "G", "abc", "1X"] {
            assert!(parse_memory(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_from_x_and_m() {
        assert_eq!(size_of(&params(|p| p.max_tablesize = 1e7), GraphKind::Countgraph, 1.0).unwrap(), 10_000_000);
        // -x ignores the multiplier; -M divides by N and scales by buckets per byte.
        assert_eq!(size_of(&params(|_| ()), GraphKind::Countgraph, 8.0 / 9.3).unwrap(), 1_000_000);
        let m = params(|p| p.max_memory = Some(1e7));
        assert_eq!(size_of(&m, GraphKind::Countgraph, 1.0).unwrap(), 2_500_000);
        assert_eq!(size_of(&m, GraphKind::SmallCountgraph, 1.0).unwrap(), 5_000_000);
        assert_eq!(size_of(&m, GraphKind::Nodegraph, 1.0).unwrap(), 20_000_000);
        assert_eq!(size_of(&m, GraphKind::Countgraph, 8.0 / 9.3).unwrap(), 2_150_537);
    }

    /// The countgraph size `p` gives at khmer's default false-positive target, and the messages
    /// said on the way.
    fn countgraph_size(p: &TableParams) -> (u64, Vec<Message>) {
        let ctx = RunContext::new();
        let size = checked_khmer_size(p, GraphKind::Countgraph, 1.0, COUNTGRAPH_FP_TARGET, &ctx).unwrap();
        (size, ctx.messages())
    }

    #[test]
    fn unique_kmers_too_many_for_x_only_warns() {
        let p = params(|p| {
            p.unique_kmers = 1e8;
            p.ksize = 20;
        });
        let warnings = [
            "\n*** Warning: The given tablesize is too small!",
            "*** Recommended tablesize is: 1.60278e+08 bytes",
            "*** Current is: 1e+06 bytes",
            "*** Estimated FP rate with current config is: 1.0\n",
        ];
        assert_eq!(countgraph_size(&p), (1_000_000, warnings.map(Message::warning).to_vec()));
    }

    #[test]
    fn unique_kmers_small_sets_memory_ceiling() {
        let p = params(|p| {
            p.unique_kmers = 1000.0;
            p.fp_rate = Some(0.05);
        });
        let infos = [
            "*** INFO: Overriding default fp 0.1 with new fp: 0.05",
            "*** INFO: set memory ceiling automatically.",
            "*** Ceiling is: 1e+06 bytes\n",
        ];
        assert_eq!(countgraph_size(&p), (250_000, infos.map(Message::info).to_vec()));
    }

    #[test]
    fn unique_kmers_with_small_memory_is_refused_unless_forced() {
        let p = params(|p| {
            p.unique_kmers = 1e8;
            p.max_memory = Some(1e6);
        });
        assert!(size_of(&p, GraphKind::Countgraph, 1.0).is_err());
        let forced = TableParams { force: true, ..p };
        assert_eq!(size_of(&forced, GraphKind::Countgraph, 1.0).unwrap(), 250_000);
    }

    #[test]
    fn refuses_large_k_and_many_tables() {
        let err = size_of(&params(|p| p.ksize = 33), GraphKind::Countgraph, 1.0).unwrap_err();
        assert!(err.to_string().contains("k-mer sizes <= 32"), "{err}");
        assert!(size_of(&params(|p| p.n_tables = 21), GraphKind::Countgraph, 1.0).is_err());
        assert!(size_of(&params(|p| p.n_tables = 0), GraphKind::Countgraph, 1.0).is_err());
        assert!(size_of(&params(|p| p.max_tablesize = 0.5), GraphKind::Countgraph, 1.0).is_err());
        let forced = params(|p| {
            p.n_tables = 21;
            p.force = true;
        });
        assert_eq!(size_of(&forced, GraphKind::Countgraph, 1.0).unwrap(), 1_000_000);
    }

    #[test]
    fn blocked_tables_get_khmers_total_memory_and_any_k() {
        let p = params(|p| {
            p.ksize = 40;
            p.max_tablesize = 1e5;
        });
        let shape = blocked_countgraph_params(&p, 1.0, &RunContext::new()).unwrap();
        assert_eq!((shape.k, shape.probes, shape.width), (40, 4, CounterWidth::Bits8));
        assert_eq!(shape.data_bytes(), 4e5 as u64 / 64 * 64);
        let small = params(|p| {
            p.max_memory = Some(1e6);
            p.small_count = true;
        });
        let shape = blocked_countgraph_params(&small, 1.0, &RunContext::new()).unwrap();
        assert_eq!((shape.data_bytes(), shape.width), (1e6 as u64 / 64 * 64, CounterWidth::Bits4));
        assert!(blocked_countgraph_params(&params(|p| p.n_tables = 9), 1.0, &RunContext::new()).is_err());
        let table = create_counting_table(&p, Layout::Blocked, 1.0, &RunContext::new()).unwrap();
        assert_eq!((table.layout(), any_fp_rate(&table)), (Layout::Blocked, 0.0));
    }

    #[test]
    fn memory_for_a_rate_and_the_hint_after_a_run() {
        assert_eq!(memory_arg(484_076_337.0), "485M");
        assert_eq!(memory_arg(69_550_001.0), "69.6M");
        assert_eq!(memory_arg(1e7), "10.0M");
        assert_eq!(memory_arg(1_203_000_000.0), "1.21G");
        assert_eq!(memory_arg(999.0), "999");
        assert_eq!(parse_memory(&memory_arg(123_456.0)).unwrap(), 124_000.0);
        let m = memory_for_rate(1e6, 4, 0.1, GraphKind::Countgraph);
        assert!(((1.0 - (-1e6 / (m / 4.0)).exp()).powi(4) - 0.1).abs() < 1e-6);
        assert_eq!(memory_for_rate(1e6, 4, 0.1, GraphKind::SmallCountgraph), (m / 2.0).ceil());
        // A table of 4 x 1e6 counters holding 2e6 k-mers: the hint is the memory for 2e6 at 0.1.
        let fp = (1.0 - (-2.0f64).exp()).powi(4);
        let wanted = memory_arg(memory_for_rate(2e6, 4, 0.1, GraphKind::Countgraph));
        assert_eq!(memory_to_reach(fp, 4, 1e6, GraphKind::Countgraph, 0.1), format!("-M {wanted}"));
        assert!(memory_to_reach(1.0, 4, 1e6, GraphKind::Countgraph, 0.1).starts_with("at least -M "));
    }

    #[test]
    fn estimates_match_khmer() {
        let f = estimate_with_fp_rate(1e8, 0.1);
        assert_eq!((f.n_tables, f.table_size), (3, 160_277_578));
        let m = estimate_with_memory(1e8, 1e6);
        assert_eq!((m.n_tables, m.table_size, m.fp_rate), (1, 1_000_000, 1.0));
        // Billions of tables: the rate underflows to 0 as in Python (no integer-exponent overflow).
        let huge = estimate_with_memory(97.0, 5000e9);
        assert_eq!((huge.n_tables, huge.table_size, huge.fp_rate), (35_729_236_111, 139, 0.0));
    }

    #[test]
    fn countgraph_primes_follow_the_size() {
        let t = create_countgraph(&params(|p| p.ksize = 20), 1.0, &RunContext::new()).unwrap();
        assert_eq!(t.hashsizes(), [999_983, 999_979, 999_961, 999_959]);
        let small = create_countgraph(&params(|p| p.small_count = true), 1.0, &RunContext::new()).unwrap();
        assert_eq!(small.storage_kind(), StorageKind::Nibble);
        let m = params(|p| {
            p.max_memory = Some(4e6);
            p.n_tables = 2;
        });
        let nodes = create_nodegraph(&m, &RunContext::new()).unwrap();
        assert_eq!(nodes.hashsizes()[0], 15_999_989);
        assert_eq!(nodes.storage_kind(), StorageKind::Bit);
    }
}
