//! khmer's partitioning files (format version 4, docs/khmer-compat.md §3.4-3.6): the tagset
//! (type 3), stop tags (type 4) and partition maps (type 5). All integers are little-endian.

use super::PartitionMap;
use crate::run::RunContext;
use crate::{Error, Result};
use std::io::Read;

/// File type byte of a tagset.
pub const TAGSET: u8 = 3;
/// File type byte of a stop-tags file.
pub const STOPTAGS: u8 = 4;
/// File type byte of a partition map.
pub const PMAP: u8 = 5;

/// Reads `path` whole within the run `ctx` (which records it as an input); errors name the file.
fn read_all(path: &str, ctx: &RunContext) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    crate::io::compress::open_input(path, ctx)?.read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}

/// What each file type is called in messages.
fn type_name(kind: u8) -> &'static str {
    match kind {
        TAGSET => "tagset",
        STOPTAGS => "stoptags",
        _ => "partition map",
    }
}

/// A file being parsed: its bytes, where the next field starts, its name for messages.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
    path: &'a str,
}

impl<'a> Fields<'a> {
    /// Checks the common header (`OXLI`, version 4, `kind`) and returns the fields after it with k.
    fn open(bytes: &'a [u8], path: &'a str, kind: u8) -> Result<(Self, u32)> {
        let what = type_name(kind);
        let bad = |message: String| Error::format(path, None, None, message);
        if bytes.len() < 6 || &bytes[..4] != b"OXLI" {
            return Err(bad(format!("not a khmer {what} file (no OXLI signature)")));
        }
        if bytes[4] != 4 {
            return Err(bad(format!("{what} file format version {} is not supported (expected 4)", bytes[4])));
        }
        if bytes[5] != kind {
            return Err(bad(format!("file type {} is not a {what} (type {kind})", bytes[5])));
        }
        let mut fields = Fields { bytes, at: 6, path };
        let k = fields.u32()?;
        Ok((fields, k))
    }

    /// The next `n` bytes, or a truncation error.
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len()).ok_or_else(|| {
            Error::format(self.path, None, None, format!("file is truncated (at byte {})", self.bytes.len()))
        })?;
        let field = &self.bytes[self.at..end];
        self.at = end;
        Ok(field)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// The rest of the file as `n` records of `size` bytes; extra bytes are an error.
    fn records(&mut self, n: u64, size: usize) -> Result<std::slice::ChunksExact<'a, u8>> {
        let expected = usize::try_from(n).ok().and_then(|n| n.checked_mul(size));
        let rest = self.bytes.len() - self.at;
        if expected != Some(rest) {
            return Err(Error::format(
                self.path,
                None,
                None,
                format!("the header announces {n} entries but the file holds {} bytes of them", rest),
            ));
        }
        Ok(self.take(rest)?.chunks_exact(size))
    }
}

/// Checks that a file's k is the graph's.
fn check_k(path: &str, file_k: u32, k: usize) -> Result<()> {
    if file_k as usize != k {
        return Err(Error::format(path, None, None, format!("k-mer size {file_k} does not match the graph's k = {k}")));
    }
    Ok(())
}

/// Reads a tagset file (type 3) made for k-mer size `k`: the tags, ascending as stored.
pub fn load_tagset(path: &str, k: usize, ctx: &RunContext) -> Result<Vec<u64>> {
    let bytes = read_all(path, ctx)?;
    let (mut fields, file_k) = Fields::open(&bytes, path, TAGSET)?;
    check_k(path, file_k, k)?;
    let n = fields.u64()?;
    let _density = fields.u32()?;
    let mut tags: Vec<u64> = fields.records(n, 8)?.map(|r| u64::from_le_bytes(r.try_into().expect("8"))).collect();
    tags.sort_unstable();
    tags.dedup();
    Ok(tags)
}

/// Reads a stop-tags file (type 4) made for k-mer size `k`.
pub fn load_stoptags(path: &str, k: usize, ctx: &RunContext) -> Result<Vec<u64>> {
    let bytes = read_all(path, ctx)?;
    let (mut fields, file_k) = Fields::open(&bytes, path, STOPTAGS)?;
    check_k(path, file_k, k)?;
    let n = fields.u64()?;
    Ok(fields.records(n, 8)?.map(|r| u64::from_le_bytes(r.try_into().expect("8"))).collect())
}

/// The records of a partition-map file (type 5) made for k-mer size `k`, in file order:
/// (tag, partition id). A partition id 0 is refused (khmer never writes one); a map without
/// records is read as empty (khmer refuses it, although its partition-graph writes one for a
/// subset whose tags all stay alone).
pub fn load_pmap_records(path: &str, k: usize, ctx: &RunContext) -> Result<Vec<(u64, u32)>> {
    let bytes = read_all(path, ctx)?;
    let (mut fields, file_k) = Fields::open(&bytes, path, PMAP)?;
    check_k(path, file_k, k)?;
    let n = fields.u64()?;
    let mut records = Vec::with_capacity(n.min(1 << 24) as usize);
    for (i, record) in fields.records(n, 12)?.enumerate() {
        let tag = u64::from_le_bytes(record[..8].try_into().expect("8"));
        let pid = u32::from_le_bytes(record[8..].try_into().expect("4"));
        if pid == 0 {
            return Err(Error::format(
                path,
                Some(i as u64 + 1),
                None,
                "partition id 0 (unassigned) in a partition map",
            ));
        }
        records.push((tag, pid));
    }
    Ok(records)
}

/// The common header of a file of type `kind` for k-mer size `k` holding `n` entries, with room
/// for `n` entries of `size` bytes.
fn header(kind: u8, k: usize, n: usize, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(18 + size * n);
    out.extend_from_slice(b"OXLI");
    out.extend_from_slice(&[4, kind]);
    out.extend_from_slice(&(k as u32).to_le_bytes());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out
}

/// The bytes of a partition-map file for k-mer size `k`: the header, then one (tag u64,
/// partition id u32) record per assigned tag, by ascending tag.
pub fn pmap_bytes(map: &PartitionMap, k: usize) -> Vec<u8> {
    let records = map.assignments();
    let mut out = header(PMAP, k, records.len(), 12);
    for (tag, pid) in records {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&pid.to_le_bytes());
    }
    out
}

/// The bytes of a stop-tags file for k-mer size `k` holding `stop_tags`, ascending (as khmer's
/// `save_stop_tags` writes them).
pub fn stoptags_bytes(stop_tags: impl IntoIterator<Item = u64>, k: usize) -> Vec<u8> {
    let mut tags: Vec<u64> = stop_tags.into_iter().collect();
    tags.sort_unstable();
    tags.dedup();
    let mut out = header(STOPTAGS, k, tags.len(), 8);
    for tag in tags {
        out.extend_from_slice(&tag.to_le_bytes());
    }
    out
}
