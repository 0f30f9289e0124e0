//! Range-checked value parsers of the numeric flags. A value out of range is a clap usage error
//! (exit 2) naming the flag, given before anything is read or allocated.

use crate::commands::counting_args::MemoryArg;
use clap::error::ErrorKind;
use clap::ArgMatches;
use kmerflow_core::kmer::twobit::MAX_K;
use kmerflow_core::ops::abundance_dist;
use kmerflow_core::ops::sizing::{self, GraphKind, TableParams};
use kmerflow_core::table::hll::HllCounter;
use kmerflow_core::table::Layout;

/// The largest table size, in bytes or buckets, that can be represented: 2^48 (256 TiB), the
/// address space of a 64-bit machine. Larger `-x` / `-M` values are usage errors.
pub const MAX_TABLE_SIZE: f64 = (1u64 << 48) as f64;

/// A count of at least 1 (`-k`, `-N`, `-S`), surrounding blanks allowed as Python's `int()`
/// allows them (`'-k 17'` given as one argument).
pub fn positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{text}' is not a whole number")),
    }
}

/// khmer's cutoff range 0 <= C < 256 (`-C` of normalize-by-median and filter-abund).
pub fn cutoff(text: &str) -> Result<u32, String> {
    let c: i64 = text.parse().map_err(|_| format!("'{text}' is not a whole number"))?;
    if (0..256).contains(&c) {
        Ok(c as u32)
    } else {
        Err(format!("{c} is not in the range 0 <= C < 256"))
    }
}

/// A number as Python's `float()` reads it (`1e6`, `inf`, `nan`).
fn float(text: &str) -> Result<f64, String> {
    text.trim().parse().map_err(|_| format!("'{text}' is not a number"))
}

/// A finite number of at most [`MAX_TABLE_SIZE`].
fn representable(value: f64) -> Result<f64, String> {
    if !value.is_finite() {
        Err("must be a finite number".into())
    } else if value > MAX_TABLE_SIZE {
        Err(format!("{value:e} is larger than any table can be (at most 2^48 = {MAX_TABLE_SIZE:e})"))
    } else {
        Ok(value)
    }
}

/// `-x/--max-tablesize`: a finite size from 1 to [`MAX_TABLE_SIZE`].
pub fn tablesize(text: &str) -> Result<f64, String> {
    let value = representable(float(text)?)?;
    if value < 1.0 {
        return Err("must be at least 1".into());
    }
    Ok(value)
}

/// `-M/--max-memory-usage`: khmer's memory setting (K/M/G/T suffixes), finite, not negative and
/// at most [`MAX_TABLE_SIZE`] bytes (0 means unset, as in khmer).
pub fn memory(text: &str) -> Result<f64, String> {
    let value = representable(sizing::parse_memory(text).map_err(|e| e.to_string())?)?;
    if value < 0.0 {
        return Err("must not be negative".into());
    }
    Ok(value)
}

/// `-U/--unique-kmers`: a finite count, not negative.
pub fn unique_kmers(text: &str) -> Result<f64, String> {
    let value = float(text)?;
    if !value.is_finite() || value < 0.0 {
        return Err("must be a finite number, 0 or more".into());
    }
    Ok(value)
}

/// `--fp-rate`: a probability strictly between 0 and 1.
pub fn fp_rate(text: &str) -> Result<f64, String> {
    let value = float(text)?;
    if !(value > 0.0 && value < 1.0) {
        return Err("must be between 0 and 1 (exclusive)".into());
    }
    Ok(value)
}

/// `unique-kmers -e/--error-rate`: a rate the HyperLogLog counter supports.
pub fn hll_error_rate(text: &str) -> Result<f64, String> {
    let value = float(text)?;
    HllCounter::new(value, 1).map(|_| value).map_err(|e| e.to_string())
}

