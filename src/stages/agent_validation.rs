//! `agent_validation` (the paper's section 4.2.4): per comment with an accepted test, a coding agent
//! gets the patch under review, the commented file and the human comment (never the test, never the
//! fix) and revises a history-free copy of the reviewed code; the hidden test then runs on that
//! revision in the PR's image. The comment stays only if the test passes, within `attempts` agent
//! runs. Every revision, its transcript and its test run are stored.
//!
//! Needs a `test_synthesis` stage (the test), a `comment_context` stage (the file) and an
//! `environment` stage (the image) upstream. With a `project_tests` stage upstream too, a revision
//! that passes the hidden test must also keep passing the project's tests that passed on both the
//! reviewed and the fixed code (SWE-bench's PASS_TO_PASS); the check and what it broke are stored,
//! and `regression_check: false` records them without rejecting.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_yaml::Mapping;

use super::contract::{self, CommentContext, Contract, Environment, Test};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::agent::{Agent, AgentConfig, AgentTask, ReviewNote, Revision, file_patch, tested};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::engine::stage::Meter;
use crate::environment::tree_image::{self, TreeImageError};
use crate::errors::ConfigError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{Target, Verdict, run_target};
use crate::llm::prompt::Texts;
use crate::record::PullRequest;
use crate::repo::Mirrors;
use crate::repo::workspace::{history_free_copy, write_files};
use crate::synthesis::oracle::for_feedback;
use crate::synthesis::project::{self, changed_paths};

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
    /// With a `project_tests` stage upstream: reject a revision that breaks a test of
    /// `pass_to_pass` (else only record it).
    #[serde(default = "default_regression_check")]
    regression_check: bool,
    /// A comment on a test of the PR is shown to the agent at the code the test calls
    /// ([`crate::agent::tested`]), not at the test, which the hidden test replaces.
    #[serde(default)]
    tested_code: bool,
    /// Times at most, per attempt, that the agent is run again (with the next seed) when its
    /// revision is one an earlier attempt already tried: a small model sampled again often writes
    /// the same patch, and running the hidden test on it again tells nothing new.
    #[serde(default = "default_redraws")]
    redraws: u32,
}

fn default_regression_check() -> bool {
    true
}

fn default_attempts() -> u32 {
    2
}
fn default_redraws() -> u32 {
    2
}
fn default_timeout() -> u64 {
    60
}

/// The result of a run that validates the comment.
const PASSED: &str = "passed";

pub mod reasons {
    pub const NO_CHANGE: &str = "the agent changed nothing";
    pub const FAILED: &str = "the agent's revision did not pass the test";
    pub const BROKE: &str = "the agent's revision broke tests of the project that passed";
    pub const REPEATED: &str = "the agent's revision repeated an earlier attempt's";
}

struct Validation {
    agent: Arc<dyn Agent>,
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    attempts: u32,
    timeout: Duration,
    regression_check: bool,
    redraws: u32,
    /// With `tested_code`: the words of a note moved to the code a commented test calls.
    tested: Option<Texts>,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.attempts == 0 {
        return Err(ConfigError::new("attempts", "must be at least 1"));
    }
    let built = config.agent.build(ctx)?;
    let tested = config.agent.tested_texts(ctx, config.tested_code)?;
    let stage = adapt(Validation {
        agent: built.agent,
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        attempts: config.attempts,
        timeout: Duration::from_secs(config.timeout_secs),
        regression_check: config.regression_check,
        redraws: config.redraws,
        tested,
    });
    // 2: the built-in agent also reads unified diffs and whole files. 3: with `tested_code`, a
    // comment on a test's data goes to the PR's change nearest it in words. 4: the rewrite mode
    // takes the model's altered copies of its marks off too. 5: a rewrite is moved to the shown
    // lines' least indentation, not their first line's. 6: a revision an earlier attempt tried is
    // drawn again (`redraws`), not tested again; the narrower question's answer loses a copy that
    // runs to the shown lines' end, and one for a `def` line that holds the definition is read
    // as the definition. 7: a definition sent back for a statement that stops short of its end
    // keeps the rest.
    Ok(StageDef {
        side_effects: true,
        files: built.files,
        fingerprint_extra: built.fingerprint,
        // The agent model's settings that change answers are in the fingerprint.
        unhashed: &["agent.llm"],
        provides: Some(contract::Validation::NAME),
        requires: vec![contract::Test::NAME, CommentContext::NAME, Environment::NAME],
        ..StageDef::new(stage, 7, Scope::Comment, Resource::Llm)
    })
}

