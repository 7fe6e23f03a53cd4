//! What an environment's repairs came to, remembered across runs. A later run whose first recipe
//! is the same (a fresh state, another pipeline over the same PR) starts from the repaired recipe
//! instead of failing the same first attempts again, and records the attempts it was spared, so
//! its record is the first run's. A remembered recipe that no longer builds is forgotten, and the
//! repairs start over.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::recipe::Recipe;
use super::repair::Fixes;

/// The repairs that made one environment build: the fixes, and the failed attempts as recorded.
#[derive(Debug, Serialize, Deserialize)]
pub struct Remembered {
    pub fixes: Fixes,
    pub attempts: Value,
}

/// Remembered repairs, a file each, under a directory of the pipeline's cache.
pub struct RepairMemory {
    dir: PathBuf,
}

impl RepairMemory {
    pub fn new(dir: &Path) -> RepairMemory {
        RepairMemory { dir: dir.to_path_buf() }
    }

    /// The key of the repairs of `repo` whose unrepaired recipe is `first`: everything the recipe
    /// holds before a fix (its layers' Dockerfiles, requirements and checks).
    pub fn key(repo: &str, first: &Recipe) -> String {
        let verify: Vec<String> = first.verify.iter().map(|c| c.join(" ")).collect();
        let parts = [
            repo,
            &first.tools_dockerfile,
            &first.deps_dockerfile,
            &first.requirements_txt,
            &first.instance_dockerfile,
            &verify.join("\n"),
        ];
        hex::encode(Sha256::digest(parts.join("\n\u{0}\n")))
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The repairs remembered under `key`; none when there are none or the file does not read.
    pub fn recall(&self, key: &str) -> Option<Remembered> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Remembers `repairs` under `key`. Only a speed-up: a file that cannot be written is left out.
    pub fn remember(&self, key: &str, repairs: &Remembered) {
        if let Ok(text) = serde_json::to_vec_pretty(repairs) {
            let _ = crate::llm::cache::write_atomically(&self.path(key), &text);
        }
    }

    /// Forgets what is remembered under `key`.
    pub fn forget(&self, key: &str) {
        let _ = std::fs::remove_file(self.path(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_are_recalled_as_remembered_and_a_damaged_file_is_no_memory() {
        let dir = tempfile::tempdir().unwrap();
        let memory = RepairMemory::new(&dir.path().join("repairs"));
        assert!(memory.recall("k").is_none());
        let mut fixes = Fixes::default();
        fixes.requirements.insert("simplejson".into());
        let attempts = serde_json::json!([{"failed": "no module named 'simplejson'", "python": "3.11"}]);
        memory.remember("k", &Remembered { fixes: fixes.clone(), attempts: attempts.clone() });
        let back = memory.recall("k").unwrap();
        assert_eq!((back.fixes, back.attempts), (fixes, attempts));
        std::fs::write(dir.path().join("repairs/k.json"), "{not json").unwrap();
        assert!(memory.recall("k").is_none());
        memory.forget("k");
        assert!(!dir.path().join("repairs/k.json").exists());
    }
}
