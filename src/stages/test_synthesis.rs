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

use serde::Deserialize;
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::partial;
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{TestRun, Verdict, run_test_seeded, run_test_traced};
use crate::llm::client::Llm;
use crate::llm::prompt::Template;
use crate::llm::{LlmSpec, Message};
use crate::record::{PullRequest, ReviewComment};
use crate::repo::Mirrors;
use crate::synthesis::answer::test_code;
use crate::synthesis::facts::{self, MAX_SIGNATURES};
use crate::synthesis::observed;
use crate::synthesis::oracle::{Miss, for_feedback, judge, reasons};
use crate::synthesis::relevance;
use crate::synthesis::source::{code_only, network_use, test_kind};

const PLACEHOLDERS: [&str; 13] = [
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
];
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
const STORED_OUTPUT_LINES: usize = 120;

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
    #[serde(default)]
    llm: LlmSpec,
}

fn default_attempts() -> u32 {
    3
}
fn default_candidates() -> u32 {
    1
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
    repeats: u32,
    timeout: Duration,
    file_lines: usize,
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
    let settings = ctx.llm.merged(&config.llm).settings();
    let llm = Llm::new(settings, &ctx.cache.join("llm")).map_err(|e| ConfigError::new("llm", e))?;
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
        repeats: config.repeats,
        timeout: Duration::from_secs(config.timeout_secs),
        file_lines: config.file_lines,
    });
    // 2: an import error on both sides is judged a broken import. 3: a cut-off answer with no
    // complete test is told so. 4: facts in the prompt (signatures, the tests' imports, the PR's
    // description); importing the project's tests is a miss; with an attribution upstream, the
    // relevance gate. 5: an answer that repeats an earlier one is sampled again. 6: floats at full
    // precision in the fed-back output are cut (measurements made every run differ). 7: pytest
    // plugins' state directories (.benchmarks, .hypothesis) are not writes of the test. 8: the
    // partial revert. 9: observed behaviour in the prompt. 10: a missing `import pytest` is added;
    // candidates; the probe's test for an observed call last (`from_observed`).
    Ok(StageDef {
        side_effects: true,
        files: vec![
            config.prompt.to_string_lossy().into_owned(),
            config.feedback_prompt.to_string_lossy().into_owned(),
        ],
        fingerprint_extra: fingerprint,
        // The model's settings that change answers are in the fingerprint.
        unhashed: &["llm"],
        provides: Some(contract::Test::NAME),
        requires: vec![contract::CommentContext::NAME, contract::Environment::NAME],
        ..StageDef::new(stage, 10, Scope::Comment, Resource::Llm)
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

/// What one run of one side looked like, for the store.
fn run_record(run: &TestRun) -> Value {
    json!({
        "verdict": run.verdict,
        "exit_code": run.exit_code,
        "seconds": (run.seconds * 1000.0).round() / 1000.0,
        "wrote": run.wrote,
        "output": for_feedback(&run.output, STORED_OUTPUT_LINES),
    })
}

fn verdict_name(run: &TestRun) -> String {
    serde_json::to_value(run.verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// What the task needs from upstream, read from the outputs of whichever stages provide it.
struct Inputs {
    pr: PullRequest,
    comment: ReviewComment,
    context: contract::CommentContext,
    image: String,
    packages: Vec<String>,
    /// The changes of the fix that answer the comment, when an `attribution` stage is upstream:
    /// an accepted test must then reach them.
    attribution: Option<contract::Attribution>,
    /// Calls whose results differ between the two commits, when an `observed_behaviour` stage is
    /// upstream.
    observed: Option<contract::Observed>,
}

fn inputs(input: &TaskInput) -> Result<Inputs, TaskError> {
    let (pr, comment) = comment_records(input)?;
    let context: contract::CommentContext = contract::upstream(input)?;
    let environment: contract::Environment = contract::upstream(input)?;
    let attribution = contract::upstream_if_any(input)?;
    let observed = contract::upstream_if_any(input)?;
    Ok(Inputs {
        pr,
        comment,
        context,
        image: environment.image,
        packages: environment.imports,
        attribution,
        observed,
    })
}

/// One candidate answer, judged.
struct Judged {
    /// What is stored of it: its code (or the answer, when it held none), runs and evidence.
    record: Value,
    /// Accepted, with its verdict on the reviewed code; or the miss.
    outcome: Result<Verdict, Miss>,
    /// Its runs on the reviewed and the fixed code, when it ran.
    runs: Option<(TestRun, TestRun)>,
}

impl Judged {
    /// Writes its result into its record: `accepted`, or the miss's reason and the problem the
    /// model was (or would have been) told.
    fn settle(&mut self) {
        self.record["result"] = match &self.outcome {
            Ok(_) => json!("accepted"),
            Err(miss) => {
                self.record["problem"] = json!(miss.problem);
                json!(miss.reason)
            }
        };
    }
}

/// The stage's output for an accepted test: the test, its kind and evidence, and the attempts'
/// history. `written_by` names who wrote it when the model did not.
fn accepted_output(
    file: &str,
    accepted: &Judged,
    packages: &[String],
    attempts: u32,
    written_by: Option<&str>,
    history: Vec<Value>,
) -> Value {
    let code = accepted.record["code"].as_str().unwrap_or_default();
    let kind = test_kind(code, packages);
    let mut out = json!({
        "test_file": file,
        "test": code,
        "kind": kind.kind,
        "kind_because": kind.because,
        "reviewed_verdict": accepted.outcome.as_ref().ok(),
        "attempts": attempts,
        "relevance": accepted.record.get("relevance").cloned(),
        "history": history,
    });
    if let Some(by) = written_by {
        out["written_by"] = json!(by);
    }
    out
}

/// A test file name from the comment's id.
fn test_file_name(id: &str) -> String {
    let clean: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    format!("test_{}.py", clean.trim_matches('_'))
}

/// The two checkouts a candidate runs against.
#[derive(Clone, Copy)]
struct Trees<'a> {
    reviewed: &'a Path,
    fixed: &'a Path,
}

/// A miss read from the test's text before it runs: it imports the project's tests, or uses the
/// network.
fn static_miss(code: &str, packages: &[String]) -> Option<Miss> {
    let of_tests = facts::test_package_imports(code);
    if !of_tests.is_empty() {
        return Some(Miss {
            reason: reasons::TEST_PACKAGE,
            problem: format!(
                "the test imports {}, the project's own tests, which are not part of the code under test. Import only the project's modules and the standard library, and write any helper you need in the test file.",
                of_tests.join(", ")
            ),
        });
    }
    let network = network_use(&code_only(code), packages);
    (!network.is_empty()).then(|| Miss {
        reason: reasons::NETWORK,
        problem: format!(
            "the test imports {}, but tests run with the network off. Test the code without a network.",
            network.join(", ")
        ),
    })
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
    fn first_messages(&self, i: &Inputs, fix_diff: &str, test_imports: &[String]) -> Vec<Message> {
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
            ("test_imports", listed(test_imports, facts::MAX_TEST_IMPORTS, "# no test imports it")),
            (
                "observed",
                i.observed.as_ref().map_or("# not observed".into(), |o| observed::shown(&o.differences)),
            ),
            ("path", path.to_string()),
            ("module", facts::module_of(path, &i.packages)),
            ("comment", i.comment.text.trim().to_string()),
            ("diff_hunk", hunk),
            ("file_before", clip(&c.file_before, start, end, self.file_lines)),
            ("file_after", clip(after, start, end, self.file_lines)),
            ("fix_diff", fix_diff.trim_end().to_string()),
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

    /// Runs the test on both sides at once, under Python hash seed `seed`.
    async fn both(
        &self,
        docker: &Hosts,
        image: &str,
        trees: Trees<'_>,
        test: (&str, &str),
        seed: u32,
    ) -> Result<(TestRun, TestRun), TaskError> {
        let t = self.timeout;
        let (reviewed, after) = tokio::join!(
            run_test_seeded(docker, image, trees.reviewed, test, t, seed),
            run_test_seeded(docker, image, trees.fixed, test, t, seed)
        );
        Ok((reviewed?, after?))
    }

    async fn synthesize(&self, input: &TaskInput) -> Result<Value, TaskError> {
        let i = inputs(input)?;
        let Some(fixed_commit) = i.pr.fixed_commit.clone() else {
            return Err(TaskError::reject("the PR has no fixed commit"));
        };
        let work =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let fixed = work.path().join("fixed");
        let reviewed_tree = work.path().join("reviewed");
        let trees = Trees { reviewed: &reviewed_tree, fixed: &fixed };
        let (mirrors, repo, dest, reviewed_dest) =
            (self.mirrors.clone(), i.pr.repo.clone(), fixed.clone(), reviewed_tree.clone());
        let head = i.pr.head_commit.clone();
        let paths: Vec<String> =
            std::iter::once(i.context.path.clone()).chain(i.context.fixed_path.clone()).collect();
        let module = facts::module_of(&i.context.path, &i.packages);
        // The two trees to run against, what the fix changed in the commented file, and how the
        // project's tests import the module.
        let (fix_diff, test_imports) = tokio::task::spawn_blocking(move || {
            let mirror = mirrors.checkout_pair(&repo, (&head, &fixed_commit), &reviewed_dest, &dest)?;
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            let diff = mirror.diff_of(&head, &fixed_commit, &paths)?;
            Ok::<_, TaskError>((diff, facts::test_imports(&reviewed_dest, &module)))
        })
        .await
        // A commit the mirror lacks is the data's fault (a rejection): retrying will not bring it.
        .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))??;

        // Docker only once the data is known to be whole: a missing commit needs no daemon to say so.
        let docker = &*self.docker;
        let file = test_file_name(&input.item.id);
        let mut messages = self.first_messages(&i, &fix_diff, &test_imports);
        let mut history = Vec::new();
        let mut last = reasons::UNPARSEABLE;
        let mut answers: Vec<String> = Vec::new();
        for attempt in 1..=self.max_attempts {
            let answer = self.answer(&messages, &answers, input).await?;
            answers.push(answer.text.clone());
            let asked = messages.clone();
            messages.push(Message::assistant(answer.text.clone()));
            let first = self.judge_answer(docker, &i, trees, &file, &answer).await?;
            let mut judged = vec![first];
            // More candidates for the same conversation, sampled, while none is accepted.
            for k in 2..=self.candidates {
                if judged.iter().any(|j| j.outcome.is_ok()) {
                    break;
                }
                let extra = self.candidate(&asked, attempt, k, input).await?;
                let mut j = if answers.contains(&extra.text) {
                    let miss = Miss {
                        reason: reasons::REPEAT,
                        problem: "the same answer as an earlier one.".into(),
                    };
                    Judged { record: json!({"answer": extra.text}), outcome: Err(miss), runs: None }
                } else {
                    self.judge_answer(docker, &i, trees, &file, &extra).await?
                };
                answers.push(extra.text);
                j.record["candidate"] = json!(k);
                judged.push(j);
            }
            for j in &mut judged {
                j.record["attempt"] = json!(attempt);
                j.settle();
                history.push(j.record.clone());
            }
            if let Some(accepted) = judged.iter().find(|j| j.outcome.is_ok()) {
                return Ok(accepted_output(&file, accepted, &i.packages, attempt, None, history));
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
        // Last, when the model wrote no test: the one the probe wrote for an observed call.
        let written = i.observed.as_ref().and_then(|o| observed::written_check(&o.differences));
        if let (true, Some(code)) = (self.from_observed, written) {
            let mut j = self.judge_code(docker, &i, trees, &file, code.to_string()).await?;
            j.record["written_by"] = json!("observed call");
            j.settle();
            history.push(j.record.clone());
            if j.outcome.is_ok() {
                let by = Some("observed call");
                return Ok(accepted_output(&file, &j, &i.packages, self.max_attempts, by, history));
            }
        }
        Err(TaskError::Reject {
            reason: last.to_string(),
            detail: json!({"attempts": history.len(), "history": history}),
        })
    }

    /// Judges one answer: its test read, run on both sides (and repeated, and held to the relevance
    /// gate, while it holds). The record is the attempt's, without its attempt number and result.
    async fn judge_answer(
        &self,
        docker: &Hosts,
        i: &Inputs,
        trees: Trees<'_>,
        file: &str,
        answer: &crate::llm::Answer,
    ) -> Result<Judged, TaskError> {
        let code = match test_code(&answer.text, answer.truncated) {
            Ok(code) => code,
            Err(why) => {
                let miss = Miss { reason: reasons::UNPARSEABLE, problem: format!("{why}.") };
                return Ok(Judged { record: json!({"answer": answer.text}), outcome: Err(miss), runs: None });
            }
        };
        self.judge_code(docker, i, trees, file, code).await
    }

    /// Judges one test file: read, run on both sides, repeated and held to the relevance gate while
    /// it holds.
    async fn judge_code(
        &self,
        docker: &Hosts,
        i: &Inputs,
        trees: Trees<'_>,
        file: &str,
        code: String,
    ) -> Result<Judged, TaskError> {
        if let Some(miss) = static_miss(&code, &i.packages) {
            return Ok(Judged { record: json!({"code": code}), outcome: Err(miss), runs: None });
        }
        let (reviewed, after) = self.both(docker, &i.image, trees, (file, &code), 0).await?;
        let mut record = json!({
            "code": code,
            "reviewed": run_record(&reviewed),
            "fixed": run_record(&after),
        });
        let judged = match judge(&reviewed, &after, &i.packages) {
            Ok(()) => self.repeat(docker, &i.image, trees, (file, &code), &reviewed, &mut record).await?,
            Err(miss) => Err(miss),
        };
        let judged = match (judged, &i.attribution) {
            (Ok(()), Some(attribution)) => {
                self.relevance(docker, i, attribution, trees, (file, &code), &mut record).await?
            }
            (judged, _) => judged,
        };
        let verdict = reviewed.verdict;
        Ok(Judged { record, outcome: judged.map(|()| verdict), runs: Some((reviewed, after)) })
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
        let (answer, _) = self.llm.chat(&sampled).await.map_err(TaskError::infra)?;
        input.meter.add(answer.usage.into());
        Ok(answer)
    }

    /// The model's next answer. At temperature 0 a small model often sends an earlier answer back
    /// word for word, whatever the feedback said; such a repeat is asked once more, sampled with
    /// another seed at [`RESAMPLE_TEMPERATURE`], and that answer stands.
    async fn answer(
        &self,
        messages: &[Message],
        earlier: &[String],
        input: &TaskInput,
    ) -> Result<crate::llm::Answer, TaskError> {
        let request = self.llm.request(messages.to_vec());
        let (answer, _) = self.llm.chat(&request).await.map_err(TaskError::infra)?;
        input.meter.add(answer.usage.into());
        if !earlier.contains(&answer.text) {
            return Ok(answer);
        }
        let resampled = crate::llm::ChatRequest {
            temperature: request.temperature.max(RESAMPLE_TEMPERATURE),
            seed: request.seed.map(|s| s + earlier.len() as i64),
            ..request
        };
        let (answer, _) = self.llm.chat(&resampled).await.map_err(TaskError::infra)?;
        input.meter.add(answer.usage.into());
        Ok(answer)
    }

    /// The relevance gate: a behavioural test must execute a line of the changes that answer the
    /// comment (traced on the fixed commit); a structural one must name a definition they belong
    /// to. The evidence goes into the attempt's record.
    async fn relevance(
        &self,
        docker: &Hosts,
        i: &Inputs,
        attribution: &contract::Attribution,
        trees: Trees<'_>,
        test: (&str, &str),
        record: &mut Value,
    ) -> Result<Result<(), Miss>, TaskError> {
        let changes = partial::changes(attribution);
        // Each attributed file read once; the gate's parts look it up.
        let texts = partial::fixed_texts(&changes, trees.fixed);
        let fixed_file = |path: &str| texts.get(path).cloned();
        let targets = relevance::targets(&changes, fixed_file);
        if targets.is_empty() {
            record["relevance"] = json!({"how": attribution.how, "checked": "no Python lines to reach"});
            return Ok(Ok(()));
        }
        let kind = test_kind(test.1, &i.packages);
        let problem = |why: &str| Miss {
            reason: reasons::IRRELEVANT,
            problem: format!(
                "{why} These are the lines of the change that answer the reviewer's comment:\n{}\nWrite a test of what these lines do.",
                relevance::shown(&targets, fixed_file, 12)
            ),
        };
        if kind.kind == crate::synthesis::source::TestKind::Structural {
            let names = relevance::definitions(&targets, fixed_file);
            let read = names.iter().find(|n| test.1.contains(n.as_str())).cloned();
            record["relevance"] =
                json!({"how": attribution.how, "targets": targets, "definitions": names, "named": read});
            return Ok(match read {
                Some(_) => Ok(()),
                None => Err(problem(&format!(
                    "The test passes on the changed code, but it does not read {}, where the change that answers the comment is.",
                    names.join(" or ")
                ))),
            });
        }
        let files: Vec<String> = targets.keys().cloned().collect();
        let (run, traced) =
            run_test_traced(docker, &i.image, trees.fixed, test, self.timeout, &files).await?;
        let covered = relevance::covered(&targets, &traced);
        record["relevance"] = json!({
            "how": attribution.how,
            "targets": targets,
            "covered": covered,
            "traced_verdict": run.verdict,
        });
        if covered.is_empty() {
            return Ok(Err(problem(
                "The test passes on the changed code, but it never runs the change that answers the comment.",
            )));
        }
        let Some(partial) = self.partial_revert(docker, i, &changes, &texts, trees, test).await? else {
            record["relevance"]["partial_revert"] = json!("not revertable alone");
            return Ok(Ok(()));
        };
        record["relevance"]["partial_revert"] = json!(partial);
        Ok(match partial {
            Verdict::Passed => Err(problem(
                "The test passes on the changed code, but it also passes when only the change that answers the comment is undone: it tests another part of the fix.",
            )),
            // A failure of the test's own: it depends on these lines. Anything else (the partial
            // code does not import, or runs away) says nothing either way.
            _ => Ok(()),
        })
    }

    /// The test's verdict on the fixed tree with only the attributed changes undone, or `None` when
    /// they cannot be undone alone. `fixed` holds the attributed files' fixed text, as the gate
    /// read them.
    async fn partial_revert(
        &self,
        docker: &Hosts,
        i: &Inputs,
        changes: &[relevance::Change<'_>],
        fixed: &BTreeMap<&str, String>,
        trees: Trees<'_>,
        test: (&str, &str),
    ) -> Result<Option<Verdict>, TaskError> {
        let Some(work) = partial::tree(trees.reviewed, trees.fixed, changes, fixed).await? else {
            return Ok(None);
        };
        let run = run_test_seeded(docker, &i.image, work.path(), test, self.timeout, 0).await?;
        Ok(Some(run.verdict))
    }

    /// Runs both sides `repeats - 1` more times, each under another hash seed; every run must give
    /// the first run's verdicts.
    async fn repeat(
        &self,
        docker: &Hosts,
        image: &str,
        trees: Trees<'_>,
        test: (&str, &str),
        first: &TestRun,
        record: &mut Value,
    ) -> Result<Result<(), Miss>, TaskError> {
        let mut seen = Vec::new();
        for seed in 1..self.repeats {
            let (reviewed, after) = self.both(docker, image, trees, test, seed).await?;
            seen.push(json!([reviewed.verdict, after.verdict]));
            if reviewed.verdict != first.verdict || after.verdict != Verdict::Passed {
                record["repeats"] = Value::Array(seen);
                return Ok(Err(Miss {
                    reason: reasons::FLAKY,
                    problem: format!(
                        "the test is not deterministic: on a repeated run it ended as {} on BEFORE and {} on AFTER. Remove randomness, timing and order dependence.",
                        verdict_name(&reviewed),
                        verdict_name(&after)
                    ),
                }));
            }
        }
        record["repeats"] = Value::Array(seen);
        Ok(Ok(()))
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
            repeats: 1,
            timeout: Duration::from_secs(5),
            file_lines: 20,
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
