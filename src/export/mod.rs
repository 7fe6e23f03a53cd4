//! The finished benchmark as files someone else can use without curate's state: `instances.jsonl`
//! (each PR with its patch, its comments, their categories, tests and test kinds, and how to
//! rebuild its environment), the tests, the Dockerfiles and install scripts, and the statistics
//! (the paper's Table 4) as `stats.json` and `stats.md`. The same state always gives the same bytes:
//! everything is ordered, and nothing depends on the time or the machine.

pub mod stats;
pub mod swe_bench;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::engine::flow::{Flow, TaskState};
use crate::engine::item::Scope;
use crate::record::{PullRequest, ReviewComment};
use crate::stages::contract::{self, Contract};
use crate::synthesis::example::test_functions;
use stats::{InstanceFacts, Stats, modified_lines};

/// Relative path to contents, in the order they are written.
pub struct Benchmark {
    pub files: BTreeMap<String, Vec<u8>>,
    pub stats: Stats,
}

/// A name safe as one path component.
fn dir_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

/// The kept output for item `x` of the first stage that provides `contract`.
fn output_of<'a>(flow: &Flow, states: &'a [Vec<TaskState>], contract: &str, x: usize) -> Option<&'a Value> {
    flow.pipeline.stages.iter().enumerate().filter(|(_, s)| s.provides == Some(contract)).find_map(
        |(s, _)| match &states[s][x] {
            TaskState::Kept { output, .. } => Some(output.as_ref()),
            _ => None,
        },
    )
}

/// Why no benchmark can be exported, or not where asked.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("no stage `{id}`; the stages are: {stages}")]
    NoStage { id: String, stages: String },
    #[error("the pipeline has no comment stage to export the kept comments of")]
    NoCommentStage,
    #[error("{} exists and is not an earlier export (no {MARKER}); choose another --out", .0.display())]
    NotAnExport(PathBuf),
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The stage whose kept comments make the benchmark: `id`, or the last comment stage.
pub fn final_stage(flow: &Flow, id: Option<&str>) -> Result<usize, ExportError> {
    let stages = &flow.pipeline.stages;
    match id {
        Some(id) => stages.iter().position(|s| &*s.id == id).ok_or_else(|| ExportError::NoStage {
            id: id.to_string(),
            stages: stages.iter().map(|s| &*s.id).collect::<Vec<_>>().join(", "),
        }),
        None => stages.iter().rposition(|s| s.scope == Scope::Comment).ok_or(ExportError::NoCommentStage),
    }
}

fn text(v: Option<&Value>, key: &str) -> Value {
    v.and_then(|v| v.get(key)).cloned().unwrap_or(Value::Null)
}

/// Assembles the benchmark from the comments `last` kept.
pub fn assemble(flow: &Flow, states: &[Vec<TaskState>], last: usize) -> Benchmark {
    let data = flow.data;
    let mut files = BTreeMap::new();
    let mut lines = String::new();
    let mut facts = Vec::new();
    for (p, item) in data.items.iter().enumerate() {
        if item.scope != Scope::Pr {
            continue;
        }
        let kept: Vec<usize> = data.comments[p]
            .iter()
            .copied()
            .filter(|&c| matches!(states[last][c], TaskState::Kept { .. }))
            .collect();
        if kept.is_empty() {
            continue;
        }
        let Ok(pr) = serde_json::from_value::<PullRequest>(item.data.clone()) else { continue };
        let dir = dir_name(&item.id);
        let env = output_of(flow, states, contract::Environment::NAME, p);
        let environment = environment_entry(env, &dir, &mut files);
        let pass_to_pass = output_of(flow, states, contract::ProjectTests::NAME, p)
            .and_then(|t| serde_json::from_value::<contract::ProjectTests>(t.clone()).ok())
            .map(|t| t.pass_to_pass);
        let mut tests = Vec::new();
        let comments: Vec<Value> = kept
            .iter()
            .filter_map(|&c| comment_entry(flow, states, c, &dir, &mut files, &mut tests))
            .map(|mut entry| {
                entry["pass_to_pass"] = json!(pass_to_pass);
                entry
            })
            .collect();
        let patch = pr.patch.clone().unwrap_or_default();
        facts.push(InstanceFacts { repo: pr.repo.clone(), modified_lines: modified_lines(&patch), tests });
        let instance = json!({
            "instance_id": item.id,
            "repo": pr.repo,
            "pull_number": pr.number,
            "title": pr.title,
            "body": pr.body,
            "created_at": pr.created_at,
            "base_commit": pr.base_commit,
            "head_commit": pr.head_commit,
            "fixed_commit": pr.fixed_commit,
            "patch": patch,
            "modified_lines": modified_lines(&patch),
            "comments": comments,
            "environment": environment,
        });
        lines.push_str(&instance.to_string());
        lines.push('\n');
    }
    let stats = stats::stats(&facts);
    files.insert("instances.jsonl".into(), lines.into_bytes());
    let mut json = serde_json::to_string_pretty(&stats).unwrap_or_default();
    json.push('\n');
    files.insert("stats.json".into(), json.into_bytes());
    files
        .insert("stats.md".into(), format!("# Benchmark statistics\n\n{}", stats.to_markdown()).into_bytes());
    Benchmark { files, stats }
}

