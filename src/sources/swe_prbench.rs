//! `swe-prbench`: a `prs.jsonl` of PRs plus `annotations/<task_id>_human.json` with each PR's human
//! review comments. The format has no fixed commit: later stages that need one reject the PR with that
//! reason, ingest does not.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};
use serde_yaml::Mapping;

use super::lines::{Line, config_file, json_lines, problem, typed};
use super::{Ingest, Source, SourceContext};
use crate::engine::item::Item;
use crate::engine::spec::parse_config;
use crate::errors::{ConfigError, Problem, SourceError};
use crate::record::{PullRequest, ReviewComment, normalize_repo_path};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The `prs.jsonl` file.
    path: PathBuf,
    /// The annotations directory; default: `annotations/` beside `prs.jsonl`.
    annotations: Option<PathBuf>,
}

pub fn build(ctx: &SourceContext, config: &Mapping) -> Result<Box<dyn Source>, ConfigError> {
    let config: Config = parse_config(config)?;
    let prs = config_file(ctx.dir, &config.path, "path")?;
    let annotations = match config.annotations {
        Some(a) => ctx.dir.join(a),
        None => prs.parent().unwrap_or(Path::new(".")).join("annotations"),
    };
    if !annotations.is_dir() {
        return Err(ConfigError::new("annotations", format!("{} is not a directory", annotations.display())));
    }
    Ok(Box::new(SwePrBench { prs, annotations }))
}

struct SwePrBench {
    prs: PathBuf,
    annotations: PathBuf,
}

#[derive(Deserialize)]
struct Pr {
    task_id: String,
    repo: String,
    language: Option<String>,
    diff_patch: Option<String>,
    base_commit: String,
    head_commit: String,
}

#[derive(Deserialize)]
struct Annotations {
    #[serde(default)]
    comments: Vec<Value>,
}

#[derive(Deserialize)]
struct RawComment {
    body: String,
    file: Option<String>,
    line: Option<u64>,
}

const MAPPED: &[&str] = &["task_id", "repo", "language", "diff_patch", "base_commit", "head_commit"];

