//! kmerflow's own table file format (for [`BlockedTable`]), designed to be mapped, not read.
//!
//! Layout (all integers little-endian):
//!
//! | offset | size | field                                                        |
//! |-------:|-----:|--------------------------------------------------------------|
//! | 0      | 8    | magic `KMERFLOW`                                             |
//! | 8      | 4    | format version (1)                                           |
//! | 12     | 4    | layout id (1 = blocked)                                      |
//! | 16     | 4    | hash scheme id ([`super::BlockedHash::id`])                  |
//! | 20     | 4    | k                                                            |
//! | 24     | 8    | number of 64-byte lines                                      |
//! | 32     | 1    | counter width in bits (8, 4 or 1)                            |
//! | 33     | 1    | probes per k-mer                                             |
//! | 34     | 2    | flags: bit 0 canonical (clear: single-strand), 1 unfinished  |
//! | 36     | 4    | reserved (0)                                                 |
//! | 40     | 8    | non-zero counters                                            |
//! | 48     | 8    | adds that found a zero counter (distinct k-mer estimate)     |
//! | 56     | 8    | all adds                                                     |
//! | 64     | 8    | offset of the counter data (4096)                            |
//! | 72     | 8    | length of the counter data (lines * 64)                      |
//! | 80     | 8    | XXH3-64 of the counter data                                  |
//! | 88     | 8    | XXH3-64 of bytes 0..88                                       |
//!
//! The rest of the first 4096 bytes is zero; the counter data starts at 4096 so that a map of
//! the file gives page-aligned (hence cache-line aligned) lines. Loading maps the file
//! copy-on-write and checks magic, version, layout, parameters, length and both checksums.
//! A file-backed table ([`create_file_backed`]) is created with the "unfinished" flag set and
//! counts straight into a shared map of the file; finishing writes the final header.

use super::blocked::{BlockedHash, BlockedParams, BlockedTable, CounterWidth, OccupancyStats};
use crate::io::output::create_regular;
use crate::io::{Compression, OutputFile, Staged};
use crate::kmer::Strand;
use crate::ops::memory::check_saved_table_fits;
use crate::run::RunContext;
use crate::{Error, Result};
use memmap2::{MmapMut, MmapOptions};
use std::io::Write;
use xxhash_rust::xxh3::xxh3_64;

/// First bytes of every kmerflow table file.
pub const MAGIC: &[u8; 8] = b"KMERFLOW";
/// Format version written by this build.
pub const VERSION: u32 = 1;
/// Layout id of [`BlockedTable`].
pub const LAYOUT_BLOCKED: u32 = 1;
/// Offset of the counter data.
pub const DATA_OFFSET: usize = 4096;
/// Flag: k-mers are canonical (a k-mer and its reverse complement share counters).
pub const FLAG_CANONICAL: u16 = 1;
/// Flag: the file-backed run that created the file did not finish.
pub const FLAG_UNFINISHED: u16 = 2;

/// Bytes of the header covered by the header checksum.
const CHECKED_LEN: usize = 88;
/// Bytes of the header.
const HEADER_LEN: usize = 96;

