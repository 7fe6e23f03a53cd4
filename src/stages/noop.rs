//! `noop`: keeps every item and outputs nothing. For benchmarks of the engine and for tests.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_yaml::Mapping;

use super::{Stage, StageContext, StageDef, TaskFuture, TaskInput};
use crate::engine::item::{Outcome, Scope};
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {}

struct Noop;

pub fn build(_ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let Config {} = parse_config(config)?;
    Ok(StageDef::new(Arc::new(Noop), 1, Scope::Pr, Resource::Cpu))
}

impl Stage for Noop {
    fn run(&self, _input: TaskInput) -> TaskFuture {
        Box::pin(std::future::ready(Outcome::Kept { output: Value::Null }))
    }
}
