//! The test writer of one review comment (the paper's section 4.2.3): its candidates, in order,
//! are the project's own tests that fail on the reviewed code and pass on the fixed code
//! (`from_project_tests`), the model's answers with the run's output fed back on each miss (up to
//! `max_attempts`, `candidates` sampled per attempt, a missed test with several checks judged one
//! check at a time), and the behaviour probe's tests of observed calls (`from_observed`). Each is
//! judged by [`judge`](crate::synthesis::judge); the first accepted is the comment's test ([`Written`]), and
//! a comment with none is rejected with its last miss and every candidate in the detail.
//!
//! The `test_synthesis` stage reads the upstream records into a [`Comment`], calls
//! [`Writer::write`] and stores what it returns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::engine::stage::{Meter, TaskError};
use crate::environment::tree_image;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::TestRun;
use crate::llm::Message;
use crate::llm::client::Llm;
use crate::llm::prompt::{Template, Texts};
use crate::record::{PullRequest, ReviewComment};
use crate::repo::Mirrors;
use crate::stages::contract;
use crate::synthesis::answer::test_code;
use crate::synthesis::example;
use crate::synthesis::facts::{self, MAX_SIGNATURES};
use crate::synthesis::judge::{Images, Judge, JudgeError, Judged, Trees, verdict_name};
use crate::synthesis::mend::Mending;
use crate::synthesis::observed;
use crate::synthesis::oracle::{Miss, Problem, for_feedback, reasons};
use crate::synthesis::project;
use crate::synthesis::relevance;

/// Observed calls the model chooses among at most.
const MAX_CHOICES: usize = 5;
/// Alternatives read at the chosen number's token.
const CHOICE_LOGPROBS: u8 = 10;
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
/// Missed tests judged again expecting the fixed code's value, at most, per attempt.
const MAX_EXPECTED: usize = 4;

/// Who wrote a test that is not the model's.
pub const OBSERVED_CALL: &str = "observed call";

/// The prompts the writer asks the model with.
pub struct Prompts {
    /// The first message of a comment's conversation.
    pub prompt: Template,
    /// The message that sends a miss back to the model.
    pub feedback: Template,
    /// What each miss is called in that message (the feedback prompt's `[text KEY]` parts).
    pub texts: Texts,
    /// The numbered choice among the probe's observed calls, when the writer asks it.
    pub observed_choice: Option<Template>,
}

/// How hard the writer tries, and where its tests run (the stage's settings of the same names).
pub struct Settings {
    pub max_attempts: u32,
    pub candidates: u32,
    pub from_observed: bool,
    pub from_project_tests: bool,
    pub project_candidates: usize,
    pub split: bool,
    pub repeats: u32,
    pub timeout: Duration,
    pub file_lines: usize,
    pub cut_off_max_tokens: Option<u32>,
    pub mend_imports: bool,
    pub project_fixtures: bool,
    pub expect_from_fixed: bool,
}

/// Writes and judges one comment's candidates: the model, the git mirrors the trees come from and
/// the Docker hosts the candidates run on.
pub struct Writer {
    pub llm: Llm,
    pub prompts: Prompts,
    pub mirrors: Arc<Mirrors>,
    pub docker: Arc<Hosts>,
    pub settings: Settings,
}

/// A comment's accepted test, with every candidate judged on the way (`history`).
pub enum Written {
    /// A test curate runs, the model's or the probe's: `file` its name, laid out under `in_tree`
    /// when it runs among the project's tests; `attempts` the model's answers it took.
    Test {
        judged: Judged,
        file: String,
        in_tree: Option<String>,
        attempts: u32,
        written_by: Option<&'static str>,
        history: Vec<Value>,
    },
    /// One of the project's own tests (`node`), with the fixed commit's test-side files it needs
    /// and those that are not text, left out.
    Project {
        node: String,
        judged: Judged,
        files: BTreeMap<String, String>,
        left_out: Vec<String>,
        history: Vec<Value>,
    },
}