/// The decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    params: BlockedParams,
    flags: u16,
    stats: OccupancyStats,
    data_checksum: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let p = &self.params;
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&LAYOUT_BLOCKED.to_le_bytes());
        out[16..20].copy_from_slice(&p.hash.id().to_le_bytes());
        out[20..24].copy_from_slice(&(p.k as u32).to_le_bytes());
        out[24..32].copy_from_slice(&p.n_lines.to_le_bytes());
        out[32] = p.width.bits();
        out[33] = p.probes as u8;
        out[34..36].copy_from_slice(&self.flags.to_le_bytes());
        for (at, value) in [
            (40, self.stats.occupied),
            (48, self.stats.unique),
            (56, self.stats.added),
            (64, DATA_OFFSET as u64),
            (72, p.data_bytes()),
            (80, self.data_checksum),
        ] {
            out[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        let checksum = xxh3_64(&out[..CHECKED_LEN]);
        out[CHECKED_LEN..HEADER_LEN].copy_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Decodes and checks a header; `file_len` is the length of the whole file.
    fn decode(bytes: &[u8], file_len: u64, path: &str) -> Result<Self> {
        let bad = |message: String| Error::format(path, None, None, message);
        if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
            return Err(bad("not a kmerflow table file (bad magic)".into()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if version != VERSION {
            return Err(bad(format!("unsupported table format version {version} (this build reads {VERSION})")));
        }
        if u64_at(CHECKED_LEN) != xxh3_64(&bytes[..CHECKED_LEN]) {
            return Err(bad("header checksum mismatch (the file is corrupt)".into()));
        }
        let flags = u16::from_le_bytes([bytes[34], bytes[35]]);
        if flags & FLAG_UNFINISHED != 0 {
            return Err(bad("the table was never finished (the run that created it did not complete)".into()));
        }
        let layout = u32_at(12);
        if layout != LAYOUT_BLOCKED {
            return Err(bad(format!("unknown table layout {layout}")));
        }
        let hash =
            BlockedHash::from_id(u32_at(16)).ok_or_else(|| bad(format!("unknown hash scheme {}", u32_at(16))))?;
        let width = CounterWidth::from_bits(bytes[32])
            .ok_or_else(|| bad(format!("unsupported counter width {}", bytes[32])))?;
        let strand = Strand::from_single(flags & FLAG_CANONICAL == 0);
        let params = BlockedParams {
            k: u32_at(20) as usize,
            n_lines: u64_at(24),
            width,
            probes: usize::from(bytes[33]),
            hash,
            strand,
        };
        params.check().map_err(|e| bad(e.to_string()))?;
        if u64_at(64) != DATA_OFFSET as u64 || u64_at(72) != params.data_bytes() {
            return Err(bad(format!("inconsistent data offset/length ({}, {})", u64_at(64), u64_at(72))));
        }
        let expected_len = DATA_OFFSET as u64 + params.data_bytes();
        if file_len != expected_len {
            return Err(bad(format!("file is {file_len} bytes, expected {expected_len} (truncated?)")));
        }
        let stats = OccupancyStats { occupied: u64_at(40), unique: u64_at(48), added: u64_at(56) };
        Ok(Self { params, flags, stats, data_checksum: u64_at(80) })
    }
}

/// [`FLAG_CANONICAL`] for a canonical table, no flag for a single-strand one.
fn strand_flag(params: &BlockedParams) -> u16 {
    if params.strand.is_single() {
        0
    } else {
        FLAG_CANONICAL
    }
}

fn finished_header(params: &BlockedParams, stats: OccupancyStats, data: &[u8]) -> [u8; HEADER_LEN] {
    finished_header_checksummed(params, stats, xxh3_64(data))
}

fn finished_header_checksummed(params: &BlockedParams, stats: OccupancyStats, data_checksum: u64) -> [u8; HEADER_LEN] {
    Header { params: *params, flags: strand_flag(params), stats, data_checksum }.encode()
}

/// Writes `table` to `path` (through a temporary name, renamed when complete).
pub fn save(table: &BlockedTable, path: &str, ctx: &RunContext) -> Result<()> {
    let io = |e| Error::io(path, e);
    // The counters are read atomically twice (checksum, then writing, checksummed again), so
    // that counting by other threads in between is detected instead of saved as corrupt.
    let checksum = |visit: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        table.for_each_data_chunk(|chunk| {
            hasher.update(chunk);
            visit(chunk)
        })?;
        Ok::<u64, std::io::Error>(hasher.digest())
    };
    let data_checksum = checksum(&mut |_| Ok(())).map_err(io)?;
    let header =
        Header { params: *table.params(), flags: strand_flag(table.params()), stats: table.occupancy(), data_checksum };
    // A temporary name renamed when complete: no half-written table under `path`.
    let mut out = OutputFile::create_in(path, Compression::None, ctx)?;
    let mut page = vec![0u8; DATA_OFFSET];
    page[..HEADER_LEN].copy_from_slice(&header.encode());
    out.write_all(&page).map_err(io)?;
    if checksum(&mut |chunk| out.write_all(chunk)).map_err(io)? != data_checksum {
        return Err(Error::invalid(format!("{path}: the table changed while it was being saved")));
    }
    out.finish()
}

/// Loads `path` by mapping it copy-on-write; a table whose counters cannot have the memory
/// they need is refused before it is mapped ([`check_saved_table_fits`]).
pub fn load(path: &str) -> Result<BlockedTable> {
    let io = |e| Error::io(path, e);
    let (file, header) = open_checked(path, "a kmerflow table is memory-mapped: it needs a regular file")?;
    check_saved_table_fits(path, header.params.data_bytes())?;
    // SAFETY: a private map; the file being changed by another process while mapped would
    // only change the counts we read (the same contract as any memory-mapped input).
    let map = unsafe { MmapOptions::new().map_copy(&file) }.map_err(io)?;
    // The header again, from the map: the file may have changed since it was read.
    let header = Header::decode(map.get(..DATA_OFFSET).unwrap_or(&map), map.len() as u64, path)?;
    if xxh3_64(&map[DATA_OFFSET..]) != header.data_checksum {
        return Err(Error::format(path, None, None, "data checksum mismatch (the file is corrupt)"));
    }
    Ok(BlockedTable::from_map(header.params, map, DATA_OFFSET, header.stats))
}

/// The XXH3-64 of the counter data of the file `path` (read in chunks from [`DATA_OFFSET`]).
fn data_checksum(path: &str) -> Result<u64> {
    let io = |e| Error::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(DATA_OFFSET as u64)).map_err(io)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match std::io::Read::read(&mut file, &mut buf).map_err(io)? {
            0 => return Ok(hasher.digest()),
            n => hasher.update(&buf[..n]),
        }
    }
}

