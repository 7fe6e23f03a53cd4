//! Stage kinds. A stage is a small [`Stage`] implementation plus a `build` function that checks its
//! config; adding a kind means one new file here and one line in [`REGISTRY`].

use serde_yaml::Mapping;

pub use crate::context::StageContext;
pub use crate::engine::stage::{AsyncStage, Meter, Stage, StageDef, TaskError, TaskFuture, TaskInput, adapt};
use crate::errors::ConfigError;
use crate::record::{PullRequest, ReviewComment};

pub mod agent_validation;
pub mod attribution;
pub mod behaviour;
pub mod comment_context;
pub mod contract;
pub mod environment;
pub mod exec;
pub mod noop;
pub mod project_tests;
pub mod review;
pub mod review_filter;
pub mod revise;
pub mod score;
pub mod test_synthesis;

type BuildFn = fn(&StageContext, &Mapping) -> Result<StageDef, ConfigError>;

/// Every stage kind, by the name used in `kind:`.
const REGISTRY: &[(&str, BuildFn)] = &[
    ("noop", noop::build),
    ("exec", exec::build),
    ("comment_context", comment_context::build),
    ("review_filter", review_filter::build),
    ("attribution", attribution::build),
    ("environment", environment::build_stage),
    ("observed_behaviour", behaviour::build),
    ("project_tests", project_tests::build),
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
pub fn build(kind: &str, ctx: &StageContext, config: &Mapping) -> Option<Result<StageDef, ConfigError>> {
    REGISTRY.iter().find(|(name, _)| *name == kind).map(|(_, build)| build(ctx, config))
}

/// A comment task's PR record and its own comment record.
pub fn comment_records(input: &TaskInput) -> Result<(PullRequest, ReviewComment), TaskError> {
    let pr = input
        .pr
        .as_ref()
        .and_then(|p| serde_json::from_value::<PullRequest>(p.data.clone()).ok())
        .ok_or_else(|| TaskError::reject("the comment's PR is not a pull request record"))?;
    let comment = serde_json::from_value::<ReviewComment>(input.item.data.clone())
        .map_err(|_| TaskError::reject("the item is not a review comment record"))?;
    Ok((pr, comment))
}

/// A PR task's record.
pub fn pr_record(input: &TaskInput) -> Result<PullRequest, TaskError> {
    serde_json::from_value(input.item.data.clone())
        .map_err(|_| TaskError::reject("the item is not a pull request record"))
}

impl From<crate::llm::Usage> for crate::engine::stage::Usage {
    fn from(u: crate::llm::Usage) -> Self {
        crate::engine::stage::Usage { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens }
    }
}

/// A model call's failure decides the task's: a prompt longer than the model's context is the
/// input's doing and is refused again on every run (a rejection, with the server's words); any
/// other failure is the server's or the cache's, and the next run asks again.
impl From<crate::llm::LlmError> for TaskError {
    fn from(e: crate::llm::LlmError) -> TaskError {
        match e {
            crate::llm::LlmError::ContextExceeded(_) => TaskError::reject(e.to_string()),
            other => TaskError::infra(other),
        }
    }
}
