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
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
