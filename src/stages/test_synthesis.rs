//! `test_synthesis` (the paper's section 4.2.3): per kept review comment, a model writes a pytest
//! file that encodes the reviewer's concern; it runs in the PR's image against the reviewed commit
//! and the fixed one, and is accepted only if it fails on the first by its own verdict and passes on
//! the second, the same way on every repeat (each under another Python hash seed, so a test that
//! hangs on set or dict order shows), else it is rejected as flaky. On another miss the execution output goes back to the model,
//! up to `max_attempts` answers in all. Every attempt is stored, accepted or not.
//!
//! Needs a `comment_context` stage (the comment's code, the file before and after) and an
//! `environment` stage (the PR's image) upstream.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::environment::tree_image;
use crate::errors::ConfigError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{TestRun, Verdict};
use crate::llm::client::Llm;
use crate::llm::prompt::Template;
use crate::llm::{LlmSpec, Message};
use crate::record::{PullRequest, ReviewComment};
use crate::repo::Mirrors;
use crate::synthesis::answer::test_code;
use crate::synthesis::example;
use crate::synthesis::facts::{self, MAX_SIGNATURES};
use crate::synthesis::judge::{
    Images, Judge, JudgeError, Judged, PROJECT_TEST, Trees, in_tree_path, verdict_name,
};
use crate::synthesis::mend;
use crate::synthesis::observed;
use crate::synthesis::oracle::{Miss, for_feedback, reasons};
use crate::synthesis::project;
use crate::synthesis::relevance;
use crate::synthesis::source::test_kind;

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
/// Observed calls the model chooses among at most.
const MAX_CHOICES: usize = 5;
/// Alternatives read at the chosen number's token.
const CHOICE_LOGPROBS: u8 = 10;
const FEEDBACK_PLACEHOLDERS: [&str; 5] =
    ["problem", "reviewed_verdict", "reviewed_output", "fixed_verdict", "fixed_output"];

/// Lines of the comment's diff hunk shown: its end, where the commented line is.
const HUNK_LINES: usize = 12;
/// Characters of the PR's description shown: its start.
const BODY_CHARS: usize = 600;
/// The temperature an answer that repeats an earlier one is asked again at.
const RESAMPLE_TEMPERATURE: f32 = 0.7;
/// Seeds of the sampled candidates: attempt `a`'s candidate `k` is the stage's seed plus
/// `a * CANDIDATE_SEEDS + k`, apart from the seeds a repeat is resampled with.
const CANDIDATE_SEEDS: i64 = 1000;
/// Lines of each side's output sent back to the model, and kept per attempt in the store.
const FEEDBACK_LINES: usize = 15;
/// Checks of one missed test judged apart at most.
const MAX_SPLITS: usize = 4;
/// Who wrote a test that is not the model's.
const OBSERVED_CALL: &str = "observed call";

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
    /// A model's test runs with its unused imports of the project's tests left out and the
    /// project's imports it uses but forgot put in (`synthesis::mend`).
    #[serde(default)]
    mend_imports: bool,
    /// A test of curate's runs among the project's tests (beside the template's module, else in
    /// its first test directory), with the project's pytest configuration and the fixtures of its
    /// conftest files, which the prompt lists (`{{fixtures}}`); its export is laid out as a
    /// project test's. Without it, a test runs outside the repository.
    #[serde(default)]
    project_fixtures: bool,
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

