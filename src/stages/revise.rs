//! `revise` (the paper's section 4.3, second step): the coding agent revises the patch under review
//! guided by one reviewer's comments (the `review` stage it needs), on a history-free copy of the
//! reviewed code; the revision is its `git diff`. No comments, no revision: the instance then
//! scores what the unrevised code scores. The no-review control is the exception: the agent revises
//! with notes that carry no review (see [`crate::review::control_notes`]).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_yaml::Mapping;

use super::contract::{self, Contract, Revision};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::agent::{Agent, AgentConfig, AgentTask, ReviewNote, tested};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::llm::prompt::Texts;
use crate::repo::Mirrors;
use crate::repo::workspace::history_free_copy;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    agent: AgentConfig,
    /// A comment on a test of the PR is shown at the code the test calls, as validation's
    /// `tested_code` does: the agent of the evaluation should be the agent that validated.
    #[serde(default)]
    tested_code: bool,
}

struct Revise {
    agent: Arc<dyn Agent>,
    mirrors: Arc<Mirrors>,
    /// With `tested_code`: the words of a note moved to the code a commented test calls.
    tested: Option<Texts>,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let built = config.agent.build(ctx)?;
    let tested = config.agent.tested_texts(ctx, config.tested_code)?;
    // 3: a rewrite is moved to the shown lines' least indentation (validation's 5).
    Ok(StageDef {
        side_effects: true,
        files: built.files,
        fingerprint_extra: built.fingerprint,
        // The agent model's settings that change answers are in the fingerprint.
        unhashed: &["agent.llm"],
        provides: Some(Revision::NAME),
        requires: vec![contract::Review::NAME],
        ..StageDef::new(
            adapt(Revise { agent: built.agent, mirrors: ctx.mirrors.clone(), tested }),
            3,
            Scope::Pr,
            Resource::Llm,
        )
    })
}

impl AsyncStage for Revise {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let pr = pr_record(&input)?;
        // A malformed review is an error, not a review that said nothing (which would score zero).
        let review: contract::Review = contract::upstream(&input)?;
        let revision = |comments: usize, patch: String, transcript: Vec<Value>| {
            let revision = Revision {
                reviewer: review.reviewer.clone(),
                review_failure: review.failure.clone(),
                comments,
                patch,
                transcript,
                control: review.control,
            };
            serde_json::to_value(revision)
                .map_err(|e| TaskError::infra(format!("cannot record the revision: {e}")))
        };
        // The control has no comments; the agent is shown the change with notes that say so.
        let control_notes;
        let comments = match review.control {
            true => {
                control_notes = crate::review::control_notes(pr.patch.as_deref().unwrap_or_default());
                &control_notes
            }
            false => &review.comments,
        };
        if comments.is_empty() {
            return revision(0, String::new(), Vec::new());
        }
        let work =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let copy = work.path().join("repo");
        history_free_copy(self.mirrors.clone(), &pr.repo, &pr.head_commit, &copy).await?;
        // The files the comments are on, as they are at the reviewed commit.
        let mut shown: Vec<(String, String)> = Vec::new();
        for path in comments.iter().filter_map(|c| c.path.as_deref()) {
            if shown.iter().any(|(p, _)| p == path) || crate::record::check_repo_path(path).is_err() {
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
        let task = match &self.tested {
            Some(texts) => tested::retarget(&task, pr.patch.as_deref().unwrap_or_default(), &copy, texts),
            None => task,
        };
        let agent = self.agent.revise(&task, &copy, 1, &input.meter).await?;
        revision(review.comments.len(), agent.diff, agent.transcript)
    }
}
