//! Zeroed counter memory: a plain zeroed heap allocation for small tables, an anonymous
//! mmap aligned to 2 MiB for big ones, advised for transparent huge pages and optionally
//! pre-faulted ([`AllocOptions`]). [`ZeroedBytes`] is a table's (updated through atomic views),
//! [`OwnedBytes`] a shard's (read and written like a `Vec<u8>`). An allocation that fails is an
//! error, not an abort.

use std::io::ErrorKind;
use std::sync::atomic::AtomicU8;

/// Tables at least this large are mmap-ed.
const MMAP_THRESHOLD: usize = 64 << 20;
/// Huge-page size and alignment of mmap-ed tables.
const HUGE_PAGE: usize = 2 << 20;
/// Base page size used to pre-fault when `MADV_POPULATE_WRITE` is unavailable.
const PAGE: usize = 4096;

/// Transparent-huge-page policy of table memory (`--huge-pages auto|on|off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HugePages {
    /// Advise huge pages for tables of 64 MiB and more (the default).
    #[default]
    Auto,
    /// Advise huge pages for every table of at least one huge page.
    On,
    /// Never use huge pages (advised off even where the system default is "always").
    Off,
}

impl std::str::FromStr for HugePages {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "auto" => Ok(Self::Auto),
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            _ => Err(crate::Error::invalid(format!("unknown huge-page setting '{s}' (expected auto, on or off)"))),
        }
    }
}

/// How table memory is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AllocOptions {
    /// Huge-page policy.
    pub huge_pages: HugePages,
    /// Fault every page in at construction, so that page faults (and the kernel zeroing pages)
    /// do not land in the counting loop.
    pub populate: bool,
}

impl AllocOptions {
    /// The options of a shard's memory (a part of a table cut into shards, [`crate::shards`]):
    /// these, except that `auto` advises huge pages for every shard of at least one huge page,
    /// as `on` does. A table is cut into shards because it is large, and a process misses the
    /// TLB on all the shards it holds together, not on one.
    pub fn for_shard(self) -> Self {
        match self.huge_pages {
            HugePages::Auto => Self { huge_pages: HugePages::On, ..self },
            _ => self,
        }
    }
}

/// The owner of the memory (held so that dropping the buffer frees it).
#[allow(dead_code)]
enum Backing {
    Heap(Box<[u8]>),
    Mmap(memmap2::MmapMut),
}

/// `len` bytes at `ptr` that threads update through atomic views: the usable part of a memory
/// (a buffer, a map) owned by the value that holds them, which keeps it alive beside them.
pub(crate) struct RawBytes {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the memory is its holder's own; shared access only goes through `atomics()` (atomic
// bytes), and plain access needs `&mut self`.
unsafe impl Send for RawBytes {}
// SAFETY: see above.
unsafe impl Sync for RawBytes {}

impl RawBytes {
    /// The `len` bytes at `ptr`.
    ///
    /// # Safety
    /// They must be valid and writable while the value lives (its holder owns their memory and
    /// keeps it beside the value), and be accessed only through the value.
    pub(crate) unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        Self { ptr, len }
    }

    /// The bytes as atomics, for shared updates.
    #[inline(always)]
    pub(crate) fn atomics(&self) -> &[AtomicU8] {
        // SAFETY: AtomicU8 has the layout of u8; the memory is valid for `len` bytes for the
        // lifetime of self (`new`) and all shared mutation goes through atomics.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU8, self.len) }
    }

    /// The bytes, mutably (exclusive access).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: valid and writable for `len` bytes (`new`), and `&mut self` excludes every
        // other access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// A zero-initialised byte buffer that threads update through atomic views.
pub struct ZeroedBytes {
    _backing: Backing,
    /// The usable bytes (inside `backing`).
    bytes: RawBytes,
}

impl ZeroedBytes {
    /// `len` zero bytes allocated as `options` say (by default: an anonymous mmap with huge
    /// pages from 64 MiB on, a heap allocation below).
    pub fn with_options(len: usize, options: AllocOptions) -> std::io::Result<Self> {
        let huge = match options.huge_pages {
            HugePages::Auto => len >= MMAP_THRESHOLD,
            HugePages::On => len >= HUGE_PAGE,
            HugePages::Off => false,
        };
        if huge || len >= MMAP_THRESHOLD {
            let mut map = memmap2::MmapMut::map_anon(len + HUGE_PAGE)?;
            let base = map.as_mut_ptr();
            let offset = base.align_offset(HUGE_PAGE);
            // SAFETY: offset < HUGE_PAGE, so [offset, offset + len) lies inside the mapping.
            let ptr = unsafe { base.add(offset) };
            advise_huge_pages(ptr, len, huge);
            // SAFETY: inside the mapping, which the value owns.
            let mut bytes = Self { _backing: Backing::Mmap(map), bytes: unsafe { RawBytes::new(ptr, len) } };
            if options.populate {
                bytes.populate();
            }
            Ok(bytes)
        } else {
            let mut heap = zeroed_heap(len)?;
            let ptr = heap.as_mut_ptr();
            // SAFETY: the heap buffer, which the value owns.
            Ok(Self { _backing: Backing::Heap(heap), bytes: unsafe { RawBytes::new(ptr, len) } })
        }
    }

