//! Reading the files a pipeline names (the pipeline itself, its prompts, its `inputs:`): only
//! regular files, and only up to a size, so a FIFO never hangs a command and `/dev/zero` never
//! fills memory.

use std::io::Read;
use std::path::Path;

/// The largest pipeline, prompt or input file read.
pub const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// The bytes of `path`, when it is a regular file (symbolic links followed) of at most `limit`
/// bytes; else an error that says what it is instead.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        let what =
            if meta.is_dir() { "a directory" } else { "not a regular file (a FIFO, a socket or a device)" };
        return Err(std::io::Error::other(format!("it is {what}")));
    }
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    let mut bytes = Vec::new();
    // The file may grow between the check and the read.
    std::fs::File::open(path)?.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// [`read_regular`] as text.
pub fn read_regular_text(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, limit)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

fn too_large(limit: u64) -> std::io::Error {
    std::io::Error::other(format!("it is larger than {} MiB", limit >> 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.yaml");
        std::fs::write(&file, "name: x\n").unwrap();
        assert_eq!(read_regular_text(&file, 100).unwrap(), "name: x\n");
        assert!(read_regular(&file, 3).unwrap_err().to_string().contains("larger than"));
        assert!(read_regular(dir.path(), 100).unwrap_err().to_string().contains("a directory"));
        let zero = read_regular(Path::new("/dev/zero"), MAX_CONFIG_BYTES).unwrap_err();
        assert!(zero.to_string().contains("not a regular file"), "{zero}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // No writer ever opens it: reading it would hang.
        assert!(read_regular(&fifo, 100).unwrap_err().to_string().contains("not a regular file"));
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(read_regular_text(&file, 100).unwrap_err().to_string().contains("UTF-8"));
    }
}
