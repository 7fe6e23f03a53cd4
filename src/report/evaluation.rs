//! The results of an evaluation pipeline: the paper's Table 5 (per reviewer: comments in total and
//! per PR, pass rate on behavioural tests, on structural tests, overall), the pass rate by review
//! category (Figure 7), and which tests each reviewer's comments led to passing, with their union
//! and what only one reviewer got (Figure 5). Read from the kept outputs of `score` stages. For
//! contrast, the text similarity of each reviewer's comments to the human ones (the paper's Table
//! 2), read from the `review` stages.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::Serialize;

use crate::engine::flow::{Flow, TaskState};
use crate::record::PullRequest;
use crate::review::similarity::Similarity;
use crate::review::worth::{Human, Worth};
use crate::review::{Finding, nearest};
use crate::stages::contract::{self, Contract};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rate {
    pub passed: usize,
    pub total: usize,
}

impl Rate {
    fn add(&mut self, passed: bool) {
        self.total += 1;
        self.passed += usize::from(passed);
    }

    pub fn percent(&self) -> Option<f64> {
        (self.total > 0).then(|| (1000.0 * self.passed as f64 / self.total as f64).round() / 10.0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewerRow {
    pub reviewer: String,
    pub stage: String,
    pub instances: usize,
    pub comments: u64,
    pub comments_per_pr: f64,
    /// Instances whose review failed (crash, timeout, nothing printed): scored zero.
    pub failed_reviews: usize,
    pub behavioural: Rate,
    pub structural: Rate,
    pub overall: Rate,
    /// The tests passed on revisions that kept the project's passing tests passing (the regression
    /// check of validation); the same as `overall` where no instance names such tests.
    pub kept_project: Rate,
    pub by_category: BTreeMap<String, Rate>,
    /// The tests (by comment id) this reviewer's revision passed.
    pub passed_tests: BTreeSet<String>,
    /// Mean similarity of its comments to the nearest human comment; `None` without a review
    /// stage of the same reviewer or without comments.
    pub text_similarity: Option<TextSimilarity>,
    /// The no-review control (`reviewer: {kind: none}`).
    pub control: bool,
    /// What its comments were worth; `None` for the control and without review and revise stages
    /// of the same reviewer.
    pub worth: Option<Worth>,
}

impl ReviewerRow {
    /// The row of the score stage `stage`, named after it until its outputs name the reviewer,
    /// with nothing counted yet.
    pub fn new(stage: &str) -> ReviewerRow {
        ReviewerRow {
            reviewer: stage.to_string(),
            stage: stage.to_string(),
            instances: 0,
            comments: 0,
            comments_per_pr: 0.0,
            failed_reviews: 0,
            behavioural: Rate::default(),
            structural: Rate::default(),
            overall: Rate::default(),
            kept_project: Rate::default(),
            by_category: BTreeMap::new(),
            passed_tests: BTreeSet::new(),
            text_similarity: None,
            control: false,
            worth: None,
        }
    }
}

/// Mean BLEU-4, ROUGE-L and chrF over a reviewer's comments, each paired with the nearest human
/// comment of its instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextSimilarity {
    pub pairs: usize,
    pub mean: Similarity,
}

/// Text similarity per reviewer name, over the kept outputs of every `review` stage.
fn text_similarity(flow: &Flow, states: &[Vec<TaskState>]) -> BTreeMap<String, TextSimilarity> {
    let parse = |v: &serde_json::Value| serde_json::from_value::<Vec<Finding>>(v.clone()).unwrap_or_default();
    let mut sums: BTreeMap<String, (usize, Similarity)> = BTreeMap::new();
    for (s, _) in
        flow.pipeline.stages.iter().enumerate().filter(|(_, p)| p.provides == Some(contract::Review::NAME))
    {
        for x in flow.tasks(s) {
            let TaskState::Kept { output, .. } = &states[s][x] else { continue };
            let Some(name) = output["reviewer"].as_str() else { continue };
            let humans: Vec<Finding> = human_comments(flow, x).into_iter().map(|h| h.comment).collect();
            let (pairs, sum) = sums.entry(name.to_string()).or_default();
            for finding in parse(&output["comments"]) {
                let Some(human) = nearest(&finding, &humans) else { continue };
                let one = Similarity::between(&finding.body, &human.body);
                *pairs += 1;
                sum.bleu4 += one.bleu4;
                sum.rouge_l += one.rouge_l;
                sum.chrf += one.chrf;
            }
        }
    }
    let round = |v: f64, n: usize| (10.0 * v / n as f64).round() / 10.0;
    sums.into_iter()
        .filter(|(_, (pairs, _))| *pairs > 0)
        .map(|(name, (pairs, sum))| {
            let mean = Similarity {
                bleu4: round(sum.bleu4, pairs),
                rouge_l: round(sum.rouge_l, pairs),
                chrf: round(sum.chrf, pairs),
            };
            (name, TextSimilarity { pairs, mean })
        })
        .collect()
}

/// The kept outputs, by item, of the stages that provide `contract` for the reviewer `name`.
fn outputs_of<'s>(
    flow: &Flow,
    states: &'s [Vec<TaskState>],
    contract: &str,
    name: &str,
) -> BTreeMap<usize, &'s serde_json::Value> {
    let mut found = BTreeMap::new();
    for (s, _) in flow.pipeline.stages.iter().enumerate().filter(|(_, p)| p.provides == Some(contract)) {
        for x in flow.tasks(s) {
            if let TaskState::Kept { output, .. } = &states[s][x]
                && output["reviewer"].as_str() == Some(name)
            {
                found.insert(x, &**output);
            }
        }
    }
    found
}

