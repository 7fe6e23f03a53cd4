//! `curate gold`: runs a review_filter stage's prompt over its labelled gold set and prints
//! precision, recall, F1 and the confusion matrix, for the tuning and the held-out split. Fails when
//! held-out precision is under the stage's bar.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use serde::Deserialize;
use sha2::Digest;

use super::{Failure, exit};
use crate::engine::spec::parse_config;
use crate::llm::LlmError;
use crate::record::ReviewComment;
use crate::stages::review_filter::calibration::{self, Calibration, Confusion};
use crate::stages::review_filter::fix::{self, FixChange};
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
    /// Whether the PR's own author wrote it, where the row says.
    #[serde(default)]
    by_pr_author: Option<bool>,
    /// Whether it answers an earlier comment of its thread, where the row says.
    #[serde(default)]
    is_reply: Option<bool>,
    /// The unified diff of the commented file from the reviewed commit to the fix (empty: the fix
    /// left the file alone), where the row says; the commented lines are placed by `diff_hunk`.
    #[serde(default)]
    fix_diff: Option<String>,
    /// The commented line on the reviewed side, where the row says.
    #[serde(default)]
    line: Option<u64>,
}

impl GoldComment {
    /// What the row's fix did at the commented lines (unknown without `fix_diff`). Where the diff
    /// shows the whole reviewed file ([`fix::reviewed_text`]) the lines are placed in it and their
    /// definition read, as the stage does from the mirror; otherwise the hunk's last line is the
    /// comment's, and only the lines near it count.
    fn fix(&self) -> FixChange {
        let Some(diff) = self.fix_diff.as_deref() else { return FixChange::Unknown };
        let comment = ReviewComment {
            text: self.comment.clone(),
            path: Some(self.path.clone()),
            diff_hunk: Some(self.diff_hunk.clone()),
            line: self.line,
            start_line: None,
            original_line: None,
            original_start_line: None,
            index: 1,
            by_pr_author: self.by_pr_author,
            is_reply: self.is_reply,
            extra: Default::default(),
        };
        fix::at_comment(diff, &comment)
    }
}

/// A split's figures for one way of deciding.
fn row(name: &str, c: &Confusion) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |",
        c.total(),
        c.tp,
        c.fp,
        c.fn_,
        c.tn,
        c.precision(),
        c.recall(),
        c.f1()
    )
}

const HEADER: &str = "| split | n | TP | FP | FN | TN | precision | recall | F1 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|";

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

/// Why a gold comment has no judgement.
#[derive(Debug, thiserror::Error)]
enum JudgeError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The comment's task panicked.
    #[error("the judge task failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

/// Judges every comment, in its order.
async fn judge_all(
    filter: &Arc<Filter>,
    comments: &Arc<Vec<GoldComment>>,
    bar: &indicatif::ProgressBar,
) -> Vec<Result<Judgement, JudgeError>> {
    in_order(comments.len(), |i| {
        let (filter, comments, bar) = (filter.clone(), comments.clone(), bar.clone());
        async move {
            let c = &comments[i];
            let fields = Fields {
                pr_title: &c.pr_title,
                path: &c.path,
                diff_hunk: &c.diff_hunk,
                comment: &c.comment,
                by_pr_author: c.by_pr_author,
                is_reply: c.is_reply,
                lines: None,
                fix: c.fix(),
            };
            let judged = filter.judge(&fields).await.map_err(JudgeError::from);
            bar.inc(1);
            judged
        }
    })
    .await
}

/// Runs `task(i)` for `i` in `0..n` at once and gives the results in order of `i`. A task that
/// panics is its own error, so no comment drops out of the figures unseen.
async fn in_order<T, F, Fut>(n: usize, task: F) -> Vec<Result<T, JudgeError>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, JudgeError>> + Send + 'static,
{
    let handles: Vec<_> = (0..n).map(|i| tokio::spawn(task(i))).collect();
    let mut out = Vec::with_capacity(n);
    for handle in handles {
        out.push(handle.await.unwrap_or_else(|e| Err(JudgeError::Task(e))));
    }
    out
}

/// Every gold comment's judgement, read for the figures.
struct Scored {
    /// (confidence in keeping, gold keep) per split.
    tune: Vec<(f64, bool)>,
    heldout: Vec<(f64, bool)>,
    /// The model's word alone, per split.
    word_tune: Confusion,
    word_heldout: Confusion,
    unparseable: usize,
    /// Kept by gold and model with the same category, and kept by both.
    same_category: (usize, usize),
    /// Per rule: how often it fired, and on how many gold keeps.
    rules: BTreeMap<&'static str, (usize, usize)>,
    rows: Vec<Row>,
    errors: Vec<String>,
}