/// The khmer layout's limit on k: a table-building command (one with `-x`) given `-k` above
/// [`MAX_K`](kmerflow_core::kmer::twobit::MAX_K) without `--layout blocked` is a usage error of
/// `-k` (unless it loads a saved table with `--loadgraph`, whose k is used).
pub fn check_khmer_ksize(command: &str, sub: &ArgMatches) -> Result<(), clap::Error> {
    // Only the table-sizing flags (GraphArgs) define `-N`, always with a value.
    let builds_table = matches!(sub.try_get_one::<usize>("n_tables"), Ok(Some(_)));
    let loads_table = matches!(sub.try_get_one::<String>("loadgraph"), Ok(Some(_)));
    let k = sub.try_get_one::<usize>("ksize").ok().flatten().copied().unwrap_or(0);
    let layout = sub.try_get_one::<Layout>("layout").ok().flatten().copied();
    if !builds_table || loads_table || k <= MAX_K || layout == Some(Layout::Blocked) {
        return Ok(());
    }
    let hint = match layout {
        Some(_) => "; use `--layout blocked` for larger k",
        None => "",
    };
    let message = format!(
        "invalid value '{k}' for '--ksize <KSIZE>': the khmer table layout supports k-mer sizes <= {MAX_K}{hint}"
    );
    let mut cmd = crate::cli_command();
    let cmd = cmd.find_subcommand_mut(command).expect("a parsed subcommand exists");
    Err(cmd.error(ErrorKind::ValueValidation, message))
}

/// The tables `-M` sizes: a memory so small that a table of the command would hold less than
/// one entry (`-M 1` with 4 tables) is a usage error of `-M`, as the core would refuse the size.
pub fn check_table_memory(command: &str, sub: &ArgMatches) -> Result<(), clap::Error> {
    let Ok(Some(MemoryArg::Bytes(memory))) = sub.try_get_one::<MemoryArg>("max_memory") else {
        return Ok(());
    };
    // Only the table-sizing flags (GraphArgs) define `-N`, always with a value; 0 means unset.
    let Ok(Some(&n_tables)) = sub.try_get_one::<usize>("n_tables") else { return Ok(()) };
    if *memory == 0.0 {
        return Ok(());
    }
    let kind = match (command, sub.try_get_one::<bool>("small_count")) {
        ("load-graph", _) => GraphKind::Nodegraph,
        (_, Ok(Some(true))) => GraphKind::SmallCountgraph,
        _ => GraphKind::Countgraph,
    };
    let multiplier = if command == "abundance-dist-single" { abundance_dist::SINGLE_MULTIPLIER } else { 1.0 };
    let params = TableParams { n_tables, ..TableParams::default() };
    let size = sizing::graph_size(&params, Some(*memory), kind, multiplier);
    if size >= 1.0 {
        return Ok(());
    }
    let least = (*memory / size).ceil();
    let message = format!(
        "invalid value '{memory}' for '--max-memory-usage <BYTES|auto>': each of the {n_tables} tables would hold \
         less than one entry; give at least {least} bytes"
    );
    let mut cmd = crate::cli_command();
    let cmd = cmd.find_subcommand_mut(command).expect("a parsed subcommand exists");
    Err(cmd.error(ErrorKind::ValueValidation, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_must_be_finite_positive_and_representable() {
        assert_eq!(tablesize("1e6"), Ok(1e6));
        for bad in ["0", "0.5", "-1", "inf", "nan", "1e30", "x"] {
            assert!(tablesize(bad).is_err(), "{bad}");
        }
        assert_eq!(memory("2G"), Ok(2e9));
        assert_eq!(memory("0"), Ok(0.0));
        for bad in ["nan", "inf", "1e20", "-1G", "1GB"] {
            assert!(memory(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_are_positive_and_may_have_blanks() {
        assert_eq!(positive(" 17"), Ok(17));
        assert!(positive("0").is_err() && positive("-3").is_err() && positive("x").is_err());
        assert_eq!(cutoff("255"), Ok(255));
        assert!(cutoff("256").is_err() && cutoff("-1").is_err());
    }

    #[test]
    fn rates_are_checked() {
        assert_eq!(fp_rate("0.1"), Ok(0.1));
        for bad in ["0", "1", "2", "-0.5", "nan"] {
            assert!(fp_rate(bad).is_err(), "{bad}");
        }
        assert!(hll_error_rate("0.01").is_ok());
        assert!(hll_error_rate("0").is_err() && hll_error_rate("0.9").is_err());
        assert!(unique_kmers("-1").is_err() && unique_kmers("inf").is_err());
    }
}