struct Synthesis {
    llm: Llm,
    prompt: Template,
    feedback: Template,
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    max_attempts: u32,
    candidates: u32,
    from_observed: bool,
    observed_choice: Option<Template>,
    from_project_tests: bool,
    project_candidates: usize,
    split: bool,
    repeats: u32,
    timeout: Duration,
    file_lines: usize,
    cut_off_max_tokens: Option<u32>,
    mend_imports: bool,
    project_fixtures: bool,
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
    let observed_choice = observed_choice(ctx, &config)?;
    let settings = ctx.llm.merged(&config.llm).settings();
    let llm =
        Llm::new(settings, &ctx.cache.join("llm")).map_err(|e| ConfigError::new("llm", e.to_string()))?;
    let fingerprint = llm.settings.fingerprint();
    let stage = adapt(Synthesis {
        llm,
        prompt,
        feedback,
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        max_attempts: config.max_attempts,
        candidates: config.candidates,
        from_observed: config.from_observed,
        observed_choice,
        from_project_tests: config.from_project_tests,
        project_candidates: config.project_candidates,
        split: config.split,
        repeats: config.repeats,
        timeout: Duration::from_secs(config.timeout_secs),
        file_lines: config.file_lines,
        cut_off_max_tokens: config.cut_off_max_tokens,
        mend_imports: config.mend_imports,
        project_fixtures: config.project_fixtures,
    });
    // 2: an import error on both sides is judged a broken import. 3: a cut-off answer with no
    // complete test is told so. 4: facts in the prompt (signatures, the tests' imports, the PR's
    // description); importing the project's tests is a miss; with an attribution upstream, the
    // relevance gate. 5: an answer that repeats an earlier one is sampled again. 6: floats at full
    // precision in the fed-back output are cut (measurements made every run differ). 7: pytest
    // plugins' state directories (.benchmarks, .hypothesis) are not writes of the test. 8: the
    // partial revert. 9: observed behaviour in the prompt. 10: a missing `import pytest` is added;
    // candidates; the probe's test for an observed call last (`from_observed`). 11: the project's
    // tests first (`from_project_tests`); a missed test with several checks judged one at a time.
    // 12: an answer with an earlier answer's code is a repeat; a function whose set-up failed on
    // the fixed side is not split. 13: the fix's diff of the commented file cut to 120 lines, the
    // hunks nearest the comment kept. 14: one of the project's tests that calls what the comment
    // is about, as a template (`project_example`, where the prompt has it). 15: with
    // `mend_imports`, unused imports of the project's tests out, forgotten project imports in.
    // 16: with `observed_choice`, the model's numbered choice among the probe's checks. 17: a
    // helper imported on two lines is still unused; a name the project's tests import from one
    // module on several lines is put in (the shortest line). 18: with `project_fixtures`, tests
    // run among the project's tests, its conftest fixtures listed in the prompt. 19: for a comment
    // on a test file, `mend_imports` also puts in how the project's tests import its package.
    // 20: a signature spread over lines, changed alone, is reached at its `def` line (its other
    // lines never run); the fixed side of a compiled project runs in an image with its build; with
    // `mend_imports`, an answer whose mended test is an earlier one's is a repeat.
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
        ..StageDef::new(stage, 20, Scope::Comment, Resource::Llm)
    })
}

/// At most `max` lines of `text`, as a window around lines `start..=end` (from 1) when longer.
fn clip(text: &str, start: usize, end: usize, max: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max {
        return text.trim_end().to_string();
    }
    let middle = (start + end) / 2;
    let from = middle.saturating_sub(max / 2).min(lines.len() - max);
    let to = from + max;
    let mut out = String::new();
    if from > 0 {
        out.push_str(&format!("# … {from} lines above not shown\n"));
    }
    out.push_str(&lines[from..to].join("\n"));
    if to < lines.len() {
        out.push_str(&format!("\n# … {} lines below not shown", lines.len() - to));
    }
    out
}

/// What the task needs from upstream, read from the outputs of whichever stages provide it.
struct Inputs {
    pr: PullRequest,
    comment: ReviewComment,
    context: contract::CommentContext,
    environment: contract::Environment,
    /// The changes of the fix that answer the comment, when an `attribution` stage is upstream:
    /// an accepted test must then reach them.
    attribution: Option<contract::Attribution>,
    /// Calls whose results differ between the two commits, when an `observed_behaviour` stage is
    /// upstream.
    observed: Option<contract::Observed>,
    /// The project's tests the fix changes, when a `project_tests` stage is upstream.
    project_tests: Option<contract::ProjectTests>,
}

/// The trees a comment's candidates run against, and what was read of the fix with them.
struct Checkouts {
    _dir: tempfile::TempDir,
    reviewed: PathBuf,
    fixed: PathBuf,
    fix_diff: String,
    test_imports: Vec<String>,
    /// What `mend_imports` puts in from: `test_imports`, and for a comment on a test file, how the
    /// project's tests import its first package.
    mend_from: Vec<String>,
    /// One of the project's tests that calls what the comment is about, as a template.
    example: Option<example::Example>,
    /// With `project_fixtures`: the directory of the project's tests a test runs in, and the
    /// fixtures its conftest files give it.
    test_dir: Option<String>,
    fixtures: Vec<String>,
}

