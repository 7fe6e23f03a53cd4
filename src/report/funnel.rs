//! The funnel (the paper's Table 3): after each stage, how many PRs still have a comment and how many
//! comments remain, with the reasons behind each drop.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use std::collections::HashMap;

use crate::engine::flow::{Flow, TaskState};
use crate::engine::item::Scope;
use crate::engine::key::TaskKey;
use crate::engine::store::Record;

/// Reasons listed per stage in the Markdown report; JSON has them all.
const REASONS_SHOWN: usize = 12;

#[derive(Debug, Serialize)]
pub struct Funnel {
    pub pipeline: String,
    /// No task errored or is still to run: the numbers are final.
    pub complete: bool,
    /// Whether the pipeline works on comments. An evaluation works on whole instances: its rows
    /// count those, and the comment column is left out.
    pub counts_comments: bool,
    pub funnel: Vec<FunnelRow>,
}

#[derive(Debug, Serialize)]
pub struct FunnelRow {
    /// The stage id; `ingest` for the first row.
    pub stage: String,
    pub title: String,
    pub prs: usize,
    pub comments: usize,
    pub rejected: usize,
    pub errored: usize,
    /// Tasks without a result yet, including those waiting behind an errored task.
    pub pending: usize,
    pub reasons: Vec<ReasonCount>,
    /// Model tokens the stage's tasks used, over all their attempts.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Serialize)]
pub struct ReasonCount {
    pub reason: String,
    pub count: usize,
}

fn kept(state: &TaskState) -> bool {
    matches!(state, TaskState::Kept { .. })
}

/// Builds the funnel from every task's state and stored record. `bad_records` is what the source
/// skipped.
pub fn funnel(
    flow: &Flow,
    states: &[Vec<TaskState>],
    records: &HashMap<TaskKey, Record>,
    bad_records: usize,
) -> Funnel {
    let pipeline = flow.pipeline;
    let data = flow.data;
    let counts_comments =
        data.count(Scope::Comment) > 0 || pipeline.stages.iter().any(|s| s.scope == Scope::Comment);
    let survivors = Survivors { flow, states, counts_comments };
    let mut rows = vec![FunnelRow {
        stage: "ingest".into(),
        title: "Initial dataset".into(),
        prs: (0..data.len())
            .filter(|&p| data.items[p].scope == Scope::Pr && survivors.pr_counts(p, data.comments[p].len()))
            .count(),
        comments: data.count(Scope::Comment),
        rejected: bad_records,
        errored: 0,
        pending: 0,
        reasons: if bad_records > 0 {
            vec![ReasonCount { reason: "bad record in the source".into(), count: bad_records }]
        } else {
            Vec::new()
        },
        prompt_tokens: 0,
        completion_tokens: 0,
    }];
    for &s in pipeline.order() {
        let (prs, comments) = survivors.after(s);
        let plan = &pipeline.stages[s];
        let mut row = outcomes(flow, states, records, s);
        row.stage = plan.id.to_string();
        row.title = plan.title.clone();
        row.prs = prs;
        row.comments = comments;
        rows.push(row);
    }
    let complete = rows.iter().all(|r| r.errored == 0 && r.pending == 0);
    Funnel { pipeline: pipeline.name.clone(), complete, counts_comments, funnel: rows }
}

/// Which PRs and comments are still in after a stage.
struct Survivors<'a> {
    flow: &'a Flow<'a>,
    states: &'a [Vec<TaskState>],
    counts_comments: bool,
}

impl Survivors<'_> {
    /// A PR counts while it has a comment left; one with none at all (its only comment was a bad
    /// record, say) counts only where comments are not what the pipeline works on.
    fn pr_counts(&self, p: usize, alive: usize) -> bool {
        if self.flow.data.comments[p].is_empty() { !self.counts_comments } else { alive > 0 }
    }

    /// PRs and comments still in after stage `s`: those `s` and every stage upstream of it kept
    /// (or kept their PR, for PR stages).
    fn after(&self, s: usize) -> (usize, usize) {
        let (pipeline, data, states) = (self.flow.pipeline, self.flow.data, self.states);
        let chain: Vec<usize> = pipeline
            .order()
            .iter()
            .copied()
            .filter(|&a| a == s || pipeline.graph.is_ancestor(a, s))
            .collect();
        let pr_in = |p: usize| {
            chain.iter().filter(|&&a| pipeline.stages[a].scope == Scope::Pr).all(|&a| kept(&states[a][p]))
        };
        let comment_in = |c: usize| {
            chain.iter().all(|&a| match pipeline.stages[a].scope {
                Scope::Comment => kept(&states[a][c]),
                Scope::Pr => kept(&states[a][data.pr_index[c]]),
            })
        };
        let (mut prs, mut comments) = (0, 0);
        for (p, item) in data.items.iter().enumerate() {
            if item.scope != Scope::Pr || !pr_in(p) {
                continue;
            }
            let alive = data.comments[p].iter().filter(|&&c| comment_in(c)).count();
            comments += alive;
            if self.pr_counts(p, alive) {
                prs += 1;
            }
        }
        (prs, comments)
    }
}

