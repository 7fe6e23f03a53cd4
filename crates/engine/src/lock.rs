//! One writer per state directory. `curate run` holds an exclusive lock on `DIR/lock` for as long as
//! it runs; the operating system drops it when the process ends, even by `kill -9`, so a crash never
//! leaves a stale lock behind. The file records who holds it, for the message the next one gets.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::errors::LockError;

/// Held for the life of a run.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

pub fn acquire(dir: &Path) -> Result<StateLock, LockError> {
    let path = dir.join("lock");
    let io = |error| LockError::Io { dir: dir.to_path_buf(), error };
    let mut file =
        OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(LockError::Busy { dir: dir.to_path_buf(), holder: describe(holder.trim()) });
        }
        Err(TryLockError::Error(error)) => return Err(io(error)),
    }
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let command: Vec<String> = std::env::args().collect();
    file.set_len(0).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    writeln!(file, "{} {} {}", std::process::id(), since, command.join(" ")).map_err(io)?;
    Ok(StateLock { _file: file })
}

/// Turns the lock file's `PID SINCE COMMAND` into words.
fn describe(holder: &str) -> String {
    let mut parts = holder.splitn(3, ' ');
    match (parts.next(), parts.next().and_then(|s| s.parse::<u64>().ok()), parts.next()) {
        (Some(pid), Some(since), Some(command)) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(since);
            format!("pid {pid}, `{command}`, running for {}s", now.saturating_sub(since))
        }
        _ => "a process that has not written its details yet".to_string(),
    }
}

/// Who holds the lock on `dir` right now, if anyone; for `status`. Never blocks.
pub fn holder(dir: &Path) -> Option<String> {
    let mut file = OpenOptions::new().read(true).write(true).open(dir.join("lock")).ok()?;
    match file.try_lock() {
        Ok(()) => None,
        Err(_) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            Some(describe(text.trim()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_release_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let held = acquire(dir.path()).unwrap();
        let err = acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(holder(dir.path()).is_some_and(|h| h.contains("pid")));
        drop(held);
        assert_eq!(holder(dir.path()), None);
        acquire(dir.path()).expect("free again once dropped");
    }
}
