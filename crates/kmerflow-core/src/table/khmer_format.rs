//! khmer's saved table format, version 4 (docs/khmer-compat.md §3): types 1 (byte), 2 (bit), 7 (nibble).
//!
//! Layout (little-endian): `OXLI`, version 4, type; type 1 then has the bigcount flag byte;
//! k (u32), number of tables (u8), occupied bins of table 0 (u64); per table its size (u64) and
//! its counter bytes; type 1 ends with the bigcount entries (u64 count, then hash u64 + count
//! u16 each, written here in ascending hash order).

use super::{AllocOptions, HashKind, KhmerTable, StorageKind, Table};
use crate::io::interruptible::{open_read, Interruptible};
use crate::io::{Compression, OutputFile};
use crate::kmer::Strand;
use crate::ops::memory::check_saved_table_fits;
use crate::run::{CancelToken, RunContext};
use crate::{Error, Result};
use std::collections::HashMap;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::sync::atomic::Ordering::Relaxed;

const MAGIC: &[u8; 4] = b"OXLI";
const VERSION: u8 = 4;
const TYPE_COUNTING: u8 = 1;
const TYPE_BITS: u8 = 2;
const TYPE_SMALLCOUNT: u8 = 7;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Bit of the type byte set for single-strand tables (kmerflow's own; khmer has none): khmer
/// and other readers of its format refuse such a file as of an unknown type instead of
/// looking up canonical k-mers in it. Canonical tables keep khmer's type bytes.
const TYPE_SINGLE_STRAND: u8 = 0x80;

fn type_byte(storage: StorageKind, strand: Strand) -> u8 {
    let base = match storage {
        StorageKind::Byte => TYPE_COUNTING,
        StorageKind::Bit => TYPE_BITS,
        StorageKind::Nibble => TYPE_SMALLCOUNT,
    };
    if strand.is_single() {
        base | TYPE_SINGLE_STRAND
    } else {
        base
    }
}

/// The storage and strand of a type byte.
fn parse_type(byte: u8) -> Option<(StorageKind, Strand)> {
    let storage = match byte & !TYPE_SINGLE_STRAND {
        TYPE_COUNTING => StorageKind::Byte,
        TYPE_BITS => StorageKind::Bit,
        TYPE_SMALLCOUNT => StorageKind::Nibble,
        _ => return None,
    };
    Some((storage, Strand::from_single(byte & TYPE_SINGLE_STRAND != 0)))
}

/// Saves `table` to `path` (type 1 gzip-compressed when the name ends in `.gz`).
pub fn save(table: &KhmerTable, path: &str, ctx: &RunContext) -> Result<()> {
    let gzip = table.storage == StorageKind::Byte && path.rsplit_once('.').is_some_and(|(_, ext)| ext == "gz");
    let mut out = OutputFile::create_in(path, if gzip { Compression::Gzip } else { Compression::None }, ctx)?;
    write_table(table, &mut out).map_err(|e| Error::io(path, e))?;
    out.finish()
}

fn write_table(table: &KhmerTable, out: &mut dyn Write) -> std::io::Result<()> {
    let occupied = table.occupied.load(Relaxed);
    out.write_all(&header(table.storage, table.strand, table.use_bigcount, table.k, table.tables.len(), occupied))?;
    // Read atomically: other threads may be counting while the table is saved.
    for (size, bins) in table.sizes.iter().zip(&table.tables) {
        out.write_all(&size.to_le_bytes())?;
        super::alloc::for_each_chunk(bins.mem.atomics(), |chunk| out.write_all(chunk))?;
    }
    if table.storage == StorageKind::Byte {
        out.write_all(&bigcount_entries(&table.bigcounts.lock().unwrap_or_else(|e| e.into_inner())))?;
    }
    Ok(())
}

/// The fields before the first table: signature, version, type (with the strand bit), (type 1)
/// the bigcount flag, k, the number of tables and the occupied counters of table 0.
fn header(
    storage: StorageKind,
    strand: Strand,
    use_bigcount: bool,
    k: usize,
    n_tables: usize,
    occupied: u64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(BYTE_HEADER_LEN as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[VERSION, type_byte(storage, strand)]);
    if storage == StorageKind::Byte {
        out.push(u8::from(use_bigcount));
    }
    out.extend_from_slice(&(k as u32).to_le_bytes());
    out.push(n_tables as u8);
    out.extend_from_slice(&occupied.to_le_bytes());
    out
}

/// The bigcount entries of a type 1 file: their number, then each hash and count, in
/// ascending hash order.
fn bigcount_entries(map: &HashMap<u64, u16>) -> Vec<u8> {
    let mut entries: Vec<(u64, u16)> = map.iter().map(|(&h, &c)| (h, c)).collect();
    entries.sort_unstable();
    let mut out = Vec::with_capacity(8 + entries.len() * 10);
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (hash, count) in entries {
        out.extend_from_slice(&hash.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
    }
    out
}

/// Bytes before the first table's size in a type 1 (byte counters) file.
const BYTE_HEADER_LEN: u64 = 20;

/// The fields of a type 1 (byte counters) table file other than the counters: what a table
/// saved shard by shard needs besides each shard's counters, and what loading one into shards
/// reads in the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteFrame {
    /// k.
    pub k: usize,
    /// The table sizes.
    pub sizes: Vec<u64>,
    /// The bigcount flag.
    pub use_bigcount: bool,
    /// Occupied counters of table 0.
    pub occupied: u64,
    /// The bigcount map.
    pub bigcounts: HashMap<u64, u16>,
}

impl ByteFrame {
    /// Where the counters of table `t` start in the file.
    fn table_offset(&self, t: usize) -> u64 {
        BYTE_HEADER_LEN + 8 * (t as u64 + 1) + self.sizes[..t].iter().sum::<u64>()
    }

    /// Where the bigcount entries start (after the last table).
    fn trailer_offset(&self) -> u64 {
        BYTE_HEADER_LEN + self.sizes.iter().map(|s| s + 8).sum::<u64>()
    }

    /// The places in the file (offset, length) of counters `start .. end` of the tables laid
    /// end to end, in order.
    pub fn places(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut places = Vec::new();
        let mut first = 0u64;
        for (t, &size) in self.sizes.iter().enumerate() {
            let (from, to) = (start.max(first), end.min(first + size));
            if from < to {
                places.push((self.table_offset(t) + from - first, to - from));
            }
            first += size;
        }
        places
    }

    /// Everything but the counters, as (offset, bytes): the header, each table's size and the
    /// bigcount entries; and the length of the whole file.
    pub fn pieces(&self) -> (u64, Vec<(u64, Vec<u8>)>) {
        let mut pieces = vec![(
            0,
            header(StorageKind::Byte, Strand::Canonical, self.use_bigcount, self.k, self.sizes.len(), self.occupied),
        )];
        for (t, size) in self.sizes.iter().enumerate() {
            pieces.push((self.table_offset(t) - 8, size.to_le_bytes().to_vec()));
        }
        let trailer = bigcount_entries(&self.bigcounts);
        let len = self.trailer_offset() + trailer.len() as u64;
        pieces.push((self.trailer_offset(), trailer));
        (len, pieces)
    }

    /// Reads the fields of the uncompressed type 1 file `path` without its counters (skipped),
    /// checking its length; a compressed file, and a file of other counters (a nodegraph's
    /// bits, 4-bit counters), are refused naming the file and what it is.
    pub fn read(path: &str) -> Result<ByteFrame> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut reader = FieldReader { input: Box::new(&file), path };
        let magic = reader.array::<4>("the signature")?;
        if magic[..2] == GZIP_MAGIC {
            return Err(reader.invalid("is gzip-compressed: shards read their counters in place; gunzip it first"));
        }
        if &magic != MAGIC {
            return Err(reader.invalid("not a khmer table file (no OXLI signature)"));
        }
        let version = reader.u8("the version")?;
        if version != VERSION {
            return Err(
                reader.invalid(format!("khmer table file version {version} is not supported (expected {VERSION})"))
            );
        }
        match reader.u8("the file type")? {
            TYPE_COUNTING => {}
            single if parse_type(single).is_some_and(|(_, strand)| strand.is_single()) => {
                return Err(reader.invalid("is a single-strand table: sharded tables hold canonical k-mers only"))
            }
            TYPE_SMALLCOUNT => {
                return Err(reader
                    .invalid("holds 4-bit counters (--small-count): shards of khmer's layout hold 8-bit counters"))
            }
            TYPE_BITS => {
                return Err(reader.invalid("is a nodegraph (k-mer presence bits), not a countgraph of k-mer counts"))
            }
            other => {
                return Err(reader.invalid(format!("khmer file type {other} is not a k-mer table (expected 1, 2 or 7)")))
            }
        }
        let use_bigcount = reader.u8("the bigcount flag")? != 0;
        let k = reader.u32("k")? as usize;
        let n_tables = reader.u8("the number of tables")?;
        let occupied = reader.u64("the occupied count")?;
        super::check_parameters(k, HashKind::TwoBit, usize::from(n_tables))
            .map_err(|e| reader.invalid(e.to_string()))?;
        let mut sizes = Vec::with_capacity(usize::from(n_tables));
        let mut at = BYTE_HEADER_LEN;
        for t in 0..n_tables {
            let size = reader.u64("a table size")?;
            at = at.saturating_add(8).saturating_add(size);
            if at > file_len {
                return Err(reader.invalid(format!("truncated khmer table file (table {t} of size {size})")));
            }
            (&file).seek(SeekFrom::Start(at)).map_err(|e| Error::io(path, e))?;
            sizes.push(size);
        }
        let n = reader.u64("the bigcount entry count")?;
        if n.checked_mul(10).and_then(|b| b.checked_add(at + 8)) != Some(file_len) {
            return Err(reader.invalid(format!(
                "is {file_len} bytes, not the {} its fields describe (a damaged or concatenated file?)",
                at as u128 + 8 + 10 * n as u128
            )));
        }
        let mut bigcounts = HashMap::with_capacity(n as usize);
        reader.input = Box::new(BufReader::new(&file));
        for _ in 0..n {
            let hash = reader.u64("a bigcount entry")?;
            bigcounts.insert(hash, reader.u16("a bigcount entry")?);
        }
        Ok(ByteFrame { k, sizes, use_bigcount, occupied, bigcounts })
    }
}

