//! Judging one candidate test of a comment, whoever wrote it (the model, the behaviour probe, the
//! project itself): it runs on the reviewed and on the fixed tree at once and goes to the
//! fail-then-pass [`oracle`](super::oracle); while it holds, both sides run again under other hash
//! seeds (a test that depends on set or dict order is `flaky`), and with the comment's attributed
//! changes known, the relevance gate: a behavioural test must execute one of their lines on the
//! fixed tree and must not pass with only them undone ([`partial`](super::partial)); a structural
//! one must name a definition they belong to. Every run and piece of evidence goes into the
//! candidate's record, which the stage stores in its history.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::expect;
use super::facts;
use super::oracle::{Miss, Problem, for_feedback, judge, reasons};
use super::partial;
use super::project;
use super::relevance::{self, Change};
use super::source::{TestKind, code_only, network_use, test_kind};
use super::split;
use crate::exec::docker::ExecError;
use crate::exec::hosts::Hosts;
use crate::exec::testrun::{
    Target, TestRun, Verdict, run_target, run_target_seeds, run_target_traced, trace_per_node,
};
use crate::llm::prompt::Texts;

/// Lines of each side's output kept per candidate in the store.
const STORED_OUTPUT_LINES: usize = 120;

/// Why a candidate could not be judged: the world's fault (Docker, the disk), never the test's.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error("cannot make the tree with the comment's change undone")]
    PartialTree(#[source] std::io::Error),
    #[error("cannot put the fixed tests into the reviewed tree")]
    TestSide(#[source] std::io::Error),
}

/// Who wrote a candidate that is one of the project's own tests.
pub const PROJECT_TEST: &str = "project test";

/// The two checkouts a candidate runs against.
#[derive(Clone, Copy)]
pub struct Trees<'a> {
    pub reviewed: &'a Path,
    pub fixed: &'a Path,
}

/// The images the two sides run in: the environment's for the reviewed code; for the fixed code
/// the same, unless the fix changes compiled sources ([`crate::environment::tree_image`]).
#[derive(Clone, Copy)]
pub struct Images<'a> {
    pub reviewed: &'a str,
    pub fixed: &'a str,
}

/// The changes of the fix that answer the comment, as the attribution stage chose them.
pub struct Attributed<'a> {
    /// How they were chosen (`position`, `model`, ...), kept in the evidence.
    pub how: &'a str,
    pub changes: Vec<Change<'a>>,
}

/// Everything one comment's candidates are judged against.
pub struct Judge<'a> {
    pub docker: &'a Hosts,
    pub images: Images<'a>,
    pub trees: Trees<'a>,
    /// Top-level packages of the project's own code.
    pub packages: &'a [String],
    /// With it, the relevance gate; without it, fail-then-pass is enough.
    pub attribution: Option<Attributed<'a>>,
    /// Runs of each side a candidate must give the same verdicts in, the first included.
    pub repeats: u32,
    pub timeout: Duration,
    /// The directory of the project's tests (relative to the repository) that curate's test files
    /// run in, with the fixtures of its conftest files; `None`: outside the repository.
    pub in_tree: Option<&'a str>,
    /// The feedback prompt's texts, in which a miss is recorded as the model is told it.
    pub texts: &'a Texts,
}

