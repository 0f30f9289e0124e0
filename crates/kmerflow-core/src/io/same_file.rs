//! The check that no output of a command is one of its inputs (`-o in.fq in.fq` would
//! otherwise replace the reads it is reading). Every command calls [`refuse_inputs_as_outputs`]
//! with all its inputs (reads and tables) and outputs (including derived names such as
//! `<input>.keep` and side files) before it reads anything; the files its front end writes
//! beside them (`--metrics`, unique-kmers' `-R`), declared on the run
//! ([`RunContext::add_side_output`]), are checked with them.

use crate::run::RunContext;
use crate::{Error, Result};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

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

/// Refuses, naming both, an output (one of `outputs` or of the side outputs declared on `ctx`)
/// that is the same file as an input: the same path, or the same device and inode (a hard
/// link, a symbolic link, `./in.fq`).
pub fn refuse_inputs_as_outputs<I, O>(ctx: &RunContext, inputs: I, outputs: O) -> Result<()>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
    O: IntoIterator,
    O::Item: AsRef<str>,
{
    let outputs: Vec<String> = outputs.into_iter().map(|p| p.as_ref().to_string()).chain(ctx.side_outputs()).collect();
    refuse_same_files(inputs, outputs)
}

/// The check of [`refuse_inputs_as_outputs`] on the given paths only (for a file written after
/// the run, checked against what the run read and wrote).
pub fn refuse_same_files<I, O>(inputs: I, outputs: O) -> Result<()>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
    O: IntoIterator,
    O::Item: AsRef<str>,
{
    let inputs: Vec<(String, Option<(u64, u64)>)> =
        inputs.into_iter().map(|p| (p.as_ref().to_string(), identity(p.as_ref()))).collect();
    for output in outputs {
        let output = output.as_ref();
        if output == "-" {
            continue;
        }
        let id = identity(output);
        if let Some((input, _)) = inputs.iter().find(|(path, i)| path == output || (id.is_some() && *i == id)) {
            return Err(Error::invalid(format!(
                "output {output} is the same file as input {input}; refusing to overwrite an input"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ctx.add_side_output("-");
        ctx.add_side_output(dir.path().join("metrics.json").to_str().unwrap());
        assert!(refuse_inputs_as_outputs(&ctx, [input], ["-"]).is_ok());
        ctx.add_side_output(input);
        let err = refuse_inputs_as_outputs(&ctx, [input], ["-"]).unwrap_err().to_string();
        assert!(err.contains("refusing to overwrite an input"), "{err}");
    }
}
