//! From a detected project to images in layers:
//!
//! 1. base (`curate images bootstrap`): Debian, Python, git, a compiler; the suite picks the Python;
//! 2. tools: a venv with uv, pip, setuptools and wheel, current versions;
//! 3. dependencies: the build tools (current), what else the build needs (Cython, numpy, …) and the
//!    declared requirements resolved as they were on the PR's date (`uv pip install --exclude-newer`), keyed by repository and the hash of that
//!    spec, so PRs with the same spec share it;
//! 4. instance: the repository itself. A project whose sources import as they are (pure Python,
//!    no version file written at build time) gets no layer of its own: its image is the dependency
//!    layer, which puts the checkout's import root on `sys.path`, and every run brings the tree it
//!    tests (reviewed, fixed or revised) into /repo. A second PR of the repository then builds
//!    nothing. A project that must be built to import (compiled extensions, setuptools-scm, …) gets
//!    an instance layer with the reviewed commit installed in editable mode.
//!
//! Build tools are current on purpose: an editable install needs setuptools 64 or newer, and
//! pinning the backend to an old date breaks every legacy project.

use std::collections::BTreeSet;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::detect::{BUILD_TOOLS, Project, Runner, requirement_name};
use super::repair::Fixes;
use crate::exec::testrun::REPO;

/// Debian suites with the Python each carries, oldest Python first.
pub const SUITES: [(&str, (u32, u32)); 3] =
    [("bullseye", (3, 9)), ("bookworm", (3, 11)), ("trixie", (3, 13))];

/// Scientific packages whose source builds take many minutes on two cores.
const WHEELS_ONLY: [&str; 8] =
    ["numpy", "scipy", "pandas", "matplotlib", "scikit-learn", "pyarrow", "tables", "h5py"];

/// Bumped when the layers' recipes change, so old images are not reused.
/// 3: no `wheel` in the tools layer (its `packaging`, today's, stood in for the one of the pin's
/// date), and today's setuptools (which builds wheels itself) over the venv's own.
/// 4: packages installed with their bytecode compiled (`UV_COMPILE_BYTECODE`): every test run
/// starts a new interpreter on a read-only copy of the image, and compiling pytest and its plugins
/// from source each time took about a third of a trivial run.
const RECIPE_VERSION: u32 = 4;

fn version_of(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().trim_end_matches(".*").split('.');
    let major = parts.next()?.trim().parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.trim().parse().ok())?;
    Some((major, minor))
}

/// Whether Python `v` (major, minor) satisfies a `requires-python` (or poetry `^3.8`) specifier.
pub fn satisfies(spec: &str, v: (u32, u32)) -> bool {
    spec.split(',').map(str::trim).filter(|c| !c.is_empty()).all(|clause| {
        let ops = ["~=", "==", "!=", ">=", "<=", ">", "<", "^", "="];
        let Some(op) = ops.iter().find(|o| clause.starts_with(**o)) else { return true };
        let Some(w) = version_of(&clause[op.len()..]) else { return true };
        match *op {
            ">=" => v >= w,
            ">" => v > w || (clause.matches('.').count() >= 2 && v >= w),
            "<=" => v <= w,
            "<" => v < w,
            "==" | "=" => v == w,
            "!=" => v != w,
            "~=" | "^" => v >= w && v.0 == w.0,
            _ => true,
        }
    })
}

/// When wheels for Python `v` were common on PyPI (a few months after its release): a pin earlier
/// than that makes old releases build from source, which they mostly cannot on it.
pub fn wheels_since(v: (u32, u32)) -> &'static str {
    match v {
        (3, 9) => "2021-03-01T00:00:00Z",
        (3, 11) => "2023-03-01T00:00:00Z",
        (3, 13) => "2025-03-01T00:00:00Z",
        _ => "2023-03-01T00:00:00Z",
    }
}

