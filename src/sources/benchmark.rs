//! `benchmark`: an exported benchmark (`curate export`) as the input of an evaluation pipeline. One
//! PR item per instance; its record carries, under `extra.benchmark`, the human comments with their
//! tests (the test files' text is read in, so a changed test changes the item and its scores run
//! again) and the environment to run them in, with the contents of its exported Dockerfiles, so
//! the image can be made again where it is missing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use serde_yaml::Mapping;

use super::lines::{Line, json_lines, problem, typed};
use super::{Ingest, Source, SourceContext};
use crate::engine::item::Item;
use crate::engine::spec::parse_config;
use crate::environment::rebuild::ExportedEnvironment;
use crate::errors::{ConfigError, SourceError};
use crate::record::{PathError, PullRequest, check_repo_path};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The export directory (holding `instances.jsonl`).
    path: PathBuf,
}

pub fn build(ctx: &SourceContext, config: &Mapping) -> Result<Box<dyn Source>, ConfigError> {
    let config: Config = parse_config(config)?;
    let dir = ctx.dir.join(&config.path);
    if !dir.join("instances.jsonl").is_file() {
        return Err(ConfigError::new(
            "path",
            format!("{} holds no instances.jsonl; point it at a `curate export` directory", dir.display()),
        ));
    }
    Ok(Box::new(Benchmark { dir }))
}

struct Benchmark {
    dir: PathBuf,
}

#[derive(Deserialize)]
struct Instance {
    instance_id: String,
    repo: String,
    pull_number: Option<u64>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
    created_at: Option<String>,
    base_commit: String,
    head_commit: String,
    fixed_commit: Option<String>,
    #[serde(default)]
    patch: String,
    comments: Vec<Comment>,
    #[serde(default)]
    environment: Value,
}

#[derive(Deserialize)]
struct Comment {
    id: String,
    text: String,
    path: Option<String>,
    line: Option<u64>,
    category: Option<String>,
    test_path: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    project_test: Option<ExportedProjectTest>,
    /// The project's tests that passed on both sides (SWE-bench's PASS_TO_PASS), when the
    /// curation ran them.
    #[serde(default)]
    pass_to_pass: Option<Vec<String>>,
}

/// How the export lays out one of the project's own tests: its node id, and the test side it needs
/// under `root`, laid out as the repository is.
#[derive(Debug, Deserialize)]
struct ExportedProjectTest {
    node: String,
    root: String,
    files: Vec<String>,
}

/// A project test as the evaluation runs it: in the repository, with `files` (by repository path)
/// written over the revision first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchProjectTest {
    pub node: String,
    pub files: std::collections::BTreeMap<String, String>,
}

/// One test of an instance, as the evaluation stages read it from `extra.benchmark.tests`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchTest {
    /// The comment it comes from.
    pub comment: String,
    pub file: String,
    pub code: String,
    pub kind: String,
    pub category: Option<String>,
    /// Set when the test is one of the project's own.
    #[serde(default)]
    pub project: Option<BenchProjectTest>,
}

impl Source for Benchmark {
    fn load(&self) -> Result<Ingest, SourceError> {
        let file = self.dir.join("instances.jsonl");
        let bytes = std::fs::read(&file).map_err(|error| SourceError::Read { file: file.clone(), error })?;
        let mut ingest = Ingest::default();
        let mut seen = HashSet::new();
        for Line { number, object } in json_lines(&file, &bytes, &mut ingest.problems) {
            let instance: Instance = match typed(Value::Object(object)) {
                Ok(i) => i,
                Err((field, message)) => {
                    ingest.problems.push(problem(&file, number, field.as_deref(), message));
                    continue;
                }
            };
            if !seen.insert(instance.instance_id.clone()) {
                ingest.problems.push(problem(&file, number, Some("instance_id"), "duplicate id"));
                continue;
            }
            match record(&self.dir, instance) {
                Ok((id, pr)) => {
                    ingest.items.push(Item::pr(id, serde_json::to_value(&pr).unwrap_or(Value::Null)))
                }
                Err((field, message)) => ingest.problems.push(problem(&file, number, Some(&field), message)),
            }
        }
        Ok(ingest)
    }
}