struct Inputs {
    pr: PullRequest,
    task: AgentTask,
    environment: Environment,
    test: Test,
    /// The project's tests that passed on both sides, when a `project_tests` stage is upstream.
    pass_to_pass: Option<Vec<String>>,
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
    let project: Option<contract::ProjectTests> = contract::upstream_if_any(input)?;
    let pass_to_pass = project.map(|p| p.pass_to_pass);
    Ok(Inputs { environment, test, pass_to_pass, pr, task })
}

/// Writes a project test's test side over the revised tree `copy` (after the agent is done: it
/// never sees the test).
fn put_test_side(copy: &std::path::Path, project: &contract::ProjectTest) -> Result<(), TaskError> {
    write_files(copy, &project.files)
        .map_err(|e| TaskError::infra(format!("cannot write the project's tests: {e}")))
}

/// What the regression check found: the tests of `pass_to_pass` checked, and those that did not
/// pass on the revision.
#[derive(Debug, Clone, Serialize)]
struct Regression {
    checked: usize,
    broken: Vec<String>,
}

/// One attempt: the agent's patch and transcript, the hidden test's verdict on it (when it changed
/// anything) and the regression check (when that ran); before them, the runs whose revision
/// repeated an earlier attempt's and were drawn again.
#[derive(Serialize)]
struct Attempt {
    attempt: u32,
    patch: String,
    transcript: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    redrawn: Vec<Redrawn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    test: Option<HiddenRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    regression: Option<Regression>,
    result: &'static str,
}

/// An agent run whose revision an earlier attempt had tried: which run it was (the agent's seed
/// follows it) and what it said.
#[derive(Serialize)]
struct Redrawn {
    run: u32,
    transcript: Vec<Value>,
}

/// The agent's runs on one comment so far, and the revisions the attempts tried.
#[derive(Default)]
struct Runs {
    count: u32,
    tried: std::collections::HashSet<String>,
}

/// The hidden test's verdict on a revision, and the end of its output.
#[derive(Serialize)]
struct HiddenRun {
    verdict: Verdict,
    output: String,
}

/// What the stage records of a validated comment: the contract, the regression check of the
/// revision that passed, and every run.
#[derive(Serialize)]
struct Record {
    #[serde(flatten)]
    validation: contract::Validation,
    #[serde(skip_serializing_if = "Option::is_none")]
    regression: Option<Regression>,
    history: Vec<Attempt>,
}

/// Why no run validated, and every run.
#[derive(Serialize)]
struct Rejection {
    attempts: usize,
    history: Vec<Attempt>,
}

impl Validation {
    /// The hidden test on the revision in `copy`: a test of curate's from outside the repository,
    /// or the project's own with its test side written over the revision.
    async fn hidden_test(
        &self,
        i: &Inputs,
        image: &str,
        copy: &std::path::Path,
    ) -> Result<crate::exec::testrun::TestRun, TaskError> {
        let nodes: Vec<String> = i.test.project.iter().map(|p| p.node.clone()).collect();
        let target = match &i.test.project {
            Some(project) => {
                put_test_side(copy, project)?;
                Target::Project { nodes: &nodes }
            }
            None => Target::File { name: &i.test.test_file, code: &i.test.test },
        };
        Ok(run_target(&*self.docker, image, copy, target, self.timeout, 0).await?)
    }

    /// The image the revision in `copy` runs in: with its compiled sources built, when it changes
    /// any; `Err` with why when they do not build (the revision's fault).
    async fn revision_image(
        &self,
        env: &Environment,
        copy: &std::path::Path,
        diff: &str,
    ) -> Result<Result<String, TreeImageError>, TaskError> {
        let changed = changed_paths(diff);
        match tree_image::image_with(&self.docker, &env.image, env.rebuild.as_deref(), copy, &changed).await {
            Ok(image) => Ok(Ok(image)),
            Err(e) if e.is_data_error() => Ok(Err(e)),
            Err(e) => Err(TaskError::infra(e)),
        }
    }

