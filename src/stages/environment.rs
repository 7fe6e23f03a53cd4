//! `environment` (the paper's section 4.2.2): per PR, a Docker image with the repository at the
//! reviewed commit installed and its tests collectable. Detects how the project builds, builds the
//! layers (tools, dependencies pinned to the PR's date and shared across PRs with the same spec, the
//! instance), and verifies the image: the package imports and the test runner collects tests. A PR
//! whose environment does not build or verify is rejected with the step and its last log line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::Docker;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, pr_record};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::engine::stage::Meter;
use crate::environment::detect::detect;
use crate::environment::detect::{Project, Runner};
use crate::environment::memory::{Remembered, RepairMemory};
use crate::environment::model_repair;
use crate::environment::recipe::suites_by_date;
use crate::environment::recipe::{
    Inputs, Recipe, instance_tag, repaired_recipe, rfc3339, version_from_describe,
};
use crate::environment::related::{importing_tests, related_tests};
use crate::environment::repair::{Failed, Fix, Fixes, first_error, next_fix};
use crate::errors::ConfigError;
use crate::exec::bootstrap::{Bootstrap, bootstrap};
use crate::exec::build::{BuildFailure, build, build_lock, commit_layer};
use crate::exec::docker::image_exists;
use crate::exec::hosts::{BuildPlace, Hosts};
use crate::exec::sandbox::run;
use crate::exec::testrun::{REPO, env_spec, tree_files};
use crate::llm::client::Llm;
use crate::llm::prompt::Template;
use crate::llm::{LlmError, LlmSpec};
use crate::record::PullRequest;
use crate::repo::{Mirrors, working_files};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Seconds each verification command may take.
    #[serde(default = "default_verify_timeout")]
    verify_timeout_secs: u64,
    /// Repairs of the recipe after a failed build or verification (see `environment::repair`).
    #[serde(default = "default_max_repairs")]
    max_repairs: u32,
    /// The model's repair step (`environment::model_repair`), for a failure no rule and no other
    /// Python fixes: its prompt, relative to the pipeline file. Without it, no model is asked.
    repair_prompt: Option<PathBuf>,
    #[serde(default)]
    llm: LlmSpec,
}

fn default_max_repairs() -> u32 {
    3
}

fn default_verify_timeout() -> u64 {
    180
}

struct Environment {
    mirrors: Arc<Mirrors>,
    docker: Arc<Hosts>,
    verify_timeout: Duration,
    max_repairs: u32,
    advisor: Option<Advisor>,
    /// Repairs that made an environment build, for the next run of the same recipe.
    memory: RepairMemory,
}

/// The model of the repair step, and its prompt.
struct Advisor {
    llm: Llm,
    template: Template,
}