/// A PR's environment as the export describes it, its Dockerfiles, install script and
/// requirements written under `environments/{dir}/`.
fn environment_entry(env: Option<&Value>, dir: &str, files: &mut BTreeMap<String, Vec<u8>>) -> Value {
    let mut environment = json!({
        "image": text(env, "image"),
        "python": text(env, "python"),
        "suite": text(env, "suite"),
        "pinned_to": text(env, "pinned_to"),
    });
    let Some(env) = env else { return environment };
    let mut put = |name: &str, contents: &Value| -> Value {
        match contents.as_str() {
            Some(s) => {
                let path = format!("environments/{dir}/{name}");
                files.insert(path.clone(), s.as_bytes().to_vec());
                Value::String(path)
            }
            None => Value::Null,
        }
    };
    environment["dockerfiles"] = json!({
        "tools": put("Dockerfile.tools", &env["dockerfiles"]["tools"]),
        "deps": put("Dockerfile.deps", &env["dockerfiles"]["deps"]),
        "instance": put("Dockerfile.instance", &env["dockerfiles"]["instance"]),
    });
    environment["install_script"] = put("install.sh", &env["install_script"]);
    environment["requirements"] = put("requirements.txt", &env["requirements"]);
    environment
}

/// Kept comment `c` as the export describes it, its test written under `tests/{dir}/` (a project
/// test with the files it needs, under a directory of its own laid out as the repository is);
/// the test's kind, length and attempts go to `tests` for the statistics.
fn comment_entry(
    flow: &Flow,
    states: &[Vec<TaskState>],
    c: usize,
    dir: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
    tests: &mut Vec<(String, usize, u64)>,
) -> Option<Value> {
    let item = &flow.data.items[c];
    let comment = serde_json::from_value::<ReviewComment>(item.data.clone()).ok()?;
    let synthesis = output_of(flow, states, contract::Test::NAME, c);
    let filter = output_of(flow, states, contract::FilterVerdict::NAME, c);
    let project =
        synthesis.and_then(|s| serde_json::from_value::<contract::ProjectTest>(s["project"].clone()).ok());
    let project_node = project.as_ref().map(|p| p.node.clone());
    let root = format!("tests/{dir}/project");
    let test_path = synthesis.and_then(|s| s["test_file"].as_str()).map(|f| match project {
        Some(_) => format!("{root}/{f}"),
        None => format!("tests/{dir}/{f}"),
    });
    let project_test = project.map(|p| {
        for (path, text) in &p.files {
            files.insert(format!("{root}/{path}"), text.as_bytes().to_vec());
        }
        json!({"node": p.node, "root": root, "files": p.files.keys().collect::<Vec<_>>()})
    });
    let test = synthesis.and_then(|s| s["test"].as_str()).unwrap_or_default();
    // The test's ids as pytest names them where it runs: a project test's node, or each test
    // function of curate's file.
    let fail_to_pass: Option<Vec<String>> =
        synthesis.and_then(|s| s["test_file"].as_str()).map(|f| match project_node {
            Some(node) => vec![node],
            None => test_ids(f, test),
        });
    let validation = output_of(flow, states, contract::Validation::NAME, c);
    if let Some(path) = &test_path {
        files.insert(path.clone(), test.as_bytes().to_vec());
        let kind = synthesis.and_then(|s| s["kind"].as_str()).unwrap_or("structural").to_string();
        let attempts = synthesis.and_then(|s| s["attempts"].as_u64()).unwrap_or(1);
        tests.push((kind, test.lines().count(), attempts));
    }
    Some(json!({
        "id": item.id,
        "text": comment.text,
        "path": comment.path,
        "line": comment.line,
        "category": text(filter, "category"),
        "test_path": test_path,
        "kind": text(synthesis, "kind"),
        "written_by": synthesis.map(|s| s["written_by"].as_str().unwrap_or("model")),
        "project_test": project_test,
        "fail_to_pass": fail_to_pass,
        "regression": validation.map(|v| v["regression"].clone()),
    }))
}