/// Judging needs the sandbox; when it fails, the task is retried.
impl From<JudgeError> for TaskError {
    fn from(e: JudgeError) -> TaskError {
        TaskError::infra(e)
    }
}

fn inputs(input: &TaskInput) -> Result<Inputs, TaskError> {
    let (pr, comment) = comment_records(input)?;
    let context: contract::CommentContext = contract::upstream(input)?;
    let environment: contract::Environment = contract::upstream(input)?;
    let attribution = contract::upstream_if_any(input)?;
    let observed = contract::upstream_if_any(input)?;
    let project_tests = contract::upstream_if_any(input)?;
    Ok(Inputs { pr, comment, context, environment, attribution, observed, project_tests })
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
        history,
    }
    .value()
}

/// The stage's output for an accepted project test: its module and node, and the fixed commit's
/// test side it needs (text files; one that is not text is left out and named).
fn project_output(
    node: &str,
    accepted: &Judged,
    tests: &contract::ProjectTests,
    fixed: &Path,
    history: Vec<Value>,
) -> Value {
    let module = project::module_of_node(node);
    let mut files = BTreeMap::new();
    let mut left_out = Vec::new();
    for path in &tests.test_paths {
        match std::fs::read_to_string(fixed.join(path)) {
            Ok(text) => {
                files.insert(path.clone(), text);
            }
            Err(_) if !fixed.join(path).exists() => {}
            Err(_) => left_out.push(path.clone()),
        }
    }
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
        history,
    }
    .value()
}

