//! `curate gold`: runs a review_filter stage's prompt over its labelled gold set and prints
//! precision, recall, F1 and the confusion matrix, for the tuning and the held-out split. Fails when
//! held-out precision is under the stage's bar.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use serde::Deserialize;

use super::{Failure, exit};
use crate::engine::spec::parse_config;
use crate::stages::review_filter::{Config, Fields, Filter, Judgement};

#[derive(Debug, Deserialize)]
struct GoldComment {
    id: String,
    split: String,
    #[serde(default)]
    pr_title: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    diff_hunk: String,
    comment: String,
    label: String,
    category: Option<String>,
}

/// Keep is the positive class.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Confusion {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
    pub tn: usize,
    /// Answers that could not be read (counted as drops, as the stage does).
    pub unparseable: usize,
    /// Kept by both, with the same category.
    pub same_category: usize,
}

impl Confusion {
    pub fn add(&mut self, gold_keep: bool, predicted_keep: bool) {
        match (gold_keep, predicted_keep) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    fn ratio(a: usize, b: usize) -> f64 {
        if b == 0 { 0.0 } else { a as f64 / b as f64 }
    }

    pub fn precision(&self) -> f64 {
        Confusion::ratio(self.tp, self.tp + self.fp)
    }

    pub fn recall(&self) -> f64 {
        Confusion::ratio(self.tp, self.tp + self.fn_)
    }

    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) }
    }

    pub fn total(&self) -> usize {
        self.tp + self.fp + self.fn_ + self.tn
    }
}

fn row(name: &str, c: &Confusion) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {}/{} |",
        c.total(),
        c.tp,
        c.fp,
        c.fn_,
        c.tn,
        c.unparseable,
        c.precision(),
        c.recall(),
        c.f1(),
        c.same_category,
        c.tp
    )
}

/// The gold set at `path`: one labelled comment a line, each in the `tune` or the `heldout` split.
fn read_gold(path: &Path) -> Result<Vec<GoldComment>, Failure> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut comments = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = || format!("{}:{}", path.display(), i + 1);
        let c: GoldComment = serde_json::from_str(line).with_context(at)?;
        // A misspelt split would silently count as tuning and flatter the held-out figures.
        if !["tune", "heldout"].contains(&c.split.as_str()) {
            return Err(anyhow!("{}: split `{}` is neither `tune` nor `heldout`", at(), c.split).into());
        }
        if !["keep", "drop"].contains(&c.label.as_str()) {
            return Err(anyhow!("{}: label `{}` is neither `keep` nor `drop`", at(), c.label).into());
        }
        comments.push(c);
    }
    Ok(comments)
}

/// Judges every comment, in its order.
async fn judge_all(
    filter: &Arc<Filter>,
    comments: &Arc<Vec<GoldComment>>,
    bar: &indicatif::ProgressBar,
) -> Vec<Result<Judgement, String>> {
    in_order(comments.len(), |i| {
        let (filter, comments, bar) = (filter.clone(), comments.clone(), bar.clone());
        async move {
            let c = &comments[i];
            let fields =
                Fields { pr_title: &c.pr_title, path: &c.path, diff_hunk: &c.diff_hunk, comment: &c.comment };
            let judged = filter.judge(&fields).await.map_err(|e| e.to_string());
            bar.inc(1);
            judged
        }
    })
    .await
}

/// Runs `task(i)` for `i` in `0..n` at once and gives the results in order of `i`. A task that
/// panics is its own error, so no comment drops out of the figures unseen.
async fn in_order<T, F, Fut>(n: usize, task: F) -> Vec<Result<T, String>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
{
    let handles: Vec<_> = (0..n).map(|i| tokio::spawn(task(i))).collect();
    let mut out = Vec::with_capacity(n);
    for handle in handles {
        out.push(handle.await.unwrap_or_else(|e| Err(format!("the judge task failed: {e}"))));
    }
    out
}

/// The confusion matrices of both splits, the disagreements and the comments with no answer.
struct Tally {
    tune: Confusion,
    heldout: Confusion,
    wrong: Vec<String>,
    errors: Vec<String>,
}

fn tally(comments: &[GoldComment], results: Vec<Result<Judgement, String>>) -> Tally {
    let (mut tune, mut heldout, mut errors) = (Confusion::default(), Confusion::default(), Vec::new());
    let mut wrong = Vec::new();
    for (c, judged) in comments.iter().zip(results) {
        let gold_keep = c.label == "keep";
        let split = if c.split == "heldout" { &mut heldout } else { &mut tune };
        match judged {
            Ok(Judgement::Verdict(v, _)) => {
                split.add(gold_keep, v.keep);
                if gold_keep && v.keep && v.category.is_some() && v.category == c.category {
                    split.same_category += 1;
                }
                if gold_keep != v.keep {
                    wrong.push(format!(
                        "{} ({}): gold {}, model {}: {}",
                        c.id,
                        c.split,
                        c.label,
                        if v.keep { "keep" } else { "drop" },
                        v.reason
                    ));
                }
            }
            Ok(Judgement::Unparseable { .. }) => {
                split.add(gold_keep, false);
                split.unparseable += 1;
            }
            Err(e) => errors.push(format!("{}: {e}", c.id)),
        }
    }
    Tally { tune, heldout, wrong, errors }
}

