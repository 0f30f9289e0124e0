//! The memory a table may have: a table larger than the physical memory, what the memory limits
//! of this process's own cgroup leave, or what `ulimit -v` leaves of the address space is refused
//! before it is allocated (instead of the run being killed by the kernel, or failing late),
//! naming the sizes and the flags that set the table size.
//!
//! The cgroup is the one `/proc/self/cgroup` names (under Slurm, `systemd-run` or a container it
//! is nested below the hierarchy's root), found under its hierarchy's mount point from
//! `/proc/self/mountinfo`: cgroup v2 (`memory.max`) and the v1 memory controller
//! (`memory.limit_in_bytes`). The limit of that cgroup and of every ancestor applies; what one
//! leaves is its limit less the memory its processes use, not counting the page cache (which the
//! kernel reclaims before it kills).

use crate::{Error, Result};
use std::path::{Component, Path, PathBuf};

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

/// The tightest memory limit of a cgroup and its ancestors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupMemory {
    /// The smallest limit, in bytes.
    pub limit: u64,
    /// The least any of them leaves: its limit less what its processes use beyond the page cache.
    pub left: u64,
}

/// The memory limits of this process's cgroup (see the module documentation), if any.
pub fn cgroup_memory() -> Option<CgroupMemory> {
    cgroup_memory_under(Path::new("/"))
}

/// [`cgroup_memory`] reading `proc/self/...` and the cgroup file systems under `root` (`/`, or a
/// fake tree in tests).
pub fn cgroup_memory_under(root: &Path) -> Option<CgroupMemory> {
    let cgroups = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let mountinfo = std::fs::read_to_string(root.join("proc/self/mountinfo")).ok()?;
    let mut tightest: Option<CgroupMemory> = None;
    for mount in mountinfo.lines().filter_map(CgroupMount::parse) {
        let Some(path) = cgroups.lines().find_map(|line| mount.version.own_path(line)) else { continue };
        let mount_point = under_root(root, &mount.mount_point);
        // The cgroup's folder: its path below the mount's root (a path outside it, as a cgroup
        // namespace shows the cgroups of other namespaces, leaves the mount point itself).
        let relative = Path::new(path)
            .strip_prefix(&mount.root)
            .ok()
            .filter(|rel| rel.components().all(|c| matches!(c, Component::Normal(_))))
            .unwrap_or(Path::new(""));
        let mut dir = mount_point.join(relative);
        loop {
            if let Some(level) = mount.version.limit_of(&dir) {
                tightest = Some(match tightest {
                    Some(t) => CgroupMemory { limit: t.limit.min(level.limit), left: t.left.min(level.left) },
                    None => level,
                });
            }
            if dir == mount_point || !dir.pop() {
                break;
            }
        }
    }
    tightest
}

/// `path` (absolute) inside the tree at `root`.
fn under_root(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Which cgroup hierarchy a mount holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CgroupVersion {
    /// The unified hierarchy.
    V2,
    /// A v1 hierarchy with the memory controller.
    V1Memory,
}

impl CgroupVersion {
    /// This process's cgroup path in the hierarchy from one line of `/proc/self/cgroup`
    /// (`ID:CONTROLLERS:PATH`), if the line is this hierarchy's.
    fn own_path(self, line: &str) -> Option<&str> {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let ours = match self {
            CgroupVersion::V2 => id == "0" && controllers.is_empty(),
            CgroupVersion::V1Memory => controllers.split(',').any(|c| c == "memory"),
        };
        ours.then_some(path)
    }

    /// The limit a cgroup folder sets and what it leaves; `None` without a limit.
    fn limit_of(self, dir: &Path) -> Option<CgroupMemory> {
        let read_bytes = |name: &str| std::fs::read_to_string(dir.join(name)).ok()?.trim().parse::<u64>().ok();
        let (limit_file, usage_file, cache_keys) = match self {
            // `max` (no limit) does not parse.
            CgroupVersion::V2 => ("memory.max", "memory.current", &["file"][..]),
            CgroupVersion::V1Memory => {
                ("memory.limit_in_bytes", "memory.usage_in_bytes", &["total_cache", "cache"][..])
            }
        };
        // cgroup v1 writes "no limit" as a number near 2^63.
        let limit = read_bytes(limit_file).filter(|&l| l < 1 << 60)?;
        let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
        let cache = cache_keys.iter().find_map(|key| {
            stat.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse::<u64>().ok())
        });
        let used = read_bytes(usage_file).unwrap_or(0).saturating_sub(cache.unwrap_or(0));
        Some(CgroupMemory { limit, left: limit.saturating_sub(used) })
    }
}