/// One gold comment's judgement.
struct Row {
    id: String,
    split: String,
    gold_keep: bool,
    confidence: f64,
    /// The model's reason, or the rule that decided.
    reason: String,
    /// The model's word, its probability of keeping and each question's "yes": for the scores file
    /// (a person weighing another way of combining them).
    parts: serde_json::Value,
}

/// `results` in the order of `comments`; an error is only shown, next to its comment's id.
fn score(comments: &[GoldComment], results: Vec<Result<Judgement, impl std::fmt::Display>>) -> Scored {
    let mut s = Scored {
        tune: Vec::new(),
        heldout: Vec::new(),
        word_tune: Confusion::default(),
        word_heldout: Confusion::default(),
        unparseable: 0,
        same_category: (0, 0),
        rules: BTreeMap::new(),
        rows: Vec::new(),
        errors: Vec::new(),
    };
    for (c, judged) in comments.iter().zip(results) {
        let gold_keep = c.label == "keep";
        let judgement = match judged {
            Ok(j) => j,
            Err(e) => {
                s.errors.push(format!("{}: {e}", c.id));
                continue;
            }
        };
        let (word, reason) = match &judgement {
            Judgement::Verdict(v, _) => {
                if gold_keep && v.keep {
                    s.same_category.1 += 1;
                    s.same_category.0 += usize::from(v.category.is_some() && v.category == c.category);
                }
                (v.keep, v.reason.clone())
            }
            Judgement::Rule(rule) => {
                let fired = s.rules.entry(rule.name).or_default();
                fired.0 += 1;
                fired.1 += usize::from(gold_keep);
                (false, format!("rule `{}`", rule.name))
            }
            Judgement::Unparseable { .. } => {
                s.unparseable += 1;
                (false, "unparseable".into())
            }
        };
        let p = judgement.confidence();
        let heldout = c.split == "heldout";
        if heldout { &mut s.word_heldout } else { &mut s.word_tune }.add(gold_keep, word);
        if heldout { &mut s.heldout } else { &mut s.tune }.push((p, gold_keep));
        let parts = match &judgement {
            Judgement::Verdict(v, _) => serde_json::json!({
                "word": v.keep,
                "p_keep": v.p_keep,
                "answers": v.answers.iter().cloned().collect::<BTreeMap<String, f64>>(),
            }),
            _ => serde_json::json!({"word": false}),
        };
        let (id, split) = (c.id.clone(), c.split.clone());
        s.rows.push(Row { id, split, gold_keep, confidence: p, reason, parts });
    }
    s
}

/// What `curate gold` measures on and what it writes.
pub struct GoldOptions<'a> {
    /// The stage to measure (default: the first review_filter stage).
    pub stage: Option<&'a str>,
    /// Write the chosen threshold to the stage's calibration file.
    pub record: bool,
    /// Every comment's confidence, split and label, written here.
    pub scores: Option<&'a Path>,
    /// A measurement set in place of the stage's gold set; it never calibrates the stage.
    pub gold: Option<&'a Path>,
    /// Judge each comment by its words and hunk alone: the rows' `by_pr_author`, `is_reply` and
    /// `fix_diff` are set aside, as for comments that come without their thread or their PR's fix.
    pub words_only: bool,
}

