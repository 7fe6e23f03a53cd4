//! The fixed tree with only the changes attributed to a comment undone (the rest of the fix kept):
//! what separates the behaviour a comment's change brings from what the rest of the fix does. The
//! relevance gate runs a test there (it must not pass); the behaviour probe runs its calls there
//! (a difference the change did not cause is not a fact about the comment).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::relevance::{self, Change};

/// The attributed files' fixed text, read from `fixed` (a path outside the repository, or a file
/// that is not text, is left out).
pub fn fixed_texts<'a>(changes: &[Change<'a>], fixed: &Path) -> BTreeMap<&'a str, String> {
    changes
        .iter()
        .filter(|c| crate::record::check_repo_path(c.path).is_ok())
        .filter_map(|c| Some((c.path, std::fs::read_to_string(fixed.join(c.path)).ok()?)))
        .collect()
}

/// A copy of the `fixed` tree with `changes` undone, or `None` when they cannot be undone alone (a
/// pure removal, a file not read into `texts`). Removed with the returned directory.
pub async fn tree(
    reviewed: &Path,
    fixed: &Path,
    changes: &[Change<'_>],
    texts: &BTreeMap<&str, String>,
) -> std::io::Result<Option<tempfile::TempDir>> {
    let mut patched = Vec::new();
    let paths: BTreeSet<&str> = changes.iter().map(|c| c.path).collect();
    for path in paths {
        let Some(text) = texts.get(path) else { return Ok(None) };
        // A file the fix adds has no reviewed side: undone, it is empty.
        let before = std::fs::read_to_string(reviewed.join(path)).unwrap_or_default();
        let Some(undone) = relevance::reverted(path, changes, text, &before) else { return Ok(None) };
        patched.push((path, undone));
    }
    let work = copy_tree(fixed).await?;
    for (path, text) in patched {
        std::fs::write(work.path().join(path), text)?;
    }
    Ok(Some(work))
}

/// A copy of the tree `from` in a temporary directory, removed with it.
pub async fn copy_tree(from: &Path) -> std::io::Result<tempfile::TempDir> {
    let work = tempfile::tempdir()?;
    let copied =
        tokio::process::Command::new("cp").arg("-a").arg(from.join(".")).arg(work.path()).status().await?;
    if !copied.success() {
        return Err(std::io::Error::other(format!("cp -a {} failed: {copied}", from.display())));
    }
    Ok(work)
}