/// A cgroup file system from one line of `/proc/self/mountinfo`.
struct CgroupMount {
    version: CgroupVersion,
    /// The folder of the hierarchy the mount shows (`/` unless a container mounts its own).
    root: String,
    /// Where it is mounted.
    mount_point: String,
}

impl CgroupMount {
    /// Parses `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [TAGS...] - TYPE SOURCE SUPER_OPTIONS`;
    /// `None` for a mount that is not cgroup v2 or the v1 memory controller.
    fn parse(line: &str) -> Option<CgroupMount> {
        let (before, after) = line.split_once(" - ")?;
        let mut before = before.split(' ');
        let (root, mount_point) = (before.nth(3)?, before.next()?);
        let mut after = after.split(' ');
        let (fs_type, super_options) = (after.next()?, after.nth(1).unwrap_or(""));
        let version = match fs_type {
            "cgroup2" => CgroupVersion::V2,
            "cgroup" if super_options.split(',').any(|o| o == "memory") => CgroupVersion::V1Memory,
            _ => return None,
        };
        Some(CgroupMount { version, root: unescape_mount_path(root), mount_point: unescape_mount_path(mount_point) })
    }
}

/// A mountinfo path with its octal escapes (`\040` for a space) decoded.
fn unescape_mount_path(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal =
            bytes.get(i + 1..i + 4).filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal.and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The kernel's `MemAvailable` under `root` (`/`, or a fake tree in tests), if known.
fn mem_available_under(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(root.join("proc/meminfo")).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb.saturating_mul(1024))
}

/// Bytes of memory a new table can have without pushing others out: the kernel's
/// `MemAvailable`, within what the cgroup's limits leave and the address space left
/// (`u64::MAX` where none of them is known).
pub fn available_memory() -> u64 {
    available_memory_under(Path::new("/"), address_space_left())
}

