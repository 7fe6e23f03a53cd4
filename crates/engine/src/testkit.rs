//! Source and stage kinds for the engine's own tests: a JSONL source of PR items, a stage that keeps
//! every item, one with a config to check, and a pair that provide and require a contract.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_yaml::Mapping;

use crate::errors::{ConfigError, Problem, SourceError};
use crate::item::{Item, Outcome, Scope};
use crate::plugins::Plugins;
use crate::resources::Resource;
use crate::source::{Ingest, Source};
use crate::spec::parse_config;
use crate::stage::{Stage, StageDef, TaskFuture, TaskInput};

pub struct Kinds {
    pub dir: PathBuf,
}

struct Lines(PathBuf);

impl Source for Lines {
    fn load(&self) -> Result<Ingest, SourceError> {
        let text = std::fs::read_to_string(&self.0)
            .map_err(|error| SourceError::Read { file: self.0.clone(), error })?;
        let mut ingest = Ingest::default();
        for (n, line) in text.lines().enumerate() {
            match serde_json::from_str::<Value>(line) {
                Ok(v) => {
                    let id = v["id"].as_str().map_or_else(|| v["id"].to_string(), str::to_string);
                    ingest.items.push(Item::pr(id, v));
                }
                Err(e) => ingest.problems.push(Problem {
                    file: self.0.clone(),
                    line: n + 1,
                    field: None,
                    message: e.to_string(),
                }),
            }
        }
        Ok(ingest)
    }
}

struct Keep;

impl Stage for Keep {
    fn run(&self, input: TaskInput) -> TaskFuture {
        Box::pin(async move { Outcome::Kept { output: input.item.data.clone() } })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceConfig {
    path: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoConfig {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct CommandConfig {
    command: String,
    timeout_secs: Option<u64>,
    /// Changes nothing a task produces: not hashed.
    retries: Option<u32>,
}

fn def(provides: Option<&'static str>, requires: Vec<&'static str>) -> StageDef {
    StageDef {
        stage: Arc::new(Keep),
        version: 1,
        scope: Scope::Pr,
        resource: Resource::Cpu,
        side_effects: false,
        files: Vec::new(),
        fingerprint_extra: Value::Null,
        unhashed: &["retries"],
        provides,
        requires,
    }
}

impl Plugins for Kinds {
    fn source_kinds(&self) -> Vec<&'static str> {
        vec!["jsonl"]
    }

    fn source(&self, kind: &str, config: &Mapping) -> Option<Result<Box<dyn Source>, ConfigError>> {
        (kind == "jsonl").then(|| {
            let c: SourceConfig = parse_config(config)?;
            Ok(Box::new(Lines(self.dir.join(c.path))) as Box<dyn Source>)
        })
    }

    fn stage_kinds(&self) -> Vec<&'static str> {
        vec!["noop", "exec", "make", "use"]
    }

    fn stage(&self, _id: &str, kind: &str, config: &Mapping) -> Option<Result<StageDef, ConfigError>> {
        let built = match kind {
            "noop" => parse_config::<NoConfig>(config).map(|_| def(None, Vec::new())),
            "exec" => parse_config::<CommandConfig>(config).map(|_| def(None, Vec::new())),
            "make" => parse_config::<NoConfig>(config).map(|_| def(Some("thing"), Vec::new())),
            "use" => parse_config::<NoConfig>(config).map(|_| def(None, vec!["thing"])),
            _ => return None,
        };
        Some(built)
    }
}