    #[cfg(test)]
    fn is_mmap(&self) -> bool {
        matches!(self._backing, Backing::Mmap(_))
    }

    /// The bytes as atomics, for shared updates.
    #[inline(always)]
    pub fn atomics(&self) -> &[AtomicU8] {
        self.bytes.atomics()
    }

    /// The bytes, mutably (exclusive access).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes.bytes_mut()
    }

    /// Faults every page in now (`MADV_POPULATE_WRITE`, or one write per page where the
    /// kernel lacks it); the bytes stay zero.
    fn populate(&mut self) {
        if !populate_write(self.bytes.ptr, self.bytes.len) {
            for page in self.bytes_mut().iter_mut().step_by(PAGE) {
                // SAFETY: a volatile write of the zero the page already holds, so that the
                // compiler keeps the store that faults the page in.
                unsafe { std::ptr::write_volatile(page, 0) };
            }
        }
    }
}

/// `len` zero bytes on the heap (zeroed lazily by the allocator, as `vec![0; len]` is), or an
/// error when they cannot be allocated.
fn zeroed_heap(len: usize) -> std::io::Result<Box<[u8]>> {
    if len == 0 {
        return Ok(Box::default());
    }
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|e| std::io::Error::new(ErrorKind::OutOfMemory, e))?;
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(std::io::Error::new(ErrorKind::OutOfMemory, format!("out of memory for {len} bytes")));
    }
    // SAFETY: `len` zeroed bytes from the global allocator with the layout of `[u8]` of `len`,
    // which the box now owns (and frees with that layout).
    Ok(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) })
}

/// Zero-initialised bytes allocated as a table's are ([`ZeroedBytes::with_options`]) but held
/// like a `Vec<u8>`: read through `&`, written through `&mut`, never updated through atomics
/// (a shard's counters, which only their holder counts).
pub(crate) struct OwnedBytes(ZeroedBytes);

impl OwnedBytes {
    /// `len` zero bytes allocated as `options` say.
    pub(crate) fn with_options(len: usize, options: AllocOptions) -> std::io::Result<Self> {
        ZeroedBytes::with_options(len, options).map(Self)
    }

    /// Whether the bytes are an anonymous map (with the huge pages their options advise).
    #[cfg(test)]
    fn is_mmap(&self) -> bool {
        self.0.is_mmap()
    }
}

impl std::ops::Deref for OwnedBytes {
    type Target = [u8];

    #[inline(always)]
    fn deref(&self) -> &[u8] {
        let bytes = &self.0.bytes;
        // SAFETY: valid for `len` bytes while self lives (`RawBytes::new`); an `OwnedBytes` never
        // gives out its atomic view, so every write goes through `&mut self` (`deref_mut`).
        unsafe { std::slice::from_raw_parts(bytes.ptr, bytes.len) }
    }
}

impl std::ops::DerefMut for OwnedBytes {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.0.bytes_mut()
    }
}

/// Bytes copied per call of the visitor in [`for_each_chunk`].
const SNAPSHOT_CHUNK: usize = 1 << 20;

/// Calls `visit` on consecutive copies (1 MiB at most) of `bytes`, read atomically: other threads
/// may keep updating them, each byte is then either its old or its new value (a snapshot that
/// is consistent per byte, as a read between two updates would be).
pub fn for_each_chunk<E>(bytes: &[AtomicU8], mut visit: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
    let mut chunk = Vec::with_capacity(SNAPSHOT_CHUNK.min(bytes.len()));
    for part in bytes.chunks(SNAPSHOT_CHUNK) {
        chunk.clear();
        chunk.extend(part.iter().map(|b| b.load(std::sync::atomic::Ordering::Relaxed)));
        visit(&chunk)?;
    }
    Ok(())
}

/// A copy of `bytes` read atomically (see [`for_each_chunk`]).
pub fn snapshot(bytes: &[AtomicU8]) -> Vec<u8> {
    let mut copy = Vec::with_capacity(bytes.len());
    for_each_chunk::<std::convert::Infallible>(bytes, |c| {
        copy.extend_from_slice(c);
        Ok(())
    })
    .unwrap_or_else(|never| match never {});
    copy
}