/// A reader of the file's fields that turns every failure into an error naming the file.
struct FieldReader<'a> {
    input: Box<dyn Read + 'a>,
    path: &'a str,
}

impl FieldReader<'_> {
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::format(self.path, None, None, format!("truncated khmer table file (while reading {what})"))
            }
            _ => Error::io(self.path, e),
        })
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, what)?;
        Ok(buf)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn invalid(&self, message: impl Into<String>) -> Error {
        Error::format(self.path, None, None, message)
    }
}

/// Loads a table from `path` (gzip detected), with hash family `hash`, its tables allocated as
/// `options` say. A FIFO or other stream is opened and read without holding the run once
/// `cancel` is cancelled (see [`crate::io::interruptible`]).
pub fn load(path: &str, hash: HashKind, options: AllocOptions, cancel: &CancelToken) -> Result<KhmerTable> {
    let file = open_read(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    // The length of a regular file bounds its table sizes; a stream (a pipe, a FIFO) has none.
    let file_len = meta.is_file().then_some(meta.len());
    let mut buffered = BufReader::with_capacity(1 << 20, Interruptible::new(file, cancel.clone()));
    let head = std::io::BufRead::fill_buf(&mut buffered).map_err(|e| Error::io(path, e))?;
    let gzip = head.starts_with(&GZIP_MAGIC);
    let input: Box<dyn Read> =
        if gzip { Box::new(flate2::read::MultiGzDecoder::new(buffered)) } else { Box::new(buffered) };
    let mut reader = FieldReader { input, path };

    if &reader.array::<4>("the signature")? != MAGIC {
        return Err(reader.invalid("not a khmer table file (no OXLI signature)"));
    }
    let version = reader.u8("the version")?;
    if version != VERSION {
        return Err(reader.invalid(format!("khmer table file version {version} is not supported (expected {VERSION})")));
    }
    let type_byte = reader.u8("the file type")?;
    let Some((storage, strand)) = parse_type(type_byte) else {
        return Err(reader.invalid(format!(
            "khmer file type {type_byte} is not a k-mer table (expected 1, 2 or 7; 129, 130 or 135 single-strand)"
        )));
    };
    let use_bigcount = storage == StorageKind::Byte && reader.u8("the bigcount flag")? != 0;
    let k = reader.u32("k")? as usize;
    let n_tables = reader.u8("the number of tables")?;
    let occupied = reader.u64("the occupied count")?;

    super::check_parameters(k, hash, usize::from(n_tables)).map_err(|e| reader.invalid(e.to_string()))?;
    // Memory the tables cannot have is refused before it is filled (instead of the run being
    // killed): a plain file's tables take its length, a compressed file's or a stream's are
    // checked one by one as their sizes are read.
    let fits = |bytes: u64| check_saved_table_fits(path, bytes);
    let whole_file = file_len.filter(|_| !gzip);
    if let Some(len) = whole_file {
        fits(len)?;
    }

    // Each table's size comes just before its bytes; a size is checked against the file length
    // before allocating (compressed files and streams are checked by reading).
    let mut tables = Vec::with_capacity(usize::from(n_tables));
    let mut consumed: u64 = if storage == StorageKind::Byte { 20 } else { 19 };
    for t in 0..n_tables {
        let size = reader.u64("a table size")?;
        // Saturating: a size field near 2^64 must not wrap around below the file length.
        consumed = consumed.saturating_add(8).saturating_add(super::bytes_for(storage, size) as u64);
        if !gzip && file_len.is_some_and(|len| consumed > len) {
            return Err(reader.invalid(format!("truncated khmer table file (table {t} of size {size})")));
        }
        let mut table = Table::with_options(storage, size, options).map_err(|e| reader.invalid(e.to_string()))?;
        // (its pages are only taken as they are filled)
        if whole_file.is_none() {
            fits(super::bytes_for(storage, size) as u64)?;
        }
        reader.fill(table.mem.bytes_mut(), "table contents")?;
        tables.push(table);
    }
    let mut table = KhmerTable::assemble(k, hash, storage, tables).with_strand(strand);
    table.occupied.store(occupied, Relaxed);
    if storage == StorageKind::Byte {
        table.use_bigcount = use_bigcount;
        let n = reader.u64("the bigcount entry count")?;
        let map = table.bigcounts.get_mut().unwrap_or_else(|e| e.into_inner());
        for _ in 0..n {
            let hash = reader.u64("a bigcount entry")?;
            let count = reader.u16("a bigcount entry")?;
            map.insert(hash, count);
        }
    }
    // The fields say where the file ends: more bytes mean that the file is not what it claims
    // (two files concatenated, a size field changed).
    if reader.input.read(&mut [0u8; 1]).map_err(|e| Error::io(path, e))? > 0 {
        return Err(reader.invalid("trailing data after the end of the khmer table (a damaged or concatenated file?)"));
    }
    Ok(table)
}
