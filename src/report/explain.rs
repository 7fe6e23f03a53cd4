//! Where each comment went: for every review comment, the last stage it reached, how it ended
//! there and why, and who wrote its test; for one comment, every stage in order and each candidate
//! test it was given with the verdicts it got. What a person needs to see why a real comment
//! yielded nothing, without reading SQLite.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::flow::{Flow, TaskState};
use crate::engine::item::Scope;
use crate::engine::key::TaskKey;
use crate::engine::store::Record;

/// One stage's result for a comment (or for its PR, at a PR stage).
struct Step<'a> {
    stage: &'a str,
    outcome: &'static str,
    /// The rejection reason or the error; empty when kept or not run.
    why: String,
    /// The stored output (a kept task's) or detail (a rejected task's).
    output: Option<&'a Value>,
}

/// The steps of comment `c` (an item index), in the pipeline's order, those that ran or settled.
fn steps<'a>(
    flow: &'a Flow,
    states: &'a [Vec<TaskState>],
    records: &'a HashMap<TaskKey, Record>,
    c: usize,
) -> Vec<Step<'a>> {
    let items = &flow.data.items;
    let pr = items.iter().position(|i| i.scope == Scope::Pr && i.id == items[c].pr);
    let stages = &flow.pipeline.stages;
    let mut out = Vec::new();
    for &s in flow.pipeline.order() {
        let x = match stages[s].scope {
            Scope::Comment => c,
            Scope::Pr => match pr {
                Some(p) => p,
                None => continue,
            },
        };
        let stored = |key: &TaskKey| records.get(key).and_then(|r| r.output.as_deref());
        let (outcome, why, output) = match &states[s][x] {
            TaskState::Kept { key, output } => ("kept", String::new(), Some(output.as_ref()).or(stored(key))),
            TaskState::Rejected { key, reason } => ("rejected", reason.clone(), stored(key)),
            TaskState::Errored { key, error } => ("errored", error.clone(), stored(key)),
            TaskState::Pending { .. } => ("to run", String::new(), None),
            TaskState::Waiting | TaskState::Skipped { .. } => continue,
        };
        out.push(Step { stage: &stages[s].id, outcome, why, output });
        // The comment's own path ends where a stage of its own did not keep it; its PR's stages
        // may go on for the PR's other comments.
        if stages[s].scope == Scope::Comment && outcome != "kept" {
            break;
        }
    }
    out
}

/// Who wrote a test record: the model unless it says otherwise; a test of the model's that now
/// expects what the fixed code gave (`expected_from_fixed`) says so.
fn written_by(output: &Value) -> &str {
    match output.get("written_by").and_then(Value::as_str) {
        Some(by) => by,
        None if output.get("expected_from_fixed").is_some() => "model, fixed code's value",
        None => "model",
    }
}

/// Whether a stage's output is a test's (it has a history of candidates).
fn is_test(step: &Step) -> bool {
    step.output.is_some_and(|o| {
        o.get("history").is_some() && (o.get("test_file").is_some() || step.outcome != "kept")
    })
}

fn cell(text: &str) -> String {
    let one_line = text.lines().next().unwrap_or("").replace('|', "\\|");
    if one_line.chars().count() > 90 {
        format!("{}…", one_line.chars().take(90).collect::<String>())
    } else {
        one_line
    }
}

/// The table of every comment: where it stopped and why.
pub fn table(flow: &Flow, states: &[Vec<TaskState>], records: &HashMap<TaskKey, Record>) -> String {
    let mut md = String::from("| comment | last stage | outcome | why | test by |\n|---|---|---|---|---|\n");
    for (c, item) in flow.data.items.iter().enumerate().filter(|(_, i)| i.scope == Scope::Comment) {
        let steps = steps(flow, states, records, c);
        let Some(last) = steps.last() else {
            md.push_str(&format!("| {} | – | not started | | |\n", item.id));
            continue;
        };
        let by = steps
            .iter()
            .find(|s| s.outcome == "kept" && is_test(s))
            .and_then(|s| s.output)
            .map(written_by)
            .unwrap_or("");
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            item.id,
            last.stage,
            last.outcome,
            cell(&last.why),
            by
        ));
    }
    md
}

/// One comment in full: each stage's result, and every candidate test with its verdicts. `None`
/// when no comment has that id.
pub fn comment(
    flow: &Flow,
    states: &[Vec<TaskState>],
    records: &HashMap<TaskKey, Record>,
    id: &str,
) -> Option<String> {
    let c = flow.data.items.iter().position(|i| i.scope == Scope::Comment && i.id == id)?;
    let mut md = format!("# {id}\n\n");
    if let Some(text) = flow.data.items[c].data.get("text").and_then(Value::as_str) {
        md.push_str(&format!("> {}\n\n", text.trim().replace('\n', "\n> ")));
    }
    md.push_str("| stage | outcome | why |\n|---|---|---|\n");
    let steps = steps(flow, states, records, c);
    for s in &steps {
        md.push_str(&format!("| {} | {} | {} |\n", s.stage, s.outcome, cell(&s.why)));
    }
    for s in steps.iter().filter(|s| is_test(s)) {
        let history = s.output.and_then(|o| o.get("history")).and_then(Value::as_array);
        md.push_str(&format!("\n## Candidates of `{}`\n\n| # | by | what | result | reviewed | fixed |\n|---|---|---|---|---|---|\n", s.stage));
        for (n, h) in history.into_iter().flatten().enumerate() {
            let what = h
                .get("node")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| h.get("attempt").map(|a| format!("attempt {a}")))
                .or_else(|| {
                    h.get("reaching")
                        .and_then(Value::as_array)
                        .map(|r| format!("{} reach the change", r.len()))
                })
                .unwrap_or_default();
            let verdict = |side: &str| h[side]["verdict"].as_str().unwrap_or("").to_string();
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                n + 1,
                written_by(h),
                cell(&what),
                cell(h["result"].as_str().unwrap_or("")),
                verdict("reviewed"),
                verdict("fixed"),
            ));
        }
    }
    Some(md)
}