/// Finishes a table file whose counters were written in place (by the shards of a sharded
/// table, at [`DATA_OFFSET`] + line × 64): checksums them and writes the header of a table of
/// shape `params` with the statistics `stats`.
pub fn seal(path: &str, params: &BlockedParams, stats: OccupancyStats) -> Result<()> {
    let header = finished_header_checksummed(params, stats, data_checksum(path)?);
    let file = std::fs::OpenOptions::new().write(true).open(path).map_err(|e| Error::io(path, e))?;
    std::os::unix::fs::FileExt::write_all_at(&file, &header, 0).map_err(|e| Error::io(path, e))
}

/// The shape and statistics of the table file `path`, checked as [`load`] checks them (the
/// counter data's checksum read in chunks), without holding its counters.
pub fn read_header(path: &str) -> Result<(BlockedParams, OccupancyStats)> {
    let header = header_of(path)?;
    if data_checksum(path)? != header.data_checksum {
        return Err(Error::format(path, None, None, "data checksum mismatch (the file is corrupt)"));
    }
    Ok((header.params, header.stats))
}

/// The shape of the table file `path`, its header checked (not its counters).
pub fn read_params(path: &str) -> Result<BlockedParams> {
    Ok(header_of(path)?.params)
}

/// The checked header of the regular file `path`.
fn header_of(path: &str) -> Result<Header> {
    Ok(open_checked(path, "a kmerflow table is read in place: it needs a regular file")?.1)
}