pub fn build_stage(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let advisor = match &config.repair_prompt {
        Some(prompt) => {
            let template = ctx.template("repair_prompt", prompt, &model_repair::PLACEHOLDERS)?;
            let settings = ctx.llm.merged(&config.llm).settings();
            let llm = Llm::new(settings, &ctx.cache.join("llm"))
                .map_err(|e| ConfigError::new("llm", e.to_string()))?;
            Some(Advisor { llm, template })
        }
        None => None,
    };
    // The model's settings that change answers are in the fingerprint.
    let fingerprint = advisor.as_ref().map_or(Value::Null, |a| a.llm.settings.fingerprint());
    let files = config.repair_prompt.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let stage = adapt(Environment {
        mirrors: ctx.mirrors.clone(),
        docker: ctx.docker.clone(),
        verify_timeout: Duration::from_secs(config.verify_timeout_secs),
        max_repairs: config.max_repairs,
        advisor,
        memory: RepairMemory::new(&ctx.cache.join("environments").join("repairs")),
    });
    Ok(StageDef {
        side_effects: true,
        provides: Some(contract::Environment::NAME),
        files,
        fingerprint_extra: fingerprint,
        unhashed: &["llm"],
        // 3: failed builds are repaired by rule; a project that imports from its sources gets no
        // build backend. 4: the Python of the pin's date, the others on failure; what the build
        // needs besides its tools pinned by date; the model's repairs. 5: pytest in every
        // environment, whatever runner the project uses. 6: a src project's own release removed;
        // pip options after a requirement left out; the lineno rule for old pytest. 7: with no
        // test named after a changed module, the tests that import one are verified. 8: an old
        // setup.py of a dependency is built with setuptools of its era. 9: an error that names an
        // extra (`pip install project[extra]`) gets it; a `[pytest]` section in setup.cfg gets a
        // pytest before 4. 10: tox `deps` lines read factor first (`pypy: -r file`), and the files
        // they include. 11: an exact pin at the end of the resolver's chain of reasons is relaxed.
        // 12: another Python only for a failure its version explains; a build failed on two
        // Pythons is rejected with the first one's error. 13: a build in place builds the C
        // libraries the setup.py declares first (`build_clib`). 14: the test groups of pdm's
        // dev-dependencies and PEP 735's dependency-groups are installed (pdm's `mocker`).
        ..StageDef::new(stage, 14, Scope::Pr, Resource::Docker)
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

/// Builds `tag` unless it exists: `Ok(Ok(true))` if it was already there, the build's failure if
/// it failed on its own terms.
async fn ensure(
    docker: &Docker,
    tag: &str,
    dockerfile: &str,
    files: &[(&str, &[u8])],
) -> Result<Result<bool, BuildFailure>, TaskError> {
    let _guard = build_lock(tag).await;
    if image_exists(docker, tag).await? {
        return Ok(Ok(true));
    }
    Ok(build(docker, tag, dockerfile, files, None).await?.map(|()| false))
}

/// The instance layer: the checkout copied to /repo and installed, in one committed layer. The
/// recipe's instance Dockerfile describes the same thing for people and for other builders.
/// `Ok(Ok(true))` if it was already there.
async fn ensure_instance(
    docker: &Docker,
    r: &Recipe,
    tag: &str,
    checkout: &Path,
) -> Result<Result<bool, BuildFailure>, TaskError> {
    let _guard = build_lock(tag).await;
    if image_exists(docker, tag).await? {
        return Ok(Ok(true));
    }
    Ok(commit_layer(docker, &r.deps_image, tag, checkout, REPO, &r.install_command).await?.map(|()| false))
}

/// What the git step found: the checkout, how the project builds, when its dependency spec took
/// its current form, and the version a build from git would see.
struct Prepared {
    _work: tempfile::TempDir,
    checkout: std::path::PathBuf,
    project: Project,
    pin: String,
    version: Option<String>,
    /// The test files that relate to the PR: what verification collects.
    related: Vec<String>,
    /// Files of the commit whose content the mirror lacks, left out of the checkout.
    missing: Vec<String>,
}

/// The Pythons a build may use (Debian suite, version), and those tried so far.
#[derive(Clone, Copy)]
struct Tried<'a> {
    suites: &'a [(&'static str, (u32, u32))],
    used: &'a [&'static str],
}

/// The rejection of a build no repair saved: the last failure's reason on the first Python tried
/// (another Python's failure is often one the first never had), with what the checkout lacked (a
/// submodule whose mirror is not here, say), which is often why.
fn rejection(last: String, missing: &[String], attempts: Vec<Attempt>) -> TaskError {
    let first_python = attempts.first().map(|a| a.python.as_str());
    let on_first = attempts.iter().rev().find(|a| Some(a.python.as_str()) == first_python);
    let reason = match (on_first, attempts.last()) {
        (Some(a), Some(l)) if a.python != l.python => {
            format!("{} (on Python {}; Python {} did not build either)", a.failed, a.python, l.python)
        }
        _ => last,
    };
    let reason = if !missing.is_empty() && reason.contains("No such file or directory") {
        format!("{reason} (the mirrors lack {} file(s) of the checkout: {})", missing.len(), missing[0])
    } else {
        reason
    };
    #[derive(Serialize)]
    struct Detail<'a> {
        attempts: Vec<Attempt>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        missing_files: &'a [String],
    }
    let detail = serde_json::to_value(Detail { attempts, missing_files: missing }).unwrap_or(Value::Null);
    TaskError::Reject { reason, detail }
}

/// The steps of a build that fail on the project's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    ToolsLayer,
    DependencyInstall,
    EditableInstall,
    Verification,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::ToolsLayer => "the tools layer",
            Step::DependencyInstall => "dependency install",
            Step::EditableInstall => "the editable install",
            Step::Verification => "verification",
        })
    }
}

