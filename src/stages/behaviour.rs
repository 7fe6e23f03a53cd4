//! `observed_behaviour`: per kept review comment, the calls of the changed code whose results differ
//! between the reviewed and the fixed commit, found by running the probe (`exec::probe`) in the PR's
//! image on both. A test writer given "on the reviewed code `f(x)` raises IndexError, on the changed
//! code ValueError" has its test nearly written; one that must find such a call alone often asserts
//! the wrong thing. The changed lines are the comment's attributed changes when an `attribution`
//! stage is upstream, else every change of the fix to the commented file.
//!
//! When the fix makes several changes, a call may differ because of another one (the even-count
//! median for a comment about empty input): with an attribution, the calls also run on the fixed
//! tree with only the comment's changes undone, and a difference counts only if the result there
//! is not the fixed one.
//!
//! It never rejects a comment: finding no difference is a fact too (the change may not be
//! behavioural, or its inputs may be out of the probe's reach). Everything the probe said is stored.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::environment::tree_image::{self, TreeImageError};
use crate::errors::ConfigError;
use crate::exec::hosts::Hosts;
use crate::exec::probe::{self, Request, Side};
use crate::repo::Mirrors;
use crate::repo::hunks;
use crate::synthesis::facts;
use crate::synthesis::observed;
use crate::synthesis::partial;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Differences handed on to the test writer at most.
    #[serde(default = "default_shown")]
    shown: usize,
}

fn default_shown() -> usize {
    4
}

/// What is stored: the contract, and what the probe ran to find it.
#[derive(Serialize)]
struct Record {
    #[serde(flatten)]
    observed: contract::Observed,
    module: String,
    targets: Vec<String>,
    /// Calls made on the fixed code.
    calls: usize,
    differing: usize,
    /// Of the differing calls, those the comment's own change causes, when that was checked.
    caused_by_change: Option<usize>,
    all_differences: Vec<observed::Difference>,
    /// The probe's errors and seconds: fixed, reviewed, and with the comment's change undone.
    errors: [Option<String>; 3],
    seconds: [Option<f64>; 3],
}

/// What is stored when the probe did not run: no differences, and why.
#[derive(Serialize)]
struct Skipped {
    #[serde(flatten)]
    observed: contract::Observed,
    skipped: String,
}

impl Skipped {
    fn stored(why: impl Into<String>) -> Result<Value, TaskError> {
        let record =
            Skipped { observed: contract::Observed { differences: Vec::new() }, skipped: why.into() };
        serde_json::to_value(record)
            .map_err(|e| TaskError::infra(format!("cannot store a skipped probe: {e}")))
    }
}

struct Behaviour {
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    shown: usize,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.shown == 0 {
        return Err(ConfigError::new("shown", "must be at least 1"));
    }
    let stage =
        adapt(Behaviour { mirrors: ctx.mirrors.clone(), docker: ctx.docker.clone(), shown: config.shown });
    Ok(StageDef {
        side_effects: true,
        // Results change with the probe's code, which is not a file of the pipeline.
        fingerprint_extra: json!({"probe": probe::version()}),
        provides: Some(contract::Observed::NAME),
        requires: vec![contract::CommentContext::NAME, contract::Environment::NAME],
        ..StageDef::new(stage, 1, Scope::Comment, Resource::Docker)
    })
}

/// The changed lines of the commented file: (added, in the fixed file; removed, in the reviewed one).
fn changed_lines(
    context: &contract::CommentContext,
    attribution: Option<&contract::Attribution>,
    diff: &str,
) -> (Vec<u64>, Vec<u64>) {
    let fixed_path = context.fixed_path.as_deref().unwrap_or(&context.path);
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    match attribution {
        Some(a) => {
            for change in a.changes.iter().filter(|c| c.path == fixed_path || c.path == context.path) {
                added.extend(&change.added);
                removed.extend(&change.removed);
            }
        }
        None => {
            for hunk in hunks::parse(diff) {
                added.extend(hunk.added.iter().map(|(n, _)| *n));
                removed.extend(hunk.removed.iter().map(|(n, _)| *n));
            }
        }
    }
    (added, removed)
}

