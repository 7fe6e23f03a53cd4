//! `score` (the paper's section 4.3.2): the instance's tests run on the revision a reviewer's
//! comments led to (the `revise` stage it needs), in the instance's image. Score = passed tests /
//! tests. Each test's result is kept with its kind and category, for Table 5 and Figures 5 and 7.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_yaml::Mapping;

use super::contract::{self, Contract, Revision};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::environment::rebuild::{self, ExportedEnvironment};
use crate::errors::ConfigError;
use crate::exec::docker::image_exists;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{Target, TestRun, Verdict, run_target};
use crate::repo::Mirrors;
use crate::repo::workspace::{apply_patch, history_free_copy, write_files};
use crate::sources::benchmark::BenchTest;
use crate::synthesis::project;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Seconds each test may take.
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
}

fn default_timeout() -> u64 {
    60
}

struct Score {
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    timeout: Duration,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let stage = adapt(Score {
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        timeout: Duration::from_secs(config.timeout_secs),
    });
    Ok(StageDef {
        side_effects: true,
        provides: Some(contract::Score::NAME),
        requires: vec![contract::Revision::NAME],
        // 2: the regression check on a revision that passed a test.
        ..StageDef::new(stage, 2, Scope::Pr, Resource::Docker)
    })
}

/// The verdict of a test that did not run because the revision did not apply.
pub const NOT_APPLIED: &str = "not_applied";

impl Score {
    /// One test of the instance on the revision in `copy`: a test file of curate's, or one of the
    /// project's own with its test side written over the revision.
    async fn run_bench_test(
        &self,
        image: &str,
        copy: &std::path::Path,
        t: &BenchTest,
    ) -> Result<TestRun, TaskError> {
        let nodes: Vec<String> = t.project.iter().map(|p| p.node.clone()).collect();
        let target = match &t.project {
            Some(project) => {
                write_files(copy, &project.files)
                    .map_err(|e| TaskError::infra(format!("cannot write the project's tests: {e}")))?;
                Target::Project { nodes: &nodes }
            }
            None => Target::File { name: &t.file, code: &t.code },
        };
        Ok(run_target(&*self.docker, image, copy, target, self.timeout, 0).await?)
    }

    /// An image this machine lacks is made again from the export's Dockerfiles, on a real checkout
    /// of the reviewed commit, as the environment stage built it (a build that reads the version
    /// from git needs the history, which the history-free copy lacks).
    async fn ensure_image(
        &self,
        docker: &bollard::Docker,
        pr: &crate::record::PullRequest,
        bench: &Value,
        image: &str,
        work: &std::path::Path,
    ) -> Result<(), TaskError> {
        if image_exists(docker, image).await? {
            return Ok(());
        }
        let exported: Option<ExportedEnvironment> = serde_json::from_value(bench["rebuild"].clone())
            .map_err(|e| {
                TaskError::reject(format!("the instance's Dockerfiles (`rebuild`) do not read: {e}"))
            })?;
        let exported = exported.ok_or_else(|| {
            TaskError::reject(format!(
                "the instance's image `{image}` is not here and the export has no Dockerfiles to make it"
            ))
        })?;
        let tree = work.join("tree");
        let (mirrors, repo, head, dest) =
            (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone(), tree.clone());
        tokio::task::spawn_blocking(move || mirrors.checkout(&mirrors.open(&repo, &[&head])?, &head, &dest))
            .await
            .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))??;
        rebuild::ensure(docker, &exported, &tree).await.map_err(|e| match e.is_data_error() {
            true => TaskError::reject(e.to_string()),
            false => TaskError::infra(e),
        })?;
        Ok(())
    }
}

impl AsyncStage for Score {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let pr = pr_record(&input)?;
        let bench = pr.extra.get("benchmark").ok_or_else(|| {
            TaskError::reject("not a benchmark instance: score needs PRs from a `benchmark` source")
        })?;
        let tests: Vec<BenchTest> = serde_json::from_value(bench["tests"].clone())
            .map_err(|e| TaskError::reject(format!("the instance's tests do not read: {e}")))?;
        let image = bench["environment"]["image"]
            .as_str()
            .filter(|tag| !tag.is_empty())
            .ok_or_else(|| TaskError::reject("the instance names no image (`environment.image`)"))?
            .to_string();
        let revision: Revision = contract::upstream(&input)?;
        let work =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let copy = work.path().join("repo");
        history_free_copy(self.mirrors.clone(), &pr.repo, &pr.head_commit, &copy).await?;
        // A revision that does not apply is a result (it passes nothing), not an error; its tests
        // need not run, and are recorded as not run rather than as broken.
        let (dir, diff) = (copy.clone(), revision.patch.clone());
        let applied =
            tokio::task::spawn_blocking(move || apply_patch(&dir, &diff).map_err(|e| e.to_string()))
                .await
                .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))?;
        let pass_to_pass: Option<Vec<String>> =
            serde_json::from_value(bench["pass_to_pass"].clone()).ok().flatten();
        let mut results = Vec::new();
        let mut passed = 0;
        let mut regression = None;
        if let Err(why) = &applied {
            for t in &tests {
                results.push(TestResult::of(t, false, NOT_APPLIED.into(), Some(why)));
            }
        } else {
            // Rebuilt on the first host; the runs bring it to the others.
            let home = self.docker.home().await?;
            self.ensure_image(&home, &pr, bench, &image, work.path()).await?;
            for t in &tests {
                let run = self.run_bench_test(&image, &copy, t).await?;
                let ok = run.verdict == Verdict::Passed;
                passed += usize::from(ok);
                let verdict = serde_json::to_value(run.verdict).unwrap_or(Value::Null);
                results.push(TestResult::of(t, ok, verdict, None));
            }
            // The regression check of validation: a revision that passes a test must keep the
            // project's passing tests passing (the project's hidden tests' side is written over it
            // by now, as validation has it). Nothing passed, nothing to guard.
            if let Some(p2p) = pass_to_pass.as_deref().filter(|p| passed > 0 && !p.is_empty()) {
                let broken = project::broken(&*self.docker, &image, &copy, p2p, self.timeout * 5).await?;
                regression = Some(Regression { checked: p2p.len(), broken });
            }
        }
        let total = tests.len();
        let record = Record {
            score: contract::Score {
                reviewer: revision.reviewer,
                passed,
                total,
                score: if total == 0 { 0.0 } else { passed as f64 / total as f64 },
            },
            review_failure: revision.review_failure,
            comments: revision.comments,
            control: revision.control,
            patch_applied: applied.as_ref().err(),
            tests: results,
            regression,
        };
        serde_json::to_value(record).map_err(|e| TaskError::infra(format!("cannot record the score: {e}")))
    }
}

