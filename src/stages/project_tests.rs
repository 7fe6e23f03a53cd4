//! `project_tests`: per PR, the project's own test modules (and the directories of test data
//! files) that the fix changes (between the reviewed and the fixed commit) and the modules named after a module it
//! changes, run in the PR's image on the reviewed code with the fixed commit's test side put in,
//! and on the fixed code, the way SWE-bench computes its lists:
//! `fail_to_pass`, the nodes that fail on the first and pass on the second (candidates for the
//! comments' tests, judged by `test_synthesis` with `from_project_tests`), and `pass_to_pass`, those
//! that pass on both (what a revision must not break: `agent_validation`'s regression check).
//!
//! It never rejects a PR: a fix that changes no test is a fact too, and the lists are then empty.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_yaml::Mapping;

use super::contract::{self, Contract, ProjectTests};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::environment::related::{importing_tests, related_tests};
use crate::environment::tree_image;
use crate::errors::ConfigError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{TestRun, project_outcomes};
use crate::repo::{Mirrors, working_files};
use crate::synthesis::judge::run_record;
use crate::synthesis::project::{self, changed_paths, is_test_side};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Seconds one run of the changed test modules may take, per side.
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
    /// Test modules run at most (the first, in path order).
    #[serde(default = "default_max_modules")]
    max_modules: usize,
    /// When the fix's tests give no candidate (it changes none, or none fails then passes) and the
    /// PR changed its tests after the fix: the lists again with the merge's test side, put in on
    /// both sides.
    #[serde(default)]
    tests_from_merge: bool,
}

fn default_timeout() -> u64 {
    300
}
fn default_max_modules() -> usize {
    8
}

struct Stage {
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    timeout: Duration,
    max_modules: usize,
    tests_from_merge: bool,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.max_modules == 0 {
        return Err(ConfigError::new("max_modules", "must be at least 1"));
    }
    let stage = adapt(Stage {
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        timeout: Duration::from_secs(config.timeout_secs),
        max_modules: config.max_modules,
        tests_from_merge: config.tests_from_merge,
    });
    Ok(StageDef {
        side_effects: true,
        provides: Some(ProjectTests::NAME),
        requires: vec![contract::Environment::NAME],
        // 2: the fix's changed data files of the tests are run too; 3: by their directories. 4: a
        // side whose compiled sources differ from the reviewed ones runs in an image with its build.
        // 5: a `testsuite` directory is the tests' too (pycodestyle's cases in `testsuite/E22.py`).
        ..StageDef::new(stage, 5, Scope::Pr, Resource::Docker)
    })
}

/// What is stored: the lists, and what ran to find them.
#[derive(Serialize)]
struct Record {
    #[serde(flatten)]
    tests: ProjectTests,
    /// The test modules run on both sides.
    modules: Vec<String>,
    /// Each side's run, when modules ran.
    reviewed: Option<Value>,
    fixed: Option<Value>,
    /// Why the modules did not run: the fix's compiled sources do not build.
    #[serde(skip_serializing_if = "Option::is_none")]
    unbuilt: Option<String>,
}