/// The regular file `path`, opened without waiting for a FIFO's writer, with its checked
/// header; anything but a regular file is refused saying `not_regular`.
fn open_checked(path: &str, not_regular: &str) -> Result<(std::fs::File, Header)> {
    let io = |e| Error::io(path, e);
    let file = crate::io::interruptible::open_read(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::format(path, None, None, not_regular));
    }
    if meta.len() < DATA_OFFSET as u64 {
        return Err(Error::format(path, None, None, "not a kmerflow table file (too short)"));
    }
    let mut head = vec![0u8; HEADER_LEN];
    let n = std::os::unix::fs::FileExt::read_at(&file, &mut head, 0).map_err(io)?;
    let header = Header::decode(&head[..n], meta.len(), path)?;
    Ok((file, header))
}

/// Rewrites the data and header checksums of a table file's bytes to match its contents, so
/// that the fuzz target reaches the checks behind them; bytes shorter than a header are left.
#[cfg(any(test, feature = "fuzzing"))]
pub fn seal_checksums(bytes: &mut [u8]) {
    if bytes.len() < DATA_OFFSET {
        return;
    }
    let data = xxh3_64(&bytes[DATA_OFFSET..]);
    bytes[CHECKED_LEN - 8..CHECKED_LEN].copy_from_slice(&data.to_le_bytes());
    let header = xxh3_64(&bytes[..CHECKED_LEN]);
    bytes[CHECKED_LEN..HEADER_LEN].copy_from_slice(&header.to_le_bytes());
}

/// A zeroed table counting directly into a shared map of a new file, under a temporary name
/// until the returned [`Staged`] renames it to `path`.
pub fn create_file_backed(path: &str, params: BlockedParams) -> Result<(BlockedTable, Staged)> {
    params.check()?;
    let io = |e| Error::io(path, e);
    let (file, staged) = create_regular(path)?;
    file.set_len(DATA_OFFSET as u64 + params.data_bytes()).map_err(io)?;
    // SAFETY: we created the file; other processes are not expected to modify it while mapped.
    let mut map = unsafe { MmapMut::map_mut(&file) }.map_err(io)?;
    let header = Header {
        params,
        flags: strand_flag(&params) | FLAG_UNFINISHED,
        stats: OccupancyStats::default(),
        data_checksum: 0,
    };
    map[..HEADER_LEN].copy_from_slice(&header.encode());
    Ok((BlockedTable::from_map(params, map, DATA_OFFSET, OccupancyStats::default()), staged))
}

/// Writes the final header of a file-backed table into its map and flushes it.
pub(super) fn finish_map(map: &mut MmapMut, params: &BlockedParams, stats: OccupancyStats, path: &str) -> Result<()> {
    let header = finished_header(params, stats, &map[DATA_OFFSET..]);
    map[..HEADER_LEN].copy_from_slice(&header);
    map.flush().map_err(|e| Error::io(path, e))
}

/// True when `bytes` (the start of a file) carry kmerflow's magic.
pub fn is_native(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> BlockedParams {
        BlockedParams::new(21, 64 * 100, CounterWidth::Bits4, 3)
    }

    #[test]
    fn header_round_trips_and_is_checked() {
        let stats = OccupancyStats { occupied: 5, unique: 4, added: 9 };
        let header = Header { params: params(), flags: FLAG_CANONICAL, stats, data_checksum: 77 };
        let bytes = header.encode();
        let len = DATA_OFFSET as u64 + params().data_bytes();
        assert_eq!(Header::decode(&bytes, len, "t").unwrap(), header);
        let err = Header::decode(&bytes, len - 1, "t").unwrap_err().to_string();
        assert!(err.contains("t: ") && err.contains("truncated"), "{err}");
        let mut flipped = bytes;
        flipped[25] ^= 1;
        assert!(Header::decode(&flipped, len, "t").unwrap_err().to_string().contains("header checksum"));
        let mut version = bytes;
        version[8] = 9;
        assert!(Header::decode(&version, len, "t").unwrap_err().to_string().contains("version 9"));
        assert!(Header::decode(b"KHMER\x04\x01", len, "t").unwrap_err().to_string().contains("bad magic"));
    }
}