/// The definitions a template test should call, innermost first: those that hold the comment's
/// attributed changes (in the fixed tree), then those that hold the commented lines (as reviewed).
fn example_names(
    attribution: Option<&contract::Attribution>,
    context: &contract::CommentContext,
    fixed: &Path,
) -> Vec<String> {
    let read = |path: &str| std::fs::read_to_string(fixed.join(path)).ok();
    let mut names = attribution
        .map_or_else(Vec::new, |a| relevance::definitions(&relevance::targets(&a.changes(), read), read));
    let commented = relevance::Targets::from([(context.path.clone(), vec![context.end_line])]);
    for name in relevance::definitions(&commented, |_: &str| Some(context.file_before.clone())) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// A test file name from the comment's id.
fn test_file_name(id: &str) -> String {
    let clean: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    format!("test_{}.py", clean.trim_matches('_'))
}

/// Lines for the prompt: at most `max`, the rest counted; a note when there are none.
fn listed(lines: &[String], max: usize, none: &str) -> String {
    if lines.is_empty() {
        return none.to_string();
    }
    let mut out = lines.iter().take(max).cloned().collect::<Vec<_>>().join("\n");
    if lines.len() > max {
        out.push_str(&format!("\n# … {} more", lines.len() - max));
    }
    out
}

/// The start of `text`, at most `max` characters, cut at a line end where one is near.
fn opening(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    let at = cut.rfind('\n').filter(|at| *at > max / 2).unwrap_or(cut.len());
    format!("{} …", cut[..at].trim_end())
}

impl Synthesis {
    fn first_messages(&self, i: &Inputs, work: &Checkouts) -> Vec<Message> {
        let c = &i.context;
        let (start, end) = (c.start_line as usize, c.end_line as usize);
        let path = c.path.as_str();
        let hunk = i.comment.diff_hunk.as_deref().unwrap_or("");
        let hunk_tail: Vec<&str> = hunk.lines().collect();
        let hunk = hunk_tail[hunk_tail.len().saturating_sub(HUNK_LINES)..].join("\n");
        let after = c.file_after.as_deref().unwrap_or("(the file no longer exists)");
        let before_sigs = facts::signatures(&c.file_before);
        let changed = facts::changed_signatures(&before_sigs, &facts::signatures(after));
        let values = BTreeMap::from([
            ("pr_title", i.pr.title.clone()),
            ("pr_body", opening(&i.pr.body, BODY_CHARS)),
            ("signatures", listed(&before_sigs, MAX_SIGNATURES, "# no public definitions")),
            ("changed_signatures", listed(&changed, MAX_SIGNATURES, "# none")),
            ("test_imports", listed(&work.test_imports, facts::MAX_TEST_IMPORTS, "# no test imports it")),
            ("test_dir", work.test_dir.clone().unwrap_or_else(|| "a directory outside the project".into())),
            ("fixtures", if work.fixtures.is_empty() { "none".into() } else { work.fixtures.join(", ") }),
            (
                "project_example",
                work.example.as_ref().map_or("# no test of the project calls it".into(), |e| {
                    e.shown(example::MAX_EXAMPLE_LINES)
                }),
            ),
            (
                "observed",
                i.observed.as_ref().map_or("# not observed".into(), |o| observed::shown(&o.differences)),
            ),
            ("path", path.to_string()),
            ("module", facts::module_of(path, &i.environment.imports)),
            ("comment", i.comment.text.trim().to_string()),
            ("diff_hunk", hunk),
            ("file_before", clip(&c.file_before, start, end, self.file_lines)),
            ("file_after", clip(after, start, end, self.file_lines)),
            ("fix_diff", work.fix_diff.trim_end().to_string()),
        ]);
        self.prompt.render(&values)
    }

    fn feedback_message(&self, miss: &Miss, runs: Option<(&TestRun, &TestRun)>) -> Message {
        let (rv, ro, fv, fo) = match runs {
            Some((r, f)) => (
                verdict_name(r),
                for_feedback(&r.output, FEEDBACK_LINES),
                verdict_name(f),
                for_feedback(&f.output, FEEDBACK_LINES),
            ),
            None => ("not run".into(), String::new(), "not run".into(), String::new()),
        };
        let values = BTreeMap::from([
            ("problem", miss.problem.clone()),
            ("reviewed_verdict", rv),
            ("reviewed_output", ro),
            ("fixed_verdict", fv),
            ("fixed_output", fo),
        ]);
        let mut rendered = self.feedback.render(&values);
        rendered.pop().unwrap_or_else(|| Message::user(miss.problem.clone()))
    }

    async fn synthesize(&self, input: &TaskInput) -> Result<Value, TaskError> {
        let i = inputs(input)?;
        let Some(fixed_commit) = i.pr.fixed_commit.clone() else {
            return Err(TaskError::reject("the PR has no fixed commit"));
        };
        let work = self.checkouts(&i, fixed_commit).await?;
        // Docker only once the data is known to be whole: a missing commit needs no daemon to say so.
        let env = &i.environment;
        let fixed_image = tree_image::image_for(
            &self.docker,
            &env.image,
            env.rebuild.as_deref(),
            &work.reviewed,
            &work.fixed,
        )
        .await
        .map_err(|e| match e.is_data_error() {
            true => TaskError::reject(format!("the fixed commit does not build: {e}")),
            false => TaskError::infra(e),
        })?;
        let judge = Judge {
            docker: &self.docker,
            images: Images { reviewed: &env.image, fixed: &fixed_image },
            trees: Trees { reviewed: &work.reviewed, fixed: &work.fixed },
            packages: &env.imports,
            attribution: i.attribution.as_ref().map(contract::Attribution::attributed),
            repeats: self.repeats,
            timeout: self.timeout,
            in_tree: work.test_dir.as_deref(),
        };
        let file = test_file_name(&input.item.id);
        let mut history = Vec::new();
        if let Some(accepted) = self.project_candidates_judged(&judge, &i, &work, &mut history).await? {
            return Ok(accepted);
        }
        let last = match self.model_candidates(&judge, &i, &work, &file, input, &mut history).await? {
            Ok(accepted) => return Ok(accepted),
            Err(last) => last,
        };
        // Last, when the model wrote no test: the one the probe wrote for an observed call of the
        // comment (or of the project's tests, with the comment's value), then the one of the call
        // the model chooses.
        if self.from_observed
            && let Some(o) = &i.observed
        {
            let written = observed::written_check(&o.differences);
            if let Some(code) = written
                && let Some(accepted) =
                    self.observed_judged(&judge, &i, &file, code, None, &mut history).await?
            {
                return Ok(accepted);
            }
            let choices = observed::choosable(&o.differences, written, MAX_CHOICES);
            if let Some(template) = &self.observed_choice
                && !choices.is_empty()
            {
                let (pick, asked) = self.choose(template, &i, &choices, input).await?;
                history.push(asked);
                if let Some((k, p)) = pick
                    && let Some(code) = choices[k - 1].check.as_deref()
                {
                    let chosen = json!({"number": k, "of": choices.len(), "p": p});
                    if let Some(accepted) =
                        self.observed_judged(&judge, &i, &file, code, Some(chosen), &mut history).await?
                    {
                        return Ok(accepted);
                    }
                }
            }
        }
        Err(TaskError::Reject {
            reason: last.to_string(),
            detail: json!({"attempts": history.len(), "history": history}),
        })
    }

    /// The probe's test `code` for an observed call, judged like any other candidate (`chosen`:
    /// the model's choice that picked it); the stage's output when accepted.
    async fn observed_judged(
        &self,
        judge: &Judge<'_>,
        i: &Inputs,
        file: &str,
        code: &str,
        chosen: Option<Value>,
        history: &mut Vec<Value>,
    ) -> Result<Option<Value>, TaskError> {
        let mut j = judge.file(file, code.to_string()).await?;
        j.record["written_by"] = json!(OBSERVED_CALL);
        if let Some(chosen) = chosen {
            j.record["chosen"] = chosen;
        }
        j.settle();
        history.push(j.record.clone());
        Ok(j.outcome.is_ok().then(|| {
            let place = (file, judge.in_tree);
            accepted_output(
                place,
                &j,
                &i.environment.imports,
                self.max_attempts,
                Some(OBSERVED_CALL),
                history.clone(),
            )
        }))
    }

    /// The model's numbered choice among `choices`: the chosen one's number (from 1) and the
    /// probability read, `None` when it chose none; and what is stored of the question.
    async fn choose(
        &self,
        template: &Template,
        i: &Inputs,
        choices: &[&observed::Difference],
        input: &TaskInput,
    ) -> Result<(Option<(usize, Option<f64>)>, Value), TaskError> {
        let values = BTreeMap::from([
            ("path", i.comment.path.clone().unwrap_or_default()),
            ("line", i.comment.line.map_or_else(String::new, |l| l.to_string())),
            ("comment", i.comment.text.trim().to_string()),
            ("calls", observed::numbered(choices)),
        ]);
        let mut request = self.llm.request(template.render(&values));
        request.max_tokens = 4;
        request.stop = Vec::new();
        request.top_logprobs = Some(CHOICE_LOGPROBS);
        let (answer, _) = self.llm.chat(&request).await?;
        input.meter.add(answer.usage.into());
        let read = observed::chosen_number(&answer.logprobs, &answer.text, choices.len());
        let asked = json!({
            "asked": "which observed call shows the comment",
            "calls": choices.iter().map(|d| d.call.as_str()).collect::<Vec<_>>(),
            "answer": answer.text,
            "chosen": read.map(|(k, _)| k),
            "p": read.and_then(|(_, p)| p),
        });
        Ok((read.filter(|(k, _)| *k > 0), asked))
    }

    /// The project's tests that fail on the reviewed code and pass on the fixed code, those that
    /// name the comment first, each judged on the reviewed tree with the fix's test side in it:
    /// the first accepted, as the stage's output.
    async fn project_candidates_judged(
        &self,
        judge: &Judge<'_>,
        i: &Inputs,
        work: &Checkouts,
        history: &mut Vec<Value>,
    ) -> Result<Option<Value>, TaskError> {
        let Some(tests) =
            i.project_tests.as_ref().filter(|t| self.from_project_tests && !t.fail_to_pass.is_empty())
        else {
            return Ok(None);
        };
        let stem =
            i.context.path.rsplit('/').next().unwrap_or_default().trim_end_matches(".py").to_lowercase();
        let mut hints = project::hint_words(&format!(
            "{} {}",
            i.comment.text,
            i.comment.diff_hunk.as_deref().unwrap_or("")
        ));
        hints.push(stem);
        let nodes = project::ranked(&tests.fail_to_pass, &hints);
        let (records, accepted) =
            judge.first_project_test(nodes, &tests.test_paths, self.project_candidates).await?;
        history.extend(records);
        Ok(accepted.map(|(node, j)| project_output(&node, &j, tests, &work.fixed, history.clone())))
    }

    /// The reviewed and the fixed tree in a temporary directory, what the fix changed in the
    /// commented file, and how the project's tests import the module.
    async fn checkouts(&self, i: &Inputs, fixed_commit: String) -> Result<Checkouts, TaskError> {
        let dir =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let (fixed, reviewed) = (dir.path().join("fixed"), dir.path().join("reviewed"));
        let (mirrors, repo, dest, reviewed_dest) =
            (self.mirrors.clone(), i.pr.repo.clone(), fixed.clone(), reviewed.clone());
        let head = i.pr.head_commit.clone();
        let paths: Vec<String> =
            std::iter::once(i.context.path.clone()).chain(i.context.fixed_path.clone()).collect();
        let module = facts::module_of(&i.context.path, &i.environment.imports);
        let line = i.context.end_line;
        let (attribution, context) = (i.attribution.clone(), i.context.clone());
        let changed_tests = i.project_tests.as_ref().map(|t| t.test_paths.clone()).unwrap_or_default();
        let in_tree = self.project_fixtures;
        let package = i
            .environment
            .imports
            .first()
            .cloned()
            .filter(|p| *p != module && facts::is_test_file(Path::new(&i.context.path)));
        let (fix_diff, (test_imports, mend_from), example, test_dir) =
            tokio::task::spawn_blocking(move || {
                let mirror = mirrors.checkout_pair(&repo, (&head, &fixed_commit), &reviewed_dest, &dest)?;
                let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
                let diff = facts::diff_near(
                    &mirror.diff_of(&head, &fixed_commit, &paths)?,
                    line,
                    facts::MAX_FIX_DIFF_LINES,
                );
                let names = example_names(attribution.as_ref(), &context, &dest);
                let example = example::example(&reviewed_dest, &names, &changed_tests);
                let test_dir = in_tree
                    .then(|| facts::test_dir(&reviewed_dest, example.as_ref().map(|e| e.path.as_str())))
                    .flatten()
                    .map(|dir| (facts::conftest_fixtures(&reviewed_dest, &dir), dir));
                let test_imports = facts::test_imports(&reviewed_dest, &module);
                let mut mend_from = test_imports.clone();
                mend_from
                    .extend(package.map(|p| facts::test_imports(&reviewed_dest, &p)).unwrap_or_default());
                Ok::<_, TaskError>((diff, (test_imports, mend_from), example, test_dir))
            })
            .await
            // A commit the mirror lacks is the data's fault (a rejection): retrying will not bring it.
            .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))??;
        let (fixtures, test_dir) = test_dir.map_or((Vec::new(), None), |(f, d)| (f, Some(d)));
        Ok(Checkouts {
            _dir: dir,
            reviewed,
            fixed,
            fix_diff,
            test_imports,
            mend_from,
            example,
            test_dir,
            fixtures,
        })
    }

    /// The model's tests, up to `max_attempts` answers with feedback between them: the accepted
    /// output, or the last miss's reason.
    async fn model_candidates(
        &self,
        judge: &Judge<'_>,
        i: &Inputs,
        work: &Checkouts,
        file: &str,
        input: &TaskInput,
        history: &mut Vec<Value>,
    ) -> Result<Result<Value, &'static str>, TaskError> {
        let mut messages = self.first_messages(i, work);
        let mut last = reasons::UNPARSEABLE;
        let mut answers: Vec<String> = Vec::new();
        let mend = self.mend_imports.then_some(work.mend_from.as_slice());
        for attempt in 1..=self.max_attempts {
            let answer = self.answer(&messages, &answers, mend, input).await?;
            let first = judge_answer(judge, file, &answer, mend).await?;
            answers.push(answer.text.clone());
            let asked = messages.clone();
            messages.push(Message::assistant(answer.text.clone()));
            let mut judged = self
                .more_candidates(judge, (file, mend), first, (&asked, attempt), &mut answers, input)
                .await?;
            if self.split && !judged.iter().any(|j| j.outcome.is_ok()) {
                judged.extend(judge.one_check_at_a_time(file, &judged[0], MAX_SPLITS).await?);
            }
            for j in &mut judged {
                j.record["attempt"] = json!(attempt);
                j.settle();
                history.push(j.record.clone());
            }
            if let Some(accepted) = judged.iter().find(|j| j.outcome.is_ok()) {
                let place = (file, judge.in_tree);
                return Ok(Ok(accepted_output(
                    place,
                    accepted,
                    &i.environment.imports,
                    attempt,
                    None,
                    history.clone(),
                )));
            }
            // The conversation goes on from the first candidate, the one asked at the stage's own
            // temperature and seed.
            let first = &judged[0];
            let Err(miss) = &first.outcome else { unreachable!("no candidate was accepted") };
            last = miss.reason;
            // A test that fails and passes by chance is no oracle: final, no more tries.
            if miss.reason == reasons::FLAKY {
                break;
            }
            messages.push(self.feedback_message(miss, first.runs.as_ref().map(|(r, f)| (r, f))));
        }
        Ok(Err(last))
    }

    /// The first candidate of an attempt and, while none is accepted, the others: the same
    /// conversation (`asked`), sampled; one that repeats an earlier answer is not judged again.
    async fn more_candidates(
        &self,
        judge: &Judge<'_>,
        (file, mend): (&str, Option<&[String]>),
        first: Judged,
        (asked, attempt): (&[Message], u32),
        answers: &mut Vec<String>,
        input: &TaskInput,
    ) -> Result<Vec<Judged>, TaskError> {
        let mut judged = vec![first];
        for k in 2..=self.candidates {
            if judged.iter().any(|j| j.outcome.is_ok()) {
                break;
            }
            let extra = self.candidate(asked, attempt, k, input).await?;
            let mut j = if repeats(&extra.text, answers, mend) {
                let miss =
                    Miss { reason: reasons::REPEAT, problem: "the same answer as an earlier one.".into() };
                Judged::unrun(json!({"answer": extra.text}), miss)
            } else {
                judge_answer(judge, file, &extra, mend).await?
            };
            answers.push(extra.text);
            j.record["candidate"] = json!(k);
            judged.push(j);
        }
        Ok(judged)
    }

    /// Candidate `k` (from 2) of attempt `attempt`: the same conversation, sampled at
    /// [`RESAMPLE_TEMPERATURE`] or the stage's own if higher, under a seed of its own.
    async fn candidate(
        &self,
        messages: &[Message],
        attempt: u32,
        k: u32,
        input: &TaskInput,
    ) -> Result<crate::llm::Answer, TaskError> {
        let request = self.llm.request(messages.to_vec());
        let sampled = crate::llm::ChatRequest {
            temperature: request.temperature.max(RESAMPLE_TEMPERATURE),
            seed: Some(request.seed.unwrap_or(0) + CANDIDATE_SEEDS * i64::from(attempt) + i64::from(k)),
            ..request
        };
        let (answer, _) = self.llm.chat(&sampled).await?;
        input.meter.add(answer.usage.into());
        Ok(answer)
    }

    /// The model's next answer. One cut off at the token cap before its first test ended is asked
    /// again with `cut_off_max_tokens`, when set. At temperature 0 a small model often sends an
    /// earlier answer back word for word, whatever the feedback said; such a repeat is asked once
    /// more, sampled with another seed at [`RESAMPLE_TEMPERATURE`], and that answer stands.
    async fn answer(
        &self,
        messages: &[Message],
        earlier: &[String],
        mend: Option<&[String]>,
        input: &TaskInput,
    ) -> Result<crate::llm::Answer, TaskError> {
        let mut request = self.llm.request(messages.to_vec());
        let (mut answer, _) = self.llm.chat(&request).await?;
        input.meter.add(answer.usage.into());
        // Cut off before its first test ended: asked once more with room for it.
        if let Some(cap) = self.cut_off_max_tokens.filter(|c| *c > request.max_tokens)
            && answer.truncated
            && test_code(&answer.text, true).is_err()
        {
            request.max_tokens = cap;
            (answer, _) = self.llm.chat(&request).await?;
            input.meter.add(answer.usage.into());
        }
        if !repeats(&answer.text, earlier, mend) {
            return Ok(answer);
        }
        let resampled = crate::llm::ChatRequest {
            temperature: request.temperature.max(RESAMPLE_TEMPERATURE),
            seed: request.seed.map(|s| s + earlier.len() as i64),
            ..request
        };
        let (answer, _) = self.llm.chat(&resampled).await?;
        input.meter.add(answer.usage.into());
        Ok(answer)
    }
}