/// Judging needs the sandbox; when it fails, the task is retried.
impl From<JudgeError> for TaskError {
    fn from(e: JudgeError) -> TaskError {
        TaskError::infra(e)
    }
}
/// One comment and what the stages upstream found about it: what the writer works from.
pub struct Comment {
    pub pr: PullRequest,
    pub comment: ReviewComment,
    pub context: contract::CommentContext,
    pub environment: contract::Environment,
    /// The changes of the fix that answer the comment, when an `attribution` stage is upstream:
    /// an accepted test must then reach them.
    pub attribution: Option<contract::Attribution>,
    /// Calls whose results differ between the two commits, when an `observed_behaviour` stage is
    /// upstream.
    pub observed: Option<contract::Observed>,
    /// The project's tests the fix changes, when a `project_tests` stage is upstream.
    pub project_tests: Option<contract::ProjectTests>,
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

/// The fixed commit's test-side files of `tests`, read as text: those that are not text are left
/// out and named; those the fixed commit lacks are skipped.
fn test_side(tests: &contract::ProjectTests, fixed: &Path) -> (BTreeMap<String, String>, Vec<String>) {
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
    (files, left_out)
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
impl Writer {
    fn first_messages(&self, i: &Comment, work: &Checkouts) -> Vec<Message> {
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
            ("file_before", clip(&c.file_before, start, end, self.settings.file_lines)),
            ("file_after", clip(after, start, end, self.settings.file_lines)),
            ("fix_diff", work.fix_diff.trim_end().to_string()),
        ]);
        self.prompts.prompt.render(&values)
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
        let problem = miss.problem.text(&self.prompts.texts);
        let values = BTreeMap::from([
            ("problem", problem.clone()),
            ("reviewed_verdict", rv),
            ("reviewed_output", ro),
            ("fixed_verdict", fv),
            ("fixed_output", fo),
        ]);
        let mut rendered = self.prompts.feedback.render(&values);
        rendered.pop().unwrap_or_else(|| Message::user(problem))
    }