pub fn gold(path: &Path, stage: Option<&str>) -> Result<u8, Failure> {
    let (pipeline, context) = crate::curation::load(path)?;
    let plan = pipeline
        .stages
        .iter()
        .find(|s| stage.map_or(s.kind == "review_filter", |id| &*s.id == id))
        .ok_or_else(|| {
            anyhow!(
                "{}: no review_filter stage{}",
                path.display(),
                stage.map(|s| format!(" `{s}`")).unwrap_or_default()
            )
        })?;
    if plan.kind != "review_filter" {
        return Err(anyhow!("stage `{}` is a {} stage, not review_filter", plan.id, plan.kind).into());
    }
    let config: Config = parse_config(&plan.config).map_err(|e| anyhow!("stage `{}`: {e}", plan.id))?;
    let gold_path = pipeline.dir.join(
        config
            .gold
            .clone()
            .ok_or_else(|| anyhow!("stage `{}` names no `gold:` set to measure on", plan.id))?,
    );
    let comments = read_gold(&gold_path)?;
    let ctx = context.for_stage(&plan.id);
    let filter = Arc::new(Filter::build(&ctx, &config).map_err(|e| anyhow!("stage `{}`: {e}", plan.id))?);
    eprintln!(
        "gold: {} comments from {}, stage `{}`, model {}",
        comments.len(),
        gold_path.display(),
        plan.id,
        filter.llm.settings.model
    );

    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("async runtime")?;
    let bar = indicatif::ProgressBar::new(comments.len() as u64);
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let comments = Arc::new(comments);
    let results = runtime.block_on(judge_all(&filter, &comments, &bar));
    bar.finish_and_clear();
    let Tally { tune, heldout, wrong, errors } = tally(&comments, results);
    if !errors.is_empty() {
        for e in errors.iter().take(5) {
            eprintln!("error: {e}");
        }
        return Err(anyhow!("{} of {} gold comments got no answer", errors.len(), comments.len()).into());
    }
    let mut all = tune;
    for (a, b) in [
        (&mut all.tp, heldout.tp),
        (&mut all.fp, heldout.fp),
        (&mut all.fn_, heldout.fn_),
        (&mut all.tn, heldout.tn),
    ] {
        *a += b;
    }
    all.unparseable += heldout.unparseable;
    all.same_category += heldout.same_category;

    println!("| split | n | TP | FP | FN | TN | unparseable | precision | recall | F1 | same category |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!("{}", row("tune", &tune));
    println!("{}", row("heldout", &heldout));
    println!("{}", row("all", &all));
    if !wrong.is_empty() {
        println!("\nDisagreements ({}):", wrong.len());
        for w in &wrong {
            println!("- {w}");
        }
    }
    let precision = heldout.precision();
    let verdict = if precision >= config.precision_bar { "meets" } else { "is below" };
    println!("\nheld-out precision {precision:.3} {verdict} the bar of {:.2}", config.precision_bar);
    Ok(if precision >= config.precision_bar { exit::OK } else { exit::ERRORED })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gold_line(id: &str, split: &str, label: &str) -> String {
        format!(r#"{{"id": "{id}", "split": "{split}", "comment": "c", "label": "{label}"}}"#)
    }

    #[test]
    fn a_split_or_label_out_of_the_two_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.jsonl");
        let lines = [gold_line("a", "tune", "keep"), gold_line("b", "held-out", "drop")];
        std::fs::write(&file, lines.join("\n")).unwrap();
        let Err(Failure::Other(e)) = read_gold(&file) else { panic!("accepted a split of `held-out`") };
        assert!(
            e.to_string().ends_with("g.jsonl:2: split `held-out` is neither `tune` nor `heldout`"),
            "{e}"
        );
        std::fs::write(&file, gold_line("a", "heldout", "maybe")).unwrap();
        assert!(read_gold(&file).is_err());
        std::fs::write(&file, lines[0].clone()).unwrap();
        assert_eq!(read_gold(&file).unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_task_that_panics_keeps_its_place_as_an_error() {
        let out = in_order(3, |i| async move {
            if i == 1 {
                panic!("boom");
            }
            Ok::<usize, String>(i * 10)
        })
        .await;
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], Ok(0));
        assert!(out[1].as_ref().is_err_and(|e| e.starts_with("the judge task failed")), "{:?}", out[1]);
        assert_eq!(out[2], Ok(20));
    }

    #[test]
    fn a_comment_without_an_answer_is_an_error_not_a_gap_in_the_figures() {
        let comments: Vec<GoldComment> = ["a", "b"]
            .iter()
            .map(|id| serde_json::from_str(&gold_line(id, "heldout", "keep")).unwrap())
            .collect();
        let t = tally(&comments, vec![Err("the judge task failed: panicked".into()), Err("down".into())]);
        assert_eq!(t.errors, vec!["a: the judge task failed: panicked", "b: down"]);
        assert_eq!(t.heldout.total(), 0);
    }

    #[test]
    fn precision_recall_and_f1() {
        let mut c = Confusion::default();
        for (g, p) in
            [(true, true), (true, true), (true, false), (false, true), (false, false), (false, false)]
        {
            c.add(g, p);
        }
        assert_eq!((c.tp, c.fp, c.fn_, c.tn), (2, 1, 1, 2));
        assert!((c.precision() - 2.0 / 3.0).abs() < 1e-9);
        assert!((c.recall() - 2.0 / 3.0).abs() < 1e-9);
        assert!((c.f1() - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(Confusion::default().precision(), 0.0);
    }
}