/// A step that failed on the project's own terms: which one, and its whole log.
struct StepFailure {
    step: Step,
    /// For a verification, the command that failed.
    command: Option<String>,
    timed_out: bool,
    log: String,
}

impl StepFailure {
    fn reason(&self) -> String {
        let error = first_error(&self.log);
        match (&self.command, self.timed_out) {
            (Some(c), true) => format!("verification timed out: `{c}`"),
            (Some(c), false) if c.contains("pytest") && error.contains("no tests ran") => {
                "verification: pytest collected no tests".into()
            }
            (Some(c), false) => format!("verification failed: `{c}`: {error}"),
            (None, _) => format!("{} failed: {error}", self.step),
        }
    }
}

impl Advisor {
    /// The model's changes for `failure` of recipe `r`, and its answer as it came.
    async fn ask(
        &self,
        pr: &PullRequest,
        r: &Recipe,
        failure: &StepFailure,
        suites: &[(&str, (u32, u32))],
        meter: &Meter,
    ) -> Result<(model_repair::Proposal, String), TaskError> {
        let pythons: Vec<String> = suites.iter().map(|(_, (a, b))| format!("{a}.{b}")).collect();
        let step = failure.command.clone().unwrap_or_else(|| failure.step.to_string());
        // The same failure asks the same question, so a recorded answer replays.
        let steady = model_repair::steady_log(&failure.log);
        let values = std::collections::BTreeMap::from([
            ("project", pr.repo.clone()),
            ("python", r.python.clone()),
            ("suite", r.suite.clone()),
            ("pin", r.pinned_to.chars().take(10).collect()),
            ("install_script", r.install_script.trim_end().to_string()),
            ("step", step),
            ("error", first_error(&steady)),
            ("log_tail", crate::text::last_bytes(&crate::text::last_lines(&steady, 40), 3000).to_string()),
            ("pythons", pythons.join(", ")),
        ]);
        let request = self.llm.request(self.template.render(&values));
        let (answer, _) = self.llm.chat(&request).await.map_err(|e| match e {
            LlmError::ContextExceeded(_) => TaskError::reject(format!("the model's repair step: {e}")),
            e => TaskError::infra(format!("the model's repair step: {e}")),
        })?;
        meter.add(answer.usage.into());
        Ok((model_repair::read_answer(&answer.text, suites), answer.text))
    }
}

/// What a built and verified environment is made of.
struct Built {
    image: String,
    deps_reused: bool,
    seconds: Seconds,
}