    /// The tests of `pass_to_pass` that do not pass on the revision in `copy`. Called after
    /// [`Validation::hidden_test`] on the same copy, which has written the fix's test side over it
    /// when the hidden test is the project's.
    async fn broken(
        &self,
        image: &str,
        copy: &std::path::Path,
        pass_to_pass: &[String],
    ) -> Result<Vec<String>, TaskError> {
        Ok(project::broken(&*self.docker, image, copy, pass_to_pass, self.timeout * 5).await?)
    }
}

impl Validation {
    /// One attempt: the agent's revision of a fresh copy of the reviewed code (run again, up to
    /// `redraws` times, while it repeats a revision an earlier attempt tried), then the hidden
    /// test (and the regression check, when it passed) on it.
    async fn attempt(
        &self,
        i: &Inputs,
        attempt: u32,
        runs: &mut Runs,
        meter: &Meter,
    ) -> Result<Attempt, TaskError> {
        let mut redrawn = Vec::new();
        let (_work, copy, Revision { diff: patch, transcript }) = loop {
            let work =
                tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
            let copy = work.path().join("repo");
            history_free_copy(self.mirrors.clone(), &i.pr.repo, &i.pr.head_commit, &copy).await?;
            let task = match &self.tested {
                Some(texts) => {
                    tested::retarget(&i.task, i.pr.patch.as_deref().unwrap_or_default(), &copy, texts)
                }
                None => i.task.clone(),
            };
            runs.count += 1;
            let revision = self.agent.revise(&task, &copy, runs.count, meter).await?;
            if !runs.tried.contains(&revision.diff) || redrawn.len() as u32 >= self.redraws {
                break (work, copy, revision);
            }
            redrawn.push(Redrawn { run: runs.count, transcript: revision.transcript });
        };
        // Called once, on whichever way the attempt ends.
        let ended = |test, result| Attempt {
            attempt,
            patch: patch.clone(),
            transcript,
            redrawn,
            test,
            regression: None,
            result,
        };
        if patch.trim().is_empty() {
            return Ok(ended(None, reasons::NO_CHANGE));
        }
        // Its verdict is known: the attempt that tried it did not validate.
        if !runs.tried.insert(patch.clone()) {
            return Ok(ended(None, reasons::REPEATED));
        }
        let image = match self.revision_image(&i.environment, &copy, &patch).await? {
            Ok(image) => image,
            Err(unbuilt) => {
                let run = HiddenRun { verdict: Verdict::CollectionError, output: unbuilt.to_string() };
                return Ok(ended(Some(run), reasons::FAILED));
            }
        };
        let run = self.hidden_test(i, &image, &copy).await?;
        let passed = run.verdict == Verdict::Passed;
        let regression = match (&i.pass_to_pass, passed) {
            (Some(p2p), true) if !p2p.is_empty() => {
                Some(Regression { checked: p2p.len(), broken: self.broken(&image, &copy, p2p).await? })
            }
            _ => None,
        };
        let broke = regression.as_ref().is_some_and(|r| !r.broken.is_empty());
        let result = match (passed, broke && self.regression_check) {
            (true, false) => PASSED,
            (true, true) => reasons::BROKE,
            (false, _) => reasons::FAILED,
        };
        let run = HiddenRun { verdict: run.verdict, output: for_feedback(&run.output, 80) };
        Ok(Attempt { regression, ..ended(Some(run), result) })
    }
}

impl AsyncStage for Validation {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let i = inputs(&input)?;
        let mut history: Vec<Attempt> = Vec::new();
        let mut runs = Runs::default();
        for attempt in 1..=self.attempts {
            let run = self.attempt(&i, attempt, &mut runs, &input.meter).await?;
            let validated = (run.result == PASSED)
                .then(|| contract::Validation { attempts: attempt, patch: run.patch.clone() });
            let regression = run.regression.clone();
            history.push(run);
            if let Some(validation) = validated {
                return serde_json::to_value(Record { validation, regression, history })
                    .map_err(|e| TaskError::infra(format!("cannot record the validation: {e}")));
            }
        }
        Err(TaskError::Reject {
            reason: history.last().map_or(reasons::FAILED, |a| a.result).to_string(),
            detail: serde_json::to_value(Rejection { attempts: history.len(), history })
                .unwrap_or(Value::Null),
        })
    }
}
