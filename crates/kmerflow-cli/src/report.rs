//! The resource summary printed on stderr at the end of a run (wall time, CPU time and peak
//! memory from `getrusage`), in the style of minimap2.

use std::ffi::OsString;
use std::time::Instant;

/// A run being measured.
pub struct Report {
    command_line: String,
    started: Instant,
}

/// CPU seconds (user + system) and peak resident set size in bytes of this process.
pub fn usage() -> (f64, u64) {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    // ru_maxrss is in KiB on Linux.
    let maxrss = (ru.ru_maxrss.max(0) as u64) * 1024;
    (secs(ru.ru_utime) + secs(ru.ru_stime), memory_high_water().unwrap_or(maxrss))
}

/// The peak resident set size of this program's memory (`VmHWM`), in bytes. `ru_maxrss` is
/// not used when this is known: Linux carries it over `exec`, so a run started by a large
/// process (a Python test runner, a workflow engine) would report its parent's size.
fn memory_high_water() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

impl Report {
    /// Starts measuring the command line `argv`.
    pub fn start(argv: &[OsString]) -> Self {
        let args = argv.iter().skip(1).map(|a| a.to_string_lossy());
        let command_line = std::iter::once("kmerflow".into()).chain(args).collect::<Vec<_>>().join(" ");
        Report { command_line, started: Instant::now() }
    }

    /// The summary line.
    pub fn line(&self) -> String {
        let (cpu, rss) = usage();
        format!(
            "[kmerflow] Version: {}; CMD: {}; Real time: {:.3} sec; CPU: {:.3} sec; Peak RSS: {:.3} GB",
            kmerflow_core::VERSION,
            self.command_line,
            self.started.elapsed().as_secs_f64(),
            cpu,
            rss as f64 / (1u64 << 30) as f64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line_names_version_and_command() {
        let r = Report::start(&["/x/kmerflow".into(), "readstats".into(), "a.fq".into()]);
        let line = r.line();
        assert!(line.starts_with("[kmerflow] Version: 0.1.0; CMD: kmerflow readstats a.fq; Real time: "), "{line}");
        assert!(line.ends_with(" GB"));
        assert!(usage().1 > 0);
    }
}
