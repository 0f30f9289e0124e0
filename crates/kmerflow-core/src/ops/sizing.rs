//! khmer's table-sizing arguments (`-k -N -x -M -U --fp-rate --small-count`) and checks
//! (KHMER.md §2.1, `calc_expected_collisions` §2.8).

use crate::table::{HashKind, KTable, StorageKind};
use crate::Result;

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
        }
    }
}

/// khmer's `memory_setting`: a float, scientific notation, or a K/M/G/T (decimal) suffix.
pub fn parse_memory(text: &str) -> Result<f64> {
    let _ = text;
    todo!()
}

/// A countgraph (or small countgraph with `--small-count`) sized as khmer's
/// `create_countgraph(args, multiplier)` does, including the `-U` / FP-rate logic; `messages`
/// receives the warnings/info lines khmer prints (the caller prints them unless quiet).
pub fn create_countgraph(params: &TableParams, multiplier: f64, messages: &mut Vec<String>) -> Result<KTable> {
    let _ = (params, multiplier, messages, HashKind::TwoBit, StorageKind::Byte);
    todo!()
}

/// A nodegraph sized as khmer's `create_nodegraph`.
pub fn create_nodegraph(params: &TableParams, messages: &mut Vec<String>) -> Result<KTable> {
    let _ = (params, messages);
    todo!()
}

/// khmer's `calc_expected_collisions`: (n_occupied / min(hashsizes)) ^ n_tables.
pub fn expected_fp_rate(table: &KTable) -> f64 {
    let min = table.hashsizes().iter().copied().min().unwrap_or(1) as f64;
    (table.n_occupied() as f64 / min).powi(table.n_tables() as i32)
}
