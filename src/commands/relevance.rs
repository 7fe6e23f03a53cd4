//! `curate relevance`: scores an `attribution` stage's choices, as a run stored them, against a hand
//! gold of the fix lines that answer each comment (`gold:` in the stage's config): whether the stage
//! agreed that a change answers the comment at all, and for comments both say are answered, whether
//! the chosen lines are exactly the gold's, overlap them, and line precision and recall.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use serde::Deserialize;

use super::{Failure, Selection, exit, load};
use crate::engine::flow::{Flow, TaskState};
use crate::engine::{store, walk};
use crate::stages::contract::Attribution;

#[derive(Deserialize)]
struct GoldLines {
    path: String,
    lines: Vec<u64>,
}

#[derive(Deserialize)]
struct GoldRow {
    instance_id: String,
    /// The comment's place among its PR's comments, from 0.
    comment: usize,
    answered: bool,
    #[serde(default)]
    added: Vec<GoldLines>,
    #[serde(default)]
    removed: Vec<GoldLines>,
}

/// A line of the fix: file, added (`+`) or removed (`-`), number on its side.
type Line = (String, char, u64);

fn gold_lines(row: &GoldRow) -> BTreeSet<Line> {
    let side = |list: &[GoldLines], sign: char| -> Vec<Line> {
        list.iter().flat_map(|g| g.lines.iter().map(move |n| (g.path.clone(), sign, *n))).collect()
    };
    side(&row.added, '+').into_iter().chain(side(&row.removed, '-')).collect()
}

fn chosen_lines(a: &Attribution) -> BTreeSet<Line> {
    a.changes
        .iter()
        .flat_map(|c| {
            let added = c.added.iter().map(move |n| (c.path.clone(), '+', *n));
            added.chain(c.removed.iter().map(move |n| (c.path.clone(), '-', *n)))
        })
        .collect()
}

/// The figures, counted over the comments the stage decided.
#[derive(Debug, Default, PartialEq)]
struct Score {
    decided: usize,
    /// The stage and the gold agree on whether a change answers the comment.
    answered_agree: usize,
    both_answered: usize,
    exact: usize,
    overlap: usize,
    /// Summed over comments both say are answered.
    precision_sum: f64,
    recall_sum: f64,
}

fn read_gold(path: &Path) -> Result<BTreeMap<(String, usize), GoldRow>, Failure> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rows = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let row: GoldRow =
            serde_json::from_str(line).with_context(|| format!("{}:{}", path.display(), i + 1))?;
        rows.insert((row.instance_id.clone(), row.comment), row);
    }
    Ok(rows)
}

pub fn relevance(path: &Path, sel: &Selection, stage: Option<&str>) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let s = loaded
        .pipeline
        .stages
        .iter()
        .position(|p| stage.map_or(p.kind == "attribution", |id| &*p.id == id))
        .ok_or_else(|| {
            anyhow!(
                "{}: no attribution stage{}",
                path.display(),
                stage.map(|s| format!(" `{s}`")).unwrap_or_default()
            )
        })?;
    let plan = &loaded.pipeline.stages[s];
    let gold_path: PathBuf =
        plan.config.get("gold").and_then(|g| g.as_str()).map(|g| loaded.context.dir.join(g)).ok_or_else(
            || anyhow!("stage `{}` names no `gold:` file of the lines that answer each comment", plan.id),
        )?;
    let gold = read_gold(&gold_path)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);

    let mut score = Score::default();
    let mut disagreements = Vec::new();
    for x in flow.tasks(s) {
        let item = &loaded.data.items[x];
        let Some((instance, number)) = item.id.rsplit_once('#') else { continue };
        let Ok(number) = number.parse::<usize>() else { continue };
        let Some(row) = gold.get(&(instance.to_string(), number.saturating_sub(1))) else { continue };
        let chosen: Option<BTreeSet<Line>> = match &states[s][x] {
            TaskState::Kept { output, .. } => match serde_json::from_value::<Attribution>((**output).clone())
            {
                Ok(a) => Some(chosen_lines(&a)),
                Err(_) => continue,
            },
            TaskState::Rejected { reason, .. } if reason.starts_with("no change") => None,
            _ => continue,
        };
        disagreements.extend(score.add(&item.id, chosen, row));
    }
    if score.decided == 0 {
        return Err(anyhow!(
            "no comment of the gold has an attribution in the state yet; run the pipeline first"
        )
        .into());
    }
    println!("Attribution (`{}`) against {}:\n", plan.id, gold_path.display());
    score.print();
    if !disagreements.is_empty() {
        println!("\nDisagreements ({}):", disagreements.len());
        for d in &disagreements {
            println!("- {d}");
        }
    }
    Ok(exit::OK)
}