/// Where a test file of curate's named `name` goes in the tree when it runs in `dir`.
pub fn in_tree_path(dir: &str, name: &str) -> String {
    let dir = dir.trim_matches('/');
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

/// One candidate, judged.
pub struct Judged {
    /// What is stored of it: its code or node (or the answer, when it held none), runs and evidence.
    pub record: Value,
    /// Accepted, with its verdict on the reviewed code; or the miss.
    pub outcome: Result<Verdict, Miss>,
    /// Its runs on the reviewed and the fixed code, when it ran.
    pub runs: Option<(TestRun, TestRun)>,
}

impl Judged {
    /// A candidate that missed before it ran.
    pub fn unrun(record: Value, miss: Miss) -> Judged {
        Judged { record, outcome: Err(miss), runs: None }
    }

    /// Writes its result into its record: `accepted`, or the miss's reason and the problem the
    /// model was (or would have been) told, in the feedback prompt's `texts`.
    pub fn settle(&mut self, texts: &Texts) {
        self.record["result"] = match &self.outcome {
            Ok(_) => json!("accepted"),
            Err(miss) => {
                self.record["problem"] = json!(miss.problem.text(texts));
                json!(miss.reason)
            }
        };
    }
}

/// What one run of one side looked like, for the store.
pub fn run_record(run: &TestRun) -> Value {
    json!({
        "verdict": run.verdict,
        "exit_code": run.exit_code,
        "seconds": (run.seconds * 1000.0).round() / 1000.0,
        "wrote": run.wrote,
        "output": for_feedback(&run.output, STORED_OUTPUT_LINES),
    })
}

/// A verdict's name as the store and the model see it.
pub fn verdict_name(run: &TestRun) -> String {
    serde_json::to_value(run.verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// A miss read from a written test's text before it runs: it imports the project's tests, or uses
/// the network.
pub fn static_miss(code: &str, packages: &[String]) -> Option<Miss> {
    let of_tests = facts::test_package_imports(code);
    if !of_tests.is_empty() {
        return Some(Miss::new(reasons::TEST_PACKAGE, Problem::ImportsTests { modules: of_tests }));
    }
    let network = network_use(&code_only(code), packages);
    (!network.is_empty()).then(|| Miss::new(reasons::NETWORK, Problem::Network { modules: network }))
}

impl Judge<'_> {
    /// Judges a test file of curate's: read, run on both sides, repeated and held to the relevance
    /// gate while it holds.
    pub async fn file(&self, name: &str, code: String) -> Result<Judged, JudgeError> {
        if let Some(miss) = static_miss(&code, self.packages) {
            return Ok(Judged::unrun(json!({"code": code}), miss));
        }
        let path = self.in_tree.map(|dir| in_tree_path(dir, name));
        let target = match &path {
            Some(path) => Target::InTree { path, code: &code },
            None => Target::File { name, code: &code },
        };
        let structural = test_kind(&code, self.packages).kind == TestKind::Structural;
        let reads = structural.then_some(code.as_str());
        let mut record = json!({"code": code});
        let (outcome, runs) = self.run_judged(target, self.trees, reads, &mut record).await?;
        Ok(Judged { record, outcome, runs: Some(runs) })
    }

    /// Judges one of the project's own tests, by its node id. `reviewed` is the reviewed tree with
    /// the fixed commit's test files in it (the test must exist on both sides); the fixed side is
    /// the fixed tree.
    pub async fn project_test(&self, node: &str, reviewed: &Path) -> Result<Judged, JudgeError> {
        let nodes = [node.to_string()];
        let target = Target::Project { nodes: &nodes };
        let trees = Trees { reviewed, fixed: self.trees.fixed };
        let mut record = json!({"node": node});
        let (outcome, runs) = self.run_judged(target, trees, None, &mut record).await?;
        Ok(Judged { record, outcome, runs: Some(runs) })
    }

    /// The project's tests `nodes` (in the order to try them) as candidates: screened by
    /// [`Judge::reaching`], then at most `max` judged on the reviewed tree with the fix's test side
    /// (`test_paths`, from the fixed tree) put in, until one is accepted. Every record, the screen's
    /// first, each with `written_by`, and the accepted node with its judgement.
    pub async fn first_project_test(
        &self,
        nodes: Vec<String>,
        test_paths: &[String],
        max: usize,
    ) -> Result<(Vec<Value>, Option<(String, Judged)>), JudgeError> {
        let mut records = Vec::new();
        let mut nodes = nodes;
        if let Some(reaching) = self.reaching(&nodes).await? {
            records.push(json!({
                "written_by": PROJECT_TEST,
                "result": "screened",
                "fail_to_pass": nodes.len(),
                "reaching": reaching,
            }));
            nodes = reaching;
        }
        if nodes.is_empty() {
            return Ok((records, None));
        }
        let with_tests = project::with_fixed_tests(self.trees.reviewed, self.trees.fixed, test_paths)
            .await
            .map_err(JudgeError::TestSide)?;
        for node in nodes.into_iter().take(max) {
            let mut j = self.project_test(&node, with_tests.path()).await?;
            j.record["written_by"] = json!(PROJECT_TEST);
            j.settle(self.texts);
            records.push(j.record.clone());
            if j.outcome.is_ok() {
                return Ok((records, Some((node, j))));
            }
        }
        Ok((records, None))
    }

    /// When a written test failed on the fixed code too and holds several checks: one candidate
    /// per check (at most `max`), each judged until one is accepted, recorded with `split` (which
    /// check, of how many).
    pub async fn one_check_at_a_time(
        &self,
        name: &str,
        missed: &Judged,
        max: usize,
    ) -> Result<Vec<Judged>, JudgeError> {
        let fixed_failed = matches!(&missed.outcome, Err(m) if m.reason == reasons::FAILED_BOTH || m.reason == reasons::INVERTED);
        let code = missed.record["code"].as_str().filter(|_| fixed_failed);
        let failed_at = missed.runs.as_ref().and_then(|(_, fixed)| split::failed_line(&fixed.output, name));
        let variants = code.map(|c| split::one_check_each_past(c, failed_at)).unwrap_or_default();
        let mut out: Vec<Judged> = Vec::new();
        for (k, variant) in variants.iter().enumerate().take(max) {
            let mut j = self.file(name, variant.clone()).await?;
            j.record["split"] = json!(format!("{} of {}", k + 1, variants.len()));
            let accepted = j.outcome.is_ok();
            out.push(j);
            if accepted {
                break;
            }
        }
        Ok(out)
    }

    /// Written tests that failed on the fixed code at a plain comparison, each expecting what the
    /// fixed code gave instead ([`expect::from_fixed`]): at most `max`, judged until one is
    /// accepted, recorded with `expected_from_fixed` (and the `split` they came from).
    pub async fn expecting_the_fixed(
        &self,
        name: &str,
        missed: &[Judged],
        max: usize,
    ) -> Result<Vec<Judged>, JudgeError> {
        let mut out: Vec<Judged> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for m in missed {
            if out.len() >= max {
                break;
            }
            let fixed_failed = matches!(&m.outcome, Err(miss) if miss.reason == reasons::FAILED_BOTH || miss.reason == reasons::INVERTED);
            let (Some(code), Some((_, fixed))) = (m.record["code"].as_str(), &m.runs) else { continue };
            if !fixed_failed {
                continue;
            }
            let Some(e) = expect::from_fixed(code, &fixed.output, name) else { continue };
            if seen.contains(&e.code) {
                continue;
            }
            seen.push(e.code.clone());
            let mut j = self.file(name, e.code.clone()).await?;
            j.record["expected_from_fixed"] = json!(e);
            if let Some(split) = m.record.get("split") {
                j.record["split"] = split.clone();
            }
            let accepted = j.outcome.is_ok();
            out.push(j);
            if accepted {
                break;
            }
        }
        Ok(out)
    }

    /// Of the project's tests `nodes`, those that execute a line of the comment's attributed changes
    /// on the fixed tree (from their setup to their teardown, so a module's top level does not
    /// count), in their order: the relevance gate's coverage check for all of them in one traced
    /// run, before any is judged. `None` when there is nothing to screen by (no attribution, no
    /// Python lines in it, or a run that traced no test).
    pub async fn reaching(&self, nodes: &[String]) -> Result<Option<Vec<String>>, JudgeError> {
        let Some(attributed) = &self.attribution else { return Ok(None) };
        let texts = partial::fixed_texts(&attributed.changes, self.trees.fixed);
        let targets = relevance::targets(&attributed.changes, |path: &str| texts.get(path).cloned());
        if targets.is_empty() {
            return Ok(None);
        }
        // Lines that run only at import are in no test's trace: nothing to screen by.
        if relevance::only_at_import(&targets, |path: &str| texts.get(path).cloned()) {
            return Ok(None);
        }
        let files: Vec<String> = targets.keys().cloned().collect();
        let timeout = self.timeout * 5;
        let per_node =
            trace_per_node(self.docker, self.images.fixed, self.trees.fixed, nodes, timeout, &files).await?;
        // A run that traced no test at all (killed, or the plugin never loaded) screens nothing.
        if per_node.is_empty() {
            return Ok(None);
        }
        let reach =
            |node: &String| per_node.get(node).is_some_and(|t| !relevance::covered(&targets, t).is_empty());
        Ok(Some(nodes.iter().filter(|n| reach(n)).cloned().collect()))
    }

    /// Runs `target` on both sides and judges it: the oracle, the repeats, the relevance gate
    /// (behavioural, or structural when `reads` is the test's text). The runs and evidence go into
    /// `record`.
    async fn run_judged(
        &self,
        target: Target<'_>,
        trees: Trees<'_>,
        reads: Option<&str>,
        record: &mut Value,
    ) -> Result<(Result<Verdict, Miss>, (TestRun, TestRun)), JudgeError> {
        let (reviewed, (after, traced)) = self.first_runs(target, trees, reads).await?;
        record["reviewed"] = run_record(&reviewed);
        record["fixed"] = run_record(&after);
        let judged = match judge(&reviewed, &after, self.packages) {
            Ok(()) => self.repeat(target, trees, &reviewed, record).await?,
            Err(miss) => Err(miss),
        };
        let judged = match (judged, &self.attribution) {
            (Ok(()), Some(attributed)) => {
                let traced = traced.map(|lines| (after.verdict, lines));
                self.relevance(attributed, target, trees, reads, traced, record).await?
            }
            (judged, _) => judged,
        };
        let verdict = reviewed.verdict;
        Ok((judged.map(|()| verdict), (reviewed, after)))
    }

    /// The first run of the target on both sides, at once, under hash seed 0. When the relevance
    /// gate would trace the fixed side (an attribution with Python lines, and a behavioural test),
    /// that run is the traced one: the gate reads its trace, and no run of its own is needed.
    async fn first_runs(
        &self,
        target: Target<'_>,
        trees: Trees<'_>,
        reads: Option<&str>,
    ) -> Result<(TestRun, (TestRun, Option<BTreeMap<String, Vec<u64>>>)), JudgeError> {
        let files = match (&self.attribution, reads) {
            (Some(attributed), None) => {
                let texts = partial::fixed_texts(&attributed.changes, trees.fixed);
                let targets = relevance::targets(&attributed.changes, |path: &str| texts.get(path).cloned());
                Some(targets.into_keys().collect::<Vec<String>>()).filter(|files| !files.is_empty())
            }
            _ => None,
        };
        let Some(files) = files else {
            let (reviewed, after) = self.both(target, trees, 0).await?;
            return Ok((reviewed, (after, None)));
        };
        let (docker, images, t) = (self.docker, self.images, self.timeout);
        let (reviewed, after) = tokio::join!(
            run_target(docker, images.reviewed, trees.reviewed, target, t, 0),
            run_target_traced(docker, images.fixed, trees.fixed, target, t, &files)
        );
        let (after, traced) = after?;
        Ok((reviewed?, (after, Some(traced))))
    }

    /// Runs the target on both sides at once, under Python hash seed `seed`.
    async fn both(
        &self,
        target: Target<'_>,
        trees: Trees<'_>,
        seed: u32,
    ) -> Result<(TestRun, TestRun), JudgeError> {
        let (docker, images, t) = (self.docker, self.images, self.timeout);
        let (reviewed, after) = tokio::join!(
            run_target(docker, images.reviewed, trees.reviewed, target, t, seed),
            run_target(docker, images.fixed, trees.fixed, target, t, seed)
        );
        Ok((reviewed?, after?))
    }

    /// Runs both sides `repeats - 1` more times, each under another hash seed; every run must give
    /// the first run's verdicts. Each side's repeats run in one container (see
    /// [`run_target_seeds`]), the two sides at once.
    async fn repeat(
        &self,
        target: Target<'_>,
        trees: Trees<'_>,
        first: &TestRun,
        record: &mut Value,
    ) -> Result<Result<(), Miss>, JudgeError> {
        let seeds: Vec<u32> = (1..self.repeats).collect();
        let (docker, images, t) = (self.docker, self.images, self.timeout);
        let (reviewed, after) = tokio::join!(
            run_target_seeds(docker, images.reviewed, trees.reviewed, target, t, &seeds),
            run_target_seeds(docker, images.fixed, trees.fixed, target, t, &seeds)
        );
        let mut seen = Vec::new();
        for (reviewed, after) in reviewed?.iter().zip(&after?) {
            seen.push(json!([reviewed.verdict, after.verdict]));
            if reviewed.verdict != first.verdict || after.verdict != Verdict::Passed {
                record["repeats"] = Value::Array(seen);
                let problem = Problem::Flaky { reviewed: verdict_name(reviewed), fixed: verdict_name(after) };
                return Ok(Err(Miss::new(reasons::FLAKY, problem)));
            }
        }
        record["repeats"] = Value::Array(seen);
        Ok(Ok(()))
    }

    /// The relevance gate: a behavioural test must execute a line of the changes that answer the
    /// comment (traced on the fixed commit) and must not pass with only them undone; a structural
    /// one (`reads`: its text) must name a definition they belong to.
    async fn relevance(
        &self,
        attributed: &Attributed<'_>,
        target: Target<'_>,
        trees: Trees<'_>,
        reads: Option<&str>,
        traced: Option<(Verdict, BTreeMap<String, Vec<u64>>)>,
        record: &mut Value,
    ) -> Result<Result<(), Miss>, JudgeError> {
        let changes = &attributed.changes;
        // Each attributed file read once; the gate's parts look it up.
        let texts = partial::fixed_texts(changes, trees.fixed);
        let fixed_file = |path: &str| texts.get(path).cloned();
        let targets = relevance::targets(changes, fixed_file);
        if targets.is_empty() {
            record["relevance"] = json!({"how": attributed.how, "checked": "no Python lines to reach"});
            return Ok(Ok(()));
        }
        let lines = relevance::shown(&targets, fixed_file, 12);
        let irrelevant = |problem: Problem| Miss::new(reasons::IRRELEVANT, problem);
        if let Some(text) = reads {
            let names = relevance::definitions(&targets, fixed_file);
            let read = names.iter().find(|n| text.contains(n.as_str())).cloned();
            record["relevance"] =
                json!({"how": attributed.how, "targets": targets, "definitions": names, "named": read});
            return Ok(match read {
                Some(_) => Ok(()),
                None => Err(irrelevant(Problem::NotRead { names, lines })),
            });
        }
        let (verdict, traced) = match traced {
            Some(first) => first,
            None => {
                let files: Vec<String> = targets.keys().cloned().collect();
                let docker = self.docker;
                let (run, traced) =
                    run_target_traced(docker, self.images.fixed, trees.fixed, target, self.timeout, &files)
                        .await?;
                (run.verdict, traced)
            }
        };
        let covered = relevance::covered(&targets, &traced);
        record["relevance"] = json!({
            "how": attributed.how,
            "targets": targets,
            "covered": covered,
            "traced_verdict": verdict,
        });
        let never_runs = || irrelevant(Problem::NeverRuns { lines: lines.clone() });
        // Lines that run only at import are in no trace: then the partial revert decides alone.
        let at_import = covered.is_empty() && relevance::only_at_import(&targets, fixed_file);
        if covered.is_empty() && !at_import {
            return Ok(Err(never_runs()));
        }
        if at_import {
            record["relevance"]["only_at_import"] = json!(true);
        }
        let Some(partial) = self.partial_revert(changes, &texts, target, trees).await? else {
            record["relevance"]["partial_revert"] = json!("not revertable alone");
            // With no trace to go by either, nothing says the test depends on the change.
            return Ok(if at_import { Err(never_runs()) } else { Ok(()) });
        };
        record["relevance"]["partial_revert"] = json!(partial);
        Ok(match partial {
            Verdict::Passed => Err(irrelevant(Problem::OtherPart { lines: lines.clone() })),
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
        changes: &[Change<'_>],
        fixed: &BTreeMap<&str, String>,
        target: Target<'_>,
        trees: Trees<'_>,
    ) -> Result<Option<Verdict>, JudgeError> {
        // A compiled source undone would still run its fixed build.
        if changes.iter().any(|c| crate::environment::tree_image::is_compiled_source(c.path)) {
            return Ok(None);
        }
        let work = partial::tree(trees.reviewed, trees.fixed, changes, fixed)
            .await
            .map_err(JudgeError::PartialTree)?;
        let Some(work) = work else { return Ok(None) };
        // On the fixed build: the changes undone alone are Python ones.
        let run = run_target(self.docker, self.images.fixed, work.path(), target, self.timeout, 0).await?;
        Ok(Some(run.verdict))
    }
}
