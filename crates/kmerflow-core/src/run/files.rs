//! The files of a run: the preflight that checks all of them before anything is read
//! ([`preflight`]), and, for its report, every input opened through [`crate::io::open_input`]
//! (path, size, compression) and every output put in place under its final name.

use crate::io::output::check_writable;
use crate::io::same_file::{resolved, same_file};
use crate::io::Staged;
use crate::{Error, Result};
use std::path::Path;
use std::sync::Mutex;

/// What an output of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// A file (`-` = stdout).
    File,
    /// A folder the run writes files into (`--plots`, `--multiqc`): it exists, or its parent
    /// folder does and only the folder itself is created.
    Folder,
}

/// A check that what writes an output is there (`Err` says what is missing).
pub type Dependency = fn() -> std::result::Result<(), String>;

/// One output of a run as [`preflight`] checks it: its path, the flag that gave it (`None` for
/// a command's own outputs, named `output` in messages), its kind and what writing it needs.
#[derive(Debug, Clone)]
pub struct Output {
    /// The path as given (`-` = stdout for a file).
    pub path: String,
    /// The flag that gave it (`--html`), for messages.
    pub flag: Option<String>,
    /// A file or a folder.
    pub kind: OutputKind,
    /// What the front end needs to write it (`--plots`: matplotlib), checked after the paths.
    pub needs: Option<Dependency>,
}

impl Output {
    /// A command's own output file (`-o`, a derived `<input>.keep`, a saved table).
    pub fn file(path: impl Into<String>) -> Self {
        Output { path: path.into(), flag: None, kind: OutputKind::File, needs: None }
    }

    /// A file written by a front end beside the command's outputs, given by `flag`.
    pub fn side_file(flag: &str, path: impl Into<String>) -> Self {
        Output { path: path.into(), flag: Some(flag.to_string()), kind: OutputKind::File, needs: None }
    }

    /// A folder written into by a front end beside the command's outputs, given by `flag`.
    pub fn side_folder(flag: &str, path: impl Into<String>) -> Self {
        Output { path: path.into(), flag: Some(flag.to_string()), kind: OutputKind::Folder, needs: None }
    }

    /// The output, whose writer needs what `dependency` checks.
    pub fn needing(self, dependency: Option<Dependency>) -> Self {
        Output { needs: dependency, ..self }
    }

    /// The output as messages name it: `--html r.html`, or `output o.fq`.
    fn name(&self) -> String {
        format!("{} {}", self.flag.as_deref().unwrap_or("output"), self.path)
    }
}

/// The one check of a run's files before a byte is read, for every front end (the command
/// line, the Python functions, sharded runs): given the resolved `inputs` (reads and tables)
/// and every output and side output, it refuses, naming the flag and path,
/// - an output that is the same file as an input (the same path, `./in.fq`, a symbolic or
///   hard link): it would replace what the run reads;
/// - two outputs that are the same file (`--html o1.fq -o o1.fq`; both `-`): one would replace
///   the other;
/// - an output that cannot be written where it is named ([`check_writable`]): a folder given
///   as a file, a file given as a folder, a missing folder (a `Folder` output's own last
///   component excepted), a write-protected file or folder, a new name under `/proc`;
/// - an output whose writer is missing ([`Output::needs`]: `--plots` without matplotlib).
pub fn preflight<I: AsRef<str>>(inputs: &[I], outputs: &[Output]) -> Result<()> {
    for output in outputs.iter().filter(|o| o.path != "-") {
        if let Some(input) = inputs.iter().map(AsRef::as_ref).find(|i| same_file(&output.path, i)) {
            return Err(Error::invalid(format!(
                "{} is the same file as input {input}; refusing to overwrite an input",
                output.name()
            )));
        }
    }
    refuse_same_outputs(outputs)?;
    for output in outputs {
        let folder_made_by_run = |dir: &Path| {
            let dir = resolved(&dir.to_string_lossy());
            dir.is_some() && outputs.iter().any(|o| o.kind == OutputKind::Folder && resolved(&o.path) == dir)
        };
        check_writable(&output.path, output.kind, &folder_made_by_run).map_err(|e| match &output.flag {
            Some(flag) => Error::invalid(format!("{flag} {e}")),
            None => e,
        })?;
    }
    for output in outputs {
        if let Some(needs) = output.needs {
            needs().map_err(|missing| Error::invalid(format!("{}: {missing}", output.name())))?;
        }
    }
    Ok(())
}