impl Environment {
    /// The git and file work, in one blocking step: the checkout, what builds it, and when its
    /// dependency spec took its current form, so dependencies resolve as of then (deterministic,
    /// and shared by every PR with the same spec).
    async fn prepare(&self, pr: &PullRequest) -> Result<Prepared, TaskError> {
        let work =
            tempfile::tempdir().map_err(|e| TaskError::infra(format!("no temporary directory: {e}")))?;
        let checkout = work.path().join("repo");
        let (mirrors, repo, head, dest) =
            (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone(), checkout.clone());
        let patch = pr.patch.clone().unwrap_or_default();
        let prepared = tokio::task::spawn_blocking(move || -> Result<_, TaskError> {
            let mirror = mirrors.open(&repo, &[&head])?;
            let missing = mirrors.checkout(&mirror, &head, &dest)?;
            let listing =
                working_files(&dest).map_err(|e| TaskError::infra(format!("reading the checkout: {e}")))?;
            let project = detect(&|p: &str| std::fs::read_to_string(dest.join(p)).ok(), &listing);
            let changed = mirror.last_change(&head, &project.spec_files, 20_000)?;
            let version = project
                .needs_build
                .is_some()
                .then(|| version_from_describe(mirror.describe(&head).as_deref()));
            let mut related = related_tests(&patch, &listing);
            if related.is_empty() {
                related =
                    importing_tests(&patch, &listing, &|p: &str| std::fs::read_to_string(dest.join(p)).ok());
            }
            Ok((project, changed, version, related, missing))
        })
        .await
        .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))?;
        let (project, changed, version, related, missing) = prepared?;
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
        Ok(Prepared { _work: work, checkout, project, pin, version, related, missing })
    }

    /// Builds the environment, and when a step fails, repairs the recipe and tries again, up to
    /// `max_repairs` times: by rule first, then on another Python, then (when configured) as the
    /// model proposes. Every attempt is kept: what failed, the fix, the log's tail.
    async fn make(&self, pr: &PullRequest, instance: &str, meter: &Meter) -> Result<Value, TaskError> {
        loop {
            let place = self.docker.build_place(&pr.repo).await?;
            match self.make_on(&place, pr, instance, meter).await {
                // The build's host stopped answering: the whole build again on another.
                Err(TaskError::Infra(e)) if self.docker.lost(place.index, &e.to_string()).await => continue,
                // A build that fails away from the first host is tried there before it counts:
                // another host's set-up (no network, other mirrors) must not decide a result.
                Err(TaskError::Reject { .. }) if place.index != 0 => {
                    drop(place);
                    let home = self.docker.home_build_place(&pr.repo).await?;
                    return self.make_on(&home, pr, instance, meter).await;
                }
                done => return done,
            }
        }
    }

    /// [`Self::make`] on one host; test runs bring what it builds to the others.
    async fn make_on(
        &self,
        place: &BuildPlace<'_>,
        pr: &PullRequest,
        instance: &str,
        meter: &Meter,
    ) -> Result<Value, TaskError> {
        let p = self.prepare(pr).await?;
        let recipe = |fixes: &Fixes| {
            repaired_recipe(&Inputs {
                project: &p.project,
                repo: &pr.repo,
                instance,
                head: &pr.head_commit,
                pin: &p.pin,
                version: p.version.as_deref(),
                fixes,
                related_tests: &p.related,
            })
            .map_err(|e| TaskError::reject(e.to_string()))
        };
        let key = RepairMemory::key(&pr.repo, &recipe(&Fixes::default())?);
        if let Some(remembered) = self.memory.recall(&key) {
            let r = recipe(&remembered.fixes)?;
            if let Ok(built) = self.attempt(place, &r, instance, &pr.head_commit, &p.checkout).await? {
                let attempts = serde_json::from_value(remembered.attempts).unwrap_or_default();
                let mut record = output(&p, &r, built, &remembered.fixes, attempts)?;
                record["repairs_remembered"] = json!(true);
                return Ok(record);
            }
            self.memory.forget(&key);
        }
        let suites = suites_by_date(p.project.requires_python.as_deref(), &p.pin);
        let mut tried_suites: Vec<&str> = Vec::new();
        let mut fixes = Fixes::default();
        let mut attempts = Vec::new();
        loop {
            let r = recipe(&fixes)?;
            if let Some((suite, _)) = suites.iter().find(|(s, _)| *s == r.suite) {
                tried_suites.push(suite);
            }
            let failure = match self.attempt(place, &r, instance, &pr.head_commit, &p.checkout).await? {
                Ok(built) => {
                    if !attempts.is_empty() {
                        let tried = serde_json::to_value(&attempts).unwrap_or(Value::Null);
                        self.memory.remember(&key, &Remembered { fixes: fixes.clone(), attempts: tried });
                    }
                    return output(&p, &r, built, &fixes, attempts);
                }
                Err(failure) => failure,
            };
            let reason = failure.reason();
            let mut attempt = Attempt {
                failed: reason.clone(),
                python: r.python.clone(),
                log_tail: crate::text::last_lines(&failure.log, 40).to_string(),
                fix: None,
            };
            let mut repaired = false;
            if attempts.len() < self.max_repairs as usize {
                let tried = Tried { suites: &suites, used: &tried_suites };
                let (new, fix) = self.repair(pr, &p, &r, &failure, tried, &mut fixes, meter).await?;
                repaired = new;
                attempt.fix = Some(fix);
            }
            attempts.push(attempt);
            if !repaired {
                return Err(rejection(reason, &p.missing, attempts));
            }
        }
    }

    /// The next repair of recipe `r` after `failure`, added to `fixes`: by rule first, then the
    /// setup.py built in place, then another Python, then (when configured) as the model proposes.
    /// Whether it changed anything, and what is stored of it.
    #[allow(clippy::too_many_arguments)]
    async fn repair(
        &self,
        pr: &PullRequest,
        p: &Prepared,
        r: &Recipe,
        failure: &StepFailure,
        tried: Tried<'_>,
        fixes: &mut Fixes,
        meter: &Meter,
    ) -> Result<(bool, Value), TaskError> {
        let failed = Failed {
            log: &failure.log,
            editable_setup_py: failure.step == Step::EditableInstall
                && p.project.spec_files.iter().any(|f| f == "setup.py"),
            own: p.project.name.as_deref().filter(|_| p.project.needs_build.is_some()),
            imports: &p.project.imports,
            python: &r.python,
            pinned_to: &r.pinned_to,
            wheels_since: &r.wheels_since,
            pr_date: pr.created_at.as_deref(),
            untried_python: tried.suites.iter().copied().find(|(s, _)| !tried.used.contains(s)),
        };
        if let Some((new, fix)) = next_fix(&failed, fixes) {
            return Ok((new, json!(fix)));
        }
        let Some(advisor) = &self.advisor else { return Ok((false, Value::Null)) };
        let (proposal, answer) = advisor.ask(pr, r, failure, tried.suites, meter).await?;
        let new: Vec<&Fix> = proposal.fixes.iter().filter(|f| fixes.add(f)).collect();
        let record = json!({"kind": "model", "changes": new, "answer": answer, "ignored": proposal.ignored});
        Ok((!new.is_empty(), record))
    }

    /// One try at the layers and the verification of recipe `r`.
    async fn attempt(
        &self,
        place: &BuildPlace<'_>,
        r: &Recipe,
        instance: &str,
        head: &str,
        checkout: &Path,
    ) -> Result<Result<Built, StepFailure>, TaskError> {
        let (docker, at) = (&place.docker, place.index);
        // What another host (or the registry) already has is brought, not built again.
        for layer in [&r.base_image, &r.tools_image, &r.deps_image] {
            self.docker.bring(at, docker, layer).await?;
        }
        if !image_exists(docker, &r.base_image).await? {
            // Another Python's base image is made the first time a PR needs it (a few minutes,
            // once per machine), as `curate images bootstrap --suite` would.
            let _guard = build_lock(&r.base_image).await;
            let mut b = Bootstrap::new(&r.suite);
            b.tag = r.base_image.clone();
            bootstrap(docker, &b, |_| {}).await?;
        }
        let failed = |step: Step, f: BuildFailure| StepFailure {
            step,
            command: None,
            timed_out: false,
            log: format!("{}\n{}", f.log_tail, f.message),
        };
        if let Err(f) = ensure(docker, &r.tools_image, &r.tools_dockerfile, &[]).await? {
            return Ok(Err(failed(Step::ToolsLayer, f)));
        }
        let t0 = Instant::now();
        let deps_context = [("requirements.txt", r.requirements_txt.as_bytes())];
        let deps_reused = match ensure(docker, &r.deps_image, &r.deps_dockerfile, &deps_context).await? {
            Ok(reused) => reused,
            Err(f) => return Ok(Err(failed(Step::DependencyInstall, f))),
        };
        if !deps_reused {
            self.docker.built(at, docker, &r.deps_image).await?;
        }
        let deps_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        // A project that imports from its sources runs on the dependency layer, with the tree under
        // test brought in by each run; only one that must be built gets a layer of its own.
        let image = match &r.instance_layer {
            Some(_) => {
                let tag = instance_tag(instance, head, r);
                match ensure_instance(docker, r, &tag, checkout).await? {
                    Ok(true) => {}
                    Ok(false) => self.docker.built(at, docker, &tag).await?,
                    Err(f) => return Ok(Err(failed(Step::EditableInstall, f))),
                }
                tag
            }
            None => r.deps_image.clone(),
        };
        let instance_s = t1.elapsed().as_secs_f64();
        let t2 = Instant::now();
        if !r.verify.is_empty() {
            // One container for every check: each costs a start and a copy of the tree otherwise.
            let mut spec = env_spec(&image, vec!["sh".into(), "-c".into(), verification_script(&r.verify)]);
            spec.files = tree_files(checkout)?;
            spec.timeout = self.verify_timeout * r.verify.len() as u32;
            let result = run(docker, &spec).await?;
            if result.exit_code != Some(0) {
                let (step, output) = failed_step(&result.output, r.verify.len());
                let command = r.verify[step].join(" ");
                let no_tests = result.exit_code == Some(5) && command.contains("pytest");
                return Ok(Err(StepFailure {
                    step: Step::Verification,
                    command: Some(command),
                    timed_out: result.timed_out,
                    log: if no_tests { format!("{output}\nno tests ran") } else { output },
                }));
            }
        }
        let seconds = Seconds { deps: deps_s, instance: instance_s, verify: t2.elapsed().as_secs_f64() };
        Ok(Ok(Built { image, deps_reused, seconds }))
    }
}