/// A human comment of a benchmark instance, with the id its test is known by.
#[derive(serde::Deserialize)]
struct HumanComment {
    id: Option<String>,
    #[serde(flatten)]
    comment: Finding,
}

/// The human comments of the benchmark instance `x`, with their ids; none when it is not one.
fn human_comments(flow: &Flow, x: usize) -> Vec<HumanComment> {
    let pr = serde_json::from_value::<PullRequest>(flow.data.items[x].data.clone()).ok();
    pr.and_then(|pr| serde_json::from_value(pr.extra.get("benchmark")?["human_comments"].clone()).ok())
        .unwrap_or_default()
}

/// What the reviewer's comments were worth over the instances it was scored on (`passed`: the
/// tests, by item, its revision passed); `None` without its review and revise outputs.
fn worth(
    flow: &Flow,
    states: &[Vec<TaskState>],
    name: &str,
    passed: &BTreeMap<usize, BTreeSet<String>>,
) -> Option<Worth> {
    let reviews = outputs_of(flow, states, contract::Review::NAME, name);
    let revisions = outputs_of(flow, states, contract::Revision::NAME, name);
    if reviews.is_empty() {
        return None;
    }
    let mut worth = Worth::default();
    for (x, review) in reviews {
        let comments: Vec<Finding> = serde_json::from_value(review["comments"].clone()).unwrap_or_default();
        let patch = revisions.get(&x).and_then(|r| r["patch"].as_str()).unwrap_or_default();
        let humans = human_comments(flow, x);
        let none = BTreeSet::new();
        let passed = passed.get(&x).unwrap_or(&none);
        let humans: Vec<Human> = humans
            .iter()
            .map(|h| Human {
                comment: &h.comment,
                test_passed: h.id.as_ref().is_some_and(|id| passed.contains(id)),
            })
            .collect();
        worth.add(&comments, patch, &humans);
    }
    Some(worth)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub reviewers: Vec<ReviewerRow>,
    /// Tests in the benchmark, and those some reviewer passed.
    pub tests: usize,
    pub union: usize,
    /// Scored revisions the regression check ran on, over all reviewers.
    pub regression_checked: usize,
}

