//! Recorded model answers: one JSON file per request hash under `cache/llm/`, holding the canonical
//! request, the answer, the model that gave it, token usage and time. Committed to the repository,
//! they let a fresh machine replay a run with no model server.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::types::{Answer, ChatRequest};

#[derive(Debug, Serialize, Deserialize)]
pub struct Entry {
    pub request: ChatRequest,
    pub answer: Answer,
}

pub struct ResponseCache {
    dir: PathBuf,
}

impl ResponseCache {
    pub fn new(dir: &Path) -> ResponseCache {
        ResponseCache { dir: dir.to_path_buf() }
    }

    /// Where the answer to the request with this hash is recorded.
    pub fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(&hash[..2]).join(format!("{hash}.json"))
    }

    pub fn get(&self, hash: &str) -> Option<Answer> {
        let text = std::fs::read(self.path(hash)).ok()?;
        serde_json::from_slice::<Entry>(&text).ok().map(|e| e.answer)
    }

    /// Writes atomically (temporary file, then rename), so a crash never leaves half an answer; a
    /// failed write leaves no temporary file either.
    pub fn put(&self, hash: &str, request: &ChatRequest, answer: &Answer) -> std::io::Result<()> {
        let entry = Entry { request: request.clone(), answer: answer.clone() };
        let text = serde_json::to_vec_pretty(&entry).map_err(std::io::Error::other)?;
        write_atomically(&self.path(hash), &text)
    }
}

/// Writes `bytes` to `path` (its directory made if missing) through a temporary file renamed into
/// place, so a crash never leaves half a recording; a failed write leaves no temporary file either.
/// Each write has a temporary file of its own: two tasks recording the same answer at once (two
/// stages asking the same question) must not rename one file twice.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let nth = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp-{}-{nth}", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::write_atomically;

    /// Two stages that ask the same question record the same answer at the same time; every
    /// write must land, whichever finishes last.
    #[test]
    fn writes_of_one_path_at_once_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ab").join("same.json");
        let failures: usize = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8)
                .map(|i| {
                    let path = &path;
                    scope.spawn(move || {
                        (0..200)
                            .filter(|_| write_atomically(path, format!("{i}").as_bytes()).is_err())
                            .count()
                    })
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        assert_eq!(failures, 0);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.parse::<usize>().unwrap() < 8, "{text}");
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }
}
