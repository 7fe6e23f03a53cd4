//! `test_synthesis` (the paper's section 4.2.3): per kept review comment, a model writes a pytest
//! file that encodes the reviewer's concern; it runs in the PR's image against the reviewed commit
//! and the fixed one, and is accepted only if it fails on the first by its own verdict and passes on
//! the second, the same way on every repeat (each under another Python hash seed, so a test that
//! hangs on set or dict order shows), else it is rejected as flaky. On another miss the execution output goes back to the model,
//! up to `max_attempts` answers in all. Every attempt is stored, accepted or not.
//!
//! The stage reads its upstream records and stores the test; the candidates and their order, the
//! feedback and the judging are [`writer`]'s: the policy, which the adapter here only feeds and
//! stores, and which takes the typed records of `stages::contract` (hence a module of this stage,
//! not of `synthesis`, which the contracts name).
//!
//! Needs a `comment_context` stage (the comment's code, the file before and after) and an
//! `environment` stage (the PR's image) upstream.

pub mod writer;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::exec::testrun::Verdict;
use crate::llm::LlmSpec;
use crate::llm::client::Llm;
use crate::llm::prompt::Template;
use crate::synthesis::judge::{Judged, PROJECT_TEST, in_tree_path};
use crate::synthesis::oracle;
use crate::synthesis::project;
use crate::synthesis::source::test_kind;
use writer::{Comment, Prompts, Settings, Writer, Written};

const PLACEHOLDERS: [&str; 16] = [
    "pr_title",
    "pr_body",
    "path",
    "module",
    "comment",
    "diff_hunk",
    "file_before",
    "file_after",
    "fix_diff",
    "signatures",
    "changed_signatures",
    "test_imports",
    "observed",
    "project_example",
    "test_dir",
    "fixtures",
];
const CHOICE_PLACEHOLDERS: [&str; 4] = ["path", "line", "comment", "calls"];
const FEEDBACK_PLACEHOLDERS: [&str; 5] =
    ["problem", "reviewed_verdict", "reviewed_output", "fixed_verdict", "fixed_output"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The first prompt, relative to the pipeline file.
    prompt: PathBuf,
    /// The message that sends a miss back to the model.
    feedback_prompt: PathBuf,
    /// Model answers in all, the first included (the paper allows three).
    #[serde(default = "default_attempts")]
    max_attempts: u32,
    /// Answers judged per attempt: the first at the stage's temperature and seed, the others
    /// sampled; the first accepted is kept, and the conversation goes on from the first.
    #[serde(default = "default_candidates")]
    candidates: u32,
    /// When no answer of the model is accepted, judge the test the behaviour probe wrote for an
    /// observed call of the comment or the project's tests (needs an `observed_behaviour` stage).
    #[serde(default)]
    from_observed: bool,
    /// With `from_observed`, when no check of the probe is one of the comment's own calls: the
    /// prompt of a numbered choice, the model asked which observed call shows what the reviewer
    /// asked for (one number, its probability read), and the probe's test of that call judged.
    observed_choice: Option<PathBuf>,
    /// First, before the model: the project's own tests that fail on the reviewed code and pass
    /// on the fixed code (needs a `project_tests` stage), at most `project_candidates` of them,
    /// judged like any other candidate; the first accepted is the comment's test.
    #[serde(default)]
    from_project_tests: bool,
    #[serde(default = "default_project_candidates")]
    project_candidates: usize,
    /// A model's test that fails on the fixed code too and holds several checks is judged again
    /// one check at a time (`split`).
    #[serde(default = "default_split")]
    split: bool,
    /// Runs of each side a candidate must give the same result in, the first included.
    #[serde(default = "default_repeats")]
    repeats: u32,
    /// Seconds one run of the test may take.
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
    /// Lines of each whole file shown to the model; longer files are cut to a window around the
    /// commented lines.
    #[serde(default = "default_file_lines")]
    file_lines: usize,
    /// When an answer is cut off at the model's token cap before its first test ends (the
    /// imports of a deep module can take half of it), it is asked once more with this cap.
    #[serde(default)]
    cut_off_max_tokens: Option<u32>,
    /// A model's test runs with its unused imports of the project's tests left out, the
    /// project's imports and the standard modules it uses but forgot put in, and, with
    /// `project_fixtures`, its do-nothing stand-ins of the conftest fixtures left out
    /// (`synthesis::mend`).
    #[serde(default)]
    mend_imports: bool,
    /// A test of curate's runs among the project's tests (beside the template's module, else in
    /// its first test directory), with the project's pytest configuration and the fixtures of its
    /// conftest files, which the prompt lists (`{{fixtures}}`); its export is laid out as a
    /// project test's. Without it, a test runs outside the repository.
    #[serde(default)]
    project_fixtures: bool,
    /// A model's test (or one check of it) that failed on the fixed code at `assert X == V` (or
    /// `is`), where pytest showed X's value whole, is judged again expecting that value
    /// (`synthesis::expect`): the model's call kept, the fixed code's answer as the expectation.
    #[serde(default)]
    expect_from_fixed: bool,
    #[serde(default)]
    llm: LlmSpec,
}

