//! The pipeline file as written: YAML parsed into plain structs, with unknown keys and wrong types
//! reported at their line and column. Cross-stage checks (ids, `needs`, kinds, cycles) happen in
//! [`crate::pipeline`], which turns a spec into something that can run.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_yaml::Mapping;

use crate::errors::{ConfigError, ShapeError, SpecError};
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
        check_shape(text).map_err(|e| SpecError {
            file: file.to_path_buf(),
            position: None,
            key: None,
            message: e.to_string(),
        })?;
        let de = serde_yaml::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let inner_path = e.path().to_string();
            let inner = e.into_inner();
            let key = clean_path(&inner_path);
            let message = strip_location(&inner.to_string());
            let at_key = key.as_deref().and_then(|k| locate(text, &parse_path(k)));
            let at_parser =
                inner.location().map(|l| crate::locate::Position { line: l.line(), column: l.column() });
            // A data error is best shown at the key it is about (serde_yaml's own position is the
            // parser's, which for flattened maps is the end of the mapping); a syntax error where
            // the parser stopped; a duplicate at its second occurrence.
            let position = if let Some(field) = duplicated(&message) {
                second_occurrence(text, at_key.map_or(1, |p| p.line), field).or(at_key)
            } else if DATA_ERRORS.iter().any(|d| message.contains(d)) {
                at_key.or(at_parser)
            } else {
                at_parser.or(at_key)
            };
            SpecError { file: file.to_path_buf(), position, key, message }
        })
    }
}

/// A pipeline file larger than this is not one (a dataset given by mistake, say).
pub const MAX_PIPELINE_BYTES: usize = 1 << 20;
/// Nesting deeper than this, in brackets or in indentation, is refused before parsing: the YAML
/// parser's time grows with the square of the depth (100,000 levels took it half a minute).
pub const MAX_DEPTH: usize = 64;

/// Refuses, before any parsing, text too large or nested too deep to be a pipeline.
fn check_shape(text: &str) -> Result<(), ShapeError> {
    if text.len() > MAX_PIPELINE_BYTES {
        return Err(ShapeError::TooLarge { bytes: text.len(), limit: MAX_PIPELINE_BYTES });
    }
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            (None, '\n') => quote = None,
            _ => {}
        }
    }
    let indent = text.lines().map(|l| l.len() - l.trim_start_matches([' ', '-']).len()).max().unwrap_or(0);
    // Two columns a level, as pipelines are written.
    if deepest > MAX_DEPTH || indent > 2 * MAX_DEPTH {
        return Err(ShapeError::TooDeep { limit: MAX_DEPTH });
    }
    Ok(())
}

/// Parts of serde's messages for well-formed YAML that does not fit the pipeline's shape.
const DATA_ERRORS: [&str; 7] = [
    "unknown field",
    "missing field",
    "invalid type",
    "invalid value",
    "invalid length",
    "unknown variant",
    "duplicate",
];

/// The field a duplicate's message names: "duplicate field `x`" for a key of a typed struct,
/// `duplicate entry with key "x"` for one of a mapping kept as it is (a stage's or the source's
/// own settings, and anything under them).
fn duplicated(message: &str) -> Option<&str> {
    for (open, close) in [("duplicate field `", '`'), ("duplicate entry with key \"", '"')] {
        if let Some(at) = message.find(open) {
            return message[at + open.len()..].split(close).next();
        }
    }
    None
}

/// Where `field:` occurs a second time at the indentation of its first occurrence at or after line
/// `from` (from 1), within the same mapping.
fn second_occurrence(text: &str, from: usize, field: &str) -> Option<crate::locate::Position> {
    let mut first: Option<usize> = None;
    for (i, line) in text.lines().enumerate().skip(from.saturating_sub(1)) {
        let bare = line.trim_start_matches([' ', '-']);
        let indent = line.len() - bare.len();
        let is_field = bare.strip_prefix(field).is_some_and(|r| r.trim_start().starts_with(':'));
        match first {
            None if is_field => first = Some(indent),
            Some(at) if is_field && indent == at => {
                return Some(crate::locate::Position { line: i + 1, column: indent + 1 });
            }
            Some(at) if !bare.trim().is_empty() && indent < at && i + 1 > from => return None,
            _ => {}
        }
    }
    None
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
    fn syntax_errors_are_located_where_the_parser_stopped_and_duplicates_at_the_second() {
        let head = "name: x\nsource: {kind: jsonl, path: a.jsonl}\n";
        let over = format!("{head}stages:\n  - id: a\n    kind: noop\n    needs: a\n      title: over\n");
        let e = parse(&over).unwrap_err();
        assert_eq!(e.position.map(|p| p.line), Some(7), "{e}");
        let e = parse(&format!("{head}name: y\nstages: []\n")).unwrap_err();
        assert_eq!(e.position.map(|p| (p.line, p.column)), Some((3, 1)), "{e}");
        let e = parse(&format!("{head}stages:\n  - id: a\n    needs: a\n    needs: b\n")).unwrap_err();
        assert_eq!(e.position.map(|p| (p.line, p.column)), Some((6, 5)), "{e}");
        // In a mapping kept as it is (a stage's settings, the source's), at the duplicate too.
        let nested = "name: x\nsource:\n  kind: jsonl\n  path: a.jsonl\n  path: b.jsonl\nstages: []\n";
        let e = parse(nested).unwrap_err();
        assert_eq!(e.position.map(|p| (p.line, p.column)), Some((5, 3)), "{e}");
        let stage =
            format!("{head}stages:\n  - id: a\n    kind: exec\n    timeout_secs: 3\n    timeout_secs: 4\n");
        let e = parse(&stage).unwrap_err();
        assert_eq!(e.position.map(|p| (p.line, p.column)), Some((7, 5)), "{e}");
    }

    #[test]
    fn too_large_or_too_deep_is_refused_before_parsing() {
        let deep = format!("name: {}{}", "[".repeat(100_000), "]".repeat(100_000));
        let started = std::time::Instant::now();
        let e = parse(&deep).unwrap_err();
        assert!(e.message.contains("nested more than 64 levels"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let indented: String = (0..200).map(|i| format!("{}k{i}:\n", " ".repeat(i * 2))).collect();
        assert!(parse(&indented).unwrap_err().message.contains("nested"));
        let big = format!("name: x\n#{}\n", "x".repeat(MAX_PIPELINE_BYTES));
        assert!(parse(&big).unwrap_err().message.contains("bytes, more than"));
        // Brackets inside quotes are text.
        assert!(check_shape(&format!("name: '{}'\n", "[".repeat(100))).is_ok());
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