/// The environment's record: the contract (the image), its recipe as repaired, and every repair.
#[derive(Serialize)]
struct Record<'a> {
    #[serde(flatten)]
    environment: contract::Environment,
    deps_image: &'a str,
    deps_reused: bool,
    instance_layer: &'a Option<String>,
    tools_image: &'a str,
    suite: &'a str,
    python: &'a str,
    pinned_to: &'a str,
    backend: &'a str,
    runner: &'a Option<Runner>,
    requirements: &'a str,
    install_script: &'a str,
    dockerfiles: Dockerfiles<'a>,
    seconds: Seconds,
    fixes: &'a Fixes,
    verified: Vec<String>,
    repairs: Vec<Attempt>,
    /// Files of the commit whose content the mirror lacks, left out of the checkout.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    missing_files: &'a [String],
}

#[derive(Serialize)]
struct Dockerfiles<'a> {
    tools: &'a str,
    deps: &'a str,
    instance: &'a str,
}

/// Seconds the dependency layer, the instance layer and the verification took.
#[derive(Serialize)]
struct Seconds {
    deps: f64,
    instance: f64,
    verify: f64,
}

/// A failed try: why, on which Python, the end of its log, and the repair it led to (`null` when
/// none was found; absent once the repairs ran out).
#[derive(Serialize, Deserialize)]
struct Attempt {
    failed: String,
    python: String,
    log_tail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<Value>,
}