/// The evaluation, or `None` when the pipeline has no `score` stage.
pub fn evaluation(flow: &Flow, states: &[Vec<TaskState>]) -> Option<Evaluation> {
    let mut reviewers = Vec::new();
    let mut all_tests = BTreeSet::new();
    let mut regression_checked = 0;
    for (s, plan) in
        flow.pipeline.stages.iter().enumerate().filter(|(_, p)| p.provides == Some(contract::Score::NAME))
    {
        let mut row = ReviewerRow::new(&plan.id);
        let mut passed_by_item: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        for x in flow.tasks(s) {
            let TaskState::Kept { output, .. } = &states[s][x] else { continue };
            if let Some(name) = output["reviewer"].as_str() {
                row.reviewer = name.to_string();
            }
            row.instances += 1;
            row.control |= output["control"].as_bool().unwrap_or(false);
            row.comments += output["comments"].as_u64().unwrap_or(0);
            row.failed_reviews += usize::from(!output["review_failure"].is_null());
            let regression = &output["regression"];
            regression_checked += usize::from(regression.is_object());
            let broke = regression["broken"].as_array().is_some_and(|b| !b.is_empty());
            for t in output["tests"].as_array().map(Vec::as_slice).unwrap_or_default() {
                let passed = t["passed"].as_bool().unwrap_or(false);
                let id = t["comment"].as_str().unwrap_or_default().to_string();
                all_tests.insert(id.clone());
                if passed {
                    passed_by_item.entry(x).or_default().insert(id.clone());
                    row.passed_tests.insert(id);
                }
                row.overall.add(passed);
                row.kept_project.add(passed && !broke);
                match t["kind"].as_str() {
                    Some("behavioural") => row.behavioural.add(passed),
                    _ => row.structural.add(passed),
                }
                let category = t["category"].as_str().unwrap_or("uncategorised").to_string();
                row.by_category.entry(category).or_default().add(passed);
            }
        }
        if row.instances > 0 {
            row.comments_per_pr = (100.0 * row.comments as f64 / row.instances as f64).round() / 100.0;
        }
        if !row.control {
            row.worth = worth(flow, states, &row.reviewer, &passed_by_item);
        }
        reviewers.push(row);
    }
    if reviewers.is_empty() {
        return None;
    }
    let similarity = text_similarity(flow, states);
    for row in &mut reviewers {
        row.text_similarity = similarity.get(&row.reviewer).cloned();
    }
    let union = reviewers.iter().flat_map(|r| r.passed_tests.iter()).collect::<BTreeSet<_>>().len();
    Some(Evaluation { reviewers, tests: all_tests.len(), union, regression_checked })
}

fn pct(r: &Rate) -> String {
    r.percent().map_or("–".into(), |p| format!("{p:.1}% ({}/{})", r.passed, r.total))
}

