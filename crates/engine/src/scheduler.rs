//! Runs a pipeline's tasks. Items flow to the next stage as soon as their upstream tasks settle (no
//! barrier between stages); ready tasks start while their resource (and stage) has room, deepest
//! stages first so finished items reach the end early. Results come from the store when their key is
//! already there. The first Ctrl-C (or SIGTERM) stops new work and lets running tasks end; a second one
//! cuts them off and records them as interrupted.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::errors::StoreError;
use crate::events::{Event, Reporter, StageInfo};
use crate::flow::{Flow, Gate, TaskState};
use crate::item::{Item, Outcome, Scope};
use crate::key::TaskKey;
use crate::resources::{Limits, Resource};
use crate::stage::{Meter, TaskInput, Usage};
use crate::store::{Finish, Record, RecordState, Store};

/// How a run ended.
pub struct RunSummary {
    /// `states[s][x]`: every task's state at the end, by stage and item index.
    pub states: Vec<Vec<TaskState>>,
    /// Tasks computed in this run.
    pub executed: usize,
    /// Tasks whose result came from the store.
    pub cached: usize,
    pub errored: usize,
    /// The user stopped the run before everything was done.
    pub interrupted: bool,
}

struct Done {
    stage: usize,
    item: usize,
    outcome: Outcome,
    started: bool,
    duration: Duration,
    usage: Usage,
}

struct Running {
    handle: JoinHandle<()>,
    key: TaskKey,
    started: bool,
    since: Instant,
}

struct Ready {
    item: usize,
    key: TaskKey,
    upstream: BTreeMap<String, Value>,
}

/// Resolves an `Outcome` into the state the flow reads.
fn state_of(key: TaskKey, outcome: Outcome) -> TaskState {
    match outcome {
        Outcome::Kept { output } => TaskState::Kept { key, output: Arc::new(output) },
        Outcome::Rejected { reason, .. } => TaskState::Rejected { key, reason },
        Outcome::Errored { error } => TaskState::Errored { key, error },
    }
}

/// The state a stored final record stands for.
pub fn state_of_record(key: TaskKey, record: &Record) -> TaskState {
    let message = record.message.clone().unwrap_or_default();
    match record.state {
        RecordState::Kept => {
            TaskState::Kept { key, output: record.output.clone().unwrap_or_else(|| Arc::new(Value::Null)) }
        }
        RecordState::Rejected => TaskState::Rejected { key, reason: message },
        RecordState::Errored => TaskState::Errored { key, error: message },
        RecordState::Interrupted => TaskState::Errored { key, error: "interrupted by the user".into() },
        RecordState::Running => TaskState::Pending { key },
    }
}

struct Scheduler<'a> {
    flow: &'a Flow<'a>,
    store: &'a Store,
    records: &'a HashMap<TaskKey, Record>,
    limits: &'a Limits,
    items: Vec<Arc<Item>>,
    /// Each stage's place in the pipeline order, which is how events name stages.
    position: Vec<usize>,
    states: Vec<Vec<TaskState>>,
    remaining: Vec<Vec<usize>>,
    worklist: Vec<(usize, usize)>,
    ready: Vec<VecDeque<Ready>>,
    busy: BTreeMap<Resource, usize>,
    busy_stage: Vec<usize>,
    running: HashMap<(usize, usize), Running>,
    done_tx: mpsc::UnboundedSender<Done>,
    executed: usize,
    cached: usize,
}

/// Runs every task of `flow` that has no final record in `records`, writing results to `store`.
pub async fn run(
    flow: &Flow<'_>,
    store: &Store,
    records: &HashMap<TaskKey, Record>,
    limits: &Limits,
    reporter: &mut dyn Reporter,
) -> Result<RunSummary, StoreError> {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut sched = Scheduler::new(flow, store, records, limits, done_tx);
    reporter.event(Event::Plan { stages: plan(flow) });
    sched.seed();
    sched.settle_ready(reporter);

    let mut sigint = signal(SignalKind::interrupt()).ok();
    let mut sigterm = signal(SignalKind::terminate()).ok();
    let mut stopping = false;
    let mut interrupted = false;
    let mut failure = None;
    loop {
        if failure.is_none() {
            failure = store.failure();
            stopping |= failure.is_some();
        }
        if !stopping {
            sched.dispatch();
        }
        if sched.running.is_empty() {
            break;
        }
        let signalled = tokio::select! {
            Some(done) = done_rx.recv() => {
                sched.finish(done, reporter);
                while let Ok(done) = done_rx.try_recv() {
                    sched.finish(done, reporter);
                }
                sched.settle_ready(reporter);
                false
            }
            Some(()) = recv(&mut sigint) => true,
            Some(()) = recv(&mut sigterm) => true,
        };
        // The first Ctrl-C or SIGTERM stops new work and lets the running tasks end; a second cuts
        // them off.
        if signalled {
            interrupted = true;
            if stopping {
                sched.abort(reporter);
                break;
            }
            stopping = true;
            reporter.event(Event::Stopping { in_flight: sched.running.len() });
        }
    }
    store.flush().await?;
    if let Some(e) = failure.or_else(|| store.failure()) {
        return Err(StoreError::WriterGone(e));
    }
    reporter.event(Event::Finished);
    let errored = sched.states.iter().flatten().filter(|s| matches!(s, TaskState::Errored { .. })).count();
    Ok(RunSummary {
        states: sched.states,
        executed: sched.executed,
        cached: sched.cached,
        errored,
        interrupted,
    })
}