/// The environment's record for recipe `r`, built, after the repairs `fixes` and the failed
/// tries `repairs`.
fn output(
    p: &Prepared,
    r: &Recipe,
    built: Built,
    fixes: &Fixes,
    repairs: Vec<Attempt>,
) -> Result<Value, TaskError> {
    let record = Record {
        environment: contract::Environment {
            image: built.image,
            imports: p.project.imports.clone(),
            rebuild: r.instance_layer.as_ref().map(|_| r.install_command.clone()),
        },
        deps_image: &r.deps_image,
        deps_reused: built.deps_reused,
        instance_layer: &r.instance_layer,
        tools_image: &r.tools_image,
        suite: &r.suite,
        python: &r.python,
        pinned_to: &r.pinned_to,
        backend: &p.project.backend,
        runner: &p.project.runner,
        requirements: &r.requirements_txt,
        install_script: &r.install_script,
        dockerfiles: Dockerfiles {
            tools: &r.tools_dockerfile,
            deps: &r.deps_dockerfile,
            instance: &r.instance_dockerfile,
        },
        seconds: built.seconds,
        fixes,
        verified: r.verify.iter().map(|c| c.join(" ")).collect(),
        repairs,
        missing_files: &p.missing,
    };
    serde_json::to_value(record).map_err(|e| TaskError::infra(format!("cannot record the environment: {e}")))
}

impl AsyncStage for Environment {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        self.make(&pr_record(&input)?, &input.item.id, &input.meter).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_that_failed_on_two_pythons_is_rejected_with_the_first_ones_error() {
        let attempt = |failed: &str, python: &str| Attempt {
            failed: failed.into(),
            python: python.into(),
            log_tail: String::new(),
            fix: None,
        };
        let attempts = vec![
            attempt("ImportError: no module named '_cext'", "3.9"),
            attempt("longintrepr.h: No such file", "3.9"),
            attempt("error: metadata-generation-failed", "3.13"),
        ];
        let TaskError::Reject { reason, .. } =
            rejection("error: metadata-generation-failed".into(), &[], attempts)
        else {
            panic!("a rejection")
        };
        assert_eq!(reason, "longintrepr.h: No such file (on Python 3.9; Python 3.13 did not build either)");
        let one = vec![attempt("x", "3.11")];
        let TaskError::Reject { reason, .. } = rejection("x".into(), &[], one) else { panic!("a rejection") };
        assert_eq!(reason, "x", "one Python: its own error as it was");
    }

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
