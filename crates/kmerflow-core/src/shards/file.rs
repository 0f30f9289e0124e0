//! A sharded table's file written and read shard by shard: each shard's counters go to (come
//! from) their places in the table file, given as (offset, length) pieces in counter order
//! (khmer's format: [`crate::table::khmer_format::ByteFrame::places`]; kmerflow's format: one piece
//! of lines). The file is opened by name, so that the process holding the shard (a Dask
//! worker) reads and writes it where the client made it, without the counters passing through
//! the client.

use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

/// The most bytes [`write_pieces`] hands to one write: a shard's counters written 50 MB at a
/// time from its huge pages cost the kernel about ten times the copying of 1 MiB writes (as
/// the one-process save makes).
const WRITE_CHUNK: usize = 1 << 20;

/// The total length of `pieces`.
fn length(pieces: &[(u64, u64)]) -> u64 {
    pieces.iter().map(|&(_, len)| len).sum()
}

/// Writes `cells` laid end to end into `pieces` of the existing file `path` (neither created
/// nor truncated: the client made it at its full length).
pub fn write_pieces(path: &str, pieces: &[(u64, u64)], cells: &[u8]) -> Result<()> {
    if length(pieces) != cells.len() as u64 {
        return Err(Error::invalid(format!(
            "{} bytes of counters for places of {} bytes in {path}",
            cells.len(),
            length(pieces)
        )));
    }
    let file = OpenOptions::new().write(true).open(path).map_err(|e| Error::io(path, e))?;
    let mut rest = cells;
    for &(offset, len) in pieces {
        let (piece, after) = rest.split_at(len as usize);
        for (at, chunk) in (offset..).step_by(WRITE_CHUNK).zip(piece.chunks(WRITE_CHUNK)) {
            file.write_all_at(chunk, at).map_err(|e| Error::io(path, e))?;
        }
        rest = after;
    }
    Ok(())
}

/// Writes the chunks that `visit` gives, laid end to end, into the one place starting at
/// `offset` of the existing file `path` (a table whose counters are read in chunks).
pub fn write_chunks<E>(
    path: &str,
    offset: u64,
    visit: impl FnOnce(&mut dyn FnMut(&[u8]) -> std::io::Result<()>) -> std::result::Result<(), E>,
) -> Result<()>
where
    E: Into<std::io::Error>,
{
    let file = OpenOptions::new().write(true).open(path).map_err(|e| Error::io(path, e))?;
    let mut at = offset;
    visit(&mut |chunk| {
        file.write_all_at(chunk, at)?;
        at += chunk.len() as u64;
        Ok(())
    })
    .map_err(|e| Error::io(path, e.into()))
}

/// Reads `pieces` of `path`, laid end to end.
pub fn read_pieces(path: &str, pieces: &[(u64, u64)]) -> Result<Vec<u8>> {
    let mut cells = Vec::new();
    cells
        .try_reserve_exact(length(pieces) as usize)
        .map_err(|_| Error::invalid(format!("cannot allocate {} bytes for the counters of {path}", length(pieces))))?;
    cells.resize(length(pieces) as usize, 0);
    read_into(path, pieces, &mut cells)?;
    Ok(cells)
}

/// Reads `pieces` of `path`, laid end to end, into `cells` (as long as the pieces).
pub fn read_into(path: &str, pieces: &[(u64, u64)], cells: &mut [u8]) -> Result<()> {
    if length(pieces) != cells.len() as u64 {
        return Err(Error::invalid(format!(
            "places of {} bytes in {path} for {} bytes of counters",
            length(pieces),
            cells.len()
        )));
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut rest = cells;
    for &(offset, len) in pieces {
        let (piece, after) = rest.split_at_mut(len as usize);
        file.read_exact_at(piece, offset).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::format(path, None, None, format!("truncated table file (while reading bytes at {offset})"))
            }
            _ => Error::io(path, e),
        })?;
        rest = after;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_round_trip_and_lengths_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t").to_string_lossy().into_owned();
        std::fs::write(&path, vec![0u8; 20]).unwrap();
        let pieces = [(2, 3), (10, 4)];
        write_pieces(&path, &pieces, b"abcdefg").unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..14], b"\0\0abc\0\0\0\0\0defg");
        assert_eq!(read_pieces(&path, &pieces).unwrap(), b"abcdefg");
        write_chunks::<std::io::Error>(&path, 15, |visit| {
            visit(b"xy")?;
            visit(b"z")
        })
        .unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[15..18], b"xyz");
        assert!(write_pieces(&path, &pieces, b"abc").unwrap_err().to_string().contains("3 bytes"));
        assert!(read_pieces(&path, &[(18, 4)]).unwrap_err().to_string().contains("truncated"));
    }

    #[test]
    fn pieces_longer_than_a_write_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t").to_string_lossy().into_owned();
        let (first, second) = (WRITE_CHUNK * 2 + 3, WRITE_CHUNK + 1);
        std::fs::write(&path, vec![0u8; 7 + first + 5 + second]).unwrap();
        let pieces = [(7, first as u64), ((7 + first + 5) as u64, second as u64)];
        let cells: Vec<u8> = (0..first + second).map(|i| (i % 251) as u8 + 1).collect();
        write_pieces(&path, &pieces, &cells).unwrap();
        let file = std::fs::read(&path).unwrap();
        assert_eq!(&file[7..7 + first], &cells[..first]);
        assert_eq!(&file[7 + first..7 + first + 5], &[0; 5]);
        assert_eq!(&file[7 + first + 5..], &cells[first..]);
    }
}