/// Refuses, naming both, two of `outputs` that are the same file (both `-` included).
pub fn refuse_same_outputs(outputs: &[Output]) -> Result<()> {
    for (i, a) in outputs.iter().enumerate() {
        if let Some(b) = outputs[i + 1..].iter().find(|b| same_output(a, b)) {
            let what = if a.path == "-" { "both write to stdout" } else { "are the same file" };
            return Err(Error::invalid(format!("{} and {} {what}; give each output its own", a.name(), b.name())));
        }
    }
    Ok(())
}

/// True when outputs `a` and `b` name the same file: both `-` (stdout), or the same file by
/// path or by [`same_file`], existing or not (`./o.fq` is `o.fq`).
fn same_output(a: &Output, b: &Output) -> bool {
    if a.path == "-" || b.path == "-" {
        return a.path == b.path;
    }
    same_file(&a.path, &b.path) || resolved(&a.path).is_some_and(|r| Some(r) == resolved(&b.path))
}

/// One input file of a run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InputFile {
    /// The path as given (`-` = stdin).
    pub path: String,
    /// Its size in bytes when it is a regular file.
    pub bytes: Option<u64>,
    /// The compression detected (`plain`, `gzip`, `bgzf`, `bzip2`, `xz`, `zstd`).
    pub compression: &'static str,
    /// How many times the run opened it (once per pass over it).
    pub opened: u32,
}

/// The inputs and outputs of one run, each listed once, in the order first seen; and, for a
/// front end that writes more of the run after it (a sharded run's table), the outputs the run
/// committed while [`Files::hold_commits`] held them back.
#[derive(Debug, Default)]
pub struct Files {
    inputs: Mutex<Vec<InputFile>>,
    outputs: Mutex<Vec<String>>,
    /// `Some` while commits are held: the outputs committed since, still staged.
    held: Mutex<Option<Vec<Staged>>>,
}

impl Files {
    /// Records that input `path` was opened.
    pub fn add_input(&self, path: &str, bytes: Option<u64>, compression: &'static str) {
        let mut inputs = lock(&self.inputs);
        match inputs.iter_mut().find(|i| i.path == path) {
            Some(known) => known.opened += 1,
            None => inputs.push(InputFile { path: path.to_string(), bytes, compression, opened: 1 }),
        }
    }

    /// Records that output `path` (`-` = stdout) is complete under its final name.
    pub fn add_output(&self, path: &str) {
        let mut outputs = lock(&self.outputs);
        if !outputs.iter().any(|o| o == path) {
            outputs.push(path.to_string());
        }
    }

    /// The inputs opened so far.
    pub fn inputs(&self) -> Vec<InputFile> {
        lock(&self.inputs).clone()
    }

    /// The outputs written so far.
    pub fn outputs(&self) -> Vec<String> {
        lock(&self.outputs).clone()
    }

    /// From now on, an output of the run committed ([`Staged::commit`]) stays staged, held here
    /// for the front end to commit with what it writes after the run, or to discard on a
    /// failure ([`Files::take_held`]): nothing of the run appears unless all of it is written.
    pub fn hold_commits(&self) {
        lock(&self.held).get_or_insert_with(Vec::new);
    }

    /// Keeps `staged` uncommitted when commits are held (see [`Files::hold_commits`]); gives it
    /// back when they are not.
    pub(crate) fn hold(&self, staged: Staged) -> Option<Staged> {
        match lock(&self.held).as_mut() {
            Some(held) => {
                held.push(staged);
                None
            }
            None => Some(staged),
        }
    }

