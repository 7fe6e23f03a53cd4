//! A review tool run as a command: in a copy of the reviewed code, with the patch and the PR's
//! description in files beside it, its output read as comments ([`findings`]). What the tool gave
//! is stored by a key of the command and the instance, under `<cache>/reviews/`, and replayed
//! in the model's cache mode (`CURATE_LLM_CACHE`): an evaluation recorded with ruff installed
//! replays on a machine without it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Finding, findings, found_nothing, on_changed_lines, relative_to};
use crate::exec::process::{HostError, run_shell};
use crate::llm::CacheMode;
use crate::llm::cache::write_atomically;

/// How to run one tool.
#[derive(Debug, Clone)]
pub struct ReviewCommand {
    /// Run with `sh -c`; `{patch_file}` and `{description_file}` are replaced by those files.
    pub command: String,
    pub timeout: Duration,
    /// Keep only the comments on lines the patch adds (a linter run on whole files).
    pub changed_lines: bool,
    /// The pipeline file's directory, given to the command as `CURATE_PIPELINE_DIR`, so that a
    /// tool's script kept beside the pipeline is found from the copy the command runs in.
    pub pipeline_dir: PathBuf,
}

/// The instance under review.
pub struct Instance<'a> {
    pub repo: &'a str,
    pub head_commit: &'a str,
    pub patch: &'a str,
    pub title: &'a str,
    pub body: &'a str,
}

/// What a tool's review gave: its comments, or why it gave none. A tool that crashes, times out or
/// prints nothing readable is a failed review (it scores zero), not an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolReview {
    pub comments: Vec<Finding>,
    pub failure: Option<String>,
}

/// A review the tool could not be asked for.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(
        "no recorded review {key} of `{command}` and the cache is in replay mode (CURATE_LLM_CACHE=replay); install the tool and set CURATE_LLM_CACHE=readwrite to record it"
    )]
    ReplayMiss { key: String, command: String },
    #[error("{0}")]
    Host(#[from] HostError),
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
}

/// Where recorded reviews live, and whether to use them.
pub struct ReviewCache {
    pub dir: PathBuf,
    pub mode: CacheMode,
}

impl ReviewCache {
    /// `<cache>/reviews`, in the model's cache mode (`mode`: the pipeline's `llm.cache` under
    /// `CURATE_LLM_CACHE`), so a replayed evaluation replays its tools too.
    pub fn under(cache: &Path, mode: CacheMode) -> ReviewCache {
        ReviewCache { dir: cache.join("reviews"), mode }
    }
}

impl ReviewCommand {
    /// The key a review is stored by: what decides the tool's output.
    pub fn key(&self, instance: &Instance) -> String {
        let what = serde_json::json!({
            "command": self.command,
            "changed_lines": self.changed_lines,
            "repo": instance.repo,
            "head_commit": instance.head_commit,
            "patch": instance.patch,
        });
        hex::encode(Sha256::digest(what.to_string().as_bytes()))
    }

    /// The tool's review of `instance`, whose reviewed code is in `copy`: recorded, or run (and
    /// recorded when it ran to the end). `work` holds the input files.
    pub async fn review(
        &self,
        instance: &Instance<'_>,
        copy: &Path,
        work: &Path,
        cache: &ReviewCache,
    ) -> Result<ToolReview, CommandError> {
        let key = self.key(instance);
        let stored = cache.dir.join(format!("{key}.json"));
        if cache.mode != CacheMode::Off
            && let Some(review) =
                std::fs::read(&stored).ok().and_then(|b| serde_json::from_slice::<ToolReview>(&b).ok())
        {
            return Ok(review);
        }
        if cache.mode == CacheMode::Replay {
            return Err(CommandError::ReplayMiss { key, command: self.command.clone() });
        }
        let (review, finished) = self.run(instance, copy, work).await?;
        if finished && cache.mode == CacheMode::Readwrite {
            let io = |error| CommandError::Io {
                what: format!("recording the review in {}", stored.display()),
                error,
            };
            let text = serde_json::to_string_pretty(&review).unwrap_or_default() + "\n";
            write_atomically(&stored, text.as_bytes()).map_err(io)?;
        }
        Ok(review)
    }

