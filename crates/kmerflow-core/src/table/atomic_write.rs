//! Writing a file atomically: into a temporary name in the same directory, then renamed over
//! the target, so readers never see a half-written file. (Kept independent of `crate::io` so
//! table saving does not depend on the I/O engine; the two can share one helper later.)

use crate::{Error, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes `path` through `fill`, which gets a buffered writer on a temporary file next to it.
/// On error the temporary file is removed and the target is left untouched.
pub fn write_atomically(path: &str, fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let target = Path::new(path);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = target.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let result = File::create(&temp).and_then(|file| {
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        fill(&mut writer)?;
        writer.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&temp, target)
    });
    result.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_file_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        let p = path.to_str().unwrap();
        write_atomically(p, |w| w.write_all(b"hello")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        let err = write_atomically(p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("boom"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("out.bin") && err.to_string().contains("boom"));
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