pub fn gold(path: &Path, options: &GoldOptions<'_>) -> Result<u8, Failure> {
    let GoldOptions { stage, record, scores, gold: measured_on, words_only } = *options;
    if record && measured_on.is_some() {
        return Err(anyhow!("--record calibrates on the stage's own gold set, not on --gold").into());
    }
    let (pipeline, context) = crate::curation::load_spec(path)?;
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
    let gold_path = match measured_on {
        Some(file) => file.to_path_buf(),
        None => context.dir.join(
            config
                .gold
                .clone()
                .ok_or_else(|| anyhow!("stage `{}` names no `gold:` set to measure on", plan.id))?,
        ),
    };
    let mut comments = read_gold(&gold_path)?;
    if words_only {
        for c in &mut comments {
            (c.by_pr_author, c.is_reply, c.fix_diff) = (None, None, None);
        }
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
    let scored = judged(&filter, comments)?;
    if let Some(file) = scores {
        write_scores(file, &scored)?;
    }
    print_word(&scored);

    let choice = calibration::choose(&scored.tune, config.precision_bar);
    let threshold = choice.map(|c| c.threshold);
    let (tune, heldout) = match threshold {
        Some(t) => (Confusion::at(&scored.tune, t), Confusion::at(&scored.heldout, t)),
        None => (scored.word_tune, scored.word_heldout),
    };
    match choice {
        Some(c) => {
            println!(
                "\nCalibrated: keep when the model's confidence in a kept kind is at least {:.4} (chosen on the tuning split; {}):\n\n{HEADER}",
                c.threshold,
                how_chosen(c, config.precision_bar)
            );
            println!("{}\n{}", row("tune", &tune), row("heldout", &heldout));
        }
        None => println!("\nNo threshold keeps a kept comment of the tuning split; the model's word stands."),
    }
    print_disagreements(&scored, threshold);

    if measured_on.is_some() {
        at_recorded_threshold(&context.dir, &config, &filter, &scored);
    } else if let Some(choice) = choice {
        report_record(&context.dir, &config, &filter, &gold_path, choice, tune, heldout, record)?;
    } else if record {
        return Err(anyhow!("nothing to record: no threshold keeps a kept comment").into());
    }
    let precision = heldout.precision();
    let verdict = if precision >= config.precision_bar { "meets" } else { "is below" };
    println!("\nheld-out precision {precision:.3} {verdict} the bar of {:.2}", config.precision_bar);
    Ok(if precision >= config.precision_bar { exit::OK } else { exit::ERRORED })
}

/// Every gold comment judged (with a progress bar on a terminal) and scored; an error when any of
/// them got no answer.
fn judged(filter: &Arc<Filter>, comments: Vec<GoldComment>) -> Result<Scored, Failure> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("async runtime")?;
    let bar = indicatif::ProgressBar::new(comments.len() as u64);
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let comments = Arc::new(comments);
    let results = runtime.block_on(judge_all(filter, &comments, &bar));
    bar.finish_and_clear();
    let scored = score(&comments, results);
    if !scored.errors.is_empty() {
        for e in scored.errors.iter().take(5) {
            eprintln!("error: {e}");
        }
        return Err(
            anyhow!("{} of {} gold comments got no answer", scored.errors.len(), comments.len()).into()
        );
    }
    Ok(scored)
}

/// Every comment's confidence, split and label, one JSON object a line.
fn write_scores(file: &Path, scored: &Scored) -> Result<(), Failure> {
    let lines: Vec<String> = scored
        .rows
        .iter()
        .map(|r| {
            let mut row = serde_json::json!({
                "id": r.id, "split": r.split, "gold_keep": r.gold_keep, "confidence": r.confidence, "reason": r.reason,
            });
            if let (Some(row), Some(parts)) = (row.as_object_mut(), r.parts.as_object()) {
                row.extend(parts.clone());
            }
            row.to_string()
        })
        .collect();
    std::fs::write(file, lines.join("\n") + "\n").with_context(|| format!("writing {}", file.display()))?;
    Ok(())
}

/// The figures of the model's word, and the rules that decided before it.
fn print_word(scored: &Scored) {
    println!("The model's word (keep or drop as written):\n\n{HEADER}");
    println!("{}\n{}", row("tune", &scored.word_tune), row("heldout", &scored.word_heldout));
    println!(
        "\nunparseable: {}; same category where both keep: {} of {}",
        scored.unparseable, scored.same_category.0, scored.same_category.1
    );
    if !scored.rules.is_empty() {
        println!("\nRules before the model (fired / of them gold keep):");
        for (name, (fired, keeps)) in &scored.rules {
            println!("- `{name}`: {fired} / {keeps}");
        }
    }
}

/// Why the calibration chose its threshold, in words.
fn how_chosen(c: calibration::Choice, bar: f64) -> String {
    if c.reaches_bar {
        format!(
            "the lowest threshold whose precision, at the low end of its one-sided 95% interval, reaches {bar:.2}"
        )
    } else {
        format!("no threshold reaches {bar:.2}, this one has the highest precision")
    }
}