/// The stages in run order with their task counts, for the reporter.
fn plan<'f>(flow: &'f Flow<'_>) -> Vec<StageInfo<'f>> {
    let pipeline = flow.pipeline;
    pipeline
        .order()
        .iter()
        .map(|&s| StageInfo {
            id: &pipeline.stages[s].id,
            title: &pipeline.stages[s].title,
            total: flow.task_count(s),
        })
        .collect()
}

async fn recv(sig: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match sig {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

impl<'a> Scheduler<'a> {
    fn new(
        flow: &'a Flow<'a>,
        store: &'a Store,
        records: &'a HashMap<TaskKey, Record>,
        limits: &'a Limits,
        done_tx: mpsc::UnboundedSender<Done>,
    ) -> Scheduler<'a> {
        let n = flow.pipeline.stages.len();
        let mut position = vec![0; n];
        for (i, &s) in flow.pipeline.order().iter().enumerate() {
            position[s] = i;
        }
        Scheduler {
            flow,
            store,
            records,
            limits,
            items: flow.data.items.iter().cloned().map(Arc::new).collect(),
            position,
            states: vec![vec![TaskState::Waiting; flow.data.len()]; n],
            remaining: vec![vec![0; flow.data.len()]; n],
            worklist: Vec::new(),
            ready: (0..n).map(|_| VecDeque::new()).collect(),
            busy: BTreeMap::new(),
            busy_stage: vec![0; n],
            running: HashMap::new(),
            done_tx,
            executed: 0,
            cached: 0,
        }
    }

    /// Counts what each task waits on; those that wait on nothing go on the worklist, in the
    /// pipeline's order.
    fn seed(&mut self) {
        let flow = self.flow;
        for &s in flow.pipeline.order().iter().rev() {
            for x in flow.tasks(s).collect::<Vec<_>>().into_iter().rev() {
                let wait = flow.wait_count(s, x);
                self.remaining[s][x] = wait;
                if wait == 0 {
                    self.worklist.push((s, x));
                }
            }
        }
    }

    /// Decides every task whose upstream tasks have all settled: skipped, answered from the store,
    /// or queued to run.
    fn settle_ready(&mut self, reporter: &mut dyn Reporter) {
        while let Some((s, x)) = self.worklist.pop() {
            let gate = self.flow.gate(s, x, |u, y| &self.states[u][y]);
            match gate {
                Gate::Closed { blocked } => {
                    self.settle(s, x, TaskState::Skipped { blocked }, false, reporter)
                }
                Gate::Open { key, upstream } => match self.records.get(&key) {
                    Some(record) if record.state.is_final() => {
                        self.cached += 1;
                        self.settle(s, x, state_of_record(key, record), true, reporter);
                    }
                    _ => {
                        self.states[s][x] = TaskState::Pending { key };
                        self.ready[s].push_back(Ready { item: x, key, upstream });
                    }
                },
            }
        }
    }

    fn settle(&mut self, s: usize, x: usize, state: TaskState, cached: bool, reporter: &mut dyn Reporter) {
        reporter.event(Event::Settled {
            stage: self.position[s],
            item: &self.items[x].id,
            state: &state,
            cached,
        });
        self.states[s][x] = state;
        let (remaining, worklist) = (&mut self.remaining, &mut self.worklist);
        self.flow.for_each_dependent(s, x, |d, z| {
            remaining[d][z] -= 1;
            if remaining[d][z] == 0 {
                worklist.push((d, z));
            }
        });
    }

    fn dispatch(&mut self) {
        let pipeline = self.flow.pipeline;
        for &s in pipeline.order().iter().rev() {
            let plan = &pipeline.stages[s];
            let limit = self.limits.get(plan.resource);
            while !self.ready[s].is_empty() {
                let busy = self.busy.get(&plan.resource).copied().unwrap_or(0);
                if busy >= limit || plan.concurrency.is_some_and(|c| self.busy_stage[s] >= c) {
                    break;
                }
                let Some(task) = self.ready[s].pop_front() else { break };
                *self.busy.entry(plan.resource).or_default() += 1;
                self.busy_stage[s] += 1;
                self.spawn(s, task);
            }
        }
    }

    fn spawn(&mut self, s: usize, task: Ready) {
        let plan = &self.flow.pipeline.stages[s];
        let item = self.items[task.item].clone();
        let start_ack =
            plan.side_effects.then(|| self.store.start(task.key, plan.id.clone(), item.id.clone()));
        let started = start_ack.is_some();
        let pr =
            (item.scope == Scope::Comment).then(|| self.items[self.flow.data.pr_index[task.item]].clone());
        let meter = Arc::new(Meter::default());
        let input = TaskInput {
            stage: plan.id.clone(),
            item,
            pr,
            upstream: task.upstream,
            providers: plan.providers.clone(),
            meter: meter.clone(),
        };
        let stage = plan.stage.clone();
        let tx = self.done_tx.clone();
        let x = task.item;
        let handle = tokio::spawn(async move {
            let t0 = Instant::now();
            if let Some(ack) = start_ack {
                let recorded = match ack.await {
                    Ok(result) => result,
                    Err(_) => Err(StoreError::Stopped),
                };
                if let Err(e) = recorded {
                    let outcome = Outcome::Errored { error: format!("cannot record the task's start: {e}") };
                    let usage = Usage::default();
                    let _ =
                        tx.send(Done { stage: s, item: x, outcome, started, duration: t0.elapsed(), usage });
                    return;
                }
            }
            let outcome = AssertUnwindSafe(async move { stage.run(input).await })
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| Outcome::Errored {
                    error: format!("the stage panicked: {}", panic_message(panic.as_ref())),
                });
            let usage = meter.total();
            let _ = tx.send(Done { stage: s, item: x, outcome, started, duration: t0.elapsed(), usage });
        });
        self.running.insert((s, x), Running { handle, key: task.key, started, since: Instant::now() });
    }

    fn release(&mut self, s: usize) {
        let resource = self.flow.pipeline.stages[s].resource;
        if let Some(b) = self.busy.get_mut(&resource) {
            *b = b.saturating_sub(1);
        }
        self.busy_stage[s] = self.busy_stage[s].saturating_sub(1);
    }

    fn finish(&mut self, done: Done, reporter: &mut dyn Reporter) {
        let Some(running) = self.running.remove(&(done.stage, done.item)) else { return };
        self.release(done.stage);
        self.executed += 1;
        let plan = &self.flow.pipeline.stages[done.stage];
        self.store.finish(Finish {
            key: running.key,
            stage: plan.id.clone(),
            item: self.items[done.item].id.clone(),
            outcome: Some(done.outcome.clone()),
            started: done.started,
            duration: done.duration,
            usage: done.usage,
        });
        self.settle(done.stage, done.item, state_of(running.key, done.outcome), false, reporter);
    }

    /// Cuts off every running task and records it as interrupted.
    fn abort(&mut self, reporter: &mut dyn Reporter) {
        reporter.event(Event::Aborting { in_flight: self.running.len() });
        for ((s, x), running) in std::mem::take(&mut self.running) {
            running.handle.abort();
            self.store.finish(Finish {
                key: running.key,
                stage: self.flow.pipeline.stages[s].id.clone(),
                item: self.items[x].id.clone(),
                outcome: None,
                started: running.started,
                duration: running.since.elapsed(),
                usage: Usage::default(),
            });
            self.states[s][x] =
                TaskState::Errored { key: running.key, error: "interrupted by the user".into() };
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Silent;
    use crate::item::Dataset;
    use crate::pipeline::Pipeline;
    use crate::stage::{Stage, TaskFuture};
    use crate::testkit::Kinds;

    struct Panics;

    impl Stage for Panics {
        fn run(&self, input: TaskInput) -> TaskFuture {
            Box::pin(async move {
                if input.item.id == "b" {
                    panic!("bad item {}", input.item.id);
                }
                Outcome::Kept { output: Value::Null }
            })
        }
    }

    #[tokio::test]
    async fn a_panicking_task_is_recorded_as_errored_and_the_run_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("i.jsonl"), "{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\": \"c\"}\n")
            .unwrap();
        let text = "name: p\nsource: {kind: jsonl, path: i.jsonl}\nstages:\n  - id: s\n    kind: noop\n  - id: t\n    kind: noop\n    needs: s\n";
        let mut pipeline =
            Pipeline::from_text(&dir.path().join("p.yaml"), text, &Kinds { dir: dir.path().to_path_buf() })
                .unwrap();
        pipeline.stages[0].stage = Arc::new(Panics);
        let data = Dataset::new(pipeline.source.load().unwrap().items, None);
        let flow = Flow::new(&pipeline, &data);
        let store = Store::open(&dir.path().join("state")).unwrap();
        let limits = Limits::machine_defaults();
        let summary = run(&flow, &store, &HashMap::new(), &limits, &mut Silent).await.unwrap();
        assert_eq!(summary.errored, 1);
        assert!(
            matches!(&summary.states[0][1], TaskState::Errored { error, .. } if error == "the stage panicked: bad item b")
        );
        assert!(matches!(summary.states[1][0], TaskState::Kept { .. }));
        assert!(matches!(summary.states[1][1], TaskState::Skipped { blocked: true }));
        assert!(matches!(summary.states[1][2], TaskState::Kept { .. }));
        assert_eq!(summary.executed, 5);
    }
}