impl Evaluation {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        self.table5(&mut out);
        self.categories(&mut out);
        self.figure5(&mut out);
        self.worth(&mut out);
        self.similarity(&mut out);
        out
    }

    /// The no-review control's row, when the evaluation has one.
    fn control(&self) -> Option<&ReviewerRow> {
        self.reviewers.iter().find(|r| r.control)
    }

    /// Table 5, and what the control passes.
    fn table5(&self, out: &mut String) {
        let _ = writeln!(out, "## Review tools (Table 5)\n");
        // The regression check's column only where it ran: an export without the project's
        // tests has nothing to check.
        let checked = self.regression_checked > 0;
        let (head, rule) = match checked {
            true => (" Project's tests kept |", "---:|"),
            false => ("", ""),
        };
        let _ = writeln!(
            out,
            "| Reviewer | Instances | Comments | Per PR | Failed reviews | Behavioural | Structural | Overall |{head}"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|{rule}");
        for r in &self.reviewers {
            let kept = match checked {
                true => format!(" {} |", pct(&r.kept_project)),
                false => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} | {} | {} | {} | {} |{kept}",
                r.reviewer,
                r.instances,
                r.comments,
                r.comments_per_pr,
                r.failed_reviews,
                pct(&r.behavioural),
                pct(&r.structural),
                pct(&r.overall)
            );
        }
        if checked {
            let _ = writeln!(
                out,
                "\n\"Project's tests kept\" counts a passed test only when the revision also kept passing the project's tests that passed on the reviewed code (SWE-bench's PASS_TO_PASS; the regression check of validation), run on {} scored revision(s).",
                self.regression_checked
            );
        }
        if let Some(c) = self.control() {
            let _ = writeln!(
                out,
                "\nThe no-review control ({}) revises with no review at all: the {} of {} tests it passes measure the agent, not a review; a reviewer's passes beyond them are what its review did.",
                c.reviewer,
                c.passed_tests.len(),
                self.tests
            );
        }
    }

    /// Figure 7 as a table: the pass rate by review category.
    fn categories(&self, out: &mut String) {
        let categories: BTreeSet<&String> =
            self.reviewers.iter().flat_map(|r| r.by_category.keys()).collect();
        if !categories.is_empty() {
            let _ = writeln!(out, "\n## Pass rate by review category (Figure 7)\n");
            let names: Vec<&str> = self.reviewers.iter().map(|r| r.reviewer.as_str()).collect();
            let _ = writeln!(out, "| Category | {} |", names.join(" | "));
            let _ = writeln!(out, "|---|{}", "---:|".repeat(names.len()));
            for c in categories {
                let cells: Vec<String> =
                    self.reviewers.iter().map(|r| r.by_category.get(c).map_or("–".into(), pct)).collect();
                let _ = writeln!(out, "| {c} | {} |", cells.join(" | "));
            }
        }
    }

    /// Figure 5 as a table: the tests each reviewer passed, alone, and with the control.
    fn figure5(&self, out: &mut String) {
        let _ = writeln!(out, "\n## Tests passed and overlaps (Figure 5)\n");
        let control = self.control();
        let (column, rule) = match control {
            Some(_) => (" Passed by the control too |", "---:|"),
            None => ("", ""),
        };
        let _ = writeln!(
            out,
            "| Reviewer | Tests passed | Passed by no other reviewer |{column}\n|---|---:|---:|{rule}"
        );
        for r in &self.reviewers {
            let only = r
                .passed_tests
                .iter()
                .filter(|t| !self.reviewers.iter().any(|o| o.stage != r.stage && o.passed_tests.contains(*t)))
                .count();
            let _ = write!(out, "| {} | {} | {only} |", r.reviewer, r.passed_tests.len());
            if let Some(c) = control {
                let _ = write!(out, " {} |", r.passed_tests.intersection(&c.passed_tests).count());
            }
            out.push('\n');
        }
        let _ =
            writeln!(out, "\nUnion: {} of {} tests passed by at least one reviewer.", self.union, self.tests);
        if let Some(c) = control.filter(|c| !c.passed_tests.is_empty()) {
            let ids: Vec<&str> = c.passed_tests.iter().map(String::as_str).collect();
            let _ =
                writeln!(out, "Passed with no review (they do not measure a review): {}.", ids.join(", "));
        }
    }

    /// What each reviewer's comments were worth.
    fn worth(&self, out: &mut String) {
        if self.reviewers.iter().any(|r| r.worth.is_some()) {
            let _ = writeln!(out, "\n## What the comments were worth\n");
            let _ = writeln!(
                out,
                "Acted on: the revision changed the comment's file within {} lines of it. Led to a passing test: acted on, and within {} lines of a human comment whose test then passed. Precision, recall and F1: line overlap with the human comments (same file, within {} lines), as AACR-Bench scores them.\n",
                crate::review::worth::ACTED_LINES,
                crate::review::worth::NEAR_LINES,
                crate::review::worth::NEAR_LINES
            );
            let _ = writeln!(
                out,
                "| Reviewer | Comments | Per PR | Acted on | Led to a passing test | Precision | Recall | F1 |\n|---|---:|---:|---:|---:|---:|---:|---:|"
            );
            let percent = |v: Option<f64>| v.map_or("–".into(), |p| format!("{p:.1}%"));
            for r in &self.reviewers {
                let Some(w) = &r.worth else { continue };
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.2} | {} | {} | {} | {} | {} |",
                    r.reviewer,
                    w.comments,
                    r.comments_per_pr,
                    w.acted_on,
                    w.led_to_pass,
                    percent(w.precision()),
                    percent(w.recall()),
                    percent(w.f1())
                );
            }
        }
    }

    /// Text similarity to the human comments (Table 2), for contrast.
    fn similarity(&self, out: &mut String) {
        if self.reviewers.iter().any(|r| r.text_similarity.is_some()) {
            let _ = writeln!(out, "\n## Text similarity to the human comments (Table 2, for contrast)\n");
            let _ = writeln!(
                out,
                "Each comment against the human comment nearest in file and line, 0–100; the executable pass rates above are what counts.\n"
            );
            let _ =
                writeln!(out, "| Reviewer | Pairs | BLEU-4 | ROUGE-L | chrF |\n|---|---:|---:|---:|---:|");
            for r in &self.reviewers {
                let Some(t) = &r.text_similarity else { continue };
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.1} | {:.1} | {:.1} |",
                    r.reviewer, t.pairs, t.mean.bleu4, t.mean.rouge_l, t.mean.chrf
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_counted_by_kind_and_category() {
        let mut r = Rate::default();
        r.add(true);
        r.add(false);
        r.add(false);
        assert_eq!(r.percent(), Some(33.3));
        assert_eq!(Rate::default().percent(), None);
        assert_eq!(pct(&r), "33.3% (1/3)");
    }

    fn row(name: &str, passed: &[&str], control: bool, worth: Option<Worth>) -> ReviewerRow {
        ReviewerRow {
            reviewer: name.into(),
            instances: 2,
            comments: worth.as_ref().map_or(0, |w| w.comments as u64),
            passed_tests: passed.iter().map(|t| t.to_string()).collect(),
            control,
            worth,
            ..ReviewerRow::new(&format!("score_{name}"))
        }
    }

    #[test]
    fn the_control_stands_beside_every_reviewer_and_its_passes_are_named() {
        let worth = Worth {
            comments: 4,
            acted_on: 2,
            led_to_pass: 1,
            on_human_place: 1,
            human_comments: 2,
            humans_found: 1,
        };
        let e = Evaluation {
            reviewers: vec![
                row("human", &["t1", "t2"], false, None),
                row("tool", &["t2", "t3"], false, Some(worth)),
                row("none", &["t2"], true, None),
            ],
            tests: 4,
            union: 3,
            regression_checked: 0,
        };
        let md = e.to_markdown();
        assert!(!md.contains("Project's tests kept"), "no column for a check that never ran: {md}");
        assert!(
            md.contains("The no-review control (none) revises with no review at all: the 1 of 4 tests"),
            "{md}"
        );
        assert!(
            md.contains(
                "| Reviewer | Tests passed | Passed by no other reviewer | Passed by the control too |"
            ),
            "{md}"
        );
        assert!(md.contains("| human | 2 | 1 | 1 |\n| tool | 2 | 1 | 1 |\n| none | 1 | 0 | 1 |"), "{md}");
        assert!(md.contains("Passed with no review (they do not measure a review): t2."), "{md}");
        // Only the reviewer with comments has a worth row: precision 1/4, recall 1/2.
        assert!(md.contains("| tool | 4 | 0.00 | 2 | 1 | 25.0% | 50.0% | 33.3% |"), "{md}");
        assert!(!md.contains("| none | 0 |"), "{md}");
        let plain = Evaluation {
            reviewers: vec![row("human", &["t1"], false, None)],
            tests: 1,
            union: 1,
            regression_checked: 0,
        };
        assert!(!plain.to_markdown().contains("control"));
    }

    #[test]
    fn a_pass_on_a_revision_that_broke_the_projects_tests_is_counted_apart() {
        let mut human = row("human", &["t1", "t2"], false, None);
        human.overall = Rate { passed: 2, total: 2 };
        human.kept_project = Rate { passed: 1, total: 2 };
        let e = Evaluation { reviewers: vec![human], tests: 2, union: 2, regression_checked: 2 };
        let md = e.to_markdown();
        assert!(md.contains("| Overall | Project's tests kept |"), "{md}");
        assert!(md.contains("| 100.0% (2/2) | 50.0% (1/2) |"), "{md}");
        assert!(md.contains("run on 2 scored revision(s)"), "{md}");
    }
}
