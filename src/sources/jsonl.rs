//! `jsonl`: one JSON object a line, with at least `id`; a `pr` field makes the line a comment of that
//! PR. The whole object is the item's record.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use serde_yaml::Mapping;

use super::lines::{Line, config_file, json_lines, problem};
use super::{Ingest, Source, SourceContext};
use crate::engine::item::Item;
use crate::engine::spec::parse_config;
use crate::errors::{ConfigError, SourceError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    path: PathBuf,
}

pub struct Jsonl {
    path: PathBuf,
}

pub fn build(ctx: &SourceContext, config: &Mapping) -> Result<Box<dyn Source>, ConfigError> {
    let config: Config = parse_config(config)?;
    let path = config_file(ctx.dir, &config.path, "path")?;
    Ok(Box::new(Jsonl { path }))
}

impl Source for Jsonl {
    fn load(&self) -> Result<Ingest, SourceError> {
        let bytes = std::fs::read(&self.path)
            .map_err(|error| SourceError::Read { file: self.path.clone(), error })?;
        Ok(parse(&self.path, &bytes))
    }
}

/// An `id` or `pr` field that names nothing.
#[derive(Debug, thiserror::Error)]
enum IdError {
    #[error("is empty")]
    Empty,
    #[error("must be a string or a number, not {0}")]
    NotAnId(Value),
}

/// An id may be written as a string or a number; both name the same thing.
fn id_field(obj: &serde_json::Map<String, Value>, field: &str) -> Result<Option<String>, IdError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(IdError::Empty),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(IdError::NotAnId(other.clone())),
    }
}

fn parse(file: &std::path::Path, bytes: &[u8]) -> Ingest {
    let mut ingest = Ingest::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for Line { number, object } in json_lines(file, bytes, &mut ingest.problems) {
        let (id, pr) = match (id_field(&object, "id"), id_field(&object, "pr")) {
            (Ok(Some(id)), Ok(pr)) => (id, pr),
            (Ok(None), _) => {
                ingest.problems.push(problem(file, number, Some("id"), "missing"));
                continue;
            }
            (Err(e), _) => {
                ingest.problems.push(problem(file, number, Some("id"), e.to_string()));
                continue;
            }
            (_, Err(e)) => {
                ingest.problems.push(problem(file, number, Some("pr"), e.to_string()));
                continue;
            }
        };
        if let Some(first) = seen.get(&id) {
            let message = format!("duplicate id `{id}` (first on line {first})");
            ingest.problems.push(problem(file, number, Some("id"), message));
            continue;
        }
        seen.insert(id.clone(), number);
        let data = Value::Object(object);
        ingest.items.push(match pr {
            Some(pr) => Item::comment(id, pr, data),
            None => Item::pr(id, data),
        });
    }
    ingest.problems.sort_by_key(|p| p.line);
    ingest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::item::Scope;

    fn run(text: &[u8]) -> Ingest {
        parse(std::path::Path::new("in.jsonl"), text)
    }

    #[test]
    fn reads_prs_and_comments() {
        let ingest = run(b"{\"id\": \"p1\"}\n\n{\"id\": 7, \"pr\": \"p1\", \"text\": \"nit\"}\n");
        assert!(ingest.problems.is_empty());
        assert_eq!(ingest.items.len(), 2);
        assert_eq!(ingest.items[1].id, "7");
        assert_eq!(ingest.items[1].scope, Scope::Comment);
        assert_eq!(ingest.items[1].pr, "p1");
    }

    #[test]
    fn bad_lines_are_reported_with_line_and_field_and_skipped() {
        let ingest = run(b"{\"id\": \"a\"}\n{oops\n{\"name\": 1}\n[1]\n{\"id\": \"a\"}\n\xff\xfe\n{\"id\": {}}\n{\"id\": \"b\"}\n");
        let shown: Vec<String> = ingest.problems.iter().map(ToString::to_string).collect();
        assert_eq!(ingest.items.len(), 2, "{shown:?}");
        assert_eq!(shown.len(), 6, "{shown:?}");
        assert!(shown[0].starts_with("in.jsonl:2: malformed JSON"), "{}", shown[0]);
        assert_eq!(shown[1], "in.jsonl:3: field `id`: missing");
        assert_eq!(shown[2], "in.jsonl:4: not a JSON object");
        assert_eq!(shown[3], "in.jsonl:5: field `id`: duplicate id `a` (first on line 1)");
        assert_eq!(shown[4], "in.jsonl:6: not valid UTF-8");
        assert!(shown[5].starts_with("in.jsonl:7: field `id`: must be"), "{}", shown[5]);
    }

    #[test]
    fn an_empty_file_is_a_problem_not_a_panic() {
        let ingest = run(b"\n  \n");
        assert!(ingest.items.is_empty());
        assert_eq!(ingest.problems.len(), 1);
    }
}