/// What the stage records: the contract, and each test's result.
#[derive(Serialize)]
struct Record<'a> {
    #[serde(flatten)]
    score: contract::Score,
    review_failure: Option<String>,
    comments: usize,
    /// Scored for the no-review control.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    control: bool,
    /// Why the revision did not apply; `None` when it did.
    patch_applied: Option<&'a String>,
    tests: Vec<TestResult<'a>>,
    /// The project's passing tests run on the revision, when the instance names them and a test
    /// passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    regression: Option<Regression>,
}

/// The regression check on a revision: how many of the project's passing tests were run, and
/// those that no longer pass.
#[derive(Serialize)]
struct Regression {
    checked: usize,
    broken: Vec<String>,
}

/// One test of the instance on the revision.
#[derive(Serialize)]
struct TestResult<'a> {
    comment: &'a str,
    kind: &'a str,
    category: &'a Option<String>,
    passed: bool,
    verdict: Value,
    /// Why it did not run, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'a String>,
}

impl<'a> TestResult<'a> {
    fn of(t: &'a BenchTest, passed: bool, verdict: Value, why: Option<&'a String>) -> TestResult<'a> {
        TestResult { comment: &t.comment, kind: &t.kind, category: &t.category, passed, verdict, why }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::engine::item::Item;

    /// A bare repository with one commit holding `a.py`; its id.
    fn repository(dir: &std::path::Path) -> String {
        let repo = git2::Repository::init_bare(dir.join("o/r.git")).unwrap();
        let blob = repo.blob(b"x = 1\n").unwrap();
        let mut tree = repo.treebuilder(None).unwrap();
        tree.insert("a.py", blob, 0o100644).unwrap();
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let who = git2::Signature::new("t", "t@example.org", &git2::Time::new(0, 0)).unwrap();
        repo.commit(Some("refs/heads/main"), &who, &who, "one", &tree, &[]).unwrap().to_string()
    }

    fn score(dir: &std::path::Path) -> Score {
        let url = format!("{}/{{repo}}.git", dir.display());
        Score {
            mirrors: Arc::new(Mirrors::new(&url, dir, &dir.join("cache"))),
            docker: Arc::new(Hosts::local()),
            timeout: Duration::from_secs(5),
        }
    }

    fn input(head: &str, environment: Value, patch: &str) -> TaskInput {
        let test = json!({"comment": "c1", "file": "test_a.py", "code": "def test_a(): pass\n", "kind": "behavioural"});
        let pr = json!({
            "repo": "o/r", "title": "t", "body": "", "base_commit": head, "head_commit": head,
            "extra": {"benchmark": {"tests": [test], "environment": environment}},
        });
        let revision =
            json!({"reviewer": "r", "review_failure": null, "comments": 1, "patch": patch, "transcript": []});
        TaskInput {
            stage: "score".into(),
            item: Arc::new(Item::pr("p", pr)),
            pr: None,
            upstream: BTreeMap::from([("revise".to_string(), revision)]),
            providers: Arc::new(BTreeMap::from([(Revision::NAME, Arc::from("revise"))])),
            meter: Arc::default(),
        }
    }

    #[tokio::test]
    async fn an_instance_with_no_image_is_rejected_not_run_on_an_empty_tag() {
        let dir = tempfile::tempdir().unwrap();
        let head = repository(dir.path());
        let out = score(dir.path()).run(input(&head, json!({}), "")).await;
        let Err(TaskError::Reject { reason, .. }) = out else { panic!("{out:?}") };
        assert_eq!(reason, "the instance names no image (`environment.image`)");
    }

    #[tokio::test]
    async fn a_revision_that_does_not_apply_runs_no_test_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let head = repository(dir.path());
        let patch = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-y = 2\n+y = 3\n";
        // The image does not exist: had the tests been run, the task would have been rejected for it.
        let out = score(dir.path()).run(input(&head, json!({"image": "never-built"}), patch)).await.unwrap();
        assert_eq!(out["passed"], 0);
        assert_eq!(out["tests"][0]["verdict"], NOT_APPLIED);
        assert!(out["patch_applied"].as_str().is_some_and(|e| !e.is_empty()), "{out}");
    }
}
