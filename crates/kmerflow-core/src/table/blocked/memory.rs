//! The counter memory of a blocked table: 64-byte aligned, either anonymous (from
//! [`ZeroedBytes`], so huge pages and pre-faulting apply) or a map of a table file (a shared
//! map that counts directly into the file, or a private copy-on-write map of a loaded file).

use super::super::alloc::{AllocOptions, RawBytes, ZeroedBytes};
use super::LINE_BYTES;
use std::sync::atomic::AtomicU8;

/// The owner of the memory (held so that dropping it frees or unmaps it).
enum Backing {
    Anonymous(#[allow(dead_code)] ZeroedBytes),
    Map(memmap2::MmapMut),
}

/// `len` bytes of counters starting on a cache-line boundary.
pub(crate) struct LineMemory {
    backing: Backing,
    /// The counters (inside `backing`).
    bytes: RawBytes,
}

impl LineMemory {
    /// `len` zero bytes allocated as `options` say, aligned to a cache line.
    pub(crate) fn anonymous(len: usize, options: AllocOptions) -> std::io::Result<Self> {
        let zeroed = ZeroedBytes::with_options(len + LINE_BYTES, options)?;
        let base = zeroed.atomics().as_ptr() as *mut u8;
        // SAFETY: the offset is below LINE_BYTES, so [offset, offset + len) is inside the buffer.
        let ptr = unsafe { base.add(base.align_offset(LINE_BYTES)) };
        // SAFETY: inside the zeroed buffer, which the value owns.
        Ok(Self { backing: Backing::Anonymous(zeroed), bytes: unsafe { RawBytes::new(ptr, len) } })
    }

    /// The `len` bytes at `offset` (a multiple of the page size) of a writable map.
    pub(crate) fn mapped(mut map: memmap2::MmapMut, offset: usize, len: usize) -> Self {
        assert!(offset + len <= map.len() && offset & (LINE_BYTES - 1) == 0, "table data outside its map");
        // SAFETY: checked above that the range lies inside the map.
        let ptr = unsafe { map.as_mut_ptr().add(offset) };
        // SAFETY: inside the map, which the value owns.
        Self { backing: Backing::Map(map), bytes: unsafe { RawBytes::new(ptr, len) } }
    }

    /// The bytes as atomics, for (shared) updates.
    #[inline(always)]
    pub(crate) fn atomics(&self) -> &[AtomicU8] {
        self.bytes.atomics()
    }

    /// The bytes, mutably (`&mut self` excludes every other access).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes.bytes_mut()
    }

    /// The whole writable map (header included) of a mapped memory.
    pub(crate) fn map_mut(&mut self) -> Option<&mut memmap2::MmapMut> {
        match &mut self.backing {
            Backing::Map(map) => Some(map),
            Backing::Anonymous(_) => None,
        }
    }
}