impl Score {
    /// Counts comment `id`, whose attribution chose `chosen` (`None`: found no change that answers
    /// it), against its gold row; says how they disagree.
    fn add(&mut self, id: &str, chosen: Option<BTreeSet<Line>>, row: &GoldRow) -> Vec<String> {
        let mut disagreements = Vec::new();
        self.decided += 1;
        let answered = chosen.is_some();
        if answered == row.answered {
            self.answered_agree += 1;
        } else {
            disagreements.push(format!(
                "{id}: gold says {}answered, the stage {}",
                if row.answered { "" } else { "not " },
                if answered { "chose lines" } else { "found none" }
            ));
        }
        let (Some(chosen), true) = (chosen, row.answered) else { return disagreements };
        let wanted = gold_lines(row);
        let both = chosen.intersection(&wanted).count();
        self.both_answered += 1;
        self.exact += usize::from(chosen == wanted);
        self.overlap += usize::from(both > 0);
        self.precision_sum += if chosen.is_empty() { 0.0 } else { both as f64 / chosen.len() as f64 };
        self.recall_sum += if wanted.is_empty() { 0.0 } else { both as f64 / wanted.len() as f64 };
        if both == 0 {
            disagreements.push(format!("{id}: the chosen lines miss every gold line"));
        }
        disagreements
    }

    /// The figures as a Markdown table.
    fn print(&self) {
        let pct = |a: usize, b: usize| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
        let n = self.both_answered.max(1) as f64;
        println!("| measure | value |\n|---|---:|");
        println!("| comments decided | {} |", self.decided);
        println!(
            "| answered or not, as the gold | {} ({:.0}%) |",
            self.answered_agree,
            pct(self.answered_agree, self.decided)
        );
        println!("| answered by both | {} |", self.both_answered);
        println!("| exact lines | {} ({:.0}%) |", self.exact, pct(self.exact, self.both_answered));
        println!("| overlapping lines | {} ({:.0}%) |", self.overlap, pct(self.overlap, self.both_answered));
        println!("| mean line precision | {:.2} |", self.precision_sum / n);
        println!("| mean line recall | {:.2} |", self.recall_sum / n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::contract::AttributedChange;

    #[test]
    fn lines_are_compared_by_file_side_and_number() {
        let row: GoldRow = serde_json::from_str(
            r#"{"instance_id": "i", "comment": 0, "answered": true, "added": [{"path": "a.py", "lines": [3, 4]}], "removed": [{"path": "a.py", "lines": [3]}]}"#,
        )
        .unwrap();
        let a = Attribution {
            how: "position".into(),
            changes: vec![AttributedChange {
                path: "a.py".into(),
                old_path: None,
                added: vec![3, 4],
                removed: vec![3],
                new_start: 1,
            }],
        };
        assert_eq!(chosen_lines(&a), gold_lines(&row));
        let other = Attribution {
            how: "model".into(),
            changes: vec![AttributedChange {
                path: "a.py".into(),
                old_path: None,
                added: vec![4],
                removed: vec![],
                new_start: 1,
            }],
        };
        assert_eq!(chosen_lines(&other).intersection(&gold_lines(&row)).count(), 1);
        assert!(chosen_lines(&other).contains(&("a.py".to_string(), '+', 4)));
    }
}
