//! Zeroed counter memory: a plain zeroed heap allocation for small tables, an anonymous
//! mmap aligned to 2 MiB and advised for transparent huge pages for big ones.

use std::sync::atomic::AtomicU8;

/// Tables at least this large are mmap-ed.
const MMAP_THRESHOLD: usize = 64 << 20;
/// Huge-page size and alignment of mmap-ed tables.
const HUGE_PAGE: usize = 2 << 20;

/// The owner of the memory (held so that dropping the buffer frees it).
#[allow(dead_code)]
enum Backing {
    Heap(Box<[u8]>),
    Mmap(memmap2::MmapMut),
}

/// A zero-initialised byte buffer that threads update through atomic views.
pub struct ZeroedBytes {
    _backing: Backing,
    /// Start of the usable bytes (inside `backing`).
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned; shared access only goes through `atomics()` (atomic bytes), and
// plain access needs `&mut self` or the documented no-concurrent-writer contract of `bytes()`.
unsafe impl Send for ZeroedBytes {}
// SAFETY: see above.
unsafe impl Sync for ZeroedBytes {}

impl ZeroedBytes {
    /// `len` zero bytes (anonymous mmap with huge pages from 64 MiB on).
    pub fn new(len: usize) -> std::io::Result<Self> {
        if len >= MMAP_THRESHOLD {
            let mut map = memmap2::MmapMut::map_anon(len + HUGE_PAGE)?;
            let base = map.as_mut_ptr();
            let offset = base.align_offset(HUGE_PAGE);
            // SAFETY: offset < HUGE_PAGE, so [offset, offset + len) lies inside the mapping.
            let ptr = unsafe { base.add(offset) };
            advise_huge_pages(ptr, len);
            Ok(Self { _backing: Backing::Mmap(map), ptr, len })
        } else {
            let mut heap = vec![0u8; len].into_boxed_slice();
            let ptr = heap.as_mut_ptr();
            Ok(Self { _backing: Backing::Heap(heap), ptr, len })
        }
    }

    #[cfg(test)]
    fn is_mmap(&self) -> bool {
        matches!(self._backing, Backing::Mmap(_))
    }

    /// The bytes as atomics, for shared updates.
    #[inline(always)]
    pub fn atomics(&self) -> &[AtomicU8] {
        // SAFETY: AtomicU8 has the layout of u8; the memory is valid for `len` bytes for the
        // lifetime of self and all shared mutation goes through atomics.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU8, self.len) }
    }

    /// The bytes, read plainly. Callers must not run this while another thread updates the
    /// buffer (tables document this for `raw_tables`).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: valid for `len` bytes; see the contract above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, mutably (exclusive access).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: valid for `len` bytes and `&mut self` excludes every other access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    // SAFETY: [ptr, ptr + len) is a mapping we own; the advice is only a hint (errors ignored).
    unsafe {
        libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn small_and_large_buffers_are_zeroed_and_writable() {
        for len in [0, 13, MMAP_THRESHOLD] {
            let mut buf = ZeroedBytes::new(len).unwrap();
            assert_eq!(buf.is_mmap(), len >= MMAP_THRESHOLD);
            assert!(buf.bytes().iter().step_by(4096).all(|&b| b == 0));
            if len > 0 {
                buf.atomics()[len - 1].fetch_add(3, Ordering::Relaxed);
                assert_eq!(buf.bytes()[len - 1], 3);
                buf.bytes_mut()[0] = 9;
                assert_eq!(buf.atomics()[0].load(Ordering::Relaxed), 9);
            }
            if buf.is_mmap() {
                assert_eq!(buf.ptr as usize % HUGE_PAGE, 0);
            }
        }
    }
}
