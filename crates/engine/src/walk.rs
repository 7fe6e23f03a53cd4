//! The flow replayed over the store without running anything: every task's state as the store knows
//! it, for `status` and `report`. Because it computes keys exactly as the scheduler does, a task the
//! current pipeline would re-run (an edited prompt, a new item) shows as pending.

use std::collections::HashMap;

use crate::flow::{Flow, Gate, TaskState};
use crate::key::TaskKey;
use crate::scheduler::state_of_record;
use crate::store::Record;

/// `states[s][x]` for every stage and item; items outside a stage's scope stay `Waiting`.
pub fn walk(flow: &Flow, records: &HashMap<TaskKey, Record>) -> Vec<Vec<TaskState>> {
    let n = flow.pipeline.stages.len();
    let mut states = vec![vec![TaskState::Waiting; flow.data.len()]; n];
    for &s in flow.pipeline.order() {
        let tasks: Vec<usize> = flow.tasks(s).collect();
        for x in tasks {
            let state = match flow.gate(s, x, |u, y| &states[u][y]) {
                Gate::Closed { blocked } => TaskState::Skipped { blocked },
                Gate::Open { key, .. } => match records.get(&key) {
                    Some(record) => state_of_record(key, record),
                    None => TaskState::Pending { key },
                },
            };
            states[s][x] = state;
        }
    }
    states
}