/// The comments the decision (at `threshold`, or the model's word without one) gets wrong.
fn print_disagreements(scored: &Scored, threshold: Option<f64>) {
    let decided = |p: f64, word_row: &str| threshold.map_or(word_row != "drop", |t| p >= t);
    let wrong: Vec<String> = scored
        .rows
        .iter()
        .filter(|r| r.gold_keep != decided(r.confidence, &r.reason))
        .map(|r| {
            let gold = if r.gold_keep { "keep" } else { "drop" };
            format!("{} ({}): gold {gold}, confidence {:.3}: {}", r.id, r.split, r.confidence, r.reason)
        })
        .collect();
    if !wrong.is_empty() {
        println!("\nDisagreements at the threshold ({}):", wrong.len());
        for w in &wrong {
            println!("- {w}");
        }
    }
}

/// On a measurement set: the figures at the threshold the stage has recorded (what `curate run`
/// applies), per split and over the whole set.
fn at_recorded_threshold(dir: &Path, config: &Config, filter: &Filter, scored: &Scored) {
    let Some(relative) = &config.calibration else {
        println!("\n(the stage names no `calibration:` file: `curate run` keeps on the model's word, above)");
        return;
    };
    let fingerprint = filter.llm.settings.fingerprint();
    let threshold = match Calibration::load(&dir.join(relative), &filter.prompt_sha256, &fingerprint) {
        Ok(c) => c.threshold,
        Err(e) => {
            println!("\n(no recorded threshold applies: {e})");
            return;
        }
    };
    let all: Vec<(f64, bool)> = scored.tune.iter().chain(&scored.heldout).copied().collect();
    println!("\nAt the stage's recorded threshold {threshold:.4}, as `curate run` decides:\n\n{HEADER}");
    for (name, rows) in [("tune", &scored.tune), ("heldout", &scored.heldout), ("all", &all)] {
        println!("{}", row(name, &Confusion::at(rows, threshold)));
    }
}

/// Writes the calibration with `--record`, or says how it compares with the recorded one.
#[allow(clippy::too_many_arguments)]
fn report_record(
    dir: &Path,
    config: &Config,
    filter: &Filter,
    gold_path: &Path,
    choice: calibration::Choice,
    tune: Confusion,
    heldout: Confusion,
    record: bool,
) -> Result<(), Failure> {
    let Some(relative) = &config.calibration else {
        if record {
            return Err(anyhow!("the stage names no `calibration:` file to record the threshold in").into());
        }
        println!("\n(the stage names no `calibration:` file, so it keeps on the model's word)");
        return Ok(());
    };
    let path = dir.join(relative);
    let gold = std::fs::read(gold_path).with_context(|| format!("reading {}", gold_path.display()))?;
    let fresh = Calibration {
        prompt_sha256: filter.prompt_sha256.clone(),
        llm: filter.llm.settings.fingerprint(),
        gold_sha256: hex::encode(sha2::Sha256::digest(&gold)),
        precision_bar: config.precision_bar,
        threshold: choice.threshold,
        reaches_bar_on_tune: choice.reaches_bar,
        tune,
        heldout,
    };
    let recorded: Option<Calibration> =
        std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok());
    if record {
        let text = serde_json::to_string_pretty(&fresh).context("serializing the calibration")? + "\n";
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("\ncalibration recorded in {}", path.display());
    } else if recorded.as_ref() == Some(&fresh) {
        println!("\nthe calibration in {} is this one", path.display());
    } else {
        println!(
            "\nthe calibration in {} {}; `curate gold PIPELINE --record` records this one",
            path.display(),
            if recorded.is_some() { "differs" } else { "is missing or unreadable" }
        );
    }
    Ok(())
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
            Ok::<usize, JudgeError>(i * 10)
        })
        .await;
        assert_eq!(out.len(), 3);
        assert!(matches!(out[0], Ok(0)), "{:?}", out[0]);
        assert!(
            out[1].as_ref().is_err_and(|e| e.to_string().starts_with("the judge task failed")),
            "{:?}",
            out[1]
        );
        assert!(matches!(out[2], Ok(20)), "{:?}", out[2]);
    }

    #[test]
    fn a_comment_without_an_answer_is_an_error_not_a_gap_in_the_figures() {
        let comments: Vec<GoldComment> = ["a", "b"]
            .iter()
            .map(|id| serde_json::from_str(&gold_line(id, "heldout", "keep")).unwrap())
            .collect();
        let s = score(&comments, vec![Err("the judge task failed: panicked"), Err("down")]);
        assert_eq!(s.errors, vec!["a: the judge task failed: panicked", "b: down"]);
        assert!(s.heldout.is_empty());
    }
}