fn default_attempts() -> u32 {
    3
}
fn default_candidates() -> u32 {
    1
}
fn default_project_candidates() -> usize {
    4
}
fn default_split() -> bool {
    true
}
fn default_repeats() -> u32 {
    3
}
fn default_timeout() -> u64 {
    60
}
fn default_file_lines() -> usize {
    200
}
/// The numbered choice's prompt, when the stage has one; it needs `from_observed`.
fn observed_choice(ctx: &StageContext, config: &Config) -> Result<Option<Template>, ConfigError> {
    match &config.observed_choice {
        Some(path) if config.from_observed => {
            Ok(Some(ctx.template("observed_choice", path, &CHOICE_PLACEHOLDERS)?))
        }
        Some(_) => Err(ConfigError::new("observed_choice", "needs `from_observed: true`")),
        None => Ok(None),
    }
}

/// The stage's version, bumped whenever what it does changes (so earlier results are not reused).
/// 2: an import error on both sides is judged a broken import. 3: a cut-off answer with no
/// complete test is told so. 4: facts in the prompt (signatures, the tests' imports, the PR's
/// description); importing the project's tests is a miss; with an attribution upstream, the
/// relevance gate. 5: an answer that repeats an earlier one is sampled again. 6: floats at full
/// precision in the fed-back output are cut (measurements made every run differ). 7: pytest
/// plugins' state directories (.benchmarks, .hypothesis) are not writes of the test. 8: the
/// partial revert. 9: observed behaviour in the prompt. 10: a missing `import pytest` is added;
/// candidates; the probe's test for an observed call last (`from_observed`). 11: the project's
/// tests first (`from_project_tests`); a missed test with several checks judged one at a time.
/// 12: an answer with an earlier answer's code is a repeat; a function whose set-up failed on
/// the fixed side is not split. 13: the fix's diff of the commented file cut to 120 lines, the
/// hunks nearest the comment kept. 14: one of the project's tests that calls what the comment
/// is about, as a template (`project_example`, where the prompt has it). 15: with
/// `mend_imports`, unused imports of the project's tests out, forgotten project imports in.
/// 16: with `observed_choice`, the model's numbered choice among the probe's checks. 17: a
/// helper imported on two lines is still unused; a name the project's tests import from one
/// module on several lines is put in (the shortest line). 18: with `project_fixtures`, tests
/// run among the project's tests, its conftest fixtures listed in the prompt. 19: for a comment
/// on a test file, `mend_imports` also puts in how the project's tests import its package.
/// 20: a signature spread over lines, changed alone, is reached at its `def` line (its other
/// lines never run); the fixed side of a compiled project runs in an image with its build; with
/// `mend_imports`, an answer whose mended test is an earlier one's is a repeat. 21: with
/// `mend_imports` and `project_fixtures`, a do-nothing stand-in of a conftest fixture is left
/// out; with `mend_imports`, a standard module used and not imported is put in. 22: so is the
/// project's own top-level package, and a name the project's tests import from a helper module.
/// 23: a change whose lines all run at import (a module-level constant over lines) is judged by
/// the partial revert alone, since no trace names such lines.
const VERSION: u32 = 23;

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.max_attempts == 0 {
        return Err(ConfigError::new("max_attempts", "must be at least 1"));
    }
    if config.candidates == 0 {
        return Err(ConfigError::new("candidates", "must be at least 1"));
    }
    if config.repeats == 0 {
        return Err(ConfigError::new("repeats", "must be at least 1"));
    }
    let prompt = ctx.template("prompt", &config.prompt, &PLACEHOLDERS)?;
    let feedback = ctx.template("feedback_prompt", &config.feedback_prompt, &FEEDBACK_PLACEHOLDERS)?;
    let texts = ctx.texts("feedback_prompt", &config.feedback_prompt, oracle::TEXTS)?;
    let observed_choice = observed_choice(ctx, &config)?;
    let settings = ctx.llm.merged(&config.llm).settings();
    let llm =
        Llm::new(settings, &ctx.cache.join("llm")).map_err(|e| ConfigError::new("llm", e.to_string()))?;
    let fingerprint = llm.settings.fingerprint();
    let stage = adapt(Synthesis(Writer {
        llm,
        prompts: Prompts { prompt, feedback, texts, observed_choice },
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        settings: Settings {
            max_attempts: config.max_attempts,
            candidates: config.candidates,
            from_observed: config.from_observed,
            from_project_tests: config.from_project_tests,
            project_candidates: config.project_candidates,
            split: config.split,
            repeats: config.repeats,
            timeout: Duration::from_secs(config.timeout_secs),
            file_lines: config.file_lines,
            cut_off_max_tokens: config.cut_off_max_tokens,
            mend_imports: config.mend_imports,
            project_fixtures: config.project_fixtures,
            expect_from_fixed: config.expect_from_fixed,
        },
    }));
    Ok(StageDef {
        side_effects: true,
        files: [&config.prompt, &config.feedback_prompt]
            .into_iter()
            .chain(&config.observed_choice)
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        fingerprint_extra: fingerprint,
        // The model's settings that change answers are in the fingerprint.
        unhashed: &["llm"],
        provides: Some(contract::Test::NAME),
        requires: [contract::CommentContext::NAME, contract::Environment::NAME]
            .into_iter()
            .chain(config.from_project_tests.then_some(contract::ProjectTests::NAME))
            .collect(),
        ..StageDef::new(stage, VERSION, Scope::Comment, Resource::Llm)
    })
}
fn comment(input: &TaskInput) -> Result<Comment, TaskError> {
    let (pr, comment) = comment_records(input)?;
    let context: contract::CommentContext = contract::upstream(input)?;
    let environment: contract::Environment = contract::upstream(input)?;
    let attribution = contract::upstream_if_any(input)?;
    let observed = contract::upstream_if_any(input)?;
    let project_tests = contract::upstream_if_any(input)?;
    Ok(Comment { pr, comment, context, environment, attribution, observed, project_tests })
}
/// What the stage records of an accepted test: the contract, its kind and evidence, and the
/// attempts' history.
#[derive(Serialize)]
struct Record<'a> {
    #[serde(flatten)]
    test: contract::Test,
    /// The project's test-side files that are not text, left out of `project`.
    #[serde(skip_serializing_if = "Option::is_none")]
    project_files_left_out: Option<Vec<String>>,
    kind: crate::synthesis::source::TestKind,
    kind_because: Vec<String>,
    reviewed_verdict: Option<&'a Verdict>,
    attempts: u32,
    relevance: Option<Value>,
    /// Who wrote it, when the model did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    written_by: Option<&'a str>,
    /// The model's expectation replaced by what the fixed code gave (`expect_from_fixed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_from_fixed: Option<Value>,
    history: Vec<Value>,
}

