//! The pipeline file as written: YAML parsed into plain structs, with unknown keys and wrong types
//! reported at their line and column. Cross-stage checks (ids, `needs`, kinds, cycles) happen in
//! [`crate::pipeline`], which turns a spec into something that can run.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_yaml::Mapping;

use crate::errors::{ConfigError, SpecError};
use crate::item::Scope;
use crate::locate::{locate, parse_path};
use crate::resources::Resource;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    pub name: String,
    pub source: SourceSpec,
    #[serde(default)]
    pub defaults: Defaults,
    pub stages: Vec<StageSpec>,
}

/// `source: {kind: ..., ...}`; the rest of the mapping is the source kind's own config.
#[derive(Debug, Clone, Deserialize)]
pub struct SourceSpec {
    pub kind: String,
    #[serde(flatten)]
    pub config: Mapping,
}

/// `defaults:`. The engine owns `concurrency`; every other key belongs to the application, which
/// reads `other` with [`parse_config`] (so its unknown keys are errors too).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Defaults {
    /// Tasks of each resource kind that may run at once.
    #[serde(default)]
    pub concurrency: BTreeMap<Resource, usize>,
    #[serde(flatten)]
    pub other: Mapping,
}

/// One stage. Keys other than the common ones below belong to the stage kind's config.
#[derive(Debug, Clone, Deserialize)]
pub struct StageSpec {
    pub id: String,
    pub kind: String,
    #[serde(default, deserialize_with = "one_or_many")]
    pub needs: Vec<String>,
    /// The funnel row's label; defaults to the id.
    pub title: Option<String>,
    /// Whether the stage works on PRs or on comments; each kind has a default.
    pub scope: Option<Scope>,
    /// Which concurrency pool the stage's tasks draw from; each kind has a default.
    pub resource: Option<Resource>,
    /// At most this many of this stage's tasks at once, within the resource's limit.
    pub concurrency: Option<usize>,
    /// Files whose contents are part of every task key of this stage (scripts, data).
    #[serde(default)]
    pub inputs: Vec<String>,
    #[serde(flatten)]
    pub config: Mapping,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl PipelineSpec {
    /// Parses pipeline text. `file` is used in error messages only.
    pub fn parse(file: &Path, text: &str) -> Result<PipelineSpec, SpecError> {
        if text.trim().is_empty() {
            return Err(SpecError {
                file: file.to_path_buf(),
                position: None,
                key: None,
                message: "the pipeline file is empty; it needs `name`, `source` and `stages`".into(),
            });
        }
        let de = serde_yaml::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let inner_path = e.path().to_string();
            let inner = e.into_inner();
            let key = clean_path(&inner_path);
            // Prefer the position of the key the error is about; serde_yaml's own position is the
            // parser's, which for flattened maps is the end of the mapping.
            let position = key.as_deref().and_then(|k| locate(text, &parse_path(k))).or_else(|| {
                inner.location().map(|l| crate::locate::Position { line: l.line(), column: l.column() })
            });
            SpecError { file: file.to_path_buf(), position, key, message: strip_location(&inner.to_string()) }
        })
    }
}

/// Deserializes a stage's or source's own config (the keys its kind owns), naming the offending key.
pub fn parse_config<T: serde::de::DeserializeOwned>(config: &Mapping) -> Result<T, ConfigError> {
    let value = serde_yaml::Value::Mapping(config.clone());
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ConfigError { key: clean_path(&path), message: strip_location(&e.into_inner().to_string()) }
    })
}

/// serde_path_to_error writes `?` for parts it could not name (a syntax error inside a mapping);
/// those are dropped, and an empty path is none.
fn clean_path(path: &str) -> Option<String> {
    let kept: Vec<&str> = path.split('.').filter(|p| !p.is_empty() && *p != "?").collect();
    (!kept.is_empty()).then(|| kept.join("."))
}

/// serde_yaml appends " at line L column C" to its messages; the position is shown up front instead.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PipelineSpec, SpecError> {
        PipelineSpec::parse(Path::new("p.yaml"), text)
    }

    #[test]
    fn parses_common_keys_and_keeps_the_rest_as_config() {
        let spec = parse(
            "name: x\nsource: {kind: jsonl, path: a.jsonl}\nstages:\n  - id: a\n    kind: exec\n    needs: b\n    command: echo\n",
        )
        .unwrap();
        assert_eq!(spec.stages[0].needs, vec!["b"]);
        assert_eq!(spec.stages[0].config.len(), 1);
        assert_eq!(spec.source.config.len(), 1);
    }

    #[test]
    fn unknown_top_level_key_is_located() {
        let err = parse("name: x\nsource: {kind: jsonl}\nstagez: []\n").unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with("p.yaml:3:"), "{shown}");
        assert!(shown.contains("unknown field `stagez`"), "{shown}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let err = parse(
            "name: x\nsource: {kind: jsonl}\nstages:\n  - id: a\n    kind: noop\n    concurrency: many\n",
        )
        .unwrap_err();
        assert_eq!(err.key.as_deref(), Some("stages[0].concurrency"));
        assert_eq!(err.position.map(|p| p.line), Some(6));
    }

    #[test]
    fn malformed_yaml_has_a_position() {
        let err = parse("name: x\nstages: [\n").unwrap_err();
        assert!(err.position.is_some(), "{err}");
    }

    #[test]
    fn empty_file_says_what_is_needed() {
        assert!(parse("  \n").unwrap_err().to_string().contains("empty"));
    }
}
