//! Whether two paths name one file, and the run's entry to the [`preflight`] of its files
//! (`-o in.fq in.fq` would otherwise replace the reads it is reading). Every command calls
//! [`refuse_inputs_as_outputs`] with all its inputs (reads and tables) and outputs (including
//! derived names such as `<input>.keep` and side files) before it reads anything; the files its
//! front end writes beside them (`--metrics`, `--report-json`, `--html`, unique-kmers' `-R`),
//! declared on the run ([`RunContext::add_side_output`]), are checked with them.

use crate::run::files::{preflight, Output};
use crate::run::RunContext;
use crate::Result;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;

/// The device and inode of an existing `path` (following links); `None` for stdin/stdout (`-`),
/// missing files and character devices (a terminal may well be input and output at once).
fn identity(path: &str) -> Option<(u64, u64)> {
    if path == "-" {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    (!meta.file_type().is_char_device()).then(|| (meta.dev(), meta.ino()))
}

/// True when `a` and `b` name the same file: the same path, or the same device and inode.
pub fn same_file(a: &str, b: &str) -> bool {
    a == b || identity(a).is_some_and(|id| Some(id) == identity(b))
}

/// Where `path` resolves to, whether or not it exists yet: the real path of an existing file
/// (links followed), else the real path of its folder joined with its name (`./o.fq` and
/// `o.fq` resolve alike); `None` for `-` and where the folder does not exist.
pub fn resolved(path: &str) -> Option<PathBuf> {
    if path == "-" {
        return None;
    }
    let mut p = PathBuf::from(path);
    // A dangling symbolic link resolves to the file it will create (a loop to nothing).
    for _ in 0..40 {
        if let Ok(real) = std::fs::canonicalize(&p) {
            return Some(real);
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match std::fs::read_link(&p) {
            Ok(target) => p = dir.join(target),
            Err(_) => return Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?)),
        }
    }
    None
}

/// The run's [`preflight`]: refuses an output (one of `outputs`, a command's own, or of the side
/// outputs declared on `ctx`) that is the same file as an input or as another output, or that
/// cannot be written where it is named. Every command calls this with all its inputs and
/// outputs before it reads anything.
pub fn refuse_inputs_as_outputs<I, O>(ctx: &RunContext, inputs: I, outputs: O) -> Result<()>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
    O: IntoIterator,
    O::Item: AsRef<str>,
{
    let inputs: Vec<String> = inputs.into_iter().map(|p| p.as_ref().to_string()).collect();
    let outputs: Vec<Output> =
        outputs.into_iter().map(|p| Output::file(p.as_ref())).chain(ctx.side_outputs()).collect();
    preflight(&inputs, &outputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_whether_or_not_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("new.fq", at("link.fq")).unwrap();
        let dotted = format!("{}/./new.fq", dir.path().display());
        assert_eq!(resolved(&dotted), Some(real.join("new.fq")));
        assert_eq!(resolved(at("link.fq").to_str().unwrap()), Some(real.join("new.fq")));
        std::os::unix::fs::symlink("b", at("a")).unwrap();
        std::os::unix::fs::symlink("a", at("b")).unwrap();
        assert_eq!(resolved(at("a").to_str().unwrap()), None, "a loop of links");
        assert_eq!(resolved("-"), None);
        assert_eq!(resolved(at("no/x").to_str().unwrap()), None);
    }

    #[test]
    fn an_input_given_as_output_is_refused_by_path_link_or_inode() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.fq");
        std::fs::write(&input, "@a\nACGT\n+\nIIII\n").unwrap();
        let link = dir.path().join("link.fq");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let hard = dir.path().join("hard.fq");
        std::fs::hard_link(&input, &hard).unwrap();
        let input = input.to_str().unwrap();
        let ctx = RunContext::new();
        for output in [input, link.to_str().unwrap(), hard.to_str().unwrap()] {
            let err = refuse_inputs_as_outputs(&ctx, [input], [output]).unwrap_err().to_string();
            assert!(err.contains(output) && err.contains(input), "{err}");
        }
        let other = dir.path().join("out.fa");
        assert!(refuse_inputs_as_outputs(&ctx, [input, "-"], [other.to_str().unwrap(), "-"]).is_ok());
        assert!(refuse_inputs_as_outputs(&ctx, ["-"], ["-"]).is_ok());
    }

    #[test]
    fn a_side_output_declared_on_the_run_is_checked_with_the_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.fq");
        std::fs::write(&input, "@a\nACGT\n+\nIIII\n").unwrap();
        let input = input.to_str().unwrap();
        let ctx = RunContext::new();
        ctx.add_side_output(Output::side_file("--metrics", dir.path().join("metrics.json").to_str().unwrap()));
        assert!(refuse_inputs_as_outputs(&ctx, [input], ["-"]).is_ok());
        ctx.add_side_output(Output::side_file("--html", input));
        let err = refuse_inputs_as_outputs(&ctx, [input], ["-"]).unwrap_err().to_string();
        assert!(err.contains("--html") && err.contains("refusing to overwrite an input"), "{err}");
    }
}
