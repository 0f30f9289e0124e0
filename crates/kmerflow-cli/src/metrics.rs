//! `--metrics FILE.json`: the run's measurements as one JSON object.
//!
//! The run's metrics ([`kmerflow_core::run::metrics::Metrics::report`]) give per-input reader
//! thread times and byte counts, per-pipeline stage times and counters; this adds the command,
//! its wall and process CPU time, peak memory and the overall throughput.

use crate::report::usage;
use kmerflow_core::io::OutputFile;
use kmerflow_core::run::RunContext;
use kmerflow_core::{Error, Result};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

/// The JSON document for command `name` run as `argv` within `run` since `started`.
pub fn document(name: &str, argv: &[OsString], run: &RunContext, started: Instant) -> Value {
    let wall = started.elapsed().as_secs_f64();
    let (cpu, rss) = usage();
    let mut doc = run.metrics().report().unwrap_or_else(|| json!({}));
    let (totals, counters) = (&doc["totals"], &doc["counters"]);
    // A recorded amount per second of wall time (0 when absent).
    let rate = |amount: &Value| {
        let amount = amount.as_u64().unwrap_or(0) as f64;
        if wall > 0.0 {
            amount / wall
        } else {
            0.0
        }
    };
    let throughput = json!({
        "decompressed_mb_per_s": rate(&totals["bytes_in_decompressed"]) / 1e6,
        "compressed_mb_per_s": rate(&totals["bytes_in_compressed"]) / 1e6,
        "records_per_s": rate(&totals["records"]),
        "kmers_per_s": rate(&counters[kmerflow_core::run::metrics::KMERS]),
    });
    let run = json!({
        "command": name,
        "argv": argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
        "version": kmerflow_core::VERSION,
        "threads": run.threads(),
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_bytes": rss,
    });
    if let (Some(doc), Value::Object(run)) = (doc.as_object_mut(), run) {
        doc.extend(run);
        doc.insert("throughput".into(), throughput);
    }
    doc
}

/// Writes the metrics JSON to `path` (`-` = stdout).
pub fn write(path: &str, name: &str, argv: &[OsString], run: &RunContext, started: Instant) -> Result<()> {
    let doc = document(name, argv, run, started);
    let mut text = serde_json::to_vec_pretty(&doc).map_err(|e| Error::invalid(e.to_string()))?;
    text.push(b'\n');
    let mut out = OutputFile::create(path)?;
    out.write_all(&text).map_err(|e| Error::io(path, e))?;
    out.finish()
}
