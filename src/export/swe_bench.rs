//! The benchmark as SWE-bench-style instances (`swe-bench.jsonl`), the records that harnesses such
//! as SWE-bench, SWE-agent and mini-swe-agent read: one instance a kept comment, its
//! `problem_statement` the review comment with the PR's title and description, `base_commit` the
//! reviewed commit, `patch` the fix without its test side, `test_patch` the fix's test side and
//! the accepted test, `FAIL_TO_PASS` the accepted test's ids, `PASS_TO_PASS` the PR's related
//! project tests that pass on both sides; the image and its Dockerfiles per instance.
//! [`check`] runs each instance as a harness would.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{dir_name, output_of, test_ids};
use crate::engine::flow::{Flow, TaskState};
use crate::environment::tree_image::image_with;
use crate::exec::docker::ExecError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{Target, Verdict, run_target};
use crate::record::{PullRequest, ReviewComment};
use crate::repo::hunks::file_sections;
use crate::repo::workspace::{apply_patch, file_diff, history_free_copy};
use crate::repo::{Mirror, Mirrors, RepoError};
use crate::stages::contract::{self, Contract};
use crate::synthesis::project::is_test_side;

/// Where a test of curate's goes in the repository: a directory of its own, so it shadows nothing.
pub const CURATE_TESTS: &str = "curate_tests";
/// How the instance's tests are run, in `/repo` of its image, with the test ids after it.
pub const TEST_CMD: &str = "python -m pytest -p no:cacheprovider --rootdir /repo";

/// One SWE-bench-style instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    pub instance_id: String,
    pub repo: String,
    pub base_commit: String,
    pub patch: String,
    pub test_patch: String,
    pub problem_statement: String,
    pub hints_text: String,
    pub created_at: String,
    pub version: String,
    pub environment_setup_commit: String,
    /// Written as a JSON-encoded list, as SWE-bench's own instances have them (its
    /// `SWEbenchInstance` types both `str`); read as either.
    #[serde(rename = "FAIL_TO_PASS", with = "json_list")]
    pub fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS", with = "json_list")]
    pub pass_to_pass: Vec<String>,
    /// The image the tests run in (`/repo` holds the repository), and how. For a project the
    /// image compiled, `test_cmd` begins with `rebuild`, so that a `patch` to its compiled sources
    /// is built before its tests run.
    pub image_name: String,
    pub test_cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<String>,
    /// curate's ids: the PR instance and the comment.
    pub pr_instance: String,
    pub comment: String,
}

/// Why a comment gives no instance, or an instance could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("the PR has no fixed commit, so no patch")]
    NoFixedCommit,
    #[error("no accepted test")]
    NoTest,
    #[error("no environment image")]
    NoImage,
    #[error("the comment's record: {0}")]
    Record(#[from] serde_json::Error),
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error("test_patch does not apply: {0}")]
    TestPatch(RepoError),
    #[error("patch does not apply: {0}")]
    Patch(RepoError),
    #[error("a scratch directory: {0}")]
    Scratch(std::io::Error),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error(transparent)]
    Build(#[from] crate::environment::tree_image::TreeImageError),
}

/// A list of test ids as SWE-bench writes it: the JSON text of the list.
mod json_list {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[String], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&serde_json::to_string(list).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            List(Vec<String>),
        }
        match Either::deserialize(d)? {
            Either::Text(text) => serde_json::from_str(&text).map_err(serde::de::Error::custom),
            Either::List(list) => Ok(list),
        }
    }
}

/// A comment kept that gave no instance, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub comment: String,
    pub why: String,
}

/// The instances of the comments stage `last` kept, in the order of the source.
pub fn instances(
    flow: &Flow,
    states: &[Vec<TaskState>],
    last: usize,
    mirrors: &Mirrors,
) -> (Vec<Instance>, Vec<Skipped>) {
    let data = flow.data;
    let (mut out, mut skipped) = (Vec::new(), Vec::new());
    for (p, item) in data.items.iter().enumerate() {
        let Ok(pr) = serde_json::from_value::<PullRequest>(item.data.clone()) else { continue };
        for &c in &data.comments[p] {
            if !matches!(states[last][c], TaskState::Kept { .. }) {
                continue;
            }
            let id = data.items[c].id.clone();
            match instance(flow, states, p, c, &pr, mirrors) {
                Ok(i) => out.push(i),
                Err(why) => skipped.push(Skipped { comment: id, why: why.to_string() }),
            }
        }
    }
    (out, skipped)
}