/// The suites whose Python fits the project's range, in the order to try them. First the Python of
/// the pin's date: the newest whose wheels were common by then (see [`wheels_since`]), or the
/// oldest there is for an older pin; period pins have wheels for it and build on it. Then the
/// others, nearest first (the newer of two as near).
pub fn suites_by_date(requires_python: Option<&str>, pin: &str) -> Vec<(&'static str, (u32, u32))> {
    let fitting: Vec<_> = SUITES
        .iter()
        .copied()
        .filter(|(_, v)| requires_python.is_none_or(|spec| satisfies(spec, *v)))
        .collect();
    // RFC 3339 times in UTC compare as strings.
    let first = fitting.iter().rposition(|(_, v)| wheels_since(*v) <= pin).unwrap_or(0);
    let mut order: Vec<usize> = (0..fitting.len()).collect();
    order.sort_by_key(|&i| (i.abs_diff(first), std::cmp::Reverse(i)));
    order.into_iter().map(|i| fitting[i]).collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Recipe {
    pub suite: String,
    pub python: String,
    pub base_image: String,
    pub tools_image: String,
    pub tools_dockerfile: String,
    pub deps_image: String,
    pub deps_dockerfile: String,
    pub requirements_txt: String,
    pub instance_dockerfile: String,
    /// Why the project needs an instance layer of its own (see the module's comment); `None`: its
    /// image is the dependency layer.
    pub instance_layer: Option<String>,
    /// The instance layer's install, run in /repo.
    pub install_command: String,
    /// What runs, in order, as a shell script (for people; the Dockerfiles are what is built).
    pub install_script: String,
    /// Commands that must succeed in the instance image.
    pub verify: Vec<Vec<String>>,
    /// Resolution date for `--exclude-newer`.
    pub pinned_to: String,
    /// When wheels for this Python were common (see [`wheels_since`]).
    pub wheels_since: String,
}

/// `s` as one word for `sh`.
fn shell_quote(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.=~,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn tag_part(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
        .collect()
}

/// A version for a build that reads it from git where there is no history, from `git describe
/// --tags` (`v1.2.3-4-gabcdef`): the tag's version, `.postN` past it, `0.0.0` with no usable tag.
pub fn version_from_describe(described: Option<&str>) -> String {
    let Some(described) = described else { return "0.0.0".into() };
    // The tag, and how many commits past it, when `describe` says so.
    let (tag, distance) = match described.rsplitn(3, '-').collect::<Vec<_>>().as_slice() {
        [hash, n, tag] if hash.starts_with('g') && n.chars().all(|c| c.is_ascii_digit()) => {
            (*tag, n.parse::<u64>().unwrap_or(0))
        }
        _ => (described, 0),
    };
    let start = tag.find(|c: char| c.is_ascii_digit()).unwrap_or(tag.len());
    let version: String =
        tag[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
    let version = version.trim_end_matches('.');
    if version.is_empty() {
        return "0.0.0".into();
    }
    if distance > 0 { format!("{version}.post{distance}") } else { version.to_string() }
}

/// What a recipe is made from: the project as detected, the PR it is built for, and what the
/// repairs so far changed.
pub struct Inputs<'a> {
    pub project: &'a Project,
    /// `owner/name`: the dependency layer's tag and key name it.
    pub repo: &'a str,
    pub instance: &'a str,
    pub head: &'a str,
    /// An RFC 3339 time: dependencies resolve as they were then. The caller passes the time the
    /// dependency spec took its current form (its last change before the reviewed commit), so every
    /// PR with the same spec resolves the same way and shares one dependency layer.
    pub pin: &'a str,
    /// The version a build that reads it from git should get ([`version_from_describe`]).
    pub version: Option<&'a str>,
    /// The repairs made so far.
    pub fixes: &'a Fixes,
    /// The test files that relate to the PR: verification collects those, or the whole suite
    /// when there are none.
    pub related_tests: &'a [String],
}

/// Why no recipe can be made: the data's fault, the same on every run.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error("no base image has a Python in {0}")]
    NoPython(String),
}

/// The recipe of a project before any repair.
pub fn recipe(p: &Project, repo: &str, instance: &str, head: &str, pin: &str) -> Result<Recipe, RecipeError> {
    let fixes = Fixes::default();
    repaired_recipe(&Inputs {
        project: p,
        repo,
        instance,
        head,
        pin,
        version: None,
        fixes: &fixes,
        related_tests: &[],
    })
}

/// A date past every release: a package resolved at it is resolved at its newest.
const NEWEST: &str = "2100-01-01T00:00:00Z";

/// The layers' Dockerfiles, the instance's install, the script a person reads and the checks of
/// the built image, for `input`.
pub fn repaired_recipe(input: &Inputs) -> Result<Recipe, RecipeError> {
    let (p, fixes) = (input.project, input.fixes);
    let (suite, (major, minor)) = chosen_suite(p, input.pin, fixes)?;
    let base_image = format!("curate/base:{suite}");
    let tools_image = format!("curate/tools:{suite}-v{RECIPE_VERSION}");
    let tools_dockerfile = format!(
        "FROM {base_image}\n\
         ENV PATH=/opt/venv/bin:$PATH VIRTUAL_ENV=/opt/venv UV_NATIVE_TLS=1 PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 UV_COMPILE_BYTECODE=1\n\
         RUN python3 -m venv /opt/venv && pip install --no-cache-dir --quiet --upgrade uv setuptools\n"
    );
    let requirements = requirements(p, fixes);
    let requirements_txt: String = requirements.iter().map(|r| format!("{r}\n")).collect();
    let backends = backends(p);
    let res = Resolution::new(input, &requirements, &backends);
    let steps = DepsSteps::new(p, fixes, &backends, &res);
    let Resolution { pinned_to, newest, wheels_only, build_constraints } = &res;
    let deps_dockerfile = format!(
        "FROM {tools_image}\n{}{}{}COPY requirements.txt /curate/requirements.txt\n\
         {}RUN uv pip install --quiet --exclude-newer {pinned_to}{newest}{wheels_only}{build_constraints} -r /curate/requirements.txt\n{}",
        steps.env, steps.system, steps.backend, steps.constraints, steps.import_path
    );
    let key = hex::encode(Sha256::digest(
        format!("{}\n{deps_dockerfile}\n{requirements_txt}", input.repo).as_bytes(),
    ));
    let deps_image = format!("curate-deps/{}:{}", tag_part(input.repo), &key[..16]);
    let install_command = install_command(input, &res);
    let instance_dockerfile = match &p.needs_build {
        Some(_) => format!("FROM {deps_image}\nCOPY repo /repo\nWORKDIR /repo\nRUN {install_command}\n"),
        // What a run does: the tree under test in /repo, on the dependency layer.
        None => format!("FROM {deps_image}\nCOPY repo /repo\nWORKDIR /repo\n"),
    };
    let exports: String = fixes.env.iter().map(|(k, v)| format!("export {k}={v}\n")).collect();
    let install_script = format!(
        "# {} at {}: Python {major}.{minor} (Debian {suite}), backend {}\n\
         {exports}{}python3 -m venv /opt/venv && pip install --upgrade uv setuptools\n{}\
         {}uv pip install --exclude-newer {pinned_to}{newest}{wheels_only}{build_constraints} -r requirements.txt\n\
         {}\n",
        input.instance,
        input.head,
        p.backend,
        steps.system.trim_start_matches("RUN "),
        steps.backend.trim_start_matches("RUN "),
        steps.constraints.trim_start_matches("RUN "),
        install_command.replace(" --quiet", ""),
    );
    Ok(Recipe {
        suite: suite.into(),
        python: format!("{major}.{minor}"),
        base_image,
        tools_image,
        tools_dockerfile,
        deps_image,
        deps_dockerfile,
        requirements_txt,
        instance_dockerfile,
        instance_layer: p.needs_build.clone(),
        install_command,
        install_script,
        verify: verify(p, input.related_tests),
        pinned_to: res.pinned_to,
        wheels_since: wheels_since((major, minor)).to_string(),
    })
}

/// The suite a repair chose, or the first for the pin's date.
fn chosen_suite(p: &Project, pin: &str, fixes: &Fixes) -> Result<(&'static str, (u32, u32)), RecipeError> {
    let suites = suites_by_date(p.requires_python.as_deref(), pin);
    let chosen = match &fixes.suite {
        Some(s) => suites.iter().find(|(name, _)| name == s),
        None => suites.first(),
    };
    chosen
        .copied()
        .ok_or_else(|| RecipeError::NoPython(p.requires_python.clone().unwrap_or_else(|| "?".into())))
}

/// The requirements file's lines: the project's, pytest, what repairs added, with exact pins that
/// cannot all hold taken out.
fn requirements(p: &Project, fixes: &Fixes) -> Vec<String> {
    let mut requirements = p.requirements.clone();
    // Every test curate runs (the model's, the probe's, the project's own) runs under pytest, which
    // runs unittest-style suites too: a project that tests with unittest gets it as well.
    if !requirements.iter().any(|r| requirement_name(r) == "pytest") {
        requirements.push("pytest".into());
    }
    requirements.extend(fixes.requirements.iter().cloned());
    // Exact pins that cannot all hold: a static reading gathers every Python version's branch of
    // a setup.py, so a package named more than once keeps only its non-exact specs. A relaxed or
    // unpinned package keeps none (`--exclude-newer-package` cannot lift an `==`).
    let named_twice: BTreeSet<String> = {
        let mut seen = BTreeSet::new();
        requirements.iter().map(|r| requirement_name(r)).filter(|n| !seen.insert(n.clone())).collect()
    };
    let ranged: BTreeSet<String> =
        requirements.iter().filter(|r| !r.contains("==")).map(|r| requirement_name(r)).collect();
    let mut kept: Vec<String> = Vec::with_capacity(requirements.len());
    for r in requirements {
        let n = requirement_name(&r);
        if !r.contains("==") {
            kept.push(r);
        } else if named_twice.contains(&n) {
            // Its other specs stay; with none, the package itself.
            if !ranged.contains(&n) && !kept.contains(&n) {
                kept.push(n);
            }
        } else if fixes.relaxed.contains(&n) || fixes.unpinned.contains(&n) {
            kept.push(n);
        } else {
            kept.push(r);
        }
    }
    kept
}

/// The build backend's requirements, sorted, for a project that is built. The backend matters only
/// to an editable install; a project that imports from its sources would get today's backend and
/// its dependencies (a new `packaging`, say) ahead of the ones of its date.
fn backends(p: &Project) -> Vec<String> {
    let mut backends: Vec<String> = if p.needs_build.is_some() {
        p.build_requires.iter().filter(|b| !b.is_empty()).cloned().collect()
    } else {
        Vec::new()
    };
    backends.sort();
    backends.dedup();
    backends
}

/// How the dependencies resolve: the date, the packages taken at their newest or reinstalled
/// (`newest`, flags), those that come as wheels only, and the build constraint of old source
/// builds (flags, each with its leading space).
struct Resolution {
    pinned_to: String,
    newest: String,
    wheels_only: String,
    build_constraints: &'static str,
}

impl Resolution {
    fn new(input: &Inputs, requirements: &[String], backends: &[String]) -> Resolution {
        let (p, fixes) = (input.project, input.fixes);
        // RFC 3339 times in UTC compare as strings.
        let pinned_to = match &fixes.pinned_no_earlier_than {
            Some(later) if later.as_str() > input.pin => later.clone(),
            _ => input.pin.to_string(),
        };
        // Today's setuptools uses the `packaging` it finds installed, and one of an old pin's date
        // lacks what it calls (`canonicalize_version(strip_trailing_zero=…)`): a project built by
        // it gets today's.
        let packaging_current = p.needs_build.is_some() && !fixes.unpinned.contains("packaging");
        // Old source builds get a setuptools between the installer's floor and the removal of what
        // they import: lifted past the pin's date, then bounded by the build constraint.
        let legacy_setuptools = fixes.legacy_build_tools && !fixes.unpinned.contains("setuptools");
        let newest: String = fixes
            .unpinned
            .iter()
            .map(String::as_str)
            .chain(packaging_current.then_some("packaging"))
            .chain(legacy_setuptools.then_some("setuptools"))
            .map(|p| format!(" --exclude-newer-package {p}={NEWEST}"))
            .chain(fixes.reinstalled.iter().map(|p| format!(" --reinstall-package {p}")))
            .collect();
        // Packages that take many minutes to compile come as wheels only: a release of the pin's
        // date with none for this Python fails at once, and a rule repins it, instead of a compile
        // that runs out the time (numpy 1.19 on Python 3.11, say).
        let named: BTreeSet<String> =
            requirements.iter().chain(backends).map(|r| requirement_name(r)).collect();
        let own = p.name.as_deref().map(requirement_name).unwrap_or_default();
        let wheels_only: String = if WHEELS_ONLY.iter().any(|h| named.contains(*h)) {
            WHEELS_ONLY.iter().filter(|h| **h != own).map(|h| format!(" --only-binary {h}")).collect()
        } else {
            String::new()
        };
        let build_constraints =
            if fixes.legacy_build_tools { " --build-constraints /curate/build-constraints.txt" } else { "" };
        Resolution { pinned_to, newest, wheels_only, build_constraints }
    }
}

/// The dependency layer's optional steps, each a Dockerfile line with its newline or empty.
struct DepsSteps {
    /// Variables a repair set.
    env: String,
    /// Debian packages a repair added.
    system: String,
    /// What the build needs.
    backend: String,
    /// The build constraint file of old source builds.
    constraints: String,
    /// The checkout's import root on `sys.path`, for a project with no instance layer.
    import_path: String,
}

impl DepsSteps {
    fn new(p: &Project, fixes: &Fixes, backends: &[String], res: &Resolution) -> DepsSteps {
        // Every install below, the instance's included, sees the variables. Their values are plain
        // words (see `repair::env_value_ok`), so neither needs quotes.
        let env = if fixes.env.is_empty() {
            String::new()
        } else {
            let pairs: Vec<String> = fixes.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("ENV {}\n", pairs.join(" "))
        };
        let system = if fixes.system_packages.is_empty() {
            String::new()
        } else {
            let packages: Vec<&str> = fixes.system_packages.iter().map(String::as_str).collect();
            format!(
                "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends {} >/dev/null && rm -rf /var/lib/apt/lists/*\n",
                packages.join(" ")
            )
        };
        let constraints = if fixes.legacy_build_tools {
            format!("RUN echo '{}' > /curate/build-constraints.txt\n", super::repair::LEGACY_BUILD_SETUPTOOLS)
        } else {
            String::new()
        };
        DepsSteps {
            env,
            system,
            backend: backend_step(backends, res),
            constraints,
            import_path: import_path_step(p),
        }
    }
}

/// The install of what the build needs: its tools current, anything else (Cython, numpy, …) as of
/// the pin's date.
fn backend_step(backends: &[String], res: &Resolution) -> String {
    let is_tool = |b: &String| BUILD_TOOLS.contains(&b.as_str());
    if backends.is_empty() {
        return String::new();
    }
    if backends.iter().all(is_tool) {
        return format!("RUN uv pip install --quiet {}\n", backends.join(" "));
    }
    let current: String = backends
        .iter()
        .filter(|b| is_tool(b))
        .map(|b| format!(" --exclude-newer-package {b}={NEWEST}"))
        .collect();
    let quoted: Vec<String> = backends.iter().map(|b| shell_quote(b)).collect();
    let Resolution { pinned_to, newest, wheels_only, .. } = res;
    format!(
        "RUN uv pip install --quiet --exclude-newer {pinned_to}{newest}{wheels_only}{current} {}\n",
        quoted.join(" ")
    )
}

/// A command that puts the checkout's import root on `sys.path`, for a project imported from its
/// files.
fn pth_command(p: &Project) -> String {
    let import_root =
        if p.import_root.is_empty() { REPO.to_string() } else { format!("{REPO}/{}", p.import_root) };
    format!(
        "python -c \"import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], 'curate-repo.pth').write_text('{import_root}\\\\n')\""
    )
}

/// Without an instance layer, the import root under /repo goes on sys.path in the dependency layer
/// (the repository's top level is already there: tests run from /repo). It comes after
/// site-packages, so a release of the project itself that a dependency brought in (pluggy, which
/// pytest needs) would shadow the checkout: it is removed, and the checkout serves instead.
fn import_path_step(p: &Project) -> String {
    if p.needs_build.is_some() || p.import_root.is_empty() {
        return String::new();
    }
    let shadow = p.name.as_deref().map_or(String::new(), |name| {
        format!(" && (uv pip uninstall --quiet {} 2>/dev/null || true)", shell_quote(name))
    });
    format!("RUN {}{shadow}\n", pth_command(p))
}

/// The instance layer's install, run in /repo: in place, or editable with the project's extras.
fn install_command(input: &Inputs, res: &Resolution) -> String {
    let (p, fixes) = (input.project, input.fixes);
    let extras: BTreeSet<&String> = p.extras.iter().chain(&fixes.extras).collect();
    let target = if extras.is_empty() {
        ".".to_string()
    } else {
        format!(".[{}]", extras.into_iter().map(String::as_str).collect::<Vec<_>>().join(","))
    };
    // setuptools-scm and hatch-vcs read the version from git; the checkout's history stays behind.
    let version_env =
        input.version.map(|v| format!("SETUPTOOLS_SCM_PRETEND_VERSION={v} ")).unwrap_or_default();
    if fixes.in_place {
        // `build_ext` links the C libraries a setup.py declares (`libraries=`) but does not build
        // them; `build_clib` does, and does nothing where there are none.
        format!("{version_env}python setup.py build_clib build_ext --inplace && {}", pth_command(p))
    } else {
        format!(
            "{version_env}uv pip install --quiet --exclude-newer {}{} --no-build-isolation -e \"{target}\"",
            res.pinned_to, res.newest
        )
    }
}

/// Commands that must succeed in the instance image: the project's imports, and a collection of
/// the related tests (or the whole suite) under pytest.
fn verify(p: &Project, related_tests: &[String]) -> Vec<Vec<String>> {
    let mut verify = Vec::new();
    if !p.imports.is_empty() {
        let code = format!("import {}", p.imports.join(", "));
        verify.push(vec!["python".into(), "-c".into(), code]);
    }
    if p.runner == Some(Runner::Pytest) {
        let mut collect: Vec<String> =
            ["python", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
                .map(String::from)
                .to_vec();
        collect.extend(related_tests.iter().cloned());
        verify.push(collect);
    }
    verify
}

pub use crate::dates::rfc3339;

/// The instance image's tag: the PR's commit, and what the layer is built on and with (a repair
/// that changes the dependency layer or the install makes another).
pub fn instance_tag(instance: &str, head: &str, r: &Recipe) -> String {
    let built_on = hex::encode(Sha256::digest(format!("{}\n{}", r.deps_image, r.install_command).as_bytes()));
    format!("curate-env/{}:{}-{}", tag_part(instance), &head[..head.len().min(12)], &built_on[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repaired(p: &Project, pin: &str, fixes: &Fixes) -> Recipe {
        let input = Inputs {
            project: p,
            repo: "o/r",
            instance: "i",
            head: "abcdef",
            pin,
            version: None,
            fixes,
            related_tests: &[],
        };
        repaired_recipe(&input).unwrap()
    }

    #[test]
    fn versions_from_git_describe() {
        assert_eq!(version_from_describe(Some("v1.2.3")), "1.2.3");
        assert_eq!(version_from_describe(Some("v1.2.3-4-gabcdef0")), "1.2.3.post4");
        assert_eq!(version_from_describe(Some("release-3.0rc1-12-g0123456")), "3.0rc1.post12");
        assert_eq!(version_from_describe(Some("2.11.0")), "2.11.0");
        assert_eq!(version_from_describe(Some("nightly")), "0.0.0");
        assert_eq!(version_from_describe(None), "0.0.0");
    }

    #[test]
    fn the_python_of_the_pins_date_comes_first_then_the_nearest() {
        let names = |spec: Option<&str>, pin: &str| -> Vec<&str> {
            suites_by_date(spec, pin).into_iter().map(|(s, _)| s).collect()
        };
        assert_eq!(names(None, "2019-06-01T00:00:00Z"), ["bullseye", "bookworm", "trixie"]);
        assert_eq!(names(Some(">=3.8"), "2022-06-01T00:00:00Z"), ["bullseye", "bookworm", "trixie"]);
        assert_eq!(names(Some(">=3.8"), "2024-03-18T11:20:00Z"), ["bookworm", "trixie", "bullseye"]);
        assert_eq!(names(None, "2025-06-01T00:00:00Z"), ["trixie", "bookworm", "bullseye"]);
        assert_eq!(names(Some(">=3.6, <3.10"), "2024-03-18T11:20:00Z"), ["bullseye"]);
        assert_eq!(names(Some(">=3.12"), "2021-01-01T00:00:00Z"), ["trixie"]);
        assert_eq!(names(Some("^3.8"), "2023-06-01T00:00:00Z"), ["bookworm", "trixie", "bullseye"]);
        assert!(names(Some("==3.10.*"), "2023-06-01T00:00:00Z").is_empty());
    }

    #[test]
    fn legacy_build_tools_bound_the_source_builds_of_dependencies_only() {
        let p = Project {
            backend: "setuptools".into(),
            requirements: vec!["uwsgi".into()],
            ..Project::default()
        };
        let pin = "2016-05-07T00:00:00Z";
        let plain = repaired(&p, pin, &Fixes::default());
        assert!(!plain.deps_dockerfile.contains("build-constraints"), "{}", plain.deps_dockerfile);
        let mut fixes = Fixes::default();
        fixes.add(&crate::environment::repair::Fix::LegacyBuildTools { because: String::new() });
        let r = repaired(&p, pin, &fixes);
        assert!(
            r.deps_dockerfile.contains("RUN echo 'setuptools>=40.8.0,<46' > /curate/build-constraints.txt\n"),
            "{}",
            r.deps_dockerfile
        );
        let install = r.deps_dockerfile.lines().last().unwrap();
        assert!(install.contains("--exclude-newer 2016-05-07T00:00:00Z"), "{install}");
        assert!(install.contains("--exclude-newer-package setuptools=2100-01-01T00:00:00Z"), "{install}");
        assert!(install.contains("--build-constraints /curate/build-constraints.txt -r"), "{install}");
        assert!(r.install_script.contains("build-constraints"), "{}", r.install_script);
        assert_ne!(r.deps_image, plain.deps_image, "another layer");
    }

    #[test]
    fn exact_pins_that_cannot_all_hold_are_dropped() {
        let p = Project {
            backend: "setuptools".into(),
            requirements: vec![
                "numpy==1.12".into(),
                "numpy>=1.14.3".into(),
                "tables==3.4.4".into(),
                "six==1.0".into(),
                "cython==0.29".into(),
                "cython==0.29.14".into(),
            ],
            ..Project::default()
        };
        let mut fixes = Fixes::default();
        fixes.add(&crate::environment::repair::Fix::Unpin {
            package: "tables".into(),
            because: String::new(),
        });
        let r = repaired(&p, "2020-01-01T00:00:00Z", &fixes);
        assert_eq!(
            r.requirements_txt, "numpy>=1.14.3\ntables\nsix==1.0\ncython\npytest\n",
            "pytest comes with every environment"
        );
        assert!(r.deps_dockerfile.contains("--exclude-newer-package tables=2100-01-01T00:00:00Z"));
    }

    #[test]
    fn build_requirements_other_than_tools_resolve_at_the_pin() {
        let p = Project {
            backend: "setuptools".into(),
            build_requires: vec![
                "Cython ~=0.29".into(),
                "setuptools".into(),
                "pkgconfig; python_version>='3.8'".into(),
            ],
            needs_build: Some("compiled extensions".into()),
            ..Project::default()
        };
        let r = recipe(&p, "o/r", "i", "abcdef", "2023-03-01T00:00:00Z").unwrap();
        let step = r.deps_dockerfile.lines().find(|l| l.contains("Cython")).unwrap();
        assert_eq!(
            step,
            r#"RUN uv pip install --quiet --exclude-newer 2023-03-01T00:00:00Z --exclude-newer-package packaging=2100-01-01T00:00:00Z --exclude-newer-package setuptools=2100-01-01T00:00:00Z 'Cython ~=0.29' 'pkgconfig; python_version>='\''3.8'\''' setuptools"#
        );
        // numpy, which compiles for many minutes, comes as a wheel only (the project itself is
        // built all the same).
        let sci = Project { name: Some("h5py".into()), requirements: vec!["numpy".into()], ..p.clone() };
        let r = recipe(&sci, "o/r", "i", "abcdef", "2023-03-01T00:00:00Z").unwrap();
        assert!(
            r.deps_dockerfile.contains(" --only-binary numpy --only-binary scipy"),
            "{}",
            r.deps_dockerfile
        );
        assert!(!r.deps_dockerfile.contains("--only-binary h5py"), "{}", r.deps_dockerfile);
        assert!(!r.install_command.contains("--only-binary"), "{}", r.install_command);
        // Tools alone stay current, with no date.
        let tools = Project { build_requires: vec!["setuptools".into(), "wheel".into()], ..p };
        let t = recipe(&tools, "o/r", "i", "abcdef", "2023-03-01T00:00:00Z").unwrap();
        assert!(t.deps_dockerfile.contains("RUN uv pip install --quiet setuptools wheel\n"));
    }

    #[test]
    fn an_extra_a_repair_names_is_installed_with_the_project() {
        let p = Project {
            name: Some("httpkit".into()),
            backend: "setuptools".into(),
            extras: vec!["test".into()],
            needs_build: Some("compiled extensions".into()),
            ..Project::default()
        };
        let mut fixes = Fixes::default();
        fixes.add(&crate::environment::repair::Fix::Extra { extra: "socks".into(), because: String::new() });
        let r = repaired(&p, "2024-01-01T00:00:00Z", &fixes);
        assert!(r.instance_dockerfile.contains("-e \".[socks,test]\""), "{}", r.instance_dockerfile);
    }

    #[test]
    fn layers_share_what_they_can() {
        let p = Project {
            name: Some("durations".into()),
            backend: "setuptools".into(),
            build_requires: vec!["setuptools".into()],
            requirements: vec!["attrs".into()],
            extras: vec!["test".into()],
            runner: Some(Runner::Pytest),
            imports: vec!["durations".into()],
            ..Project::default()
        };
        let pin = "2024-03-01T10:00:00Z";
        let a = recipe(&p, "o/durations", "o__durations-3", "aaaaaaaaaaaaaaaa", pin).unwrap();
        let b = recipe(&p, "o/durations", "o__durations-8", "bbbbbbbbbbbbbbbb", pin).unwrap();
        assert_eq!(a.deps_image, b.deps_image, "same repo, spec and pin: one dependency layer");
        assert!(a.deps_dockerfile.contains("--exclude-newer 2024-03-01T10:00:00Z"));
        assert!(a.requirements_txt.contains("pytest\n") && a.requirements_txt.contains("attrs\n"));
        assert_eq!(a.instance_layer, None, "pure Python: the image is the dependency layer");
        assert!(!a.instance_dockerfile.contains("RUN"));
        assert!(!a.deps_dockerfile.contains("curate-repo.pth"), "a flat layout imports from /repo");
        let built = Project { needs_build: Some("compiled extensions".into()), ..p.clone() };
        let e = recipe(&built, "o/durations", "o__durations-3", "aaaaaaaaaaaaaaaa", pin).unwrap();
        assert_eq!(e.instance_layer.as_deref(), Some("compiled extensions"));
        assert!(e.instance_dockerfile.contains("-e \".[test]\""));
        let unittest = Project { runner: Some(Runner::Unittest), requirements: vec![], ..p.clone() };
        let u = recipe(&unittest, "o/durations", "o__durations-3", "aaaaaaaaaaaaaaaa", pin).unwrap();
        assert!(
            u.requirements_txt.contains("pytest\n"),
            "curate's tests run under pytest: {}",
            u.requirements_txt
        );
        let src = Project { import_root: "src".into(), name: Some("durations".into()), ..p.clone() };
        let s = recipe(&src, "o/durations", "o__durations-3", "aaaaaaaaaaaaaaaa", pin).unwrap();
        assert!(s.deps_dockerfile.contains("uv pip uninstall --quiet durations"), "{}", s.deps_dockerfile);
        assert!(
            s.deps_dockerfile.contains("'curate-repo.pth').write_text('/repo/src\\\\n')"),
            "{}",
            s.deps_dockerfile
        );
        assert_eq!(a.verify[0], vec!["python", "-c", "import durations"]);
        let mut q = p.clone();
        q.requirements.push("six".into());
        let c = recipe(&q, "o/durations", "x", "cccc", pin).unwrap();
        assert_ne!(a.deps_image, c.deps_image, "a new requirement is a new layer");
        let d = recipe(&p, "o/durations", "x", "cccc", "2024-05-02T00:00:00Z").unwrap();
        assert_ne!(a.deps_image, d.deps_image, "another pin resolves again");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_710_760_800), "2024-03-18T11:20:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