/// Advises transparent huge pages for the whole huge pages inside `buffer`, a heap buffer not
/// written yet (its pages faulted in before stay small): for scratch arrays of a few huge
/// pages and more looked up at random, whose small pages each cost a TLB miss.
pub(crate) fn advise_huge_pages_inside<T>(buffer: &mut [std::mem::MaybeUninit<T>]) {
    let (ptr, len) = (buffer.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(buffer));
    let offset = ptr.align_offset(HUGE_PAGE);
    if offset < len && len - offset >= HUGE_PAGE {
        // SAFETY: offset < len, so the pointer stays inside the buffer.
        let start = unsafe { ptr.add(offset) };
        advise_huge_pages(start, (len - offset) / HUGE_PAGE * HUGE_PAGE, true);
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, len: usize, on: bool) {
    let advice = if on { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
    // SAFETY: [ptr, ptr + len) is a mapping we own; the advice is only a hint (errors ignored).
    unsafe {
        libc::madvise(ptr.cast(), len, advice);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize, _on: bool) {}

/// Asks the kernel to fault the range in writable; false when it cannot (kernel < 5.14).
#[cfg(target_os = "linux")]
fn populate_write(ptr: *mut u8, len: usize) -> bool {
    // SAFETY: [ptr, ptr + len) is a private anonymous mapping we own; populating it only
    // allocates its (zero) pages.
    unsafe { libc::madvise(ptr.cast(), len, libc::MADV_POPULATE_WRITE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn populate_write(_ptr: *mut u8, _len: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn small_and_large_buffers_are_zeroed_and_writable() {
        for len in [0, 13, MMAP_THRESHOLD] {
            let mut buf = ZeroedBytes::with_options(len, AllocOptions::default()).unwrap();
            assert_eq!(buf.is_mmap(), len >= MMAP_THRESHOLD);
            assert!(buf.bytes_mut().iter().step_by(4096).all(|&b| b == 0));
            if len > 0 {
                buf.atomics()[len - 1].fetch_add(3, Ordering::Relaxed);
                assert_eq!(buf.bytes_mut()[len - 1], 3);
                buf.bytes_mut()[0] = 9;
                assert_eq!(buf.atomics()[0].load(Ordering::Relaxed), 9);
            }
            if buf.is_mmap() {
                assert_eq!(buf.bytes.ptr as usize % HUGE_PAGE, 0);
            }
        }
    }

    #[test]
    fn options_choose_the_backing_and_populated_memory_is_zero() {
        let on = AllocOptions { huge_pages: HugePages::On, populate: true };
        let mut buf = ZeroedBytes::with_options(HUGE_PAGE + 5, on).unwrap();
        assert!(buf.is_mmap());
        assert!(buf.bytes_mut().iter().all(|&b| b == 0));
        let off = AllocOptions { huge_pages: HugePages::Off, populate: false };
        assert!(!ZeroedBytes::with_options(HUGE_PAGE + 5, off).unwrap().is_mmap());
        assert!(ZeroedBytes::with_options(MMAP_THRESHOLD, off).unwrap().is_mmap());
    }

    #[test]
    fn shards_get_huge_pages_from_one_huge_page_unless_off() {
        let shard = AllocOptions::default().for_shard();
        assert_eq!(shard, AllocOptions { huge_pages: HugePages::On, populate: false });
        let off = AllocOptions { huge_pages: HugePages::Off, populate: true };
        assert_eq!(off.for_shard(), off);
        let mut cells = OwnedBytes::with_options(HUGE_PAGE + 5, shard).unwrap();
        assert!(cells.is_mmap() && cells.iter().all(|&b| b == 0));
        cells[HUGE_PAGE + 4] = 7;
        assert_eq!((cells.len(), cells[HUGE_PAGE + 4]), (HUGE_PAGE + 5, 7));
        assert!(!OwnedBytes::with_options(HUGE_PAGE - 1, shard).unwrap().is_mmap());
        assert!(!OwnedBytes::with_options(HUGE_PAGE + 5, off.for_shard()).unwrap().is_mmap());
        assert!(OwnedBytes::with_options(0, shard).unwrap().is_empty());
    }

    #[test]
    fn snapshots_copy_every_byte() {
        let buf = ZeroedBytes::with_options(SNAPSHOT_CHUNK * 2 + 3, AllocOptions::default()).unwrap();
        buf.atomics()[SNAPSHOT_CHUNK + 1].store(7, Ordering::Relaxed);
        let copy = snapshot(buf.atomics());
        assert_eq!(copy.len(), SNAPSHOT_CHUNK * 2 + 3);
        assert_eq!((copy[SNAPSHOT_CHUNK + 1], copy.iter().map(|&b| u64::from(b)).sum::<u64>()), (7, 7));
        let mut sizes = Vec::new();
        for_each_chunk::<()>(buf.atomics(), |c| {
            sizes.push(c.len());
            Ok(())
        })
        .unwrap();
        assert_eq!(sizes, [SNAPSHOT_CHUNK, SNAPSHOT_CHUNK, 3]);
    }

    #[test]
    fn huge_page_settings_parse() {
        assert_eq!("on".parse::<HugePages>().unwrap(), HugePages::On);
        assert_eq!("off".parse::<HugePages>().unwrap(), HugePages::Off);
        assert_eq!("auto".parse::<HugePages>().unwrap(), HugePages::Auto);
        assert!("yes".parse::<HugePages>().is_err());
    }
}
