//! `environment` (the paper's section 4.2.2): per PR, a Docker image with the repository at the
//! reviewed commit installed and its tests collectable. Detects how the project builds, builds the
//! layers (tools, dependencies pinned to the PR's date and shared across PRs with the same spec, the
//! instance), and verifies the image: the package imports and the test runner collects tests. A PR
//! whose environment does not build or verify is rejected with the step and its last log line.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::Docker;
use serde::Deserialize;
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::environment::detect::detect;
use crate::environment::recipe::{Recipe, instance_tag, recipe_with_version, rfc3339, version_from_describe};
use crate::errors::ConfigError;
use crate::exec::ExecError;
use crate::exec::build::{BuildFailure, build, build_lock, commit_layer};
use crate::exec::docker::LazyDocker;
use crate::exec::docker::image_exists;
use crate::exec::sandbox::run;
use crate::exec::testrun::{REPO, env_spec, tree_files};
use crate::record::PullRequest;
use crate::repo::{Mirrors, RepoError, working_files};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Seconds each verification command may take.
    #[serde(default = "default_verify_timeout")]
    verify_timeout_secs: u64,
}

fn default_verify_timeout() -> u64 {
    180
}

struct Environment {
    mirrors: Arc<Mirrors>,
    docker: LazyDocker,
    verify_timeout: Duration,
}

pub fn build_stage(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let stage = adapt(Environment {
        mirrors: ctx.mirrors.clone(),
        docker: LazyDocker::default(),
        verify_timeout: Duration::from_secs(config.verify_timeout_secs),
    });
    Ok(StageDef {
        side_effects: true,
        provides: Some(contract::Environment::NAME),
        ..StageDef::new(stage, 2, Scope::Pr, Resource::Docker)
    })
}

/// Announces each verification command in the one run that does them all.
const STEP: &str = "curate-verify-step: ";

