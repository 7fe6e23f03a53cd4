//! Stage kinds. A stage is a small [`Stage`] implementation plus a `build` function that checks its
//! config; adding a kind means one new file here and one line in [`REGISTRY`].

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_yaml::Mapping;

use crate::engine::item::{Item, Outcome, Scope};
use crate::engine::resources::Resource;
use crate::errors::ConfigError;
use crate::llm::prompt::Template;
use crate::llm::{LlmSpec, Usage};
use crate::repo::Mirrors;
use crate::sources::record::{PullRequest, ReviewComment};

pub mod agent_validation;
pub mod comment_context;
pub mod environment;
pub mod exec;
pub mod noop;
pub mod review;
pub mod review_filter;
pub mod revise;
pub mod score;
pub mod test_synthesis;

type BuildFn = fn(&StageContext, &Mapping) -> Result<Built, ConfigError>;

/// Every stage kind, by the name used in `kind:`.
const REGISTRY: &[(&str, BuildFn)] = &[
    ("noop", noop::build),
    ("exec", exec::build),
    ("comment_context", comment_context::build),
    ("review_filter", review_filter::build),
    ("environment", environment::build_stage),
    ("test_synthesis", test_synthesis::build),
    ("agent_validation", agent_validation::build),
    ("review", review::build),
    ("revise", revise::build),
    ("score", score::build),
];

pub fn kinds() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|(name, _)| *name)
}

/// Builds a stage of `kind` from its config; `None` when no such kind exists.
pub fn build(kind: &str, ctx: &StageContext, config: &Mapping) -> Option<Result<Built, ConfigError>> {
    REGISTRY.iter().find(|(name, _)| *name == kind).map(|(_, build)| build(ctx, config))
}

/// What a stage's build function gets besides its config.
pub struct StageContext<'a> {
    /// The pipeline file's directory: relative paths in config are relative to it.
    pub dir: &'a Path,
    pub id: &'a str,
    /// The pipeline's repository mirrors, shared by every stage.
    pub mirrors: &'a Arc<Mirrors>,
    /// The pipeline's `defaults.llm`; a stage's own `llm:` goes on top.
    pub llm: &'a LlmSpec,
    /// The cache directory (`cache/llm` holds recorded model answers).
    pub cache: &'a Path,
}

impl StageContext<'_> {
    /// The prompt template at `path` (relative to the pipeline file), checked to use only the
    /// `known` placeholders; errors name the config `key`.
    pub fn template(&self, key: &str, path: &Path, known: &[&str]) -> Result<Template, ConfigError> {
        let full = self.dir.join(path);
        let text = std::fs::read_to_string(&full)
            .map_err(|e| ConfigError::new(key, format!("cannot read {}: {e}", full.display())))?;
        Template::parse(&text, known).map_err(|e| ConfigError::new(key, e))
    }
}

/// A built stage and the facts the engine needs about it.
pub struct Built {
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
    /// Where the task adds the model tokens it used.
    #[serde(skip)]
    pub meter: Arc<Meter>,
}

impl TaskInput {
    /// A comment task's PR record and its own comment record.
    pub fn comment_records(&self) -> Result<(PullRequest, ReviewComment), String> {
        let pr = self
            .pr
            .as_ref()
            .and_then(|p| serde_json::from_value::<PullRequest>(p.data.clone()).ok())
            .ok_or("the comment's PR is not a pull request record")?;
        let comment = serde_json::from_value::<ReviewComment>(self.item.data.clone())
            .map_err(|_| "the item is not a review comment record")?;
        Ok((pr, comment))
    }

    /// The output of the upstream stage that provides `key`: stages find what they need by what
    /// it holds, whatever the upstream stage is called.
    pub fn upstream_with(&self, key: &str) -> Option<&Value> {
        self.upstream.values().find(|v| v.get(key).is_some())
    }
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

pub type TaskFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

pub trait Stage: Send + Sync {
    fn run(&self, input: TaskInput) -> TaskFuture;
}