    /// The comment's test: the first candidate accepted, from the project's tests, the model's
    /// answers and the probe's calls, in that order. A comment with none is rejected with the
    /// last miss and every candidate judged in its detail; `id` names the test file.
    pub async fn write(&self, i: &Comment, id: &str, meter: &Meter) -> Result<Written, TaskError> {
        let Some(fixed_commit) = i.pr.fixed_commit.clone() else {
            return Err(TaskError::reject("the PR has no fixed commit"));
        };
        let work = self.checkouts(i, fixed_commit).await?;
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
            repeats: self.settings.repeats,
            timeout: self.settings.timeout,
            in_tree: work.test_dir.as_deref(),
            texts: &self.prompts.texts,
        };
        let file = test_file_name(id);
        let mut history = Vec::new();
        if let Some(accepted) = self.project_candidates_judged(&judge, i, &work, &mut history).await? {
            return Ok(accepted);
        }
        let last = match self.model_candidates(&judge, i, &work, &file, meter, &mut history).await? {
            Ok(accepted) => return Ok(accepted),
            Err(last) => last,
        };
        // Last, when the model wrote no test: the one the probe wrote for an observed call of the
        // comment (or of the project's tests, with the comment's value), then the one of the call
        // the model chooses.
        if self.settings.from_observed
            && let Some(o) = &i.observed
        {
            let written = observed::written_check(&o.differences);
            if let Some(code) = written
                && let Some(accepted) = self.observed_judged(&judge, &file, code, None, &mut history).await?
            {
                return Ok(accepted);
            }
            let choices = observed::choosable(&o.differences, written, MAX_CHOICES);
            if let Some(template) = &self.prompts.observed_choice
                && !choices.is_empty()
            {
                let (pick, asked) = self.choose(template, i, &choices, meter).await?;
                history.push(asked);
                if let Some((k, p)) = pick
                    && let Some(code) = choices[k - 1].check.as_deref()
                {
                    let chosen = json!({"number": k, "of": choices.len(), "p": p});
                    if let Some(accepted) =
                        self.observed_judged(&judge, &file, code, Some(chosen), &mut history).await?
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
        file: &str,
        code: &str,
        chosen: Option<Value>,
        history: &mut Vec<Value>,
    ) -> Result<Option<Written>, TaskError> {
        let mut j = judge.file(file, code.to_string()).await?;
        j.record["written_by"] = json!(OBSERVED_CALL);
        if let Some(chosen) = chosen {
            j.record["chosen"] = chosen;
        }
        j.settle(&self.prompts.texts);
        history.push(j.record.clone());
        Ok(j.outcome.is_ok().then(|| Written::Test {
            file: file.to_string(),
            in_tree: judge.in_tree.map(str::to_string),
            attempts: self.settings.max_attempts,
            written_by: Some(OBSERVED_CALL),
            judged: j,
            history: history.clone(),
        }))
    }

    /// The model's numbered choice among `choices`: the chosen one's number (from 1) and the
    /// probability read, `None` when it chose none; and what is stored of the question.
    async fn choose(
        &self,
        template: &Template,
        i: &Comment,
        choices: &[&observed::Difference],
        meter: &Meter,
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
        meter.add(answer.usage.into());
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
        i: &Comment,
        work: &Checkouts,
        history: &mut Vec<Value>,
    ) -> Result<Option<Written>, TaskError> {
        let Some(tests) = i
            .project_tests
            .as_ref()
            .filter(|t| self.settings.from_project_tests && !t.fail_to_pass.is_empty())
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
            judge.first_project_test(nodes, &tests.test_paths, self.settings.project_candidates).await?;
        history.extend(records);
        Ok(accepted.map(|(node, judged)| {
            let (files, left_out) = test_side(tests, &work.fixed);
            Written::Project { node, judged, files, left_out, history: history.clone() }
        }))
    }

    /// The reviewed and the fixed tree in a temporary directory, what the fix changed in the
    /// commented file, and how the project's tests import the module.
    async fn checkouts(&self, i: &Comment, fixed_commit: String) -> Result<Checkouts, TaskError> {
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
        // Tests of the PR that came after the fix: in the fixed tree as the project stage ran them.
        let tests_from = i.project_tests.as_ref().and_then(|t| t.tests_commit.clone());
        let in_tree = self.settings.project_fixtures;
        let package = i
            .environment
            .imports
            .first()
            .cloned()
            .filter(|p| *p != module && facts::is_test_file(Path::new(&i.context.path)));
        let (fix_diff, (test_imports, mend_from), example, test_dir) =
            tokio::task::spawn_blocking(move || {
                let mirror = mirrors.checkout_pair(&repo, (&head, &fixed_commit), &reviewed_dest, &dest)?;
                if let Some(commit) = &tests_from {
                    project::put_in_from(&mirror, commit, &changed_tests, &dest)?;
                }
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
                // Then the helpers the project's tests import (pywt 471: `assert_allclose`, used
                // and never imported, from `numpy.testing` as the project's tests have it).
                let top = module.split('.').next().unwrap_or_default();
                mend_from.extend(facts::helper_imports(&reviewed_dest, top));
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
        i: &Comment,
        work: &Checkouts,
        file: &str,
        meter: &Meter,
        history: &mut Vec<Value>,
    ) -> Result<Result<Written, &'static str>, TaskError> {
        let mut messages = self.first_messages(i, work);
        let mut last = reasons::UNPARSEABLE;
        let mut answers: Vec<String> = Vec::new();
        let mending = Mending {
            imports: work.mend_from.clone(),
            fixtures: work.fixtures.clone(),
            packages: i.environment.imports.clone(),
        };
        let mend = self.settings.mend_imports.then_some(&mending);
        for attempt in 1..=self.settings.max_attempts {
            let answer = self.answer(&messages, &answers, mend, meter).await?;
            let first = judge_answer(judge, file, &answer, mend).await?;
            answers.push(answer.text.clone());
            let asked = messages.clone();
            messages.push(Message::assistant(answer.text.clone()));
            let mut judged = self
                .more_candidates(judge, (file, mend), first, (&asked, attempt), &mut answers, meter)
                .await?;
            if self.settings.split && !judged.iter().any(|j| j.outcome.is_ok()) {
                judged.extend(judge.one_check_at_a_time(file, &judged[0], MAX_SPLITS).await?);
            }
            if self.settings.expect_from_fixed && !judged.iter().any(|j| j.outcome.is_ok()) {
                let expecting = judge.expecting_the_fixed(file, &judged, MAX_EXPECTED).await?;
                judged.extend(expecting);
            }
            for j in &mut judged {
                j.record["attempt"] = json!(attempt);
                j.settle(&self.prompts.texts);
                history.push(j.record.clone());
            }
            if let Some(at) = judged.iter().position(|j| j.outcome.is_ok()) {
                return Ok(Ok(Written::Test {
                    file: file.to_string(),
                    in_tree: judge.in_tree.map(str::to_string),
                    attempts: attempt,
                    written_by: None,
                    judged: judged.swap_remove(at),
                    history: history.clone(),
                }));
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
        (file, mend): (&str, Option<&Mending>),
        first: Judged,
        (asked, attempt): (&[Message], u32),
        answers: &mut Vec<String>,
        meter: &Meter,
    ) -> Result<Vec<Judged>, TaskError> {
        let mut judged = vec![first];
        for k in 2..=self.settings.candidates {
            if judged.iter().any(|j| j.outcome.is_ok()) {
                break;
            }
            let extra = self.candidate(asked, attempt, k, meter).await?;
            let mut j = if repeats(&extra.text, answers, mend) {
                let miss = Miss::new(reasons::REPEAT, Problem::Repeat);
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
        meter: &Meter,
    ) -> Result<crate::llm::Answer, TaskError> {
        let request = self.llm.request(messages.to_vec());
        let sampled = crate::llm::ChatRequest {
            temperature: request.temperature.max(RESAMPLE_TEMPERATURE),
            seed: Some(request.seed.unwrap_or(0) + CANDIDATE_SEEDS * i64::from(attempt) + i64::from(k)),
            ..request
        };
        let (answer, _) = self.llm.chat(&sampled).await?;
        meter.add(answer.usage.into());
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
        mend: Option<&Mending>,
        meter: &Meter,
    ) -> Result<crate::llm::Answer, TaskError> {
        let mut request = self.llm.request(messages.to_vec());
        let (mut answer, _) = self.llm.chat(&request).await?;
        meter.add(answer.usage.into());
        // Cut off before its first test ended: asked once more with room for it.
        if let Some(cap) = self.settings.cut_off_max_tokens.filter(|c| *c > request.max_tokens)
            && answer.truncated
            && test_code(&answer.text, true).is_err()
        {
            request.max_tokens = cap;
            (answer, _) = self.llm.chat(&request).await?;
            meter.add(answer.usage.into());
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
        meter.add(answer.usage.into());
        Ok(answer)
    }
}
/// Whether `text` sends back an earlier answer's test: the same words, or the same code whatever
/// is said around it (a small model often wraps the test it sent before in a new sentence). With
/// `mend` (`mend_imports`), the code as it would run, blank lines left out: two answers that differ
/// only in an import the mending puts in or takes out are one test.
fn repeats(text: &str, earlier: &[String], mend: Option<&Mending>) -> bool {
    let code = |t: &str| {
        let code = test_code(t, false).ok()?;
        Some(match mend {
            Some(mending) => {
                mending.apply(&code).lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n")
            }
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
    mend_with: Option<&Mending>,
) -> Result<Judged, TaskError> {
    match test_code(&answer.text, answer.truncated) {
        Ok(code) => {
            let code = mend_with.map_or_else(|| code.clone(), |mending| mending.apply(&code));
            Ok(judge.file(file, code).await?)
        }
        Err(why) => {
            let miss = Miss::new(reasons::UNPARSEABLE, Problem::NotATest(why));
            Ok(Judged::unrun(json!({"answer": answer.text}), miss))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let imports =
            Mending { imports: vec!["from marshmallow import fields".to_string()], ..Mending::default() };
        assert!(!repeats(second, std::slice::from_ref(&first), None), "as written they differ");
        assert!(repeats(second, std::slice::from_ref(&first), Some(&imports)));
        let other = "```python\nfrom marshmallow import fields\n\ndef test_a():\n    assert fields.Str().deserialize('y') == 'y'\n```";
        assert!(!repeats(other, std::slice::from_ref(&first), Some(&imports)));
    }
}