    /// One run of the tool; `true` with it when the tool ran to its end (worth recording: a
    /// timeout or a crash may go otherwise next time).
    async fn run(
        &self,
        instance: &Instance<'_>,
        copy: &Path,
        work: &Path,
    ) -> Result<(ToolReview, bool), CommandError> {
        let patch_file = work.join("patch.diff");
        let description_file = work.join("description.md");
        let io = |error| CommandError::Io { what: "writing the review inputs".into(), error };
        std::fs::write(&patch_file, instance.patch).map_err(io)?;
        std::fs::write(&description_file, format!("{}\n\n{}\n", instance.title, instance.body))
            .map_err(io)?;
        let command = self
            .command
            .replace("{patch_file}", &patch_file.to_string_lossy())
            .replace("{description_file}", &description_file.to_string_lossy());
        let env = [
            ("CURATE_PATCH_FILE", patch_file.as_path()),
            ("CURATE_DESCRIPTION_FILE", description_file.as_path()),
            ("CURATE_PIPELINE_DIR", self.pipeline_dir.as_path()),
        ];
        let failed = |why: String| ToolReview { comments: Vec::new(), failure: Some(why) };
        let out = match run_shell(&command, copy, &env, self.timeout).await {
            Ok(out) => out,
            Err(e @ (HostError::Timeout { .. } | HostError::TooMuch { .. })) => {
                return Ok((failed(e.to_string()), false));
            }
            Err(e) => return Err(e.into()),
        };
        if out.exit_code != Some(0) {
            let code = out.exit_code.map_or("a signal".into(), |c| c.to_string());
            let last = out.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Ok((failed(format!("exited with {code}: {last}")), false));
        }
        let mut comments = relative_to(findings(&out.stdout), copy);
        if comments.is_empty() && !found_nothing(&out.stdout) {
            return Ok((failed("printed no review comments".into()), true));
        }
        if self.changed_lines {
            comments = on_changed_lines(comments, instance.patch);
        }
        Ok((ToolReview { comments, failure: None }, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,3 @@\n import os\n+import sys\n x = 1\n";

    fn instance() -> Instance<'static> {
        Instance { repo: "o/r", head_commit: "abc", patch: PATCH, title: "t", body: "b" }
    }

    fn tool(command: &str, changed_lines: bool) -> ReviewCommand {
        ReviewCommand {
            command: command.into(),
            timeout: Duration::from_secs(10),
            changed_lines,
            pipeline_dir: PathBuf::from("/pipelines"),
        }
    }

    /// A copy with pkg/m.py, and a work directory.
    fn dirs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/pkg")).unwrap();
        std::fs::write(dir.path().join("repo/pkg/m.py"), "import os\nimport sys\nx = 1\n").unwrap();
        dir
    }

    #[tokio::test]
    async fn a_linters_absolute_paths_are_read_relative_and_kept_on_changed_lines() {
        let dir = dirs();
        let copy = dir.path().join("repo");
        // What ruff prints with --output-format json: absolute file names, `location.row`.
        let json = format!(
            r#"[{{"code":"F401","message":"`os` imported but unused","filename":"{0}/pkg/m.py","location":{{"row":1,"column":8}}}},{{"code":"F401","message":"`sys` imported but unused","filename":"{0}/pkg/m.py","location":{{"row":2,"column":8}}}}]"#,
            copy.display()
        );
        std::fs::write(dir.path().join("out.json"), json).unwrap();
        let cache = ReviewCache { dir: dir.path().join("cache"), mode: CacheMode::Off };
        let command = format!("cat {}", dir.path().join("out.json").display());
        let all = tool(&command, false).review(&instance(), &copy, dir.path(), &cache).await.unwrap();
        assert_eq!(all.comments.len(), 2);
        assert_eq!(all.comments[0].path.as_deref(), Some("pkg/m.py"));
        assert_eq!(all.comments[0].body, "F401 `os` imported but unused");
        let changed = tool(&command, true).review(&instance(), &copy, dir.path(), &cache).await.unwrap();
        assert_eq!(changed.comments.len(), 1);
        assert_eq!(changed.comments[0].line, Some(2));
        assert_eq!(changed.failure, None);
    }

    #[tokio::test]
    async fn the_command_is_told_the_patch_the_description_and_the_pipelines_directory() {
        let dir = dirs();
        let copy = dir.path().join("repo");
        let cache = ReviewCache { dir: dir.path().join("cache"), mode: CacheMode::Off };
        let command = r#"echo "pkg/m.py:2: $(head -1 "$CURATE_DESCRIPTION_FILE") $(grep -c '^+import' "$CURATE_PATCH_FILE") $CURATE_PIPELINE_DIR""#;
        let review = tool(command, false).review(&instance(), &copy, dir.path(), &cache).await.unwrap();
        assert_eq!(review.comments[0].body, "t 1 /pipelines");
    }

    #[tokio::test]
    async fn a_clean_run_is_a_review_without_comments_and_a_crash_a_failed_one() {
        let dir = dirs();
        let copy = dir.path().join("repo");
        let cache = ReviewCache { dir: dir.path().join("cache"), mode: CacheMode::Off };
        let clean = tool("echo '[]'", false).review(&instance(), &copy, dir.path(), &cache).await.unwrap();
        assert_eq!(clean, ToolReview { comments: Vec::new(), failure: None });
        let silent = tool("true", false).review(&instance(), &copy, dir.path(), &cache).await.unwrap();
        assert_eq!(silent.failure.as_deref(), Some("printed no review comments"));
        let crash = tool("echo boom >&2; exit 3", false)
            .review(&instance(), &copy, dir.path(), &cache)
            .await
            .unwrap();
        assert_eq!(crash.failure.as_deref(), Some("exited with 3: boom"));
    }

    #[tokio::test]
    async fn a_finished_review_is_recorded_and_replays_without_the_tool() {
        let dir = dirs();
        let copy = dir.path().join("repo");
        let flag = dir.path().join("ran");
        let command = format!("touch {}; echo 'pkg/m.py:2: unused import'", flag.display());
        let record = ReviewCache { dir: dir.path().join("cache"), mode: CacheMode::Readwrite };
        let first = tool(&command, false).review(&instance(), &copy, dir.path(), &record).await.unwrap();
        assert!(flag.exists());
        std::fs::remove_file(&flag).unwrap();
        let replay = ReviewCache { dir: dir.path().join("cache"), mode: CacheMode::Replay };
        let again = tool(&command, false).review(&instance(), &copy, dir.path(), &replay).await.unwrap();
        assert_eq!(again, first);
        assert!(!flag.exists(), "the replay ran the tool");
        // Another instance of the same tool was never recorded.
        let other = Instance { head_commit: "def", ..instance() };
        let miss = tool(&command, false).review(&other, &copy, dir.path(), &replay).await;
        assert!(matches!(miss, Err(CommandError::ReplayMiss { .. })), "{miss:?}");
        // A crash is not recorded: the next run tries again.
        let crash = tool("exit 1", false);
        crash.review(&instance(), &copy, dir.path(), &record).await.unwrap();
        assert!(!record.dir.join(format!("{}.json", crash.key(&instance()))).exists());
    }
}