/// The image the fixed tree runs in (its compiled sources built), or why it has none.
async fn fixed_image(
    docker: &Hosts,
    environment: &contract::Environment,
    reviewed: &std::path::Path,
    fixed: &std::path::Path,
) -> Result<Result<String, TreeImageError>, TaskError> {
    let rebuild = environment.rebuild.as_deref();
    match tree_image::image_for(docker, &environment.image, rebuild, reviewed, fixed).await {
        Ok(image) => Ok(Ok(image)),
        Err(e) if e.is_data_error() => Ok(Err(e)),
        Err(e) => Err(TaskError::infra(e)),
    }
}

/// The fixed tree with the comment's changes undone, where they can be: on the fixed build, only
/// Python changes can be undone alone.
async fn undone_tree(
    attribution: &contract::Attribution,
    reviewed: &std::path::Path,
    fixed: &std::path::Path,
) -> Result<Option<tempfile::TempDir>, TaskError> {
    let changes = attribution.changes();
    if changes.iter().any(|c| tree_image::is_compiled_source(c.path)) {
        return Ok(None);
    }
    let texts = partial::fixed_texts(&changes, fixed);
    partial::tree(reviewed, fixed, &changes, &texts)
        .await
        .map_err(|e| TaskError::infra(format!("cannot make the tree with the comment's change undone: {e}")))
}