/// The verification commands as one shell script: in order, each announced, stopping at the
/// first that fails with its exit code.
fn verification_script(commands: &[Vec<String>]) -> String {
    let quote = |a: &String| format!("'{}'", a.replace('\'', "'\\''"));
    commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let words: Vec<String> = c.iter().map(quote).collect();
            format!("echo '{STEP}{i}'; {} || exit $?", words.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The command a failed verification stopped in (the last announced; the last command when the
/// announcement was lost to truncation), and the output without the announcements.
fn failed_step(output: &str, commands: usize) -> (usize, String) {
    let mut step = None;
    let mut rest = String::with_capacity(output.len());
    for line in output.split_inclusive('\n') {
        match line.trim_end().strip_prefix(STEP).and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => step = Some(n),
            None => rest.push_str(line),
        }
    }
    let last = commands.saturating_sub(1);
    (step.unwrap_or(last).min(last), rest)
}

/// The last line that says something, for a rejection reason.
fn last_line(text: &str) -> String {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").chars().take(240).collect()
}

/// A layer's build that failed on its own terms, as a rejection naming the step.
fn build_failed(what: &str, f: BuildFailure) -> TaskError {
    let detail = last_line(&f.log_tail);
    TaskError::reject(format!("{what} failed: {}", if detail.is_empty() { f.message } else { detail }))
}

/// Builds `tag` unless it exists; `Ok(true)` if it was already there.
async fn ensure(
    docker: &Docker,
    tag: &str,
    dockerfile: &str,
    files: &[(&str, &[u8])],
    what: &str,
) -> Result<bool, TaskError> {
    let _guard = build_lock(tag).await;
    if image_exists(docker, tag).await? {
        return Ok(true);
    }
    build(docker, tag, dockerfile, files, None).await?.map(|()| false).map_err(|f| build_failed(what, f))
}

/// The instance layer: the checkout copied to /repo and installed, in one committed layer. The
/// recipe's instance Dockerfile describes the same thing for people and for other builders.
async fn ensure_instance(docker: &Docker, r: &Recipe, tag: &str, checkout: &Path) -> Result<(), TaskError> {
    let _guard = build_lock(tag).await;
    if image_exists(docker, tag).await? {
        return Ok(());
    }
    commit_layer(docker, &r.deps_image, tag, checkout, REPO, &r.install_command)
        .await?
        .map_err(|f| build_failed("the editable install", f))
}

impl Environment {
    async fn make(&self, pr: &PullRequest, instance: &str) -> Result<Value, TaskError> {
        let docker = self.docker.get().await?;
        let work =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let checkout = work.path().join("repo");
        let (mirrors, repo, head, dest) =
            (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone(), checkout.clone());
        // All the git and file work in one blocking step: the checkout, what builds it, and when its
        // dependency spec took its current form, so dependencies resolve as of then (deterministic,
        // and shared by every PR with the same spec).
        let prepared = tokio::task::spawn_blocking(move || -> Result<_, TaskError> {
            let git = |e: RepoError| {
                if e.is_data_error() {
                    TaskError::reject(e.to_string())
                } else {
                    TaskError::infra(e.to_string())
                }
            };
            let mirror = mirrors.open(&repo, &[&head]).map_err(git)?;
            mirror.materialize(&head, &dest).map_err(git)?;
            let listing =
                working_files(&dest).map_err(|e| TaskError::infra(format!("reading the checkout: {e}")))?;
            let project = detect(&|p: &str| std::fs::read_to_string(dest.join(p)).ok(), &listing);
            let changed = mirror.last_change(&head, &project.spec_files, 20_000).map_err(git)?;
            let version = project
                .needs_build
                .is_some()
                .then(|| version_from_describe(mirror.describe(&head).as_deref()));
            Ok((project, changed, version))
        })
        .await
        .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))?;
        let (project, changed, version) = prepared?;
        if project.backend == "none" && project.requirements.is_empty() {
            return Err(TaskError::reject(
                "no Python build files (pyproject.toml, setup.py, setup.cfg, requirements)",
            ));
        }
        // The PR's own date when the history is too long to tell.
        let pin = match (changed, pr.created_at.as_deref()) {
            (Some(secs), _) => rfc3339(secs),
            (None, Some(date)) => date.to_string(),
            (None, None) => return Err(TaskError::reject("no date to resolve dependencies at")),
        };
        let r: Recipe =
            recipe_with_version(&project, &pr.repo, instance, &pr.head_commit, &pin, version.as_deref())
                .map_err(TaskError::reject)?;
        if !image_exists(&docker, &r.base_image).await? {
            return Err(ExecError::MissingImage(r.base_image.clone()).into());
        }
        ensure(&docker, &r.tools_image, &r.tools_dockerfile, &[], "the tools layer").await?;
        let t0 = Instant::now();
        let requirements = r.requirements_txt.as_bytes();
        let deps_context = [("requirements.txt", requirements)];
        let deps_reused =
            ensure(&docker, &r.deps_image, &r.deps_dockerfile, &deps_context, "dependency install").await?;
        let deps_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        // A project that imports from its sources runs on the dependency layer, with the tree under
        // test brought in by each run; only one that must be built gets a layer of its own.
        let tag = match &r.instance_layer {
            Some(_) => {
                let tag = instance_tag(instance, &pr.head_commit);
                ensure_instance(&docker, &r, &tag, &checkout).await?;
                tag
            }
            None => r.deps_image.clone(),
        };
        let instance_s = t1.elapsed().as_secs_f64();
        let t2 = Instant::now();
        if !r.verify.is_empty() {
            // One container for every check: each costs a start and a copy of the tree otherwise.
            let mut spec = env_spec(&tag, vec!["sh".into(), "-c".into(), verification_script(&r.verify)]);
            spec.files = tree_files(&checkout)?;
            spec.timeout = self.verify_timeout * r.verify.len() as u32;
            let result = run(&docker, &spec).await?;
            if result.exit_code != Some(0) {
                let (step, output) = failed_step(&result.output, r.verify.len());
                let command = &r.verify[step];
                let shown = command.join(" ");
                return Err(TaskError::reject(match result.exit_code {
                    Some(5) if command.iter().any(|c| c == "pytest") => {
                        "verification: pytest collected no tests".into()
                    }
                    _ if result.timed_out => format!("verification timed out: `{shown}`"),
                    _ => format!("verification failed: `{shown}`: {}", last_line(&output)),
                }));
            }
        }
        Ok(json!({
            "image": tag,
            "deps_image": r.deps_image,
            "deps_reused": deps_reused,
            "instance_layer": r.instance_layer,
            "tools_image": r.tools_image,
            "suite": r.suite,
            "python": r.python,
            "pinned_to": r.pinned_to,
            "backend": project.backend,
            "runner": project.runner,
            "imports": project.imports,
            "requirements": r.requirements_txt,
            "install_script": r.install_script,
            "dockerfiles": {"tools": r.tools_dockerfile, "deps": r.deps_dockerfile, "instance": r.instance_dockerfile},
            "seconds": {"deps": deps_s, "instance": instance_s, "verify": t2.elapsed().as_secs_f64()},
        }))
    }
}

impl AsyncStage for Environment {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        self.make(&pr_record(&input)?, &input.item.id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> (Option<i32>, String) {
        let out = std::process::Command::new("sh").args(["-c", script]).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[test]
    fn one_run_verifies_in_order_and_names_the_step_that_failed() {
        let words = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ok = [words(&["true"]), words(&["echo", "it's fine"])];
        let (code, out) = sh(&verification_script(&ok));
        assert_eq!(code, Some(0));
        let (step, rest) = failed_step(&out, 2);
        assert_eq!((step, rest.as_str()), (1, "it's fine\n"), "quoted arguments arrive whole");

        let failing =
            [words(&["true"]), words(&["sh", "-c", "echo half-finished; exit 5"]), words(&["echo", "never"])];
        let (code, out) = sh(&verification_script(&failing));
        assert_eq!(code, Some(5), "the failing command's exit code");
        let (step, rest) = failed_step(&out, 3);
        assert_eq!(step, 1);
        assert_eq!(rest, "half-finished\n");
        assert!(!out.contains("never"));
        assert_eq!(failed_step("no marks\n", 2).0, 1, "announcements lost: the last command");
    }
}