impl Source for SwePrBench {
    fn load(&self) -> Result<Ingest, SourceError> {
        let bytes =
            std::fs::read(&self.prs).map_err(|error| SourceError::Read { file: self.prs.clone(), error })?;
        let mut ingest = Ingest::default();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for Line { number, object } in json_lines(&self.prs, &bytes, &mut ingest.problems) {
            let extra: Map<String, Value> = object
                .iter()
                .filter(|(k, _)| !MAPPED.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let pr: Pr = match typed(Value::Object(object)) {
                Ok(pr) => pr,
                Err((field, message)) => {
                    ingest.problems.push(problem(&self.prs, number, field.as_deref(), message));
                    continue;
                }
            };
            if let Some(first) = seen.get(&pr.task_id) {
                let message = format!("duplicate id `{}` (first on line {first})", pr.task_id);
                ingest.problems.push(problem(&self.prs, number, Some("task_id"), message));
                continue;
            }
            if pr.task_id.is_empty() || pr.task_id.contains(['/', '\\']) || pr.task_id.starts_with('.') {
                let message = format!("`{}` cannot name an annotations file", pr.task_id);
                ingest.problems.push(problem(&self.prs, number, Some("task_id"), message));
                continue;
            }
            seen.insert(pr.task_id.clone(), number);
            let id = pr.task_id.clone();
            let record = PullRequest {
                repo: pr.repo,
                number: None,
                title: String::new(),
                body: String::new(),
                language: pr.language,
                created_at: None,
                base_commit: pr.base_commit,
                head_commit: pr.head_commit,
                fixed_commit: None,
                patch: pr.diff_patch,
                fixed_patch: None,
                extra,
            };
            ingest.items.push(Item::pr(id.clone(), serde_json::to_value(&record).unwrap_or(Value::Null)));
            let file = self.annotations.join(format!("{id}_human.json"));
            self.comments(&id, &file, &mut ingest);
        }
        Ok(ingest)
    }
}

impl SwePrBench {
    fn comments(&self, pr: &str, file: &Path, ingest: &mut Ingest) {
        let push = |ingest: &mut Ingest, line: usize, field: Option<String>, message: String| {
            ingest.problems.push(Problem { file: file.to_path_buf(), line, field, message });
        };
        let text = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(e) => return push(ingest, 0, None, format!("no annotations for PR `{pr}`: {e}")),
        };
        let value: Value = match serde_json::from_slice(&text) {
            Ok(v) => v,
            Err(e) => return push(ingest, e.line(), None, format!("malformed JSON: {e}")),
        };
        let annotations: Annotations = match typed(value) {
            Ok(a) => a,
            Err((field, message)) => return push(ingest, 1, field, message),
        };
        let mut ids: HashMap<String, usize> = HashMap::new();
        for (i, raw) in annotations.comments.into_iter().enumerate() {
            let field = |f: &str| Some(format!("comments[{i}]{f}"));
            let extra: Map<String, Value> = raw
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| !["body", "file", "line"].contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            let c: RawComment = match typed(raw) {
                Ok(c) => c,
                Err((f, message)) => {
                    push(ingest, 1, field(&f.map(|f| format!(".{f}")).unwrap_or_default()), message);
                    continue;
                }
            };
            let path = match c.file.as_deref().map(normalize_repo_path).transpose() {
                Ok(path) => path,
                Err(e) => {
                    push(ingest, 1, field(".file"), e.to_string());
                    continue;
                }
            };
            let local = match extra.get("comment_id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => format!("c{}", i + 1),
            };
            if ids.insert(local.clone(), i).is_some() {
                push(ingest, 1, field(".comment_id"), format!("duplicate comment id `{local}`"));
                continue;
            }
            let comment = ReviewComment {
                text: c.body,
                path,
                diff_hunk: None,
                line: c.line,
                start_line: None,
                original_line: c.line,
                original_start_line: None,
                index: i + 1,
                by_pr_author: None,
                is_reply: None,
                extra,
            };
            let data = serde_json::to_value(&comment).unwrap_or(Value::Null);
            ingest.items.push(Item::comment(format!("{pr}#{local}"), pr, data));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_prs_and_their_annotation_files() {
        let dir = tempfile::tempdir().unwrap();
        let pr = |id: &str| {
            json!({"task_id": id, "repo": "dask/dask", "language": "Python", "difficulty": "Type1_Direct",
                   "rvs_score": 0.5, "diff_patch": "diff", "base_commit": "a", "head_commit": "b",
                   "num_substantive_comments": 1})
            .to_string()
        };
        std::fs::write(
            dir.path().join("prs.jsonl"),
            format!("{}\n{}\n{{\"task_id\": 1}}\n", pr("d__1"), pr("d__2")),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("annotations")).unwrap();
        let ann = json!({"task_id": "d__1", "comments": [
            {"comment_id": "c_1", "body": "Out of scope", "file": "dask/system.py", "line": 82,
             "is_in_diff": true, "is_initiating_comment": true},
            {"comment_id": "c_2", "body": "x", "file": "../up.py", "line": 1}
        ]});
        std::fs::write(dir.path().join("annotations/d__1_human.json"), ann.to_string()).unwrap();
        let mut config = Mapping::new();
        config.insert("path".into(), "prs.jsonl".into());
        let mirrors = std::sync::Arc::new(crate::repo::Mirrors::new("{repo}", dir.path(), dir.path()));
        let ctx = SourceContext { dir: dir.path(), cache: dir.path(), mirrors: &mirrors };
        let source = build(&ctx, &config).map_err(|e| e.message).unwrap();
        let ingest = source.load().unwrap();
        let ids: Vec<&str> = ingest.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["d__1", "d__1#c_1", "d__2"]);
        let c: ReviewComment = serde_json::from_value(ingest.items[1].data.clone()).unwrap();
        assert_eq!(c.extra["is_in_diff"], json!(true));
        let shown: Vec<String> = ingest.problems.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert!(shown.iter().any(|p| p.contains("comments[1].file`: `../up.py` escapes")), "{shown:?}");
        assert!(shown.iter().any(|p| p.contains("no annotations for PR `d__2`")), "{shown:?}");
        assert!(shown.iter().any(|p| p.contains("prs.jsonl:3: field `task_id`")), "{shown:?}");
    }
}