/// Whether `text` sends back an earlier answer's test: the same words, or the same code whatever
/// is said around it (a small model often wraps the test it sent before in a new sentence). With
/// `mend` (`mend_imports`), the code as it would run, blank lines left out: two answers that differ
/// only in an import the mending puts in or takes out are one test.
fn repeats(text: &str, earlier: &[String], mend: Option<&[String]>) -> bool {
    let code = |t: &str| {
        let code = test_code(t, false).ok()?;
        Some(match mend {
            Some(imports) => mend::mended(&code, imports)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            None => code,
        })
    };
    let this = code(text);
    earlier.iter().any(|e| e == text || (this.is_some() && code(e) == this))
}

/// Judges one answer of the model: its test read, then judged. The record is the attempt's,
/// without its attempt number and result.
async fn judge_answer(
    judge: &Judge<'_>,
    file: &str,
    answer: &crate::llm::Answer,
    mend_with: Option<&[String]>,
) -> Result<Judged, TaskError> {
    match test_code(&answer.text, answer.truncated) {
        Ok(code) => {
            let code = mend_with.map_or_else(|| code.clone(), |imports| mend::mended(&code, imports));
            Ok(judge.file(file, code).await?)
        }
        Err(why) => {
            let miss = Miss { reason: reasons::UNPARSEABLE, problem: format!("{why}.") };
            Ok(Judged::unrun(json!({"answer": answer.text}), miss))
        }
    }
}

