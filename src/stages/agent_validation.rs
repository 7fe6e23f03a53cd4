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

use bollard::Docker;
use serde::Deserialize;
use serde_json::{Value, json};
use serde_yaml::Mapping;
use tokio::sync::OnceCell;

use super::{Built, Stage, StageContext, TaskFuture, TaskInput};
use crate::agent::{Agent, AgentConfig, AgentError, AgentTask, ReviewNote, file_patch};
use crate::engine::item::{Outcome, Scope};
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::exec::connect;
use crate::exec::testrun::{Verdict, run_test};
use crate::repo::Mirrors;
use crate::repo::workspace::history_free_copy;
use crate::sources::record::PullRequest;
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
    docker: OnceCell<Docker>,
    attempts: u32,
    timeout: Duration,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<Built, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.attempts == 0 {
        return Err(ConfigError::new("attempts", "must be at least 1"));
    }
    let built = config.agent.build(ctx)?;
    Ok(Built {
        stage: Arc::new(AgentValidation(Arc::new(Validation {
            agent: built.agent,
            mirrors: ctx.mirrors.clone(),
            docker: OnceCell::new(),
            attempts: config.attempts,
            timeout: Duration::from_secs(config.timeout_secs),
        }))),
        // 2: the built-in agent also reads unified diffs and whole files.
        version: 2,
        scope: Scope::Comment,
        resource: Resource::Llm,
        side_effects: true,
        files: built.files,
        fingerprint_extra: built.fingerprint,
    })
}

struct Inputs {
    pr: PullRequest,
    task: AgentTask,
    image: String,
    test_file: String,
    test: String,
}

fn inputs(input: &TaskInput) -> Result<Inputs, String> {
    let (pr, comment) = input.comment_records()?;
    let find = |key: &str, stage: &str| {
        input.upstream_with(key).cloned().ok_or(format!(
            "agent_validation needs a {stage} stage upstream (`needs: [tests, context, environment]`)"
        ))
    };
    let synthesis = find("test_file", "test_synthesis")?;
    let context = find("file_before", "comment_context")?;
    let environment = find("image", "environment")?;
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let path = text(&context, "path");
    let task = AgentTask {
        pr_title: pr.title.clone(),
        // The part of the patch the comment is about; the whole patch costs the model more than it tells.
        patch: file_patch(pr.patch.as_deref().unwrap_or_default(), &path),
        review: vec![ReviewNote {
            path: Some(path.clone()),
            line: context["end_line"].as_u64(),
            body: comment.text.clone(),
        }],
        files: vec![(path, text(&context, "file_before"))],
    };
    Ok(Inputs {
        image: text(&environment, "image"),
        test_file: text(&synthesis, "test_file"),
        test: text(&synthesis, "test"),
        pr,
        task,
    })
}

impl Validation {
    async fn validate(&self, input: &TaskInput) -> Result<Outcome, String> {
        let i = inputs(input)?;
        let docker = self.docker.get_or_try_init(connect).await.map_err(|e| e.to_string())?.clone();
        let mut history = Vec::new();
        let mut last = reasons::FAILED;
        for attempt in 1..=self.attempts {
            let work = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
            let copy = work.path().join("repo");
            history_free_copy(self.mirrors.clone(), &i.pr.repo, &i.pr.head_commit, &copy).await?;
            let revision = match self.agent.revise(&i.task, &copy, attempt, &input.meter).await {
                Ok(r) => r,
                Err(AgentError::Infra(e)) => return Err(e),
            };
            if revision.diff.trim().is_empty() {
                history.push(json!({"attempt": attempt, "patch": "", "transcript": revision.transcript, "result": reasons::NO_CHANGE}));
                last = reasons::NO_CHANGE;
                continue;
            }
            let run = run_test(&docker, &i.image, &copy, (&i.test_file, &i.test), self.timeout)
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
                return Ok(Outcome::Kept {
                    output: json!({"attempts": attempt, "patch": revision.diff, "history": history}),
                });
            }
            last = reasons::FAILED;
        }
        Ok(Outcome::Rejected {
            reason: last.to_string(),
            detail: json!({"attempts": history.len(), "history": history}),
        })
    }
}

struct AgentValidation(Arc<Validation>);

impl Stage for AgentValidation {
    fn run(&self, input: TaskInput) -> TaskFuture {
        let this = self.0.clone();
        Box::pin(
            async move { this.validate(&input).await.unwrap_or_else(|error| Outcome::Errored { error }) },
        )
    }
}
