//! `review` (the paper's section 4.3, first step): one reviewer reviews each benchmark instance,
//! given the patch under review and the PR description. Reviewers: `human` (the instance's own
//! human comments: the upper bound), `llm` (the configured model with a prompt), `command` (any
//! tool that prints comments, see [`crate::review::command`]) and `none` (the no-review control:
//! the agent revises on its own). A tool that crashes, times out or prints no comments is recorded
//! with that failure and no comments (so it scores zero), never dropped. Runs on PR items of a
//! `benchmark` source.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::llm::client::Llm;
use crate::llm::prompt::Template;
use crate::llm::{LlmError, LlmSpec};
use crate::repo::Mirrors;
use crate::repo::workspace::history_free_copy;
use crate::review::command::{Instance, ReviewCache, ReviewCommand};
use crate::review::fit::fit_patch;
use crate::review::{Finding, findings, found_nothing};

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum ReviewerConfig {
    Human,
    None,
    Llm {
        prompt: PathBuf,
        #[serde(default)]
        llm: Box<LlmSpec>,
        /// The most bytes of the patch the prompt shows (whole files, the code's first; the
        /// files left out are named): a real PR's diff can be many times a small model's context.
        #[serde(default = "default_patch_bytes")]
        patch_bytes: usize,
    },
    Command {
        /// Run with `sh -c` in a copy of the reviewed code; `{patch_file}` is the patch under
        /// review, `{description_file}` the PR's title and description (also in the environment,
        /// as `CURATE_PATCH_FILE` and `CURATE_DESCRIPTION_FILE`, with `CURATE_PIPELINE_DIR`, the
        /// pipeline file's directory).
        command: String,
        #[serde(default = "default_timeout")]
        timeout_secs: u64,
        /// Keep only the comments on lines the patch adds (a linter that reads whole files).
        #[serde(default)]
        changed_lines: bool,
    },
}

fn default_timeout() -> u64 {
    900
}

/// About 5,000 tokens of code: with the prompt and the answer, within an 8,192-token context.
fn default_patch_bytes() -> usize {
    16_000
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The name the report shows (default: the stage id).
    name: Option<String>,
    reviewer: ReviewerConfig,
}

enum Reviewer {
    Human,
    None,
    Llm { llm: Box<Llm>, prompt: Template, patch_bytes: usize },
    Command { tool: ReviewCommand, cache: ReviewCache, mirrors: Arc<Mirrors> },
}

struct Review {
    name: String,
    reviewer: Reviewer,
}

const PLACEHOLDERS: [&str; 3] = ["pr_title", "pr_body", "patch"];

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let name = config.name.unwrap_or_else(|| ctx.id.to_string());
    let (reviewer, files, fingerprint) = match config.reviewer {
        ReviewerConfig::Human => (Reviewer::Human, Vec::new(), Value::Null),
        ReviewerConfig::None => (Reviewer::None, Vec::new(), Value::Null),
        ReviewerConfig::Llm { prompt, llm, patch_bytes } => {
            let template = ctx.template("reviewer.prompt", &prompt, &PLACEHOLDERS)?;
            let settings = ctx.llm.merged(&llm).settings();
            let llm = Llm::new(settings, &ctx.cache.join("llm"))
                .map_err(|e| ConfigError::new("reviewer.llm", e.to_string()))?;
            let fingerprint = llm.settings.fingerprint();
            (
                Reviewer::Llm { llm: Box::new(llm), prompt: template, patch_bytes },
                vec![prompt.to_string_lossy().into_owned()],
                fingerprint,
            )
        }
        ReviewerConfig::Command { command, timeout_secs, changed_lines } => (
            Reviewer::Command {
                tool: ReviewCommand {
                    command,
                    timeout: Duration::from_secs(timeout_secs),
                    changed_lines,
                    pipeline_dir: ctx.dir.canonicalize().unwrap_or_else(|_| ctx.dir.to_path_buf()),
                },
                cache: ReviewCache::under(ctx.cache, ctx.llm.settings().cache),
                mirrors: ctx.mirrors.clone(),
            },
            Vec::new(),
            Value::Null,
        ),
    };
    let resource = match reviewer {
        Reviewer::Human | Reviewer::None => Resource::Cpu,
        _ => Resource::Llm,
    };
    Ok(StageDef {
        side_effects: !matches!(resource, Resource::Cpu),
        files,
        fingerprint_extra: fingerprint,
        // The model's settings that change answers are in the fingerprint.
        unhashed: &["reviewer.llm"],
        provides: Some(contract::Review::NAME),
        // 2: the built-in reviewer is shown a patch cut to fit, and a cut-off answer's complete
        // comments are read. 3: an answer saying it found nothing (`[]`) is a review, not a failure.
        ..StageDef::new(adapt(Review { name, reviewer }), 3, Scope::Pr, resource)
    })
}