fn instance(
    flow: &Flow,
    states: &[Vec<TaskState>],
    p: usize,
    c: usize,
    pr: &PullRequest,
    mirrors: &Mirrors,
) -> Result<Instance, HarnessError> {
    let (pr_item, item) = (&flow.data.items[p], &flow.data.items[c]);
    let fixed = pr.fixed_commit.as_deref().ok_or(HarnessError::NoFixedCommit)?;
    let test: contract::Test = output_of(flow, states, contract::Test::NAME, c)
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .ok_or(HarnessError::NoTest)?;
    let environment: contract::Environment = output_of(flow, states, contract::Environment::NAME, p)
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .ok_or(HarnessError::NoImage)?;
    let project_tests: Option<contract::ProjectTests> =
        output_of(flow, states, contract::ProjectTests::NAME, p)
            .and_then(|t| serde_json::from_value(t.clone()).ok());
    let comment: ReviewComment = serde_json::from_value(item.data.clone())?;
    let mirror = mirrors.open(&pr.repo, &[&pr.head_commit, fixed])?;
    let test_paths = test_side(&mirror, &pr.head_commit, fixed, project_tests.as_ref())?;
    // The test side comes from the PR's merge when the fix commit had none.
    let tests_from = project_tests.as_ref().and_then(|t| t.tests_commit.as_deref()).unwrap_or(fixed);
    let (patch, test_patch, fail_to_pass) =
        patches(&mirror, &pr.head_commit, (fixed, tests_from), &test_paths, &test)?;
    let mut pass_to_pass = project_tests.map(|t| t.pass_to_pass).unwrap_or_default();
    pass_to_pass.retain(|t| !fail_to_pass.contains(t));
    let pinned =
        output_of(flow, states, contract::Environment::NAME, p).and_then(|e| e["pinned_to"].as_str());
    Ok(Instance {
        instance_id: dir_name(&item.id),
        repo: pr.repo.clone(),
        base_commit: pr.head_commit.clone(),
        patch,
        test_patch,
        problem_statement: problem_statement(pr, &comment),
        hints_text: String::new(),
        created_at: pr.created_at.clone().unwrap_or_default(),
        version: pinned.unwrap_or("0").to_string(),
        environment_setup_commit: pr.head_commit.clone(),
        fail_to_pass,
        pass_to_pass,
        image_name: environment.image,
        test_cmd: match &environment.rebuild {
            Some(rebuild) => format!("{rebuild} && {TEST_CMD}"),
            None => TEST_CMD.to_string(),
        },
        rebuild: environment.rebuild,
        pr_instance: pr_item.id.clone(),
        comment: item.id.clone(),
    })
}

/// The paths of the fix's test side: what the project-tests stage found, or else the changed files
/// that are tests, conftest files or under a test directory.
fn test_side(
    mirror: &Mirror,
    reviewed: &str,
    fixed: &str,
    project_tests: Option<&contract::ProjectTests>,
) -> Result<BTreeSet<String>, RepoError> {
    let mut paths: BTreeSet<String> =
        project_tests.map(|t| t.test_paths.iter().cloned().collect()).unwrap_or_default();
    for path in changed_paths(&mirror.diff(reviewed, fixed)?) {
        if is_test_side(&path) {
            paths.insert(path);
        }
    }
    Ok(paths)
}

/// The paths a unified diff changes (its `+++ b/` side; a deleted file's `--- a/` side).
fn changed_paths(diff: &str) -> Vec<String> {
    file_sections(diff).1.iter().filter(|s| !s.path.is_empty()).map(|s| s.path.to_string()).collect()
}

/// The diff without the sections of `drop`.
fn without(diff: &str, drop: &BTreeSet<String>) -> String {
    file_sections(diff).1.iter().filter(|s| !drop.contains(s.path)).map(|s| s.text).collect()
}

/// `patch` (the fix less its test side), `test_patch` (the test side, and curate's test as a new
/// file of its own) and the accepted test's ids.
fn patches(
    mirror: &Mirror,
    reviewed: &str,
    (fixed, tests_from): (&str, &str),
    test_paths: &BTreeSet<String>,
    test: &contract::Test,
) -> Result<(String, String, Vec<String>), RepoError> {
    let whole = mirror.diff(reviewed, fixed)?;
    let patch = without(&whole, test_paths);
    let paths: Vec<&str> = test_paths.iter().map(String::as_str).collect();
    let mut test_patch =
        if paths.is_empty() { String::new() } else { mirror.diff_of(reviewed, tests_from, &paths)? };
    let fail_to_pass = match &test.project {
        Some(project) => {
            // The project test's files as it ran, where the fixed commit's test side lacks them
            // (a test of curate's laid out among the project's tests).
            for (path, text) in &project.files {
                if !test_paths.contains(path)
                    && mirror.file_at(tests_from, path)?.as_deref() != Some(text.as_bytes())
                {
                    let old = mirror.file_at(reviewed, path)?;
                    test_patch.push_str(&file_diff(path, old.as_deref(), text.as_bytes())?);
                }
            }
            vec![project.node.clone()]
        }
        None => {
            let path = format!("{CURATE_TESTS}/{}", test.test_file);
            test_patch.push_str(&file_diff(&path, None, test.test.as_bytes())?);
            test_ids(&path, &test.test)
        }
    };
    Ok((patch, test_patch, fail_to_pass))
}

