//! The outputs stages hand each other, as typed records in one place. A stage that reads another's
//! output names its contract in [`StageDef::requires`](crate::engine::stage::StageDef), the stage
//! that writes it in `provides`, and the pipeline is checked at load time: a stage that needs
//! a `context` but has no `comment_context` stage in its `needs` is a located error, not a task
//! that fails on every run.
//!
//! Each type here is what downstream stages read of a record; the stored record may hold more
//! (timings, histories) for reports and the export.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::stage::{TaskError, TaskInput};
use crate::review::Finding;

/// A record one stage writes and others read.
pub trait Contract: DeserializeOwned {
    /// The name stages declare in `provides` and `requires`.
    const NAME: &'static str;
}

/// The record of `C` from the upstream stage that provides it.
pub fn upstream<C: Contract>(input: &TaskInput) -> Result<C, TaskError> {
    let value = input.output_of(C::NAME).ok_or_else(|| {
        TaskError::infra(format!("stage `{}` got no `{}` output from its `needs`", input.stage, C::NAME))
    })?;
    C::deserialize(value).map_err(|e| {
        TaskError::infra(format!(
            "stage `{}`: the upstream `{}` output does not read as one ({e}); was it made by an older curate?",
            input.stage,
            C::NAME
        ))
    })
}

/// The record of `C` when a stage in the task's `needs` provides it, `None` when none does.
pub fn upstream_if_any<C: Contract>(input: &TaskInput) -> Result<Option<C>, TaskError> {
    input.output_of(C::NAME).map(|_| upstream(input)).transpose()
}

/// `comment_context`: where a comment sits in the reviewed file, and the file on both sides.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommentContext {
    /// The commented file at the reviewed commit, relative to the repository root.
    pub path: String,
    /// The same file at the fixed commit, under the name the fix gave it.
    #[serde(default)]
    pub fixed_path: Option<String>,
    /// First and last line of the commented code in the reviewed file, 1-based.
    pub start_line: u64,
    pub end_line: u64,
    /// The whole reviewed file.
    pub file_before: String,
    /// The file at the fixed commit (under its new name if the fix renamed it); `None` when the
    /// fix deleted it.
    pub file_after: Option<String>,
}

impl Contract for CommentContext {
    const NAME: &'static str = "context";
}

/// `attribution`: the changes of the fix that answer a comment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attribution {
    /// How they were chosen: `position`, `model`, or the only change there was.
    pub how: String,
    pub changes: Vec<AttributedChange>,
}

/// One hunk of the fix chosen for a comment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttributedChange {
    /// The file at the fixed commit (its old name for a deletion).
    pub path: String,
    /// Its name at the reviewed commit, when the fix renamed it or the diff names it.
    #[serde(default)]
    pub old_path: Option<String>,
    /// Added lines, numbered in the fixed file.
    pub added: Vec<u64>,
    /// Removed lines, numbered in the reviewed file.
    pub removed: Vec<u64>,
    /// Where the hunk starts in the fixed file.
    pub new_start: u64,
}

impl Contract for Attribution {
    const NAME: &'static str = "attribution";
}

impl Attribution {
    /// The changes as the relevance gate and the partial revert take them.
    pub fn changes(&self) -> Vec<crate::synthesis::relevance::Change<'_>> {
        self.changes
            .iter()
            .map(|c| crate::synthesis::relevance::Change {
                path: &c.path,
                added: &c.added,
                removed: &c.removed,
                new_start: c.new_start,
            })
            .collect()
    }

    /// The changes with how they were chosen, as a candidate's judge takes them.
    pub fn attributed(&self) -> crate::synthesis::judge::Attributed<'_> {
        crate::synthesis::judge::Attributed { how: &self.how, changes: self.changes() }
    }
}

/// `observed_behaviour`: calls whose results differ between the reviewed and the fixed code.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Observed {
    /// The differences chosen for the test writer, most telling first.
    pub differences: Vec<crate::synthesis::observed::Difference>,
}

impl Contract for Observed {
    const NAME: &'static str = "observed";
}

/// `environment`: the PR's image and what it knows of the project.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    /// The image tests run in.
    pub image: String,
    /// Top-level packages the project's code imports as (its own modules, not dependencies).
    #[serde(default)]
    pub imports: Vec<String>,
    /// The project's install, run in `/repo`, when the image compiled the reviewed commit: a tree
    /// whose compiled sources differ runs in an image with it run again
    /// ([`crate::environment::tree_image`]). Absent for a project imported from its sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<String>,
}

impl Contract for Environment {
    const NAME: &'static str = "environment";
}

