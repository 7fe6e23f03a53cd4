//! `comment_context`: per review comment, the code it is about. Aligns the comment's diff hunk to the
//! file at the reviewed commit and extracts the commented lines with some lines around them, plus the
//! whole file at the reviewed commit and at the fixed commit (following a rename). Comments that
//! cannot be placed are rejected with the reason: no file, a file missing or deleted by the fix, a hunk
//! that no longer matches, no fixed commit.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{Stage, StageContext, StageDef, TaskFuture, TaskInput};
use crate::engine::item::{Outcome, Scope};
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::record::{PullRequest, ReviewComment};
use crate::repo::Mirrors;
use crate::repo::align::{Side, align, window};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Lines of code kept above and below the commented lines.
    #[serde(default = "default_context")]
    context_lines: u64,
}

fn default_context() -> u64 {
    10
}

/// What is stored: the contract, and where the commented code was found.
#[derive(Serialize)]
struct Record {
    #[serde(flatten)]
    comment: contract::CommentContext,
    side: Side,
    /// How far the hunk had moved in the file.
    moved: i64,
    /// The commented code, and the lines around it from `context_start` on.
    code: String,
    context_start: u64,
    context: String,
}

struct CommentContext {
    mirrors: Arc<Mirrors>,
    context_lines: u64,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let stage =
        Arc::new(CommentContext { mirrors: ctx.mirrors.clone(), context_lines: config.context_lines });
    Ok(StageDef {
        provides: Some(contract::CommentContext::NAME),
        ..StageDef::new(stage, 1, Scope::Comment, Resource::Cpu)
    })
}

fn reject(reason: impl Into<String>) -> Outcome {
    Outcome::rejected(reason.into())
}

impl Stage for CommentContext {
    fn run(&self, input: TaskInput) -> TaskFuture {
        let mirrors = self.mirrors.clone();
        let around = self.context_lines;
        Box::pin(async move {
            let joined = tokio::task::spawn_blocking(move || context(&mirrors, &input, around)).await;
            joined.unwrap_or_else(|e| Outcome::Errored { error: format!("the git worker failed: {e}") })
        })
    }
}

fn context(mirrors: &Mirrors, input: &TaskInput, around: u64) -> Outcome {
    let Some(pr) = input.pr.as_ref() else {
        return Outcome::Errored { error: "a comment task without its PR".into() };
    };
    let (pr, comment) = match (
        serde_json::from_value::<PullRequest>(pr.data.clone()),
        serde_json::from_value::<ReviewComment>(input.item.data.clone()),
    ) {
        (Ok(pr), Ok(c)) => (pr, c),
        _ => return reject("the item is not a PR review comment record (use a PR source such as swe-care)"),
    };
    let Some(path) = comment.path.clone() else { return reject("the comment is not on a file") };
    let Some(fixed) = pr.fixed_commit.clone() else { return reject("the PR has no fixed commit") };
    let file = match mirrors.across_fix(&pr.repo, &pr.head_commit, &fixed, &path) {
        Ok(f) => f,
        Err(e) if e.is_data_error() => return reject(e.to_string()),
        Err(e) => return Outcome::Errored { error: e.to_string() },
    };
    let before = file.before;
    let Some((fixed_path, after)) = file.fixed else { return reject("the fix deleted the commented file") };
    let aligned = match align(&comment, &before) {
        Ok(a) => a,
        Err(e) => return reject(e.to_string()),
    };
    let (context_start, code_context) = window(&before, aligned.start, aligned.end, around);
    let record = Record {
        comment: contract::CommentContext {
            path,
            fixed_path: Some(fixed_path),
            start_line: aligned.start,
            end_line: aligned.end,
            file_before: before,
            file_after: after,
        },
        side: aligned.side,
        moved: aligned.moved,
        code: aligned.code,
        context_start,
        context: code_context,
    };
    match serde_json::to_value(record) {
        Ok(output) => Outcome::Kept { output },
        Err(e) => Outcome::Errored { error: format!("cannot store the comment's context: {e}") },
    }
}
