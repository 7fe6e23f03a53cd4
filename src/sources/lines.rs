//! Reading a JSON-lines file record by record: every line that is not valid UTF-8, not JSON or not an
//! object becomes a [`Problem`] with its line number, and the reading goes on.

use std::path::Path;

use serde_json::{Map, Value};

use crate::errors::Problem;

pub struct Line {
    pub number: usize,
    pub object: Map<String, Value>,
}

/// `path` (from a source's config) relative to the pipeline's directory, checked to be a file.
pub fn config_file(
    dir: &Path,
    path: &Path,
    key: &str,
) -> Result<std::path::PathBuf, crate::errors::ConfigError> {
    let full = dir.join(path);
    if full.is_file() {
        Ok(full)
    } else {
        Err(crate::errors::ConfigError::new(key, format!("{} is not a readable file", full.display())))
    }
}

pub fn problem(file: &Path, line: usize, field: Option<&str>, message: impl Into<String>) -> Problem {
    Problem { file: file.to_path_buf(), line, field: field.map(str::to_string), message: message.into() }
}

/// Splits `bytes` into JSON objects, one a line; blank lines are skipped.
pub fn json_lines(file: &Path, bytes: &[u8], problems: &mut Vec<Problem>) -> Vec<Line> {
    let mut out = Vec::new();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        problems.push(problem(file, 1, None, "the file is empty: no items"));
        return out;
    }
    for (n, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let number = n + 1;
        let Ok(text) = std::str::from_utf8(raw) else {
            problems.push(problem(file, number, None, "not valid UTF-8"));
            continue;
        };
        // A byte-order mark some editors write at the start is not part of the first record.
        let text = if number == 1 { text.trim_start_matches('\u{feff}') } else { text };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => out.push(Line { number, object }),
            Ok(_) => problems.push(problem(file, number, None, "not a JSON object")),
            Err(e) => problems.push(problem(file, number, None, format!("malformed JSON: {e}"))),
        }
    }
    out
}

/// Deserializes a record, naming the field at fault (`commit_to_review.head_commit`).
pub fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, (Option<String>, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = (path != "." && !path.is_empty()).then_some(path);
        (field, e.into_inner().to_string())
    })
}
