//! What a stage is to the engine: something that turns a [`TaskInput`] into an [`Outcome`], plus the
//! facts the engine needs to schedule and key its tasks ([`StageDef`]). What a stage does is the
//! application's business; the engine never looks inside an output.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::item::{Item, Outcome, Scope};
use crate::resources::Resource;

pub type TaskFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

pub trait Stage: Send + Sync {
    fn run(&self, input: TaskInput) -> TaskFuture;
}

/// A built stage and the facts the engine needs about it.
pub struct StageDef {
    pub stage: Arc<dyn Stage>,
    /// Bumped whenever the stage's behaviour changes, so old results are not reused.
    pub version: u32,
    pub scope: Scope,
    pub resource: Resource,
    /// Whether running it twice could be seen outside (a process, a container, a model call). Such
    /// tasks are recorded as started before they run, so a crash leaves a trace.
    pub side_effects: bool,
    /// Files named by the config, relative to the pipeline directory; their contents are hashed into
    /// every task key of the stage.
    pub files: Vec<String>,
    /// Settings outside the stage's config that change its results (the model, its temperature),
    /// hashed into every task key; `Value::Null` for none.
    pub fingerprint_extra: Value,
    /// Config keys (dotted paths: `agent.llm`) that do not change results (limits, retries, timeouts of a model
    /// client): left out of the task key, so editing them reuses earlier results. Whatever part of
    /// them does change results belongs in `fingerprint_extra`.
    pub unhashed: &'static [&'static str],
    /// The name of the output contract the stage's kept outputs follow, if any.
    pub provides: Option<&'static str>,
    /// Contracts this stage reads from its direct upstream stages; the pipeline is rejected at load
    /// time when no stage in its `needs` provides one of them.
    pub requires: Vec<&'static str>,
}

impl StageDef {
    /// A stage with no files, settings, contracts or side effects; set those that apply on top
    /// (`StageDef { provides: ..., ..StageDef::new(...) }`).
    pub fn new(stage: Arc<dyn Stage>, version: u32, scope: Scope, resource: Resource) -> StageDef {
        StageDef {
            stage,
            version,
            scope,
            resource,
            side_effects: false,
            files: Vec::new(),
            fingerprint_extra: Value::Null,
            unhashed: &[],
            provides: None,
            requires: Vec::new(),
        }
    }
}

/// Token usage of one task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Token usage of one task, added to by the stage, read by the scheduler when the task ends.
#[derive(Debug, Default)]
pub struct Meter(std::sync::Mutex<Usage>);

impl Meter {
    pub fn add(&self, usage: Usage) {
        if let Ok(mut u) = self.0.lock() {
            u.prompt_tokens += usage.prompt_tokens;
            u.completion_tokens += usage.completion_tokens;
        }
    }

    pub fn total(&self) -> Usage {
        self.0.lock().map(|u| *u).unwrap_or_default()
    }
}

/// What a task gets: the item and the outputs of the upstream tasks it consumed, by stage id. A PR
/// task after a comment stage gets an object of the kept comments' outputs by comment id.
#[derive(Debug, Clone, Serialize)]
pub struct TaskInput {
    pub stage: Arc<str>,
    pub item: Arc<Item>,
    /// For a comment, the PR it belongs to.
    pub pr: Option<Arc<Item>>,
    pub upstream: BTreeMap<String, Value>,
    /// Which upstream stage provides each contract this task's stage can read.
    #[serde(skip)]
    pub providers: Arc<BTreeMap<&'static str, Arc<str>>>,
    /// Where the task adds the model tokens it used.
    #[serde(skip)]
    pub meter: Arc<Meter>,
}

impl TaskInput {
    /// The output of the upstream stage that provides `contract`; `None` when no stage in `needs`
    /// provides it (the pipeline check rules that out for contracts the stage declared).
    pub fn output_of(&self, contract: &str) -> Option<&Value> {
        self.providers.get(contract).and_then(|id| self.upstream.get(&**id))
    }
}

/// Why a task did not keep its item: the one error type of every stage.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The item is dropped for a stated reason: a result, final and counted. `detail` keeps what
    /// led there (every attempt of a test synthesis, say); `Value::Null` for nothing more.
    #[error("{reason}")]
    Reject { reason: String, detail: Value },
    /// The infrastructure failed (a server, the Docker daemon, the disk): not a result; the next
    /// run tries the task again.
    #[error("{0}")]
    Infra(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl TaskError {
    pub fn reject(reason: impl Into<String>) -> TaskError {
        TaskError::Reject { reason: reason.into(), detail: Value::Null }
    }

    pub fn infra(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> TaskError {
        TaskError::Infra(error.into())
    }
}

impl From<Result<Value, TaskError>> for Outcome {
    fn from(result: Result<Value, TaskError>) -> Outcome {
        match result {
            Ok(output) => Outcome::Kept { output },
            Err(TaskError::Reject { reason, detail }) => Outcome::Rejected { reason, detail },
            Err(TaskError::Infra(error)) => Outcome::Errored { error: error.to_string() },
        }
    }
}

/// A stage written as one async function: its output, or why not. [`adapt`] makes it a [`Stage`].
pub trait AsyncStage: Send + Sync + 'static {
    fn run(&self, input: TaskInput) -> impl Future<Output = Result<Value, TaskError>> + Send;
}

struct Adapted<S>(Arc<S>);

impl<S: AsyncStage> Stage for Adapted<S> {
    fn run(&self, input: TaskInput) -> TaskFuture {
        let stage = self.0.clone();
        Box::pin(async move { Outcome::from(stage.run(input).await) })
    }
}

/// The [`Stage`] that runs `stage`'s async function for each task.
pub fn adapt<S: AsyncStage>(stage: S) -> Arc<dyn Stage> {
    Arc::new(Adapted(Arc::new(stage)))
}