/// `project_tests`: the project's own tests that the fix changes, as they ran on the reviewed code
/// (with the fixed commit's test side put in) and on the fixed code.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProjectTests {
    /// The test side of the fix (test modules, conftest files, data under test directories):
    /// repository-relative paths the fixed commit adds or changes.
    pub test_paths: Vec<String>,
    /// The commit `test_paths` are read from, put in on both sides, when it is not the fixed
    /// commit: the PR's merge, when the fix commit changes no test and later commits of the PR add
    /// them (pdm 570: "Add tests for project source env var expansion", after the fix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_commit: Option<String>,
    /// Node ids that fail on the reviewed code and pass on the fixed code.
    pub fail_to_pass: Vec<String>,
    /// Node ids that pass on both.
    pub pass_to_pass: Vec<String>,
}

impl Contract for ProjectTests {
    const NAME: &'static str = "project_tests";
}

/// `test_synthesis`: the accepted fail-then-pass test of a comment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Test {
    /// Its file name: for a test of curate's, placed outside the repository when it runs; for one
    /// of the project's, its path in the repository.
    pub test_file: String,
    /// The test's code (for a project test, its module as the fixed commit has it).
    pub test: String,
    /// For one of the project's own tests, its node id and the test side it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectTest>,
}

/// A project test chosen as a comment's test: it runs in the repository, with the fixed commit's
/// test side (`files`, text files by path) written over the tree under test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProjectTest {
    pub node: String,
    pub files: std::collections::BTreeMap<String, String>,
}

impl Contract for Test {
    const NAME: &'static str = "test";
}

/// `review`: one reviewer's comments on a PR, or why it gave none.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Review {
    /// The reviewer's name, as the report shows it.
    pub reviewer: String,
    pub comments: Vec<Finding>,
    /// Why the review has no comments (a crash, a timeout, nothing readable); `None` when it has.
    pub failure: Option<String>,
    /// The no-review control: no reviewer, the agent revises on its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub control: bool,
}

impl Contract for Review {
    const NAME: &'static str = "review";
}

/// `revise`: the coding agent's revision of the patch under one reviewer's comments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revision {
    pub reviewer: String,
    pub review_failure: Option<String>,
    /// How many review comments guided it.
    pub comments: usize,
    /// The revision as a `git diff` of the reviewed code; empty when nothing changed.
    pub patch: String,
    /// The agent's conversation, for reading afterwards.
    pub transcript: Vec<Value>,
    /// Made with no review (the control).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub control: bool,
}

impl Contract for Revision {
    const NAME: &'static str = "revision";
}

/// `review_filter`: why a comment was kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FilterVerdict {
    /// One of the paper's ten categories, when the model named one.
    pub category: Option<String>,
    pub reason: String,
}

impl Contract for FilterVerdict {
    const NAME: &'static str = "verdict";
}

/// `agent_validation`: the revision that made the hidden test pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Validation {
    /// Agent runs it took.
    pub attempts: u32,
    pub patch: String,
}

impl Contract for Validation {
    const NAME: &'static str = "validation";
}

/// `score`: how a reviewer's revision of one instance did on its tests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Score {
    pub reviewer: String,
    /// Tests that passed, of `total`.
    pub passed: usize,
    pub total: usize,
    pub score: f64,
}

impl Contract for Score {
    const NAME: &'static str = "score";
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::engine::item::Item;

    fn input(review: Value) -> TaskInput {
        TaskInput {
            stage: "revise".into(),
            item: Arc::new(Item::pr("p", json!({}))),
            pr: None,
            upstream: BTreeMap::from([("human".to_string(), review)]),
            providers: Arc::new(BTreeMap::from([(Review::NAME, Arc::from("human"))])),
            meter: Arc::default(),
        }
    }

    #[test]
    fn a_malformed_review_is_an_error_not_a_review_that_said_nothing() {
        let good =
            json!({"reviewer": "h", "comments": [{"path": "a.py", "line": 3, "body": "x"}], "failure": null});
        let read: Review = upstream(&input(good)).unwrap();
        assert_eq!(read.comments.len(), 1);
        let bad = json!({"reviewer": "h", "comments": "three remarks", "failure": null});
        let Err(TaskError::Infra(e)) = upstream::<Review>(&input(bad)) else { panic!("read as a review") };
        assert!(e.to_string().contains("the upstream `review` output does not read as one"), "{e}");
    }

    #[test]
    fn a_contract_no_need_provides_is_an_error_naming_it() {
        let mut i = input(json!({}));
        i.providers = Arc::default();
        let Err(TaskError::Infra(e)) = upstream::<Review>(&i) else { panic!("found a review") };
        assert_eq!(e.to_string(), "stage `revise` got no `review` output from its `needs`");
    }
}