    /// The outputs held since [`Files::hold_commits`], in the order the run committed them,
    /// for the caller to commit or drop (each then removed); commits are no longer held.
    pub fn take_held(&self) -> Vec<Staged> {
        lock(&self.held).take().unwrap_or_default()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The preflight's error text for `outputs` beside input `input` (`None` when accepted).
    fn refusal(input: &str, outputs: &[Output]) -> Option<String> {
        preflight(&[input], outputs).err().map(|e| e.to_string())
    }

    #[test]
    fn outputs_are_checked_against_the_inputs_and_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(at("in.fq"), "@a\nACGT\n+\nIIII\n").unwrap();
        let input = at("in.fq");
        let err = refusal(&input, &[Output::file(at("o.fq")), Output::side_file("--html", at("o.fq"))]).unwrap();
        assert!(err.contains("output") && err.contains("--html") && err.contains("same file"), "{err}");
        let dotted = format!("{}/./o.fq", dir.path().display());
        assert!(refusal(&input, &[Output::file(at("o.fq")), Output::side_file("--metrics", dotted)]).is_some());
        std::os::unix::fs::symlink(at("o.fq"), at("link.fq")).unwrap();
        let err = refusal(&input, &[Output::file(at("o.fq")), Output::side_file("--report-json", at("link.fq"))]);
        assert!(err.is_some(), "a dangling link to another output");
        let err = refusal(&input, &[Output::side_folder("--plots", at("in.fq"))]).unwrap();
        assert!(err.contains("--plots") && err.contains("input"), "{err}");
        let both = [Output::file("-"), Output::side_file("--report-json", "-")];
        assert!(refusal(&input, &both).unwrap().contains("both write to stdout"));
        assert_eq!(refusal(&input, &[Output::file("-"), Output::file(at("o.fq"))]), None);
    }

    #[test]
    fn outputs_must_be_writable_where_they_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(at("file"), "x").unwrap();
        let input = at("in.fq");
        let refused = |output: Output, reason: &str| {
            let err = refusal(&input, std::slice::from_ref(&output)).unwrap_or_default();
            assert!(err.contains(&output.path) && err.contains(reason), "{output:?}: {err}");
        };
        refused(Output::side_file("--report-json", at("missing/r.json")), "does not exist");
        refused(Output::side_file("--html", dir.path().to_string_lossy()), "Is a directory");
        refused(Output::side_file("--metrics", "/proc/kmerflow-m.json"), "only files already open");
        refused(Output::side_file("--html", at("file/r.html")), "Not a directory");
        refused(Output::side_folder("--multiqc", at("file")), "a folder is needed, not a file");
        refused(Output::side_folder("--multiqc", at("a/b")), "only the last folder");
        refused(Output::side_folder("--plots", "-"), "a folder is needed");
        // A new folder in an existing one, and files in a folder the run makes, are accepted.
        let plots = [Output::side_folder("--plots", at("p")), Output::side_file("--plots", at("p/x.png"))];
        assert_eq!(refusal(&input, &plots), None);
        assert!(!std::path::Path::new(&at("p")).exists(), "the preflight writes nothing");
        let missing = || Err("needs matplotlib".to_string());
        let err = refusal(&input, &[Output::side_folder("--plots", at("p")).needing(Some(missing))]).unwrap();
        assert!(err.contains("--plots") && err.contains("needs matplotlib"), "{err}");
    }

    #[test]
    fn held_commits_wait_for_the_caller() {
        use crate::io::{Compression, OutputFile};
        use crate::run::RunContext;
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let run = RunContext::new();
        let write = |name: &str| {
            let path = dir.path().join(name).to_string_lossy().into_owned();
            let mut out = OutputFile::create_in(&path, Compression::None, &run).unwrap();
            out.write_all(name.as_bytes()).unwrap();
            out.finish().unwrap();
            path
        };
        let names = || {
            let mut names: Vec<String> =
                std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
            names.sort();
            names
        };
        run.files().hold_commits();
        let (a, b) = (write("a"), write("b"));
        assert!(run.files().outputs().is_empty());
        assert!(!names().contains(&"a".to_string()) && names().len() == 2, "{:?}", names());
        let mut held = run.files().take_held();
        assert_eq!(held.iter().map(|s| s.path()).collect::<Vec<_>>(), [a.as_str(), b.as_str()]);
        let c = write("c");
        assert_eq!(run.files().outputs(), [c]);
        drop(held.pop());
        held.into_iter().try_for_each(Staged::commit).unwrap();
        assert_eq!(names(), ["a", "c"]);
        assert_eq!(std::fs::read(a).unwrap(), b"a");
    }

    #[test]
    fn each_file_is_listed_once() {
        let files = Files::default();
        files.add_input("a.fq", Some(10), "plain");
        files.add_input("a.fq", Some(10), "plain");
        files.add_output("o.fq");
        files.add_output("o.fq");
        assert_eq!(files.inputs()[0].opened, 2);
        assert_eq!(files.inputs().len(), 1);
        assert_eq!(files.outputs(), ["o.fq"]);
    }
}
