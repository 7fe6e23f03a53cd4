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

pub fn gold(path: &Path, stage: Option<&str>) -> Result<u8, Failure> {
    let (pipeline, context) = crate::context::load(path)?;
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
    let text =
        std::fs::read_to_string(&gold_path).with_context(|| format!("reading {}", gold_path.display()))?;
    let mut comments = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let c: GoldComment =
            serde_json::from_str(line).with_context(|| format!("{}:{}", gold_path.display(), i + 1))?;
        comments.push(c);
    }
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
    let results = runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..comments.len() {
            let (filter, comments, bar) = (filter.clone(), comments.clone(), bar.clone());
            set.spawn(async move {
                let c = &comments[i];
                let fields = Fields {
                    pr_title: &c.pr_title,
                    path: &c.path,
                    diff_hunk: &c.diff_hunk,
                    comment: &c.comment,
                };
                let judged = filter.judge(&fields).await;
                bar.inc(1);
                (i, judged)
            });
        }
        let mut out = Vec::new();
        while let Some(r) = set.join_next().await {
            if let Ok(r) = r {
                out.push(r);
            }
        }
        out.sort_by_key(|(i, _)| *i);
        out
    });
    bar.finish_and_clear();

    let (mut tune, mut heldout, mut errors) = (Confusion::default(), Confusion::default(), Vec::new());
    let mut wrong = Vec::new();
    for (i, judged) in results {
        let c = &comments[i];
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
