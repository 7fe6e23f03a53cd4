//! `score` (the paper's section 4.3.2): the instance's tests run on the revision a reviewer's
//! comments led to (the `revise` stage it needs), in the instance's image. Score = passed tests /
//! tests. Each test's result is kept with its kind and category, for Table 5 and Figures 5 and 7.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract, Revision};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::environment::rebuild::{self, ExportedEnvironment};
use crate::errors::ConfigError;
use crate::exec::docker::LazyDocker;
use crate::exec::docker::image_exists;
use crate::exec::testrun::{Verdict, run_test};
use crate::repo::Mirrors;
use crate::repo::workspace::{apply_patch, history_free_copy};
use crate::sources::benchmark::BenchTest;

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
    docker: LazyDocker,
    timeout: Duration,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let stage = adapt(Score {
        mirrors: ctx.mirrors.clone(),
        docker: LazyDocker::default(),
        timeout: Duration::from_secs(config.timeout_secs),
    });
    Ok(StageDef {
        side_effects: true,
        provides: Some(contract::Score::NAME),
        requires: vec![contract::Revision::NAME],
        ..StageDef::new(stage, 1, Scope::Pr, Resource::Docker)
    })
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
        let patch = revision.patch.clone();
        let docker = self.docker.get().await?;
        let work = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
        let copy = work.path().join("repo");
        history_free_copy(self.mirrors.clone(), &pr.repo, &pr.head_commit, &copy).await?;
        // An image this machine lacks is made again from the export's Dockerfiles, on a real
        // checkout of the reviewed commit, as the environment stage built it (a build that reads
        // the version from git needs the history, which the history-free copy above lacks).
        if !image_exists(&docker, &image).await.map_err(|e| e.to_string())? {
            let exported: Option<ExportedEnvironment> =
                serde_json::from_value(bench["rebuild"].clone()).map_err(|e| e.to_string())?;
            let exported = exported.ok_or_else(|| {
                format!(
                    "the instance's image `{image}` is not here and the export has no Dockerfiles to make it"
                )
            })?;
            let tree = work.path().join("tree");
            let (mirrors, repo, head, dest) =
                (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone(), tree.clone());
            tokio::task::spawn_blocking(move || mirrors.open(&repo, &[&head])?.materialize(&head, &dest))
                .await
                .map_err(|e| format!("the git worker failed: {e}"))?
                .map_err(|e| e.to_string())?;
            rebuild::ensure(&docker, &exported, &tree).await?;
        }
        // A revision that does not apply is a result (it passes nothing), not an error.
        let (dir, diff) = (copy.clone(), patch.clone());
        let applied =
            tokio::task::spawn_blocking(move || apply_patch(&dir, &diff).map_err(|e| e.to_string()))
                .await
                .map_err(|e| format!("the git worker failed: {e}"))?;
        let mut results = Vec::new();
        let mut passed = 0;
        for t in &tests {
            // A revision that does not apply passes nothing; the tests need not run.
            let verdict = if applied.is_ok() {
                let run = run_test(&docker, &image, &copy, (&t.file, &t.code), self.timeout)
                    .await
                    .map_err(|e| e.to_string())?;
                run.verdict
            } else {
                Verdict::CollectionError
            };
            let ok = verdict == Verdict::Passed;
            passed += usize::from(ok);
            results.push(json!({
                "comment": t.comment, "kind": t.kind, "category": t.category, "passed": ok, "verdict": verdict,
            }));
        }
        let total = tests.len();
        Ok(json!({
                "reviewer": revision.reviewer,
                "review_failure": revision.review_failure,
                "comments": revision.comments,
                "patch_applied": applied.as_ref().err(),
                "tests": results,
                "passed": passed,
                "total": total,
                "score": if total == 0 { 0.0 } else { passed as f64 / total as f64 },
        }))
    }
}
