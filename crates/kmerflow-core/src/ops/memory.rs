//! The memory a table may have: a table larger than the physical memory, the cgroup's memory
//! limit or what `ulimit -v` leaves of the address space is refused before it is allocated
//! (instead of the run being killed by the kernel, or failing late), naming the sizes and the
//! flags that set the table size.

use crate::{Error, Result};

/// Where a table's counters live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// Anonymous memory: needs physical memory within the cgroup's limit and address space.
    Memory,
    /// A shared map of a file (pages go to disk): needs address space only.
    File,
}

/// Bytes of physical memory (`u64::MAX` where unknown).
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages > 0 && page > 0 {
        (pages as u64).saturating_mul(page as u64)
    } else {
        u64::MAX
    }
}

/// The memory limit of the cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), if any.
fn cgroup_limit() -> Option<u64> {
    ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .filter_map(|text| text.trim().parse::<u64>().ok())
        // cgroup v1 writes "no limit" as a number near 2^63.
        .find(|&limit| limit < 1 << 60)
}

/// Bytes of memory a new table can have without pushing others out: the kernel's
/// `MemAvailable`, within the cgroup's limit and the address space left (`u64::MAX` where
/// none of them is known).
pub fn available_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb.saturating_mul(1024))
    });
    [available, cgroup_limit(), address_space_left()].into_iter().flatten().min().unwrap_or(u64::MAX)
}

/// The address space `ulimit -v` (RLIMIT_AS) leaves to this process, if limited.
fn address_space_left() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let used_kb = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    Some(limit.rlim_cur.saturating_sub(used_kb.unwrap_or(0) * 1024))
}

/// Refuses a table of `bytes` that cannot be had (see the module documentation).
pub fn check_table_fits(bytes: f64, backing: Backing) -> Result<()> {
    let mut limits = vec![(address_space_left(), "the address space left by `ulimit -v`")];
    if backing == Backing::Memory {
        limits.push((Some(physical_memory()), "the physical memory"));
        limits.push((cgroup_limit(), "the memory limit of this cgroup"));
    }
    for (limit, what) in limits {
        if let Some(limit) = limit.filter(|&l| bytes > l as f64) {
            return Err(Error::invalid(format!(
                "a table of {:.2} GB does not fit in {what} ({:.2} GB); make it smaller with \
                 -M/--max-memory-usage (or -x/--max-tablesize and -N/--n_tables)",
                bytes / 1e9,
                limit as f64 / 1e9
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_is_known_and_within_physical_memory() {
        let available = available_memory();
        assert!(available > 0 && available <= physical_memory(), "{available}");
    }

    #[test]
    fn a_table_beyond_physical_memory_is_refused_naming_the_flag() {
        let err = check_table_fits(physical_memory() as f64 * 2.0, Backing::Memory).unwrap_err().to_string();
        assert!(err.contains("physical memory") && err.contains("-M/--max-memory-usage"), "{err}");
        assert!(check_table_fits(1e6, Backing::Memory).is_ok());
        if address_space_left().is_none() {
            assert!(
                check_table_fits(physical_memory() as f64 * 2.0, Backing::File).is_ok(),
                "a file map may exceed RAM"
            );
        }
    }
}