impl Behaviour {
    /// The reviewed and the fixed trees checked out into `reviewed` and `fixed`, and the fix's
    /// diff of `path`.
    async fn checkouts(
        &self,
        pr: &crate::record::PullRequest,
        fixed_commit: String,
        path: &str,
        reviewed: &std::path::Path,
        fixed: &std::path::Path,
    ) -> Result<String, TaskError> {
        let (mirrors, repo, head, path) =
            (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone(), path.to_string());
        let (r, f) = (reviewed.to_path_buf(), fixed.to_path_buf());
        tokio::task::spawn_blocking(move || {
            let mirror = mirrors.checkout_pair(&repo, (&head, &fixed_commit), &r, &f)?;
            Ok::<_, TaskError>(mirror.diff_of(&head, &fixed_commit, &[&path])?)
        })
        .await
        .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))?
    }

    async fn observe(&self, input: &TaskInput) -> Result<Value, TaskError> {
        let (pr, comment) = comment_records(input)?;
        let context: contract::CommentContext = contract::upstream(input)?;
        let environment: contract::Environment = contract::upstream(input)?;
        let attribution: Option<contract::Attribution> = contract::upstream_if_any(input)?;
        let (Some(after), true) = (context.file_after.as_deref(), context.path.ends_with(".py")) else {
            return Skipped::stored("not a Python file on both sides");
        };
        let Some(fixed_commit) = pr.fixed_commit.clone() else {
            return Err(TaskError::reject("the PR has no fixed commit"));
        };
        let work =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let (reviewed, fixed) = (work.path().join("reviewed"), work.path().join("fixed"));
        let diff = self.checkouts(&pr, fixed_commit, &context.path, &reviewed, &fixed).await?;

        let (added, removed) = changed_lines(&context, attribution.as_ref(), &diff);
        let module = facts::module_of(&context.path, &environment.imports);
        let mut request = Request {
            module: &module,
            before: &context.file_before,
            after,
            added: &added,
            removed: &removed,
            comment: &comment.text,
            calls: None,
        };
        let docker = &*self.docker;
        let fixed_image = match fixed_image(docker, &environment, &reviewed, &fixed).await? {
            Ok(image) => image,
            Err(unbuilt) => {
                return Skipped::stored(format!("the fixed commit does not build: {unbuilt}"));
            }
        };
        // With several changes in the fix, a difference may come from another one: the calls run
        // once more with only the comment's changes undone, and must give another result there.
        // Where both sides run on one image, the probe's runs share a container; a side that did
        // not end there runs alone.
        let share = fixed_image == environment.image && probe::sharable(&[&fixed, &fixed, &reviewed]);
        let mut undone = None;
        if let (Some(attribution), true) = (&attribution, share) {
            undone = undone_tree(attribution, &reviewed, &fixed).await?;
        }
        let mut shared = Vec::new();
        if share {
            let mut sides = vec![(Side::Fixed, fixed.as_path()), (Side::Reviewed, reviewed.as_path())];
            sides.extend(undone.as_ref().map(|t| (Side::Partial, t.path())));
            shared = probe::run_sides(docker, &fixed_image, &sides, &request).await?;
        }
        let mut shared = shared.into_iter();
        let on_fixed = match shared.next().flatten() {
            Some(probe) => probe,
            None => probe::run(docker, &fixed_image, &fixed, &request).await?,
        };
        request.calls = Some(on_fixed.calls.iter().map(|c| (c.from.clone(), c.call.clone())).collect());
        let on_reviewed = match shared.next().flatten() {
            Some(probe) => probe,
            None => probe::run(docker, &environment.image, &reviewed, &request).await?,
        };
        let all = observed::differences(&on_fixed.calls, &on_reviewed.calls);
        let mut partial_run = None;
        if let (Some(attribution), false) = (&attribution, all.is_empty()) {
            if undone.is_none() {
                undone = undone_tree(attribution, &reviewed, &fixed).await?;
            }
            if let Some(tree) = &undone {
                partial_run = Some(match shared.next().flatten() {
                    Some(probe) => probe,
                    None => probe::run(docker, &fixed_image, tree.path(), &request).await?,
                });
            }
        }
        let caused = match &partial_run {
            Some(p) if p.error.is_none() => observed::caused_by_change(&all, &p.calls),
            _ => all.clone(),
        };
        let chosen = observed::chosen(&caused, self.shown);
        let record = Record {
            observed: contract::Observed { differences: chosen },
            module,
            targets: on_fixed.targets,
            calls: on_fixed.calls.len(),
            differing: all.len(),
            caused_by_change: partial_run.as_ref().map(|_| caused.len()),
            all_differences: all,
            errors: [on_fixed.error, on_reviewed.error, partial_run.as_ref().and_then(|p| p.error.clone())],
            seconds: [
                Some(on_fixed.seconds),
                Some(on_reviewed.seconds),
                partial_run.as_ref().map(|p| p.seconds),
            ],
        };
        serde_json::to_value(record)
            .map_err(|e| TaskError::infra(format!("cannot store the probe's calls: {e}")))
    }
}

impl AsyncStage for Behaviour {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        self.observe(&input).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> contract::CommentContext {
        contract::CommentContext {
            path: "pkg/a.py".into(),
            fixed_path: None,
            start_line: 3,
            end_line: 3,
            file_before: String::new(),
            file_after: Some(String::new()),
        }
    }

    #[test]
    fn the_attributed_changes_of_the_commented_file_are_the_changed_lines() {
        let change = |path: &str, added: Vec<u64>, removed: Vec<u64>| contract::AttributedChange {
            path: path.into(),
            old_path: None,
            added,
            removed,
            new_start: 1,
        };
        let attribution = contract::Attribution {
            how: "model".into(),
            changes: vec![change("pkg/a.py", vec![4, 5], vec![4]), change("pkg/b.py", vec![9], vec![])],
        };
        let diff = "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n";
        assert_eq!(changed_lines(&context(), Some(&attribution), diff), (vec![4, 5], vec![4]));
        assert_eq!(changed_lines(&context(), None, diff), (vec![1], vec![1]));
    }
}
