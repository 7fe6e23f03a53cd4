//! `agent_validation` (the paper's section 4.2.4): per comment with an accepted test, a coding agent
//! gets the patch under review, the commented file and the human comment (never the test, never the
//! fix) and revises a history-free copy of the reviewed code; the hidden test then runs on that
//! revision in the PR's image. The comment stays only if the test passes, within `attempts` agent
//! runs. Every revision, its transcript and its test run are stored.
//!
//! Needs a `test_synthesis` stage (the test), a `comment_context` stage (the file) and an
//! `environment` stage (the image) upstream.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, CommentContext, Contract, Environment, Test};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::agent::{Agent, AgentConfig, AgentTask, ReviewNote, file_patch};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{Verdict, run_test};
use crate::record::PullRequest;
use crate::repo::Mirrors;
use crate::repo::workspace::history_free_copy;
use crate::synthesis::oracle::for_feedback;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    agent: AgentConfig,
    /// Agent runs at most; each starts again from the reviewed code.
    #[serde(default = "default_attempts")]
    attempts: u32,
    /// Seconds the hidden test may take on a revision.
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
}

fn default_attempts() -> u32 {
    2
}
fn default_timeout() -> u64 {
    60
}

pub mod reasons {
    pub const NO_CHANGE: &str = "the agent changed nothing";
    pub const FAILED: &str = "the agent's revision did not pass the test";
}

struct Validation {
    agent: Arc<dyn Agent>,
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    attempts: u32,
    timeout: Duration,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.attempts == 0 {
        return Err(ConfigError::new("attempts", "must be at least 1"));
    }
    let built = config.agent.build(ctx)?;
    let stage = adapt(Validation {
        agent: built.agent,
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        attempts: config.attempts,
        timeout: Duration::from_secs(config.timeout_secs),
    });
    // 2: the built-in agent also reads unified diffs and whole files.
    Ok(StageDef {
        side_effects: true,
        files: built.files,
        fingerprint_extra: built.fingerprint,
        // The agent model's settings that change answers are in the fingerprint.
        unhashed: &["agent.llm"],
        provides: Some(contract::Validation::NAME),
        requires: vec![contract::Test::NAME, CommentContext::NAME, Environment::NAME],
        ..StageDef::new(stage, 2, Scope::Comment, Resource::Llm)
    })
}

struct Inputs {
    pr: PullRequest,
    task: AgentTask,
    image: String,
    test_file: String,
    test: String,
}

fn inputs(input: &TaskInput) -> Result<Inputs, TaskError> {
    let (pr, comment) = comment_records(input)?;
    let test: Test = contract::upstream(input)?;
    let context: CommentContext = contract::upstream(input)?;
    let environment: Environment = contract::upstream(input)?;
    let path = context.path;
    let task = AgentTask {
        pr_title: pr.title.clone(),
        // The part of the patch the comment is about; the whole patch costs the model more than it tells.
        patch: file_patch(pr.patch.as_deref().unwrap_or_default(), &path),
        review: vec![ReviewNote {
            path: Some(path.clone()),
            line: Some(context.end_line),
            body: comment.text.clone(),
        }],
        files: vec![(path, context.file_before)],
    };
    Ok(Inputs { image: environment.image, test_file: test.test_file, test: test.test, pr, task })
}

impl AsyncStage for Validation {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let i = inputs(&input)?;
        let mut history = Vec::new();
        let mut last = reasons::FAILED;
        for attempt in 1..=self.attempts {
            let work = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
            let copy = work.path().join("repo");
            history_free_copy(self.mirrors.clone(), &i.pr.repo, &i.pr.head_commit, &copy).await?;
            let revision = self.agent.revise(&i.task, &copy, attempt, &input.meter).await?;
            if revision.diff.trim().is_empty() {
                history.push(json!({"attempt": attempt, "patch": "", "transcript": revision.transcript, "result": reasons::NO_CHANGE}));
                last = reasons::NO_CHANGE;
                continue;
            }
            let run = run_test(&*self.docker, &i.image, &copy, (&i.test_file, &i.test), self.timeout)
                .await
                .map_err(|e| e.to_string())?;
            let passed = run.verdict == Verdict::Passed;
            history.push(json!({
                "attempt": attempt,
                "patch": revision.diff,
                "transcript": revision.transcript,
                "test": {"verdict": run.verdict, "output": for_feedback(&run.output, 80)},
                "result": if passed { "passed" } else { reasons::FAILED },
            }));
            if passed {
                return Ok(json!({"attempts": attempt, "patch": revision.diff, "history": history}));
            }
            last = reasons::FAILED;
        }
        Err(TaskError::Reject {
            reason: last.to_string(),
            detail: json!({"attempts": history.len(), "history": history}),
        })
    }
}