/// What a review gave: its comments, or the reason it gave none.
fn reviewed(name: &str, comments: Vec<Finding>, failure: Option<String>) -> Result<Value, TaskError> {
    let review = contract::Review { reviewer: name.to_string(), comments, failure, control: false };
    serde_json::to_value(review).map_err(|e| TaskError::infra(format!("cannot record the review: {e}")))
}

impl AsyncStage for Review {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let pr = pr_record(&input)?;
        match &self.reviewer {
            Reviewer::Human => {
                let human = &pr.extra.get("benchmark").and_then(|b| b.get("human_comments")).cloned();
                let comments: Vec<Finding> =
                    human.as_ref().and_then(|h| serde_json::from_value(h.clone()).ok()).ok_or_else(|| {
                        TaskError::reject("the PR has no human comments: review needs a `benchmark` source")
                    })?;
                reviewed(&self.name, comments, None)
            }
            Reviewer::Llm { llm, prompt, patch_bytes } => {
                let patch = fit_patch(pr.patch.as_deref().unwrap_or_default(), *patch_bytes);
                let values = BTreeMap::from([
                    ("pr_title", pr.title.clone()),
                    ("pr_body", pr.body.clone()),
                    ("patch", patch),
                ]);
                // A prompt the model cannot take is a review that failed (it scores zero), as a
                // tool's crash is: the instance stays in the reviewer's row.
                let (answer, _) = match llm.chat(&llm.request(prompt.render(&values))).await {
                    Err(e @ LlmError::ContextExceeded(_)) => {
                        return reviewed(&self.name, Vec::new(), Some(e.to_string()));
                    }
                    answered => answered?,
                };
                input.meter.add(answer.usage.into());
                let found = findings(&answer.text);
                // An answer saying it found nothing is a review, as a tool's empty report is.
                let failure = (found.is_empty() && !found_nothing(&answer.text))
                    .then(|| "the answer held no review comments".to_string());
                reviewed(&self.name, found, failure)
            }
            Reviewer::None => {
                let review = contract::Review {
                    reviewer: self.name.clone(),
                    comments: Vec::new(),
                    failure: None,
                    control: true,
                };
                serde_json::to_value(review)
                    .map_err(|e| TaskError::infra(format!("cannot record the review: {e}")))
            }
            Reviewer::Command { tool, cache, mirrors } => {
                let work = tempfile::tempdir()
                    .map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
                let copy = work.path().join("repo");
                history_free_copy(mirrors.clone(), &pr.repo, &pr.head_commit, &copy).await?;
                let instance = Instance {
                    repo: &pr.repo,
                    head_commit: &pr.head_commit,
                    patch: pr.patch.as_deref().unwrap_or_default(),
                    title: &pr.title,
                    body: &pr.body,
                };
                let review =
                    tool.review(&instance, &copy, work.path(), cache).await.map_err(TaskError::infra)?;
                reviewed(&self.name, review.comments, review.failure)
            }
        }
    }
}
