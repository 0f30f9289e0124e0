//! FASTA/FASTQ parsing over chunks: records are borrowed slices, not per-record allocations.

use crate::Result;

/// The sequence file format, detected from the first non-blank byte (`>` or `@`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// FASTA (`>`), sequences possibly spread over several lines.
    Fasta,
    /// FASTQ (`@`), four lines per record.
    Fastq,
}

/// One sequence record borrowed from a [`RecordBatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The whole header line after `>`/`@` (comment included), without the line end.
    pub name: &'a [u8],
    /// The sequence as in the file (multi-line FASTA joined; case and `N`s preserved).
    pub seq: &'a [u8],
    /// FASTQ qualities (same length as `seq`); `None` for FASTA.
    pub qual: Option<&'a [u8]>,
}

impl Record<'_> {
    /// Copies the record into an owned one.
    pub fn to_owned_record(&self) -> OwnedRecord {
        OwnedRecord {
            name: self.name.to_vec(),
            seq: self.seq.to_vec(),
            qual: self.qual.map(<[u8]>::to_vec),
        }
    }
}

/// An owned record, for the few places that must keep a record beyond its batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnedRecord {
    /// Header line without `>`/`@`.
    pub name: Vec<u8>,
    /// Sequence.
    pub seq: Vec<u8>,
    /// Qualities for FASTQ.
    pub qual: Option<Vec<u8>>,
}

impl OwnedRecord {
    /// Borrows the record.
    pub fn as_record(&self) -> Record<'_> {
        Record { name: &self.name, seq: &self.seq, qual: self.qual.as_deref() }
    }
}

/// A batch of consecutive records sharing one buffer; records are offsets into it.
#[derive(Debug, Default)]
pub struct RecordBatch {
    _private: (),
}

impl RecordBatch {
    /// Number of records in the batch.
    pub fn len(&self) -> usize {
        todo!()
    }

    /// True when the batch has no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th record of the batch.
    pub fn get(&self, i: usize) -> Record<'_> {
        let _ = i;
        todo!()
    }

    /// The records in file order.
    pub fn iter(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// 1-based number (within its file) of the batch's first record.
    pub fn first_record_number(&self) -> u64 {
        todo!()
    }

    /// The format of the records.
    pub fn format(&self) -> Format {
        todo!()
    }
}

/// A streaming FASTA/FASTQ reader yielding [`RecordBatch`]es of about 1 MiB of input.
pub struct FastxReader {
    _private: (),
}

impl FastxReader {
    /// Opens `path` (`-` = stdin). Compression is sniffed from magic bytes and the format from
    /// the content. An empty (after decompression) input is an error naming the file.
    pub fn open(path: &str) -> Result<Self> {
        let _ = path;
        todo!()
    }

    /// The path as given to [`FastxReader::open`].
    pub fn path(&self) -> &str {
        todo!()
    }

    /// The next batch, `None` at the end of the input. Malformed records are errors naming the
    /// file, the record number and the line.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        todo!()
    }
}

/// Reads every record of `path` in order and calls `f` on each; returns the number of records.
pub fn for_each_record(path: &str, mut f: impl FnMut(Record<'_>) -> Result<()>) -> Result<u64> {
    let mut reader = FastxReader::open(path)?;
    let mut n = 0;
    while let Some(batch) = reader.next_batch()? {
        for rec in batch.iter() {
            f(rec)?;
            n += 1;
        }
    }
    Ok(n)
}
