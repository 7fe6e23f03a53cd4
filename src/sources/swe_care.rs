//! `swe-care`: SWE-CARE JSONL, the c-CRAB paper's input. One PR a line; its
//! `reference_review_comments` become comment items `<instance_id>#<n>`. The reviewed state is
//! `commit_to_review.head_commit`, the fixed state `merged_commit`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};
use serde_yaml::Mapping;

use super::lines::{Line, config_file, json_lines, problem, typed};
use super::{Ingest, Source, SourceContext};
use crate::engine::item::Item;
use crate::engine::spec::parse_config;
use crate::errors::{ConfigError, SourceError};
use crate::record::{PullRequest, ReviewComment, normalize_repo_path};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    path: PathBuf,
}

pub fn build(ctx: &SourceContext, config: &Mapping) -> Result<Box<dyn Source>, ConfigError> {
    let config: Config = parse_config(config)?;
    let path = config_file(ctx.dir, &config.path, "path")?;
    Ok(Box::new(SweCare { path }))
}

struct SweCare {
    path: PathBuf,
}

impl Source for SweCare {
    fn load(&self) -> Result<Ingest, SourceError> {
        let bytes = std::fs::read(&self.path)
            .map_err(|error| SourceError::Read { file: self.path.clone(), error })?;
        Ok(parse(&self.path, &bytes))
    }
}

#[derive(Deserialize)]
struct Instance {
    instance_id: String,
    repo: String,
    language: Option<String>,
    pull_number: Option<u64>,
    title: Option<String>,
    body: Option<String>,
    created_at: Option<String>,
    base_commit: String,
    commit_to_review: CommitToReview,
    #[serde(default)]
    reference_review_comments: Vec<Value>,
    merged_commit: Option<String>,
    merged_patch: Option<String>,
}

#[derive(Deserialize)]
struct CommitToReview {
    head_commit: String,
    patch_to_review: Option<String>,
}

#[derive(Deserialize)]
struct RawComment {
    text: String,
    path: Option<String>,
    diff_hunk: Option<String>,
    line: Option<u64>,
    start_line: Option<u64>,
    original_line: Option<u64>,
    original_start_line: Option<u64>,
    /// Not in SWE-CARE's own files; a collection that knows the authors may say.
    #[serde(default)]
    by_pr_author: Option<bool>,
    /// Likewise: whether the comment answers an earlier one of its thread.
    #[serde(default)]
    is_reply: Option<bool>,
}

/// Fields mapped into the common record; everything else goes to `extra` as it was.
const MAPPED: &[&str] = &[
    "instance_id",
    "repo",
    "language",
    "pull_number",
    "title",
    "body",
    "created_at",
    "base_commit",
    "commit_to_review",
    "reference_review_comments",
    "merged_commit",
    "merged_patch",
];