impl Record<'_> {
    fn value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The stage's output for an accepted test: the test, its kind and evidence, and the attempts'
/// history. `written_by` names who wrote it when the model did not.
fn accepted_output(
    (file, in_tree): (&str, Option<&str>),
    accepted: &Judged,
    packages: &[String],
    attempts: u32,
    written_by: Option<&str>,
    history: Vec<Value>,
) -> Value {
    let code = accepted.record["code"].as_str().unwrap_or_default();
    let kind = test_kind(code, packages);
    // A test that ran among the project's tests is laid out as one of them.
    let test = match in_tree.map(|dir| in_tree_path(dir, file)) {
        Some(path) => contract::Test {
            test_file: path.clone(),
            test: code.to_string(),
            project: Some(contract::ProjectTest {
                node: path.clone(),
                files: BTreeMap::from([(path, code.to_string())]),
            }),
        },
        None => contract::Test { test_file: file.to_string(), test: code.to_string(), project: None },
    };
    Record {
        test,
        project_files_left_out: None,
        kind: kind.kind,
        kind_because: kind.because,
        reviewed_verdict: accepted.outcome.as_ref().ok(),
        attempts,
        relevance: accepted.record.get("relevance").cloned(),
        written_by,
        expected_from_fixed: accepted.record.get("expected_from_fixed").cloned(),
        history,
    }
    .value()
}

/// The stage: the upstream records read into a [`Comment`], the [`Writer`]'s test stored.
struct Synthesis(Writer);

impl AsyncStage for Synthesis {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let comment = comment(&input)?;
        let written = self.0.write(&comment, &input.item.id, &input.meter).await?;
        Ok(output(written, &comment.environment.imports))
    }
}

/// What the stage stores of a comment's accepted test.
fn output(written: Written, packages: &[String]) -> Value {
    match written {
        Written::Test { judged, file, in_tree, attempts, written_by, history } => {
            accepted_output((&file, in_tree.as_deref()), &judged, packages, attempts, written_by, history)
        }
        Written::Project { node, judged, files, left_out, history } => {
            project_output(&node, &judged, files, left_out, history)
        }
    }
}

