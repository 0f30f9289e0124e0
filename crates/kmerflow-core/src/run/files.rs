//! The files a run read and wrote, for its report: every input opened through
//! [`crate::io::open_input`] (path, size, compression) and every output put in place under its
//! final name.

use std::sync::Mutex;

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

/// The inputs and outputs of one run, each listed once, in the order first seen.
#[derive(Debug, Default)]
pub struct Files {
    inputs: Mutex<Vec<InputFile>>,
    outputs: Mutex<Vec<String>>,
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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

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
