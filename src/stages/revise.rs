//! `revise` (the paper's section 4.3, second step): the coding agent revises the patch under review
//! guided by one reviewer's comments (the `review` stage it needs), on a history-free copy of the
//! reviewed code; the revision is its `git diff`. No comments, no revision: the instance then
//! scores what the unrevised code scores.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::{Built, Stage, StageContext, TaskFuture, TaskInput};
use crate::agent::{Agent, AgentConfig, AgentError, AgentTask, ReviewNote};
use crate::engine::item::{Outcome, Scope};
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::repo::Mirrors;
use crate::repo::workspace::history_free_copy;
use crate::review::Finding;
use crate::sources::record::PullRequest;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    agent: AgentConfig,
}

struct Revise {
    agent: Arc<dyn Agent>,
    mirrors: Arc<Mirrors>,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<Built, ConfigError> {
    let config: Config = parse_config(config)?;
    let built = config.agent.build(ctx)?;
    Ok(Built {
        stage: Arc::new(ReviseStage(Arc::new(Revise { agent: built.agent, mirrors: ctx.mirrors.clone() }))),
        // 2: the built-in agent also reads unified diffs and whole files.
        version: 2,
        scope: Scope::Pr,
        resource: Resource::Llm,
        side_effects: true,
        files: built.files,
        fingerprint_extra: built.fingerprint,
    })
}

impl Revise {
    async fn revise(&self, input: &TaskInput) -> Result<Outcome, String> {
        let pr: PullRequest = serde_json::from_value(input.item.data.clone())
            .map_err(|_| "the item is not a pull request record")?;
        let review = input
            .upstream_with("reviewer")
            .ok_or("revise needs a review stage upstream (`needs: <review stage>`)")?;
        let reviewer = review["reviewer"].clone();
        let failure = review["failure"].clone();
        let comments: Vec<Finding> = serde_json::from_value(review["comments"].clone()).unwrap_or_default();
        if comments.is_empty() {
            return Ok(Outcome::Kept {
                output: json!({"reviewer": reviewer, "review_failure": failure, "comments": 0, "patch": "", "transcript": []}),
            });
        }
        let work = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
        let copy = work.path().join("repo");
        history_free_copy(self.mirrors.clone(), &pr.repo, &pr.head_commit, &copy).await?;
        // The files the comments are on, as they are at the reviewed commit.
        let mut shown: Vec<(String, String)> = Vec::new();
        for path in comments.iter().filter_map(|c| c.path.as_deref()) {
            if shown.iter().any(|(p, _)| p == path) || crate::sources::record::check_repo_path(path).is_err()
            {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(copy.join(path)) {
                shown.push((path.to_string(), text));
            }
        }
        let task = AgentTask {
            pr_title: pr.title.clone(),
            patch: pr.patch.clone().unwrap_or_default(),
            review: comments
                .iter()
                .map(|c| ReviewNote { path: c.path.clone(), line: c.line, body: c.body.clone() })
                .collect(),
            files: shown,
        };
        let revision = match self.agent.revise(&task, &copy, 1, &input.meter).await {
            Ok(r) => r,
            Err(AgentError::Infra(e)) => return Err(e),
        };
        Ok(Outcome::Kept {
            output: json!({
                "reviewer": reviewer,
                "review_failure": failure,
                "comments": comments.len(),
                "patch": revision.diff,
                "transcript": Value::Array(revision.transcript),
            }),
        })
    }
}

struct ReviseStage(Arc<Revise>);

impl Stage for ReviseStage {
    fn run(&self, input: TaskInput) -> TaskFuture {
        let this = self.0.clone();
        Box::pin(async move { this.revise(&input).await.unwrap_or_else(|error| Outcome::Errored { error }) })
    }
}