/// The stage's output for an accepted project test: its module and node, and the fixed commit's
/// test side it needs (text files; one that is not text is left out and named).
fn project_output(
    node: &str,
    accepted: &Judged,
    files: BTreeMap<String, String>,
    left_out: Vec<String>,
    history: Vec<Value>,
) -> Value {
    let module = project::module_of_node(node);
    let code = files.get(module).cloned().unwrap_or_default();
    Record {
        test: contract::Test {
            test_file: module.to_string(),
            test: code,
            project: Some(contract::ProjectTest { node: node.to_string(), files }),
        },
        project_files_left_out: Some(left_out),
        kind: crate::synthesis::source::TestKind::Behavioural,
        kind_because: vec!["one of the project's own tests: it runs the project's code".into()],
        reviewed_verdict: accepted.outcome.as_ref().ok(),
        attempts: 0,
        relevance: accepted.record.get("relevance").cloned(),
        written_by: Some(PROJECT_TEST),
        expected_from_fixed: None,
        history,
    }
    .value()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use std::sync::Arc;

    use super::*;
    use crate::engine::item::Item;
    use crate::exec::hosts::Hosts;
    use crate::llm::prompt::Texts;
    use crate::repo::Mirrors;

    #[tokio::test]
    async fn a_fixed_commit_the_mirror_lacks_is_a_rejection_not_an_error_to_retry() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path().join("o/r.git")).unwrap();
        let blob = repo.blob(b"x = 1\n").unwrap();
        let mut tree = repo.treebuilder(None).unwrap();
        tree.insert("a.py", blob, 0o100644).unwrap();
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let who = git2::Signature::new("t", "t@example.org", &git2::Time::new(0, 0)).unwrap();
        let head = repo.commit(Some("refs/heads/main"), &who, &who, "one", &tree, &[]).unwrap().to_string();

        let url = format!("{}/{{repo}}.git", dir.path().display());
        let template = |text: &str, known: &[&str]| Template::parse(text, known).unwrap();
        let synthesis = Synthesis(Writer {
            llm: Llm::new(LlmSpec::default().settings(), &dir.path().join("llm")).unwrap(),
            prompts: Prompts {
                prompt: template("[user]\n{{comment}}", &PLACEHOLDERS),
                feedback: template("[user]\n{{problem}}", &FEEDBACK_PLACEHOLDERS),
                texts: Texts::parse(
                    include_str!("../../../prompts/test_synthesis_feedback.md"),
                    oracle::TEXTS,
                )
                .unwrap(),
                observed_choice: None,
            },
            mirrors: Arc::new(Mirrors::new(&url, dir.path(), &dir.path().join("cache"))),
            docker: Arc::new(Hosts::local()),
            settings: Settings {
                max_attempts: 1,
                candidates: 1,
                from_observed: false,
                from_project_tests: false,
                project_candidates: 1,
                split: false,
                repeats: 1,
                timeout: Duration::from_secs(5),
                file_lines: 20,
                cut_off_max_tokens: None,
                mend_imports: false,
                project_fixtures: false,
                expect_from_fixed: false,
            },
        });
        let missing = "0123456789abcdef0123456789abcdef01234567";
        let pr = json!({"repo": "o/r", "title": "t", "body": "", "base_commit": head, "head_commit": head, "fixed_commit": missing});
        let comment = json!({"text": "check x", "path": "a.py", "diff_hunk": null, "line": 1, "start_line": null, "original_line": 1, "original_start_line": null, "index": 1});
        let context = json!({"path": "a.py", "start_line": 1, "end_line": 1, "file_before": "x = 1\n", "file_after": "x = 2\n"});
        let input = TaskInput {
            stage: "tests".into(),
            item: Arc::new(Item::comment("c", "p", comment)),
            pr: Some(Arc::new(Item::pr("p", pr))),
            upstream: BTreeMap::from([
                ("context".to_string(), context),
                ("environment".to_string(), json!({"image": "never-built", "imports": []})),
            ]),
            providers: Arc::new(BTreeMap::from([
                (contract::CommentContext::NAME, Arc::from("context")),
                (contract::Environment::NAME, Arc::from("environment")),
            ])),
            meter: Arc::default(),
        };
        let out = synthesis.run(input).await;
        let Err(TaskError::Reject { reason, .. }) = out else { panic!("{out:?}") };
        assert!(reason.contains(&format!("commit {missing} is not in o/r")), "{reason}");
    }
}