/// [`available_memory`] from the files under `root`, with `address_space` left by `ulimit -v`.
fn available_memory_under(root: &Path, address_space: Option<u64>) -> u64 {
    [mem_available_under(root), cgroup_memory_under(root).map(|c| c.left), address_space]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
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

/// Refuses a table of `bytes` that cannot be had (see the module documentation), naming the
/// command-line flags that set its size.
pub fn check_table_fits(bytes: f64, backing: Backing) -> Result<()> {
    check_fits(bytes, backing, "-M/--max-memory-usage (or -x/--max-tablesize and -N/--n_tables)")
}

/// Refuses the saved table file `path` whose tables take `bytes` of memory that cannot be had
/// (see the module documentation), naming the file, before its tables are read: a table that
/// is loaded is held (and counted into) in memory, whatever its layout.
pub fn check_saved_table_fits(path: &str, bytes: u64) -> Result<()> {
    check_fits(bytes as f64, Backing::Memory, "the flags that made it (-M, or -x and -N)")
        .map_err(|e| Error::format(path, None, None, e.to_string()))
}

/// [`check_table_fits`] naming `what_sets_the_size` as the way to make the table smaller.
pub fn check_fits(bytes: f64, backing: Backing, what_sets_the_size: &str) -> Result<()> {
    let mut limits = vec![(address_space_left(), "the address space left by `ulimit -v`".to_string())];
    if backing == Backing::Memory {
        limits.push((Some(physical_memory()), "the physical memory".to_string()));
        if let Some(cgroup) = cgroup_memory() {
            let of_limit = format!("{:.2} GB", cgroup.limit as f64 / 1e9);
            limits.push((Some(cgroup.left), format!("the memory this cgroup's limit of {of_limit} leaves")));
        }
    }
    for (limit, what) in limits {
        if let Some(limit) = limit.filter(|&l| bytes > l as f64) {
            return Err(Error::invalid(format!(
                "a table of {:.2} GB does not fit in {what} ({:.2} GB); make it smaller with {what_sets_the_size}",
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

    /// A fake system: `files` (path under the root, contents) written into a fresh folder.
    fn fake_root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    /// A fake system: MemAvailable 8 GB ([`MEMINFO`]), the process in `cgroup` (as
    /// `/proc/self/cgroup` names it) under the mounts of `mountinfo`, and `files`.
    fn fake_system(cgroup: &str, mountinfo: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
        let proc = [("proc/meminfo", MEMINFO), ("proc/self/cgroup", cgroup), ("proc/self/mountinfo", mountinfo)];
        fake_root(&[&proc[..], files].concat())
    }

    const MEMINFO: &str = "MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\n";

    #[test]
    fn a_nested_v2_cgroup_takes_the_tightest_limit_of_itself_and_its_ancestors() {
        let root = fake_system(
            "0::/user.slice/job 42/step\n",
            "22 1 0:20 / /proc rw - proc proc rw\n\
             30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
            &[
                ("sys/fs/cgroup/memory.max", "max\n"),
                ("sys/fs/cgroup/user.slice/memory.max", "max\n"),
                ("sys/fs/cgroup/user.slice/job 42/memory.max", "1000000000\n"),
                ("sys/fs/cgroup/user.slice/job 42/memory.current", "300000000\n"),
                ("sys/fs/cgroup/user.slice/job 42/memory.stat", "anon 100000000\nfile 250000000\n"),
                ("sys/fs/cgroup/user.slice/job 42/step/memory.max", "2000000000\n"),
                ("sys/fs/cgroup/user.slice/job 42/step/memory.current", "10000000\n"),
            ],
        );
        // The step's own limit is looser than its job's: the job's applies, less the job's
        // memory beyond its page cache (300 - 250 MB).
        let cgroup = cgroup_memory_under(root.path()).unwrap();
        assert_eq!(cgroup, CgroupMemory { limit: 1_000_000_000, left: 950_000_000 });
        assert_eq!(available_memory_under(root.path(), None), 950_000_000);
        assert_eq!(available_memory_under(root.path(), Some(5_000)), 5_000, "ulimit -v counts");
    }

    #[test]
    fn a_v1_memory_controller_mounted_at_the_containers_cgroup_is_read_there() {
        // A container without a cgroup namespace: the hierarchy's folder of the container is
        // mounted at /sys/fs/cgroup/memory, /proc/self/cgroup names the full path.
        let root = fake_system(
            "12:pids:/docker/abc\n4:cpuacct,memory:/docker/abc/inner\n1:name=systemd:/\n0::/\n",
            "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory,cpuacct\n\
             36 31 0:33 /docker/abc /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n",
            &[
                ("sys/fs/cgroup/memory/memory.limit_in_bytes", "500000000\n"),
                ("sys/fs/cgroup/memory/memory.usage_in_bytes", "200000000\n"),
                ("sys/fs/cgroup/memory/memory.stat", "cache 5\ntotal_cache 150000000\n"),
                ("sys/fs/cgroup/memory/inner/memory.limit_in_bytes", "9223372036854771712\n"),
                ("sys/fs/cgroup/pids/memory.limit_in_bytes", "1\n"),
            ],
        );
        let cgroup = cgroup_memory_under(root.path()).unwrap();
        assert_eq!(cgroup, CgroupMemory { limit: 500_000_000, left: 450_000_000 });
    }

    #[test]
    fn no_cgroup_limit_leaves_mem_available() {
        let unlimited = fake_system(
            "4:memory:/a\n0::/b\n",
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
             41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
            &[
                ("sys/fs/cgroup/memory/a/memory.limit_in_bytes", "9223372036854771712\n"),
                ("sys/fs/cgroup/unified/b/memory.max", "max\n"),
            ],
        );
        assert_eq!(cgroup_memory_under(unlimited.path()), None);
        assert_eq!(available_memory_under(unlimited.path(), None), 8_192_000_000);
        let nothing = fake_root(&[]);
        assert_eq!(available_memory_under(nothing.path(), None), u64::MAX);
    }

    #[test]
    fn a_hybrid_system_reads_the_v1_limit_and_a_namespaced_path_stays_inside_the_mount() {
        let root = fake_system(
            // Under a cgroup namespace a path outside it reads `/..`: the mount point is used.
            "4:memory:/../../escape\n0::/x\n",
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
             41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
            &[
                ("sys/fs/cgroup/memory/escape/memory.limit_in_bytes", "1\n"),
                ("sys/fs/cgroup/memory/memory.limit_in_bytes", "700000000\n"),
                ("sys/fs/cgroup/unified/x/memory.max", "800000000\n"),
            ],
        );
        let cgroup = cgroup_memory_under(root.path()).unwrap();
        assert_eq!(cgroup, CgroupMemory { limit: 700_000_000, left: 700_000_000 });
        assert_eq!(unescape_mount_path(r"/a\040b\134c\9"), r"/a b\c\9");
    }
}
