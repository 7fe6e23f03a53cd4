//! The shape every source gives its items, whatever the format it read: a [`PullRequest`] record for
//! PR items and a [`ReviewComment`] record for comment items. Stages read these, never a source's own
//! format, so a new source needs no change anywhere else.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A pull request: the reviewed state is `head_commit`, the state that fixed what the review asked
/// is `fixed_commit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequest {
    /// `owner/name`.
    pub repo: String,
    pub number: Option<u64>,
    pub title: String,
    pub body: String,
    pub language: Option<String>,
    /// ISO 8601, when the PR (or the reviewed commit) was made; dependencies are pinned to it.
    pub created_at: Option<String>,
    pub base_commit: String,
    pub head_commit: String,
    pub fixed_commit: Option<String>,
    /// The diff under review, base..head.
    pub patch: Option<String>,
    /// The diff base..fixed.
    pub fixed_patch: Option<String>,
    /// Whatever else the source had (issue text, metadata), kept as it was.
    #[serde(default)]
    pub extra: Map<String, Value>,
}

impl PullRequest {
    /// The PR's own merge, when the source names it apart from the fixed commit (the real-world
    /// set's `metadata.pr_merged_commit`, where the fixed commit is the one that answers the
    /// comment): the PR's final state, whose tests may come after the fix.
    pub fn pr_merged_commit(&self) -> Option<&str> {
        let key = "pr_merged_commit";
        self.extra.get(key).or_else(|| self.extra.get("metadata")?.get(key)).and_then(Value::as_str)
    }
}

/// One human review comment on a PR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewComment {
    pub text: String,
    /// Relative to the repository root; checked to stay inside it.
    pub path: Option<String>,
    /// The hunk as the review tool showed it, from its `@@` header to the commented line.
    pub diff_hunk: Option<String>,
    /// Line in the new (head) side of the diff; `None` for a comment on a deleted line.
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    /// Line in the diff the comment was first made on (the old side for deleted lines).
    pub original_line: Option<u64>,
    pub original_start_line: Option<u64>,
    /// Position among the PR's comments, from 1.
    pub index: usize,
    /// Whether the PR's own author wrote it, when the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_pr_author: Option<bool>,
    /// Whether it answers an earlier comment of its thread, when the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_reply: Option<bool>,
    #[serde(default)]
    pub extra: Map<String, Value>,
}

/// Why a path from data cannot name a file of the repository.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("is empty")]
    Empty,
    #[error("contains a NUL byte")]
    Nul,
    #[error("`{0}` escapes the repository (`..`)")]
    Escapes(String),
    #[error("`{0}` is absolute; it must be relative to the repository")]
    Absolute(String),
    #[error("`{0}` names no file")]
    NoFile(String),
}

/// Checks that a path from data stays inside the repository: relative, no `..`, no NUL.
pub fn check_repo_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::Nul);
    }
    for c in Path::new(path).components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(PathError::Escapes(path.to_string())),
            Component::RootDir | Component::Prefix(_) => return Err(PathError::Absolute(path.to_string())),
        }
    }
    Ok(())
}

/// A comment's file as the repository names it: checked like [`check_repo_path`], with `./` and
/// `a/./b` steps dropped (git's trees have no `.`), and not `.` alone, which names no file.
pub fn normalize_repo_path(path: &str) -> Result<String, PathError> {
    check_repo_path(path)?;
    let parts: Vec<&str> = Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        return Err(PathError::NoFile(path.to_string()));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prs_merge_is_read_where_a_source_names_it() {
        let pr = |extra: Value| PullRequest {
            repo: "a/b".into(),
            number: None,
            title: String::new(),
            body: String::new(),
            language: None,
            created_at: None,
            base_commit: "a".into(),
            head_commit: "b".into(),
            fixed_commit: Some("c".into()),
            patch: None,
            fixed_patch: None,
            extra: extra.as_object().cloned().unwrap_or_default(),
        };
        let merge = serde_json::json!({"metadata": {"fix_commit": "c", "pr_merged_commit": "d"}});
        assert_eq!(pr(merge).pr_merged_commit(), Some("d"));
        assert_eq!(pr(serde_json::json!({"pr_merged_commit": "e"})).pr_merged_commit(), Some("e"));
        assert_eq!(pr(serde_json::json!({"metadata": {}})).pr_merged_commit(), None);
    }

    #[test]
    fn repo_paths_must_stay_inside() {
        assert!(check_repo_path("src/a.py").is_ok());
        assert!(check_repo_path("./a.py").is_ok());
        assert!(check_repo_path("/etc/passwd").unwrap_err().to_string().contains("absolute"));
        assert!(check_repo_path("src/../../x").unwrap_err().to_string().contains("escapes"));
        assert!(check_repo_path("").is_err());
        assert!(check_repo_path("a\0b").is_err());
        assert_eq!(normalize_repo_path("./src/./a.py").unwrap(), "src/a.py");
        assert_eq!(normalize_repo_path("a.py").unwrap(), "a.py");
        assert_eq!(normalize_repo_path(".").unwrap_err(), PathError::NoFile(".".into()));
        assert!(normalize_repo_path("./").unwrap_err().to_string().contains("names no file"));
        assert!(matches!(normalize_repo_path("../a.py"), Err(PathError::Escapes(_))));
    }
}
