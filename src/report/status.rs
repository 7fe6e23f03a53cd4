//! `curate status`: per stage, how many tasks are kept, rejected, errored, still to run or skipped,
//! and what went wrong for the errored ones.

use std::collections::HashMap;
use std::fmt::Write;

use crate::engine::flow::{Flow, TaskState};
use crate::engine::key::TaskKey;
use crate::engine::store::{Record, RecordState};

/// Errored tasks listed before the rest are summarised.
const SHOWN: usize = 20;

pub fn render(
    flow: &Flow,
    states: &[Vec<TaskState>],
    records: &HashMap<TaskKey, Record>,
    running: Option<&str>,
) -> String {
    let p = flow.pipeline;
    let mut out = String::new();
    if let Some(holder) = running {
        let _ = writeln!(out, "A run is in progress: {holder}.\n");
    }
    let _ = writeln!(
        out,
        "{:<20} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "stage", "tasks", "kept", "rejected", "errored", "to run", "skipped"
    );
    let mut errors = Vec::new();
    let mut in_flight = Vec::new();
    for &s in p.order() {
        let (mut kept, mut rejected, mut errored, mut pending, mut skipped, mut total) = (0, 0, 0, 0, 0, 0);
        for x in flow.tasks(s) {
            total += 1;
            match &states[s][x] {
                TaskState::Kept { .. } => kept += 1,
                TaskState::Rejected { .. } => rejected += 1,
                TaskState::Errored { key, error } => {
                    errored += 1;
                    let attempts = records.get(key).map_or(0, |r| r.attempts);
                    errors.push(format!(
                        "{} {}: {} (attempts: {attempts})",
                        p.stages[s].id, flow.data.items[x].id, error
                    ));
                }
                TaskState::Pending { key } => {
                    pending += 1;
                    if records.get(key).is_some_and(|r| r.state == RecordState::Running) {
                        in_flight.push(format!("{} {}", p.stages[s].id, flow.data.items[x].id));
                    }
                }
                TaskState::Waiting | TaskState::Skipped { blocked: true } => pending += 1,
                TaskState::Skipped { blocked: false } => skipped += 1,
            }
        }
        let _ = writeln!(
            out,
            "{:<20} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            p.stages[s].id, total, kept, rejected, errored, pending, skipped
        );
    }
    if !errors.is_empty() {
        let _ = writeln!(out, "\nErrored ({}), retried by the next `curate run`:", errors.len());
        for e in errors.iter().take(SHOWN) {
            let _ = writeln!(out, "  {e}");
        }
        if errors.len() > SHOWN {
            let _ = writeln!(out, "  … and {} more", errors.len() - SHOWN);
        }
    }
    if !in_flight.is_empty() {
        let what = if running.is_some() {
            "Running now"
        } else {
            "In flight when a run stopped without finishing them"
        };
        let _ = writeln!(out, "\n{what} ({}):", in_flight.len());
        for t in in_flight.iter().take(SHOWN) {
            let _ = writeln!(out, "  {t}");
        }
        if in_flight.len() > SHOWN {
            let _ = writeln!(out, "  … and {} more", in_flight.len() - SHOWN);
        }
    }
    out
}