fn problem_statement(pr: &PullRequest, comment: &ReviewComment) -> String {
    let place = match (&comment.path, comment.line) {
        (Some(path), Some(line)) => format!(" on {path}, line {line}"),
        (Some(path), None) => format!(" on {path}"),
        _ => String::new(),
    };
    let mut text = format!("{}\n\n", pr.title.trim());
    if !pr.body.trim().is_empty() {
        text.push_str(pr.body.trim());
        text.push_str("\n\n");
    }
    text.push_str(&format!("A reviewer commented{place}:\n\n{}\n", comment.text.trim()));
    text
}

/// What running an instance as a harness does gave: its `FAIL_TO_PASS` tests on the reviewed code
/// with `test_patch` applied, and again with `patch` too, and `PASS_TO_PASS` then.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    pub instance: String,
    pub without_fix: Verdict,
    pub with_fix: Verdict,
    pub pass_to_pass: Option<Verdict>,
}

impl Checked {
    /// The reviewed code fails the instance's tests and the fix passes them, and the tests that
    /// passed before still pass.
    pub fn holds(&self) -> bool {
        self.without_fix != Verdict::Passed
            && self.with_fix == Verdict::Passed
            && self.pass_to_pass.is_none_or(|v| v == Verdict::Passed)
    }
}

/// Runs `instance` the way a harness does, in its image: the reviewed commit with `test_patch`
/// applied, its `FAIL_TO_PASS` tests; then with `patch` applied too, those and `PASS_TO_PASS`.
pub async fn check(
    instance: &Instance,
    mirrors: Arc<Mirrors>,
    docker: &Hosts,
    timeout: Duration,
) -> Result<Checked, HarnessError> {
    let dir = tempfile::tempdir().map_err(HarnessError::Scratch)?;
    let tree = dir.path().join("repo");
    history_free_copy(mirrors, &instance.repo, &instance.base_commit, &tree).await?;
    apply_patch(&tree, &instance.test_patch).map_err(HarnessError::TestPatch)?;
    let run = |image: String, nodes: &[String]| {
        let nodes = nodes.to_vec();
        let tree = tree.clone();
        async move {
            run_target(docker, &image, &tree, Target::Project { nodes: &nodes }, timeout, 0)
                .await
                .map(|r| r.verdict)
        }
    };
    let without_fix = run(instance.image_name.clone(), &instance.fail_to_pass).await?;
    apply_patch(&tree, &instance.patch).map_err(HarnessError::Patch)?;
    // What `test_cmd`'s rebuild does to a patch of compiled sources, once for both runs.
    let rebuild = instance.rebuild.as_deref();
    let changed = crate::synthesis::project::changed_paths(&instance.patch);
    let fixed_image = image_with(docker, &instance.image_name, rebuild, &tree, &changed).await?;
    let with_fix = run(fixed_image.clone(), &instance.fail_to_pass).await?;
    let pass_to_pass = if instance.pass_to_pass.is_empty() {
        None
    } else {
        Some(run(fixed_image, &instance.pass_to_pass).await?)
    };
    Ok(Checked { instance: instance.instance_id.clone(), without_fix, with_fix, pass_to_pass })
}

/// The instances as JSON lines.
pub fn lines(instances: &[Instance]) -> String {
    instances.iter().map(|i| format!("{}\n", serde_json::to_value(i).unwrap_or(Value::Null))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-t\n+u\n";

    #[test]
    fn test_ids_are_written_as_swe_bench_writes_them_and_read_either_way() {
        let text = r#"{"instance_id": "o__r-1_2", "repo": "o/r", "base_commit": "b", "patch": "", "test_patch": "",
            "problem_statement": "p", "hints_text": "", "created_at": "", "version": "0",
            "environment_setup_commit": "b", "FAIL_TO_PASS": "[\"t.py::test_a\"]", "PASS_TO_PASS": ["t.py::test_b"],
            "image_name": "i", "test_cmd": "c", "pr_instance": "o__r-1", "comment": "o__r-1#2"}"#;
        let instance: Instance = serde_json::from_str(text).unwrap();
        assert_eq!(
            (instance.fail_to_pass.as_slice(), instance.pass_to_pass.as_slice()),
            (&["t.py::test_a".to_string()][..], &["t.py::test_b".to_string()][..])
        );
        let written = serde_json::to_value(&instance).unwrap();
        assert_eq!(written["FAIL_TO_PASS"], "[\"t.py::test_a\"]");
        assert_eq!(written["PASS_TO_PASS"], "[\"t.py::test_b\"]");
    }

    #[test]
    fn the_test_side_is_cut_out_of_the_fix() {
        assert_eq!(changed_paths(DIFF), ["pkg/a.py", "tests/test_a.py"]);
        let drop: BTreeSet<String> = ["tests/test_a.py".to_string()].into();
        let patch = without(DIFF, &drop);
        assert!(patch.starts_with("diff --git a/pkg/a.py") && patch.ends_with("+y\n"), "{patch}");
        assert!(!patch.contains("test_a"));
        assert_eq!(without(DIFF, &BTreeSet::new()), DIFF);
        assert!(
            is_test_side("tests/data/case.json") && is_test_side("conftest.py") && is_test_side("test_x.py")
        );
        assert!(!is_test_side("pkg/testing_utils.py") && !is_test_side("pkg/a.py"));
    }
}