impl AsyncStage for Synthesis {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        self.synthesize(&input).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::engine::item::Item;

    #[test]
    fn an_answer_with_an_earlier_test_in_new_words_is_a_repeat() {
        let first = "Here is the test:\n```python\ndef test_a():\n    assert f() == 1\n```".to_string();
        let again = "I fixed it:\n```python\ndef test_a():\n    assert f() == 1\n```\nThis should pass.";
        let other = "```python\ndef test_a():\n    assert f() == 2\n```";
        assert!(repeats(again, std::slice::from_ref(&first), None));
        assert!(!repeats(other, std::slice::from_ref(&first), None));
        assert!(repeats("no code at all", &["no code at all".to_string()], None));
        assert!(
            !repeats("no code at all", &["nothing either".to_string()], None),
            "two answers without a test differ"
        );
    }

    #[test]
    fn answers_that_run_as_one_test_once_mended_are_a_repeat() {
        // The second imports what the first forgot; mended, the first gets that line put in.
        let first =
            "```python\ndef test_a():\n    assert fields.Str().deserialize('x') == 'x'\n```".to_string();
        let second = "```python\nfrom marshmallow import fields\n\ndef test_a():\n    assert fields.Str().deserialize('x') == 'x'\n```";
        let imports = ["from marshmallow import fields".to_string()];
        assert!(!repeats(second, std::slice::from_ref(&first), None), "as written they differ");
        assert!(repeats(second, std::slice::from_ref(&first), Some(&imports)));
        let other = "```python\nfrom marshmallow import fields\n\ndef test_a():\n    assert fields.Str().deserialize('y') == 'y'\n```";
        assert!(!repeats(other, std::slice::from_ref(&first), Some(&imports)));
    }

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
        let synthesis = Synthesis {
            llm: Llm::new(LlmSpec::default().settings(), &dir.path().join("llm")).unwrap(),
            prompt: template("[user]\n{{comment}}", &PLACEHOLDERS),
            feedback: template("[user]\n{{problem}}", &FEEDBACK_PLACEHOLDERS),
            mirrors: Arc::new(Mirrors::new(&url, dir.path(), &dir.path().join("cache"))),
            docker: Arc::new(Hosts::local()),
            max_attempts: 1,
            candidates: 1,
            from_observed: false,
            observed_choice: None,
            from_project_tests: false,
            project_candidates: 1,
            split: false,
            repeats: 1,
            timeout: Duration::from_secs(5),
            file_lines: 20,
            cut_off_max_tokens: None,
            mend_imports: false,
            project_fixtures: false,
        };
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
