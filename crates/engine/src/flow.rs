//! How items move between stages: which upstream tasks a task waits on, which tasks wait on a given
//! one, and, once the upstream tasks have settled, whether the task runs and with what inputs.
//!
//! Same scope: a task waits on the same item upstream. A comment task after a PR stage waits on its
//! PR. A PR task after a comment stage waits on all of its comments and runs if any was kept and none is
//! still unresolved. The
//! scheduler and the read-only [`crate::walk`] share this, so `report` sees what `run` did.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::item::{Dataset, Scope};
use crate::key::{ItemIdentity, TaskKey, task_key};
use crate::pipeline::Pipeline;

/// Where a task stands.
#[derive(Debug, Clone)]
pub enum TaskState {
    /// Not every upstream task has settled yet.
    Waiting,
    /// Its inputs are known but it has no result (queued, running, or never run).
    Pending {
        key: TaskKey,
    },
    Kept {
        key: TaskKey,
        output: Arc<Value>,
    },
    Rejected {
        key: TaskKey,
        reason: String,
    },
    Errored {
        key: TaskKey,
        error: String,
    },
    /// It will not run: an upstream task did not keep the item. `blocked` when that was because an
    /// upstream task errored or has not run, rather than a final rejection.
    Skipped {
        blocked: bool,
    },
}

impl TaskState {
    /// The task's key, once its inputs are known.
    pub fn key(&self) -> Option<TaskKey> {
        match self {
            TaskState::Pending { key }
            | TaskState::Kept { key, .. }
            | TaskState::Rejected { key, .. }
            | TaskState::Errored { key, .. } => Some(*key),
            TaskState::Waiting | TaskState::Skipped { .. } => None,
        }
    }

    /// Final for the purpose of deciding downstream work.
    pub fn is_settled(&self) -> bool {
        !matches!(self, TaskState::Waiting | TaskState::Pending { .. })
    }

    fn blocks(&self) -> bool {
        matches!(
            self,
            TaskState::Waiting
                | TaskState::Pending { .. }
                | TaskState::Errored { .. }
                | TaskState::Skipped { blocked: true }
        )
    }
}

/// The upstream tasks of one task, for one of its needs.
pub enum Upstream<'a> {
    One(usize),
    /// All comments of a PR; the task runs if any was kept.
    Any(&'a [usize]),
}

/// The verdict once every upstream task has settled.
pub enum Gate {
    Open { key: TaskKey, upstream: BTreeMap<String, Value> },
    Closed { blocked: bool },
}

pub struct Flow<'a> {
    pub pipeline: &'a Pipeline,
    pub data: &'a Dataset,
    identities: Vec<ItemIdentity>,
}

impl<'a> Flow<'a> {
    pub fn new(pipeline: &'a Pipeline, data: &'a Dataset) -> Flow<'a> {
        // A comment's result can depend on its PR (title, commits), so the PR's record is part of
        // the comment's identity.
        let own: Vec<ItemIdentity> = data.items.iter().map(|i| ItemIdentity::new(&i.id, &i.data)).collect();
        let identities = data
            .items
            .iter()
            .enumerate()
            .map(|(x, item)| match item.scope {
                Scope::Pr => own[x],
                Scope::Comment => own[x].within(own[data.pr_index[x]]),
            })
            .collect();
        Flow { pipeline, data, identities }
    }

    /// The items stage `s` has a task for.
    pub fn tasks(&self, s: usize) -> impl Iterator<Item = usize> + '_ {
        let scope = self.pipeline.stages[s].scope;
        self.data.items.iter().enumerate().filter(move |(_, i)| i.scope == scope).map(|(x, _)| x)
    }

    pub fn task_count(&self, s: usize) -> usize {
        self.data.count(self.pipeline.stages[s].scope)
    }

    /// For each stage `s` needs, the tasks of that stage item `x` waits on.
    pub fn upstream(&self, s: usize, x: usize) -> impl Iterator<Item = (usize, Upstream<'_>)> + '_ {
        let scope = self.pipeline.stages[s].scope;
        self.pipeline.stages[s].needs.iter().map(move |&u| {
            let up = match (self.pipeline.stages[u].scope, scope) {
                (a, b) if a == b => Upstream::One(x),
                (Scope::Pr, _) => Upstream::One(self.data.pr_index[x]),
                (Scope::Comment, _) => Upstream::Any(&self.data.comments[x]),
            };
            (u, up)
        })
    }

    /// How many upstream tasks item `x` at stage `s` waits on.
    pub fn wait_count(&self, s: usize, x: usize) -> usize {
        self.upstream(s, x)
            .map(|(_, up)| match up {
                Upstream::One(_) => 1,
                Upstream::Any(cs) => cs.len(),
            })
            .sum()
    }

    /// Calls `f(d, z)` for every task that waits on task (`u`, `y`).
    pub fn for_each_dependent(&self, u: usize, y: usize, mut f: impl FnMut(usize, usize)) {
        let from = self.pipeline.stages[u].scope;
        for d in self.pipeline.graph.downstream(u) {
            match (from, self.pipeline.stages[d].scope) {
                (a, b) if a == b => f(d, y),
                (Scope::Pr, _) => self.data.comments[y].iter().for_each(|&c| f(d, c)),
                (Scope::Comment, _) => f(d, self.data.pr_index[y]),
            }
        }
    }

    /// Decides task (`s`, `x`) from its settled upstream tasks, read through `state`.
    pub fn gate<'s>(&self, s: usize, x: usize, state: impl Fn(usize, usize) -> &'s TaskState) -> Gate {
        let mut keys: Vec<(&str, Vec<TaskKey>)> = Vec::new();
        let mut inputs = BTreeMap::new();
        for (u, up) in self.upstream(s, x) {
            let id = &*self.pipeline.stages[u].id;
            match up {
                Upstream::One(y) => match state(u, y) {
                    TaskState::Kept { key, output } => {
                        keys.push((id, vec![*key]));
                        inputs.insert(id.to_string(), Value::clone(output));
                    }
                    other => return Gate::Closed { blocked: other.blocks() },
                },
                Upstream::Any(comments) => {
                    let mut kept_keys = Vec::new();
                    let mut outputs = serde_json::Map::new();
                    let mut blocked = false;
                    for &c in comments {
                        match state(u, c) {
                            TaskState::Kept { key, output } => {
                                kept_keys.push(*key);
                                outputs.insert(self.data.items[c].id.clone(), Value::clone(output));
                            }
                            other => blocked |= other.blocks(),
                        }
                    }
                    // Wait for every comment to have a final result: running on a partial set would
                    // give a key that changes once the rest arrive, and the work would be done twice.
                    if blocked || kept_keys.is_empty() {
                        return Gate::Closed { blocked };
                    }
                    keys.push((id, kept_keys));
                    inputs.insert(id.to_string(), Value::Object(outputs));
                }
            }
        }
        let key = task_key(self.pipeline.stages[s].fingerprint, self.identities[x], &keys);
        Gate::Open { key, upstream: inputs }
    }
}