pub(crate) fn parse(file: &Path, bytes: &[u8]) -> Ingest {
    let mut ingest = Ingest::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for Line { number, object } in json_lines(file, bytes, &mut ingest.problems) {
        let mut extra: Map<String, Value> = object
            .iter()
            .filter(|(k, _)| !MAPPED.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(Value::String(msg)) =
            object.get("commit_to_review").and_then(|c| c.get("head_commit_message"))
        {
            extra.insert("head_commit_message".into(), Value::String(msg.clone()));
        }
        let mut instance: Instance = match typed(Value::Object(object)) {
            Ok(i) => i,
            Err((field, message)) => {
                ingest.problems.push(problem(file, number, field.as_deref(), message));
                continue;
            }
        };
        if instance.instance_id.trim().is_empty() {
            ingest.problems.push(problem(file, number, Some("instance_id"), "is empty"));
            continue;
        }
        if let Some(first) = seen.get(&instance.instance_id) {
            let message = format!("duplicate id `{}` (first on line {first})", instance.instance_id);
            ingest.problems.push(problem(file, number, Some("instance_id"), message));
            continue;
        }
        seen.insert(instance.instance_id.clone(), number);
        let id = instance.instance_id.clone();
        let raw_comments = std::mem::take(&mut instance.reference_review_comments);
        let pr = pull_request(instance, extra);
        ingest.items.push(Item::pr(id.clone(), serde_json::to_value(&pr).unwrap_or(Value::Null)));
        for (i, raw) in raw_comments.into_iter().enumerate() {
            match comment(i, raw) {
                Ok(comment) => {
                    let data = serde_json::to_value(&comment).unwrap_or(Value::Null);
                    ingest.items.push(Item::comment(format!("{id}#{}", i + 1), id.clone(), data));
                }
                Err((field, message)) => ingest.problems.push(problem(file, number, Some(&field), message)),
            }
        }
    }
    ingest.problems.sort_by_key(|p| p.line);
    ingest
}

/// The common record of a PR from its SWE-CARE instance; `extra` holds the fields not mapped.
fn pull_request(instance: Instance, extra: Map<String, Value>) -> PullRequest {
    PullRequest {
        repo: instance.repo,
        number: instance.pull_number,
        title: instance.title.unwrap_or_default(),
        body: instance.body.unwrap_or_default(),
        language: instance.language,
        created_at: instance.created_at,
        base_commit: instance.base_commit,
        head_commit: instance.commit_to_review.head_commit,
        fixed_commit: instance.merged_commit,
        patch: instance.commit_to_review.patch_to_review,
        fixed_patch: instance.merged_patch,
        extra,
    }
}

/// Reference comment `i` (from 0) as a review comment, or the field that is wrong and why.
fn comment(i: usize, raw: Value) -> Result<ReviewComment, (String, String)> {
    let field = |f: Option<&str>| match f {
        Some(f) => format!("reference_review_comments[{i}].{f}"),
        None => format!("reference_review_comments[{i}]"),
    };
    let c: RawComment = typed(raw).map_err(|(f, message)| (field(f.as_deref()), message))?;
    // `./a.py` is `a.py` in git's trees; `.` names no file.
    let path = c
        .path
        .as_deref()
        .map(normalize_repo_path)
        .transpose()
        .map_err(|e| (field(Some("path")), e.to_string()))?;
    Ok(ReviewComment {
        text: c.text,
        path,
        diff_hunk: c.diff_hunk,
        line: c.line,
        start_line: c.start_line,
        original_line: c.original_line,
        original_start_line: c.original_start_line,
        index: i + 1,
        by_pr_author: c.by_pr_author,
        is_reply: c.is_reply,
        extra: Map::new(),
    })
}

/// Items back as SWE-CARE records, one a PR with its comments in order: what `curate collect`
/// writes, so any source's PRs (a GitHub collection's above all) can be shared and read again by
/// this source, which gives the same PR and comment records. The ids of comments are renumbered
/// `<instance_id>#<n>` by their order.
pub fn to_instances(items: &[Item]) -> Vec<Value> {
    let mut out = Vec::new();
    for item in items.iter().filter(|i| i.scope == crate::engine::item::Scope::Pr) {
        let Ok(pr) = serde_json::from_value::<PullRequest>(item.data.clone()) else { continue };
        let mut comments: Vec<ReviewComment> = items
            .iter()
            .filter(|c| c.scope == crate::engine::item::Scope::Comment && c.pr == item.id)
            .filter_map(|c| serde_json::from_value(c.data.clone()).ok())
            .collect();
        comments.sort_by_key(|c| c.index);
        let mut instance = pr.extra.clone();
        let mut to_review = Map::new();
        to_review.insert("head_commit".into(), Value::String(pr.head_commit));
        to_review.insert("patch_to_review".into(), pr.patch.map_or(Value::Null, Value::String));
        if let Some(message) = instance.remove("head_commit_message") {
            to_review.insert("head_commit_message".into(), message);
        }
        let comments: Vec<Value> = comments
            .into_iter()
            .map(|c| {
                let mut raw = serde_json::json!({
                    "text": c.text, "path": c.path, "diff_hunk": c.diff_hunk, "line": c.line,
                    "start_line": c.start_line, "original_line": c.original_line,
                    "original_start_line": c.original_start_line,
                });
                if let Some(by) = c.by_pr_author {
                    raw["by_pr_author"] = Value::Bool(by);
                }
                if let Some(reply) = c.is_reply {
                    raw["is_reply"] = Value::Bool(reply);
                }
                raw
            })
            .collect();
        let fields = [
            ("instance_id", Value::String(item.id.clone())),
            ("repo", Value::String(pr.repo)),
            ("language", pr.language.map_or(Value::Null, Value::String)),
            ("pull_number", pr.number.map_or(Value::Null, Value::from)),
            ("title", Value::String(pr.title)),
            ("body", Value::String(pr.body)),
            ("created_at", pr.created_at.map_or(Value::Null, Value::String)),
            ("base_commit", Value::String(pr.base_commit)),
            ("commit_to_review", Value::Object(to_review)),
            ("merged_commit", pr.fixed_commit.map_or(Value::Null, Value::String)),
            ("merged_patch", pr.fixed_patch.map_or(Value::Null, Value::String)),
            ("reference_review_comments", Value::Array(comments)),
        ];
        instance.extend(fields.into_iter().map(|(k, v)| (k.to_string(), v)));
        out.push(Value::Object(instance));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::item::Scope;
    use serde_json::json;

    fn record(id: &str, comments: Value) -> String {
        json!({
            "instance_id": id, "repo": "o/r", "language": "Python", "pull_number": 3, "title": "T",
            "body": "B", "created_at": "2024-01-02T03:04:05Z", "problem_statement": "P",
            "hints_text": "", "resolved_issues": [], "base_commit": "aaa",
            "commit_to_review": {"head_commit": "bbb", "head_commit_message": "m", "patch_to_review": "diff"},
            "reference_review_comments": comments, "merged_commit": "ccc", "merged_patch": "diff2",
            "metadata": {"difficulty": "easy"}
        })
        .to_string()
    }

    #[test]
    fn maps_a_record_into_a_pr_and_its_comments() {
        let comments = json!([
            {"text": "off by one", "path": "a.py", "diff_hunk": "@@ -1 +1 @@\n-x\n+y", "line": 1,
             "start_line": null, "original_line": 1, "original_start_line": null},
            {"text": "why?", "path": "b.py", "diff_hunk": null, "line": null, "start_line": null,
             "original_line": 4, "original_start_line": null}
        ]);
        let ingest = parse(Path::new("x.jsonl"), record("o__r-3", comments).as_bytes());
        assert!(ingest.problems.is_empty(), "{:?}", ingest.problems);
        assert_eq!(ingest.items.len(), 3);
        let pr: PullRequest = serde_json::from_value(ingest.items[0].data.clone()).unwrap();
        assert_eq!((pr.head_commit.as_str(), pr.fixed_commit.as_deref()), ("bbb", Some("ccc")));
        assert_eq!(pr.extra["metadata"], json!({"difficulty": "easy"}));
        assert_eq!(pr.extra["head_commit_message"], json!("m"));
        assert!(!pr.extra.contains_key("reference_review_comments"));
        assert_eq!(ingest.items[2].id, "o__r-3#2");
        assert_eq!(ingest.items[2].scope, Scope::Comment);
        let c: ReviewComment = serde_json::from_value(ingest.items[2].data.clone()).unwrap();
        assert_eq!((c.line, c.original_line, c.index), (None, Some(4), 2));
    }

    #[test]
    fn records_written_back_read_as_the_same_items() {
        let comments = json!([
            {"text": "off by one", "path": "a.py", "diff_hunk": "@@ -1 +1 @@\n-x\n+y", "line": 1,
             "start_line": null, "original_line": 1, "original_start_line": null, "by_pr_author": false},
            {"text": "why?", "path": "b.py", "line": null, "original_line": 4}
        ]);
        let text = format!("{}\n{}\n", record("o__r-3", comments), record("o__r-4", json!([])));
        let first = parse(Path::new("x.jsonl"), text.as_bytes());
        let written: String = to_instances(&first.items).iter().map(|i| format!("{i}\n")).collect();
        let second = parse(Path::new("y.jsonl"), written.as_bytes());
        assert!(second.problems.is_empty(), "{:?}", second.problems);
        let shape = |items: &[Item]| -> Vec<(String, String, Value)> {
            items.iter().map(|i| (i.id.clone(), i.pr.clone(), i.data.clone())).collect()
        };
        assert_eq!(shape(&second.items), shape(&first.items));
        assert_eq!(second.items.len(), 4);
    }

    #[test]
    fn bad_records_and_bad_comments_are_problems_with_line_and_field() {
        let good = record(
            "a",
            json!([{"text": "t", "path": "../../etc/passwd"}, {"path": "x.py"}, {"text": "ok", "path": "/abs.py"}, {"text": "fine", "path": "src/x.py"}]),
        );
        let missing = json!({"instance_id": "b", "repo": "o/r", "base_commit": "x", "commit_to_review": {}})
            .to_string();
        let text = format!("{good}\n{missing}\n{}\n", record("a", json!([])));
        let ingest = parse(Path::new("x.jsonl"), text.as_bytes());
        let shown: Vec<String> = ingest.problems.iter().map(ToString::to_string).collect();
        assert_eq!(ingest.items.len(), 2, "the PR and its one good comment: {shown:?}");
        assert!(
            shown[0].starts_with(
                "x.jsonl:1: field `reference_review_comments[0].path`: `../../etc/passwd` escapes"
            ),
            "{shown:?}"
        );
        assert!(
            shown[1].starts_with("x.jsonl:1: field `reference_review_comments[1]`: missing field `text`"),
            "{shown:?}"
        );
        assert!(shown[2].contains("reference_review_comments[2].path`: `/abs.py` is absolute"), "{shown:?}");
        assert!(
            shown[3].starts_with("x.jsonl:2: field `commit_to_review`: missing field `head_commit`"),
            "{shown:?}"
        );
        assert!(shown[4].starts_with("x.jsonl:3: field `instance_id`: duplicate id `a`"), "{shown:?}");
        assert_eq!(shown.len(), 5);
    }

    #[test]
    fn a_byte_order_mark_and_dot_paths_are_read_as_git_names_them() {
        let text = format!(
            "\u{feff}{}\n",
            record("a", json!([{"text": "t", "path": "./src/x.py"}, {"text": "u", "path": "."}]))
        );
        let ingest = parse(Path::new("x.jsonl"), text.as_bytes());
        let shown: Vec<String> = ingest.problems.iter().map(ToString::to_string).collect();
        assert_eq!(ingest.items.len(), 2, "the PR and its first comment: {shown:?}");
        let c: ReviewComment = serde_json::from_value(ingest.items[1].data.clone()).unwrap();
        assert_eq!(c.path.as_deref(), Some("src/x.py"));
        assert_eq!(shown, ["x.jsonl:1: field `reference_review_comments[1].path`: `.` names no file"]);
    }
}
