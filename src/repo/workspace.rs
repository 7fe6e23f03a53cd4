//! A working copy for a coding agent: the files of one commit in a fresh git repository whose only
//! commit is that state, so the agent cannot find the fix in the history, and the revision it makes
//! is `git diff` against that commit (new files included).

use std::path::Path;

use git2::{DiffOptions, IndexAddOption, Repository, Signature, Time};

use super::mirror::{Mirror, RepoError};

fn git(dir: &Path, e: git2::Error) -> RepoError {
    RepoError::Git { repo: dir.display().to_string(), error: e.message().to_string() }
}

impl Mirror {
    /// Writes the files of `commit` into `dest` (created if needed), without any `.git`. A file
    /// whose content the mirror lacks (a snapshot without its largest files) is left out; the
    /// paths left out are returned.
    pub fn export_tree(&self, commit: &str, dest: &Path) -> Result<Vec<String>, RepoError> {
        let repo = Repository::open(self.path()).map_err(|e| git(self.path(), e))?;
        let oid =
            repo.revparse_single(commit).and_then(|o| o.peel_to_commit()).map_err(|e| git(dest, e))?.id();
        let tree = repo.find_commit(oid).and_then(|c| c.tree()).map_err(|e| git(dest, e))?;
        let io = |error| RepoError::Io { dir: dest.to_path_buf(), error };
        std::fs::create_dir_all(dest).map_err(io)?;
        let mut failure = None;
        let mut missing = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            let rel = format!("{root}{}", entry.name().unwrap_or(""));
            let target = dest.join(&rel);
            let done = match entry.kind() {
                Some(git2::ObjectType::Tree) => std::fs::create_dir_all(&target),
                Some(git2::ObjectType::Blob) => match repo.find_blob(entry.id()) {
                    Ok(blob) => write_file(&target, blob.content(), entry.filemode()),
                    Err(e) if e.code() == git2::ErrorCode::NotFound => {
                        missing.push(rel);
                        Ok(())
                    }
                    Err(e) => Err(std::io::Error::other(e.message().to_string())),
                },
                _ => Ok(()), // submodules are not part of the working copy
            };
            match done {
                Ok(()) => git2::TreeWalkResult::Ok,
                Err(e) => {
                    failure = Some(e);
                    git2::TreeWalkResult::Abort
                }
            }
        })
        .map_err(|e| git(dest, e))?;
        failure.map_or(Ok(missing), |e| Err(io(e)))
    }
}

