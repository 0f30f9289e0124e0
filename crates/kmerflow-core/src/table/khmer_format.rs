//! khmer's saved table format, version 4 (KHMER.md §3): types 1 (byte), 2 (bit), 7 (nibble).

use super::{HashKind, KTable};
use crate::Result;

/// Saves `table` to `path` (type 1 gzip-compressed when the name ends in `.gz`).
pub fn save(table: &KTable, path: &str) -> Result<()> {
    let _ = (table, path);
    todo!()
}

/// Loads a table from `path` (gzip detected), with hash family `hash`.
pub fn load(path: &str, hash: HashKind) -> Result<KTable> {
    let _ = (path, hash);
    todo!()
}
