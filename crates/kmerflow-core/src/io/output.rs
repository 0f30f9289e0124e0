//! Output files written atomically, and khmer's record formatting.

use super::compress::Compression;
use super::fastx::Record;
use crate::Result;
use std::io::Write;

/// An output destination: a file written under a temporary name in the same directory and
/// renamed on [`OutputFile::finish`] (dropped unfinished, the temporary is removed), or stdout
/// for `-`. Compression is chosen by the caller or, by default, by the name's extension.
pub struct OutputFile {
    _private: (),
}

impl OutputFile {
    /// Creates `path` (`-` = stdout) with compression by extension.
    pub fn create(path: &str) -> Result<Self> {
        Self::create_with(path, Compression::from_path(path))
    }

    /// Creates `path` with an explicit compression (khmer's `--gzip`/`--bzip`).
    pub fn create_with(path: &str, compression: Compression) -> Result<Self> {
        let _ = (path, compression);
        todo!()
    }

    /// The final path.
    pub fn path(&self) -> &str {
        todo!()
    }

    /// Flushes, finishes compression and renames the temporary file to its final name.
    pub fn finish(self) -> Result<()> {
        todo!()
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = buf;
        todo!()
    }

    fn flush(&mut self) -> std::io::Result<()> {
        todo!()
    }
}

/// Appends `rec` to `out` as khmer writes it: FASTQ `@name\nseq\n+\nqual\n`, FASTA
/// `>name\nseq\n` (one line).
pub fn write_record(out: &mut Vec<u8>, rec: &Record<'_>) {
    match rec.qual {
        Some(q) => {
            out.push(b'@');
            out.extend_from_slice(rec.name);
            out.push(b'\n');
            out.extend_from_slice(rec.seq);
            out.extend_from_slice(b"\n+\n");
            out.extend_from_slice(q);
            out.push(b'\n');
        }
        None => {
            out.push(b'>');
            out.extend_from_slice(rec.name);
            out.push(b'\n');
            out.extend_from_slice(rec.seq);
            out.push(b'\n');
        }
    }
}