/// A file of the export that an instance names and that cannot be read in.
#[derive(Debug, thiserror::Error)]
enum ExportedFileError {
    #[error("`{field}` names no file")]
    NoFile { field: &'static str },
    #[error("`{field}`: the path {error}")]
    Path {
        field: &'static str,
        #[source]
        error: PathError,
    },
    #[error("cannot read {path}: {error}")]
    Read {
        path: String,
        #[source]
        error: std::io::Error,
    },
    #[error("`image` is missing")]
    NoImage,
}

/// The exported Dockerfiles and requirements of an instance, read in; `None` when the export
/// names no Dockerfiles (the image must then exist already).
fn exported_environment(dir: &Path, env: &Value) -> Result<Option<ExportedEnvironment>, ExportedFileError> {
    let Some(files) = env.get("dockerfiles").filter(|f| f.is_object()) else { return Ok(None) };
    let read = |field: &'static str, path: &Value| -> Result<String, ExportedFileError> {
        let path = path.as_str().ok_or(ExportedFileError::NoFile { field })?;
        check_repo_path(path).map_err(|error| ExportedFileError::Path { field, error })?;
        std::fs::read_to_string(dir.join(path))
            .map_err(|error| ExportedFileError::Read { path: path.to_string(), error })
    };
    Ok(Some(ExportedEnvironment {
        image: env["image"].as_str().ok_or(ExportedFileError::NoImage)?.to_string(),
        tools: read("dockerfiles.tools", &files["tools"])?,
        deps: read("dockerfiles.deps", &files["deps"])?,
        instance: read("dockerfiles.instance", &files["instance"])?,
        requirements: read("requirements", &env["requirements"])?,
    }))
}

/// A project test's files read in from the export.
fn project_test(dir: &Path, p: &ExportedProjectTest) -> Result<BenchProjectTest, ExportedFileError> {
    check_repo_path(&p.root).map_err(|error| ExportedFileError::Path { field: "root", error })?;
    let mut files = std::collections::BTreeMap::new();
    for path in &p.files {
        check_repo_path(path).map_err(|error| ExportedFileError::Path { field: "files", error })?;
        let at = format!("{}/{path}", p.root);
        let text = std::fs::read_to_string(dir.join(&at))
            .map_err(|error| ExportedFileError::Read { path: at, error })?;
        files.insert(path.clone(), text);
    }
    Ok(BenchProjectTest { node: p.node.clone(), files })
}

/// The project's tests a revision of the instance must keep passing: those of every comment, once
/// each, in order; `None` when no comment says (an export without the project's tests).
fn guarded_tests(comments: &[Comment]) -> Option<Vec<String>> {
    let lists: Vec<&Vec<String>> = comments.iter().filter_map(|c| c.pass_to_pass.as_ref()).collect();
    if lists.is_empty() {
        return None;
    }
    let nodes: std::collections::BTreeSet<&String> = lists.into_iter().flatten().collect();
    Some(nodes.into_iter().cloned().collect())
}

fn record(dir: &Path, i: Instance) -> Result<(String, PullRequest), (String, String)> {
    let mut tests = Vec::new();
    let mut human = Vec::new();
    for (n, c) in i.comments.iter().enumerate() {
        human.push(json!({"id": c.id, "path": c.path, "line": c.line, "body": c.text}));
        let Some(test_path) = &c.test_path else { continue };
        let field = format!("comments[{n}].test_path");
        check_repo_path(test_path).map_err(|e| (field.clone(), format!("the path {e}")))?;
        let code = std::fs::read_to_string(dir.join(test_path))
            .map_err(|e| (field.clone(), format!("cannot read {test_path}: {e}")))?;
        let file =
            Path::new(test_path).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let project = match &c.project_test {
            Some(p) => Some(
                project_test(dir, p).map_err(|e| (format!("comments[{n}].project_test"), e.to_string()))?,
            ),
            None => None,
        };
        tests.push(BenchTest {
            comment: c.id.clone(),
            file,
            code,
            kind: c.kind.clone().unwrap_or_else(|| "structural".into()),
            category: c.category.clone(),
            project,
        });
    }
    let pass_to_pass = guarded_tests(&i.comments);
    let rebuild =
        exported_environment(dir, &i.environment).map_err(|e| ("environment".to_string(), e.to_string()))?;
    let mut extra = Map::new();
    extra.insert(
        "benchmark".into(),
        json!({
            "tests": tests,
            "human_comments": human,
            "pass_to_pass": pass_to_pass,
            "environment": i.environment,
            "rebuild": rebuild,
        }),
    );
    let pr = PullRequest {
        repo: i.repo,
        number: i.pull_number,
        title: i.title,
        body: i.body,
        language: None,
        created_at: i.created_at,
        base_commit: i.base_commit,
        head_commit: i.head_commit,
        fixed_commit: i.fixed_commit,
        patch: Some(i.patch),
        fixed_patch: None,
        extra,
    };
    Ok((i.instance_id, pr))
}