/// The pytest ids of the test functions of `code`, a file at `path`: `path::name`, or
/// `path::Class::name` for a method.
pub(crate) fn test_ids(path: &str, code: &str) -> Vec<String> {
    test_functions(code)
        .into_iter()
        .map(|t| match t.class {
            Some(class) => format!("{path}::{class}::{}", t.name),
            None => format!("{path}::{}", t.name),
        })
        .collect()
}

/// The marker that says a directory holds an export, so a later export may replace it.
const MARKER: &str = "instances.jsonl";

/// Writes the benchmark to `out`, replacing an earlier export there. A directory that holds
/// anything else is left alone.
pub fn write(bench: &Benchmark, out: &Path) -> Result<(), ExportError> {
    let io = |what: &'static str| move |source| ExportError::Io { what, path: out.to_path_buf(), source };
    if out.exists() {
        let empty = std::fs::read_dir(out).map_err(io("reading"))?.next().is_none();
        if !empty && !out.join(MARKER).exists() {
            return Err(ExportError::NotAnExport(out.to_path_buf()));
        }
    }
    // Written beside it, then swapped in, so a failure never leaves half an export.
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io("creating the parent of"))?;
    let staging = tempfile::tempdir_in(parent).map_err(io("staging beside"))?;
    for (rel, bytes) in &bench.files {
        let path = staging.path().join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io("writing"))?;
        }
        std::fs::write(&path, bytes).map_err(io("writing"))?;
    }
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(io("replacing"))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(io("moving the export to"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(files: &[(&str, &str)]) -> Benchmark {
        Benchmark {
            files: files.iter().map(|(p, c)| (p.to_string(), c.as_bytes().to_vec())).collect(),
            stats: stats::stats(&[]),
        }
    }

    #[test]
    fn an_earlier_export_is_replaced_and_anything_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("bench");
        write(&bench(&[("instances.jsonl", "a\n"), ("tests/x/test_a.py", "old\n")]), &out).unwrap();
        write(&bench(&[("instances.jsonl", "b\n")]), &out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("instances.jsonl")).unwrap(), "b\n");
        assert!(!out.join("tests").exists(), "nothing of the earlier export is left");

        let other = dir.path().join("notes");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("todo.txt"), "keep me").unwrap();
        let refused = write(&bench(&[("instances.jsonl", "c\n")]), &other).unwrap_err();
        assert!(matches!(refused, ExportError::NotAnExport(_)), "{refused}");
        assert_eq!(std::fs::read_to_string(other.join("todo.txt")).unwrap(), "keep me");
    }

    #[test]
    fn instance_directory_names_are_safe() {
        assert_eq!(dir_name("org/repo#12"), "org_repo_12");
        assert_eq!(dir_name("curate-sample__durations-3"), "curate-sample__durations-3");
    }
}