/// Stage `s`'s rejections (by reason, most first), errors, pending tasks and model tokens, as a
/// row whose stage and counts of survivors the caller fills in.
fn outcomes(
    flow: &Flow,
    states: &[Vec<TaskState>],
    records: &HashMap<TaskKey, Record>,
    s: usize,
) -> FunnelRow {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut rejected, mut errored, mut pending) = (0, 0, 0);
    let (mut prompt_tokens, mut completion_tokens) = (0, 0);
    for x in flow.tasks(s) {
        if let Some(usage) = states[s][x].key().and_then(|k| records.get(&k)).map(|r| r.usage) {
            prompt_tokens += usage.prompt_tokens;
            completion_tokens += usage.completion_tokens;
        }
        match &states[s][x] {
            TaskState::Rejected { reason, .. } => {
                rejected += 1;
                *reasons.entry(reason.as_str()).or_default() += 1;
            }
            TaskState::Errored { .. } => errored += 1,
            TaskState::Pending { .. } | TaskState::Waiting | TaskState::Skipped { blocked: true } => {
                pending += 1
            }
            TaskState::Kept { .. } | TaskState::Skipped { blocked: false } => {}
        }
    }
    let mut reasons: Vec<ReasonCount> = reasons
        .into_iter()
        .map(|(reason, count)| ReasonCount { reason: reason.to_string(), count })
        .collect();
    reasons.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.reason.cmp(&b.reason)));
    FunnelRow {
        stage: String::new(),
        title: String::new(),
        prs: 0,
        comments: 0,
        rejected,
        errored,
        pending,
        reasons,
        prompt_tokens,
        completion_tokens,
    }
}

impl Funnel {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Funnel: {}\n", self.pipeline);
        if !self.complete {
            let errored: usize = self.funnel.iter().map(|r| r.errored).sum();
            let pending: usize = self.funnel.iter().map(|r| r.pending).sum();
            let _ = writeln!(
                out,
                "**Incomplete**: {errored} task(s) errored and {pending} have no result yet; `curate run` again to finish.\n"
            );
        }
        let tokens = self.funnel.iter().any(|r| r.prompt_tokens + r.completion_tokens > 0);
        let (items, comments) =
            if self.counts_comments { ("PRs | Comments", "---:|---:|") } else { ("Instances", "---:|") };
        let _ = write!(out, "| Stage | {items} | Rejected | Errored | Pending |");
        let _ = writeln!(out, "{}", if tokens { " Tokens in | Tokens out |" } else { "" });
        let _ = writeln!(out, "|---|{comments}---:|---:|---:|{}", if tokens { "---:|---:|" } else { "" });
        for r in &self.funnel {
            let _ = write!(out, "| {} | {} |", r.title, r.prs);
            if self.counts_comments {
                let _ = write!(out, " {} |", r.comments);
            }
            let _ = write!(out, " {} | {} | {} |", r.rejected, r.errored, r.pending);
            if tokens {
                let _ = write!(out, " {} | {} |", r.prompt_tokens, r.completion_tokens);
            }
            out.push('\n');
        }
        let with_reasons: Vec<&FunnelRow> = self.funnel.iter().filter(|r| !r.reasons.is_empty()).collect();
        if !with_reasons.is_empty() {
            let _ = writeln!(out, "\n## Rejection reasons\n");
            for r in with_reasons {
                let _ = writeln!(out, "- {} (`{}`)", r.title, r.stage);
                // One reason more takes the line that would say it was left out.
                let shown =
                    if r.reasons.len() == REASONS_SHOWN + 1 { r.reasons.len() } else { REASONS_SHOWN };
                for reason in r.reasons.iter().take(shown) {
                    let _ = writeln!(out, "  - {} × {}", reason.count, reason.reason);
                }
                if r.reasons.len() > shown {
                    let rest: usize = r.reasons[shown..].iter().map(|x| x.count).sum();
                    let _ = writeln!(
                        out,
                        "  - … {} other reasons ({rest} tasks); `--format json` lists all",
                        r.reasons.len() - shown
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_reasons(n: usize) -> String {
        let reasons = (0..n).map(|i| ReasonCount { reason: format!("reason {i}"), count: 2 }).collect();
        let row = FunnelRow {
            stage: "filter".into(),
            title: "Review filtering".into(),
            prs: 1,
            comments: 0,
            rejected: 2 * n,
            errored: 0,
            pending: 0,
            reasons,
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        Funnel { pipeline: "p".into(), complete: true, counts_comments: true, funnel: vec![row] }
            .to_markdown()
    }

    #[test]
    fn a_reason_is_left_out_only_with_another() {
        let one_more = with_reasons(REASONS_SHOWN + 1);
        assert!(one_more.contains(&format!("2 × reason {REASONS_SHOWN}")), "{one_more}");
        assert!(!one_more.contains("other reasons"), "{one_more}");
        let two_more = with_reasons(REASONS_SHOWN + 2);
        assert!(!two_more.contains(&format!("reason {REASONS_SHOWN}\n")), "{two_more}");
        assert!(two_more.contains("… 2 other reasons (4 tasks)"), "{two_more}");
    }
}