impl Stage {
    async fn find(&self, input: &TaskInput) -> Result<Value, TaskError> {
        let pr = pr_record(input)?;
        let environment: contract::Environment = contract::upstream(input)?;
        let Some(fixed_commit) = pr.fixed_commit.clone() else {
            return Err(TaskError::reject("the PR has no fixed commit"));
        };
        let dir =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let (reviewed, fixed) = (dir.path().join("reviewed"), dir.path().join("fixed"));
        let (mirrors, repo, head) = (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone());
        let (r, f) = (reviewed.clone(), fixed.clone());
        let merge =
            pr.pr_merged_commit().filter(|m| self.tests_from_merge && *m != fixed_commit).map(str::to_string);
        let (patch, test_paths, later) = tokio::task::spawn_blocking(move || {
            let mirror = mirrors.checkout_pair(&repo, (&head, &fixed_commit), &r, &f)?;
            let patch = mirror.diff(&head, &fixed_commit)?;
            let test_paths = test_side_of(&patch);
            // The merge's test side, when the PR changed its tests after the fix.
            let later = match merge {
                Some(merge) if !test_side_of(&mirror.diff(&fixed_commit, &merge)?).is_empty() => {
                    let paths = test_side_of(&mirror.diff(&head, &merge)?);
                    Some((mirror, merge, paths))
                }
                _ => None,
            };
            Ok::<_, TaskError>((patch, test_paths, later))
        })
        .await
        .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))??;
        let record = self.lists(&environment, &patch, (test_paths, None), &reviewed, &fixed).await?;
        // No candidate from the fix's tests: the tests the PR wrote after the fix, put in on both
        // sides (pdm 570: "Add tests for project source env var expansion", after the fix).
        let Some((mirror, merge, paths)) = later.filter(|_| record.tests.fail_to_pass.is_empty()) else {
            return to_value(&record);
        };
        let (f, put) = (fixed.clone(), paths.clone());
        let merge_for = merge.clone();
        tokio::task::spawn_blocking(move || project::put_in_from(&mirror, &merge_for, &put, &f))
            .await
            .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))??;
        let second = self.lists(&environment, &patch, (paths, Some(merge)), &reviewed, &fixed).await?;
        to_value(if second.modules.is_empty() { &record } else { &second })
    }

    /// The lists of the modules `test_paths` (read from `fixed`) and the related ones give: run on
    /// the reviewed tree with them put in, and on the fixed tree.
    async fn lists(
        &self,
        environment: &contract::Environment,
        patch: &str,
        (test_paths, tests_commit): (Vec<String>, Option<String>),
        reviewed: &Path,
        fixed: &Path,
    ) -> Result<Record, TaskError> {
        // The modules the fix changes, then those named after a module it changes (or, when none
        // is, those that import one).
        let listing =
            working_files(fixed).map_err(|e| TaskError::infra(format!("cannot list the fixed tree: {e}")))?;
        let mut named = related_tests(patch, &listing);
        if named.is_empty() {
            named = importing_tests(patch, &listing, &|p: &str| std::fs::read_to_string(fixed.join(p)).ok());
        }
        let modules =
            project::paths_to_run(&test_paths, &named, |p| fixed.join(p).is_file(), self.max_modules);
        let mut record = Record {
            tests: ProjectTests {
                test_paths,
                tests_commit,
                fail_to_pass: Vec::new(),
                pass_to_pass: Vec::new(),
            },
            modules,
            reviewed: None,
            fixed: None,
            unbuilt: None,
        };
        if record.modules.is_empty() {
            return Ok(record);
        }
        let Some((on_reviewed, on_fixed)) = self.run_both(environment, reviewed, fixed, &mut record).await?
        else {
            return Ok(record);
        };
        record.tests.fail_to_pass = project::fail_to_pass(&on_reviewed.1, &on_fixed.1);
        record.tests.pass_to_pass = project::pass_to_pass(&on_reviewed.1, &on_fixed.1);
        record.reviewed = Some(run_record(&on_reviewed.0));
        record.fixed = Some(run_record(&on_fixed.0));
        Ok(record)
    }

    /// The modules run on the reviewed tree with the fix's test side in it, and on the fixed tree,
    /// each in the image its compiled sources need; `None` (and `unbuilt` said) when a side's
    /// sources do not build.
    async fn run_both(
        &self,
        environment: &contract::Environment,
        reviewed: &Path,
        fixed: &Path,
        record: &mut Record,
    ) -> Result<Option<(Outcomes, Outcomes)>, TaskError> {
        let with_tests =
            project::with_fixed_tests(reviewed, fixed, &record.tests.test_paths).await.map_err(|e| {
                TaskError::infra(format!("cannot put the fixed tests into the reviewed tree: {e}"))
            })?;
        let docker = &*self.docker;
        let image = |tree: &Path| {
            let tree = tree.to_path_buf();
            async move {
                tree_image::image_for(
                    docker,
                    &environment.image,
                    environment.rebuild.as_deref(),
                    reviewed,
                    &tree,
                )
                .await
            }
        };
        let images = match (image(with_tests.path()).await, image(fixed).await) {
            (Ok(r), Ok(f)) => (r, f),
            (Err(e), _) | (_, Err(e)) if e.is_data_error() => {
                record.unbuilt = Some(e.to_string());
                return Ok(None);
            }
            (Err(e), _) | (_, Err(e)) => return Err(TaskError::infra(e)),
        };
        let (on_reviewed, on_fixed) = tokio::join!(
            project_outcomes(docker, &images.0, with_tests.path(), &record.modules, self.timeout),
            project_outcomes(docker, &images.1, fixed, &record.modules, self.timeout)
        );
        Ok(Some((on_reviewed?, on_fixed?)))
    }
}

/// The test side of a diff: the test modules, conftest files and test data it adds or changes.
fn test_side_of(patch: &str) -> Vec<String> {
    changed_paths(patch).into_iter().filter(|p| is_test_side(p)).collect()
}

fn to_value(record: &Record) -> Result<Value, TaskError> {
    serde_json::to_value(record)
        .map_err(|e| TaskError::infra(format!("cannot store the project's tests: {e}")))
}

type Outcomes = (TestRun, std::collections::BTreeMap<String, crate::exec::testrun::NodeOutcome>);

impl AsyncStage for Stage {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        self.find(&input).await
    }
}