fn write_file(path: &Path, bytes: &[u8], mode: i32) -> std::io::Result<()> {
    std::fs::write(path, bytes)?;
    #[cfg(unix)]
    if mode == 0o100755 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Makes `dir` a git repository with one commit holding everything in it.
pub fn init_baseline(dir: &Path) -> Result<(), RepoError> {
    let repo = Repository::init(dir).map_err(|e| git(dir, e))?;
    let mut index = repo.index().map_err(|e| git(dir, e))?;
    index.add_all(["*"], IndexAddOption::FORCE, None).map_err(|e| git(dir, e))?;
    index.write().map_err(|e| git(dir, e))?;
    let tree_id = index.write_tree().map_err(|e| git(dir, e))?;
    let tree = repo.find_tree(tree_id).map_err(|e| git(dir, e))?;
    // A fixed author and time: the same files give the same commit.
    let who = Signature::new("curate", "curate@localhost", &Time::new(0, 0)).map_err(|e| git(dir, e))?;
    repo.commit(Some("HEAD"), &who, &who, "the code under review", &tree, &[]).map_err(|e| git(dir, e))?;
    Ok(())
}

/// A history-free working copy of `commit` of `repo` in `dest` (see the module's doc), made on a
/// blocking thread. A commit the mirror lacks stays a [`RepoError::MissingCommit`]: the data's
/// fault, which no retry mends.
pub async fn history_free_copy(
    mirrors: std::sync::Arc<super::Mirrors>,
    repo: &str,
    commit: &str,
    dest: &Path,
) -> Result<(), RepoError> {
    let (name, commit, dest) = (repo.to_string(), commit.to_string(), dest.to_path_buf());
    tokio::task::spawn_blocking(move || {
        mirrors.open(&name, &[&commit])?.export_tree(&commit, &dest)?;
        init_baseline(&dest)
    })
    .await
    .map_err(|e| RepoError::Git { repo: repo.to_string(), error: format!("the git worker failed: {e}") })?
}

/// Writes `files` (repository-relative paths and their text) over the tree at `root`, making
/// directories as needed; a path that would leave the tree is refused.
pub fn write_files<'a>(
    root: &Path,
    files: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> std::io::Result<()> {
    for (path, text) in files {
        crate::record::check_repo_path(path)
            .map_err(|e| std::io::Error::other(format!("{path}: the path {e}")))?;
        let to = root.join(path);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(to, text)?;
    }
    Ok(())
}

/// What changed in `dir` since its baseline commit, as a unified diff; new files included.
pub fn working_diff(dir: &Path) -> Result<String, RepoError> {
    let repo = Repository::open(dir).map_err(|e| git(dir, e))?;
    let head = repo.head().and_then(|h| h.peel_to_tree()).map_err(|e| git(dir, e))?;
    let mut options = DiffOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
    let diff = repo.diff_tree_to_workdir(Some(&head), Some(&mut options)).map_err(|e| git(dir, e))?;
    super::mirror::patch_text(&diff).map_err(|e| git(dir, e))
}

/// Applies a unified diff (as [`working_diff`] gives it) to the files in `dir`.
pub fn apply_patch(dir: &Path, patch: &str) -> Result<(), RepoError> {
    if patch.trim().is_empty() {
        return Ok(());
    }
    let repo = Repository::open(dir).map_err(|e| git(dir, e))?;
    let diff = git2::Diff::from_buffer(patch.as_bytes()).map_err(|e| git(dir, e))?;
    repo.apply(&diff, git2::ApplyLocation::WorkDir, None).map_err(|e| git(dir, e))
}

/// A unified diff that turns `old` (`None`: no such file) into `new` at `path`, as `git apply`
/// takes it; empty when they are the same.
pub fn file_diff(path: &str, old: Option<&[u8]>, new: &[u8]) -> Result<String, RepoError> {
    let Some(old) = old else { return Ok(new_file_diff(path, &String::from_utf8_lossy(new))) };
    if old == new {
        return Ok(String::new());
    }
    let failed = |e: git2::Error| RepoError::Git { repo: path.to_string(), error: e.message().to_string() };
    let mut patch = git2::Patch::from_buffers(old, Some(Path::new(path)), new, Some(Path::new(path)), None)
        .map_err(failed)?;
    let text = patch.to_buf().map_err(failed)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// The diff of `path` from `old` to `new` with every line of the file as context (one hunk from
/// line 1, both files readable back from it); empty when they are the same.
pub fn whole_file_diff(path: &str, old: &[u8], new: &[u8]) -> Result<String, RepoError> {
    if old == new {
        return Ok(String::new());
    }
    let lines = old.iter().chain(new).filter(|b| **b == b'\n').count() + 1;
    let failed = |e: git2::Error| RepoError::Git { repo: path.to_string(), error: e.message().to_string() };
    let mut options = DiffOptions::new();
    options.context_lines(u32::try_from(lines).unwrap_or(u32::MAX));
    let mut patch =
        git2::Patch::from_buffers(old, Some(Path::new(path)), new, Some(Path::new(path)), Some(&mut options))
            .map_err(failed)?;
    let text = patch.to_buf().map_err(failed)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// The diff that makes file `path` with `text`, with git's headers for a new file.
fn new_file_diff(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in &lines {
        out.push('+');
        out.push_str(line);
        out.push('\n');
    }
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str("\\ No newline at end of file\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_diff_applies_to_the_old_file_or_makes_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\ny = 2\n").unwrap();
        init_baseline(dir.path()).unwrap();
        let edit = file_diff("a.py", Some(b"x = 1\ny = 2\n"), b"x = 1\ny = 3\n").unwrap();
        let new = file_diff("t/test_a.py", None, b"def test_a():\n    pass\n").unwrap();
        assert!(new.contains("new file mode") && new.contains("--- /dev/null"), "{new}");
        apply_patch(dir.path(), &format!("{edit}{new}")).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("a.py")).unwrap(), "x = 1\ny = 3\n");
        assert!(std::fs::read_to_string(dir.path().join("t/test_a.py")).unwrap().starts_with("def test_a"));
        assert_eq!(file_diff("a.py", Some(b"same"), b"same").unwrap(), "");
    }

    #[test]
    fn the_diff_shows_edits_and_new_files_against_the_baseline() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/b.py"), "y = 2\n").unwrap();
        init_baseline(dir.path()).unwrap();
        assert_eq!(working_diff(dir.path()).unwrap(), "");
        std::fs::write(dir.path().join("a.py"), "x = 3\n").unwrap();
        std::fs::write(dir.path().join("pkg/c.py"), "z = 4\n").unwrap();
        let diff = working_diff(dir.path()).unwrap();
        assert!(diff.contains("-x = 1\n+x = 3\n"), "{diff}");
        assert!(diff.contains("+++ b/pkg/c.py") && diff.contains("+z = 4"), "{diff}");
        assert!(!diff.contains("pkg/b.py"), "unchanged files are not in the diff: {diff}");

        // The same revision applied to another copy of the baseline gives the same files.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("a.py"), "x = 1\n").unwrap();
        std::fs::create_dir(other.path().join("pkg")).unwrap();
        std::fs::write(other.path().join("pkg/b.py"), "y = 2\n").unwrap();
        init_baseline(other.path()).unwrap();
        apply_patch(other.path(), &diff).unwrap();
        assert_eq!(std::fs::read_to_string(other.path().join("a.py")).unwrap(), "x = 3\n");
        assert_eq!(std::fs::read_to_string(other.path().join("pkg/c.py")).unwrap(), "z = 4\n");
        assert!(apply_patch(other.path(), &diff).is_err(), "a patch that no longer applies is an error");
    }

    #[test]
    fn a_file_whose_content_the_mirror_lacks_is_left_out_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path().join("o/r.git")).unwrap();
        let small = repo.blob(b"x = 1\n").unwrap();
        let big = repo.blob(b"a very large test image\n").unwrap();
        let mut tree = repo.treebuilder(None).unwrap();
        tree.insert("a.py", small, 0o100644).unwrap();
        tree.insert("big.png", big, 0o100644).unwrap();
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let who = Signature::new("t", "t@example.org", &Time::new(0, 0)).unwrap();
        let head = repo.commit(Some("refs/heads/main"), &who, &who, "one", &tree, &[]).unwrap().to_string();
        // A snapshot without its largest files: the blob's object is gone.
        let hex = big.to_string();
        std::fs::remove_file(dir.path().join("o/r.git/objects").join(&hex[..2]).join(&hex[2..])).unwrap();

        let url = format!("{}/{{repo}}.git", dir.path().display());
        let mirrors = crate::repo::Mirrors::new(&url, dir.path(), &dir.path().join("cache"));
        let out = dir.path().join("checkout");
        let missing = mirrors.open("o/r", &[&head]).unwrap().materialize(&head, &out).unwrap();
        assert_eq!(missing, ["big.png"]);
        assert_eq!(std::fs::read_to_string(out.join("a.py")).unwrap(), "x = 1\n");
        assert!(!out.join("big.png").exists());
    }
}
