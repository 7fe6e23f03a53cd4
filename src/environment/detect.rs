//! Reads a project's build files (pyproject.toml in its PEP 621, setuptools, poetry, flit, hatch and
//! pdm forms, setup.py, setup.cfg, requirements files, tox.ini, Pipfile) and says how it builds and
//! tests: the backend, the Python range, the dependencies it declares statically, its test extras,
//! the test runner and the names to import.

use std::collections::BTreeSet;

use serde::Serialize;

/// Extras that carry test dependencies, in the order they are preferred.
pub const TEST_EXTRAS: [&str; 4] = ["test", "tests", "testing", "dev"];

/// Requirements files that carry test or development dependencies.
const REQUIREMENT_FILES: [&str; 8] = [
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements_dev.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements/test.txt",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runner {
    Pytest,
    Unittest,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Project {
    /// The distribution name, when declared.
    pub name: Option<String>,
    /// `setuptools`, `setuptools (setup.py)`, `poetry`, `flit`, `hatch`, `pdm`, or the backend named.
    pub backend: String,
    /// Packages the build needs. The build tools (see [`BUILD_TOOLS`]) are names only: they are
    /// installed current. The rest (Cython, numpy, pkgconfig, …) keep their specifiers and resolve
    /// at the pin's date like the requirements: today's Cython does not compile old `.pyx` files.
    pub build_requires: Vec<String>,
    pub requires_python: Option<String>,
    /// Requirements declared statically, runtime and test together.
    pub requirements: Vec<String>,
    /// The extras installed with the project (`test`, …) that it declares.
    pub extras: Vec<String>,
    pub runner: Option<Runner>,
    /// Top-level modules to import to check the install.
    pub imports: Vec<String>,
    /// Files whose contents decide the dependency layer.
    pub spec_files: Vec<String>,
    /// Where the top-level modules live, relative to the repository: `""` or `"src"`.
    pub import_root: String,
    /// Why the checkout cannot be imported as it is (compiled extensions, a version file written
    /// at build time), so the image must hold an installed build of it; `None` for a project
    /// whose sources import straight from the checkout.
    pub needs_build: Option<String>,
}

/// What in a build file means the checkout must be built before it imports: the marker and what
/// it stands for.
const BUILD_MARKERS: [(&str, &str); 10] = [
    ("ext_modules", "compiled extensions"),
    ("Extension(", "compiled extensions"),
    ("cythonize", "Cython extensions"),
    ("setuptools_scm", "a version written at build time (setuptools-scm)"),
    ("setuptools-scm", "a version written at build time (setuptools-scm)"),
    ("use_scm_version", "a version written at build time (setuptools-scm)"),
    ("hatch-vcs", "a version written at build time (hatch-vcs)"),
    ("versioneer", "a version written at build time (versioneer)"),
    ("maturin", "a Rust extension (maturin)"),
    ("scikit_build", "compiled extensions (scikit-build)"),
];

/// Whether the checkout needs a build step to import, and why; see [`Project::needs_build`].
fn needs_build(files: &[Option<&String>], backend: &str, listing: &[String]) -> Option<String> {
    if ["mesonpy", "maturin", "scikit_build_core"].iter().any(|b| backend.starts_with(b)) {
        return Some(format!("the build backend {backend} compiles the project"));
    }
    for text in files.iter().flatten() {
        if let Some((marker, what)) = BUILD_MARKERS.iter().find(|(m, _)| text.contains(m)) {
            return Some(format!("{what}: the build files mention `{marker}`"));
        }
    }
    let compiled = [".pyx", ".c", ".cpp", ".rs"];
    listing
        .iter()
        .find(|l| {
            compiled.iter().any(|e| l.ends_with(e)) && !l.starts_with("tests/") && !l.starts_with("docs/")
        })
        .map(|l| format!("sources to compile, such as {l}"))
}

/// Build backends and installers: current versions build old projects (an editable install needs
/// setuptools 64 or newer), so they are named without a version and never pinned by date.
pub const BUILD_TOOLS: [&str; 14] = [
    "setuptools",
    "wheel",
    "pip",
    "setuptools-scm",
    "hatchling",
    "hatch-vcs",
    "hatch-fancy-pypi-readme",
    "flit-core",
    "flit-scm",
    "poetry-core",
    "poetry-dynamic-versioning",
    "pdm-backend",
    "pdm-pep517",
    "editables",
];

/// A build requirement as the recipe installs it: a build tool by its name, anything else as
/// written.
fn build_requirement(req: &str) -> String {
    let name = requirement_name(req);
    if BUILD_TOOLS.contains(&name.as_str()) { name } else { req.trim().to_string() }
}

/// Package name of a PEP 508 requirement (`Foo[bar]>=1; python_version<"3"` is `foo`).
pub fn requirement_name(req: &str) -> String {
    req.trim()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .next()
        .unwrap_or("")
        .to_lowercase()
        .replace('_', "-")
}

fn string_list(v: Option<&toml::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Requirement lines of a requirements file: no comments, options or includes, and no pip options
/// after a requirement (`pkg --no-binary=pkg`, `--hash=...`), which uv reads as a malformed hash.
fn requirement_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('-'))
        .map(|l| l.split(" -").next().unwrap_or(l).trim_end().trim_end_matches('\\').trim_end())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// A tox `deps` line split into its factor condition and the requirement: `py38,!pypy: pytest-xdist`
/// is `("py38,!pypy", "pytest-xdist")`; a line with no condition has `""`.
fn split_tox_factor(line: &str) -> (&str, &str) {
    match line.split_once(": ") {
        Some((factors, rest))
            if !factors.is_empty()
                && factors.chars().all(|c| c.is_ascii_alphanumeric() || ",!-_.".contains(c)) =>
        {
            (factors, rest.trim())
        }
        _ => ("", line),
    }
}

/// The file a tox `deps` line includes (`-r {toxinidir}/requirements_test.txt`, `-rreq.txt`),
/// relative to the repository.
fn tox_include(line: &str) -> Option<String> {
    let rest = line.strip_prefix("-r")?.trim_start();
    let path = rest.strip_prefix("{toxinidir}/").unwrap_or(rest).trim();
    (!path.is_empty() && !path.contains('{') && !path.starts_with('/')).then(|| path.to_string())
}

/// The factors of tox's default environments (`{py38,py39}-{test}-{deps,mindeps},docs` has py38,
/// py39, test, deps, mindeps and docs).
fn tox_envlist_factors(tox: &str) -> BTreeSet<String> {
    let envlist = ini_section(tox, "tox").into_iter().find(|(k, _)| k == "envlist").map(|(_, v)| v);
    envlist
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')))
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a dependency under factor condition `condition` is part of a default environment: one
/// of its `,`-separated alternatives has all its `-`-joined factors in `envlist` (a negated factor
/// cannot be told and passes). With no envlist, every dependency is.
fn tox_condition_holds(condition: &str, envlist: &BTreeSet<String>) -> bool {
    condition.is_empty()
        || envlist.is_empty()
        || condition.split(',').any(|alternative| {
            alternative.split('-').all(|f| f.starts_with('!') || envlist.contains(f.trim()))
        })
}

/// The quoted strings inside the first `[...]` after `key=` in Python source: a static reading of
/// `install_requires=[...]`.
fn python_list_after(source: &str, key: &str) -> Vec<String> {
    let Some(start) = source.find(key) else { return Vec::new() };
    let rest = &source[start + key.len()..];
    let Some(open) = rest.find('[') else { return Vec::new() };
    if rest[..open].trim().trim_start_matches('=').trim() != "" {
        return Vec::new(); // not a literal list
    }
    let Some(close) = rest[open..].find(']') else { return Vec::new() };
    quoted(&rest[open + 1..open + close])
}

/// The requirements of a `setup(key=...)` argument in setup.py: a literal list, or a name bound to
/// one (`setup_requires=SETUP_REQUIRES`, with `SETUP_REQUIRES = [...]` above). An f-string whose
/// name is a placeholder is left out; one with a placeholder in its version keeps only the name.
fn setup_py_list(source: &str, key: &str) -> Vec<String> {
    // `key = ` as an argument, spaces or not; the first one with a value after it.
    let value = source.match_indices(key).find_map(|(at, _)| {
        let after = source[at + key.len()..].trim_start();
        let before = source[..at].chars().next_back();
        let whole = !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        after.strip_prefix('=').filter(|v| whole && !v.starts_with('=')).map(str::trim_start)
    });
    let Some(value) = value else { return Vec::new() };
    let found = if value.starts_with('[') {
        python_list_after(value, "")
    } else {
        let name: String = value.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            return Vec::new();
        }
        // The binding of that name at the start of a line: `NAME = [...]`, or a sum of lists and
        // names (`NAME = OTHER + [...]`), whose literal lists are read.
        let mut at = 0;
        let mut list = Vec::new();
        for line in source.split_inclusive('\n') {
            if let Some(value) =
                line.strip_prefix(name.as_str()).and_then(|r| r.trim_start().strip_prefix('='))
                && !value.starts_with('=')
            {
                list = literal_lists_of_sum(&source[at + line.len() - value.len()..]);
                break;
            }
            at += line.len();
        }
        list
    };
    found
        .into_iter()
        .filter_map(|r| {
            let name_end = r.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.[]".contains(c)));
            let name = &r[..name_end.unwrap_or(r.len())];
            if name.is_empty() || name.contains('{') {
                None
            } else if r.contains('{') {
                Some(name.to_string())
            } else {
                Some(r)
            }
        })
        .collect()
}

/// The quoted strings of the literal lists in a Python sum such as `A + ['x', 'y'] + [...]`.
fn literal_lists_of_sum(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(inner) = rest.strip_prefix('[') {
            let Some(close) = inner.find(']') else { break };
            out.extend(quoted(&inner[..close]));
            rest = &inner[close + 1..];
        } else {
            let name_len =
                rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if name_len == 0 {
                break;
            }
            rest = &rest[name_len..];
        }
        match rest.trim_start_matches([' ', '\t']).strip_prefix('+') {
            Some(more) => rest = more.trim_start(),
            None => break,
        }
    }
    out
}

fn quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if (c == '"' || c == '\'')
            && let Some(end) = text[i + 1..].find(c)
        {
            out.push(text[i + 1..i + 1 + end].to_string());
            while chars.peek().is_some_and(|(j, _)| *j <= i + 1 + end) {
                chars.next();
            }
        }
    }
    out
}

/// Keys of `extras_require={...}` in setup.py that name a test extra, with their requirements.
fn setup_py_extras(source: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for extra in TEST_EXTRAS {
        for quote in ['"', '\''] {
            let key = format!("{quote}{extra}{quote}");
            if let Some(at) =
                source.find("extras_require").and_then(|s| source[s..].find(&key).map(|k| s + k))
            {
                let reqs = python_list_after(&source[at..], &key.to_string());
                let reqs =
                    if reqs.is_empty() { python_list_after(&source[at..], &format!("{key}:")) } else { reqs };
                out.push((extra.to_string(), reqs));
            }
        }
    }
    out
}

fn ini_section(text: &str, section: &str) -> Vec<(String, String)> {
    // Keys and (possibly multi-line) values of one `[section]` of an INI file.
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == format!("[{section}]");
            continue;
        }
        if !inside || t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push('\n');
                last.1.push_str(t);
            }
        } else if let Some((k, v)) = t.split_once(['=', ':']) {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

fn module_name(dist: &str) -> String {
    dist.to_lowercase().replace(['-', '.'], "_")
}

/// `read(path)` gives a file's text at the commit; `listing` is every path in the tree. Each build
/// file adds what it declares, in this order; what one of them set first stays (a name, a Python
/// range).
pub fn detect(read: &dyn Fn(&str) -> Option<String>, listing: &[String]) -> Project {
    let mut p = Project::default();
    let has = |path: &str| listing.iter().any(|l| l == path);
    let pyproject = read("pyproject.toml").and_then(|t| t.parse::<toml::Table>().ok());
    let setup_py = read("setup.py");
    let setup_cfg = read("setup.cfg");
    for f in ["pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "tox.ini"] {
        if has(f) {
            p.spec_files.push(f.to_string());
        }
    }
    if let Some(pp) = &pyproject {
        read_pyproject(&mut p, pp);
    } else if setup_py.is_some() {
        p.backend = "setuptools (setup.py)".into();
        // Today's setuptools builds wheels itself; `wheel` would bring today's `packaging` along.
        p.build_requires = vec!["setuptools".into()];
    }
    if let Some(src) = &setup_py {
        read_setup_py(&mut p, src);
    }
    if let Some(cfg) = &setup_cfg {
        read_setup_cfg(&mut p, cfg);
    }
    for f in REQUIREMENT_FILES {
        if let Some(text) = read(f) {
            p.spec_files.push(f.to_string());
            p.requirements.extend(requirement_lines(&text));
        }
    }
    if let Some(tox) = read("tox.ini") {
        read_tox(&mut p, &tox, read);
    }
    if let Some(pipfile) = read("Pipfile").and_then(|t| t.parse::<toml::Table>().ok())
        && let Some(dev) = pipfile.get("dev-packages").and_then(|d| d.as_table())
    {
        p.requirements.extend(dev.keys().cloned());
    }
    if p.backend.is_empty() {
        p.backend = "none".into();
    }
    settle(&mut p, listing);
    let pyproject_text = read("pyproject.toml");
    p.needs_build =
        needs_build(&[pyproject_text.as_ref(), setup_py.as_ref(), setup_cfg.as_ref()], &p.backend, listing);
    p
}

/// pyproject.toml: the build system, PEP 621's `[project]`, poetry's tables, pytest's.
fn read_pyproject(p: &mut Project, pp: &toml::Table) {
    let build = pp.get("build-system");
    let backend = build.and_then(|b| b.get("build-backend")).and_then(|b| b.as_str()).unwrap_or("");
    p.build_requires =
        string_list(build.and_then(|b| b.get("requires"))).iter().map(|r| build_requirement(r)).collect();
    p.backend = match backend {
        b if b.starts_with("setuptools") => "setuptools".into(),
        b if b.starts_with("poetry") => "poetry".into(),
        b if b.starts_with("flit") => "flit".into(),
        b if b.starts_with("hatch") => "hatch".into(),
        b if b.starts_with("pdm") => "pdm".into(),
        "" => "setuptools".into(),
        other => other.to_string(),
    };
    if let Some(project) = pp.get("project") {
        p.name = project.get("name").and_then(|n| n.as_str()).map(str::to_string);
        p.requires_python = project.get("requires-python").and_then(|v| v.as_str()).map(str::to_string);
        p.requirements.extend(string_list(project.get("dependencies")));
        if let Some(optional) = project.get("optional-dependencies").and_then(|o| o.as_table()) {
            for extra in TEST_EXTRAS {
                if let Some(reqs) = optional.get(extra) {
                    p.extras.push(extra.to_string());
                    p.requirements.extend(string_list(Some(reqs)));
                }
            }
        }
    }
    if let Some(poetry) = pp.get("tool").and_then(|t| t.get("poetry")) {
        read_poetry(p, poetry);
    }
    // Groups of development requirements, where a project's tests keep theirs (pytest-mock for
    // the `mocker` its conftest takes): pdm's `[tool.pdm.dev-dependencies]` and PEP 735's
    // `[dependency-groups]`; an `{include-group = ...}` entry is not a requirement.
    let pdm_dev = pp.get("tool").and_then(|t| t.get("pdm")).and_then(|t| t.get("dev-dependencies"));
    for groups in [pdm_dev, pp.get("dependency-groups")].into_iter().flatten().filter_map(|g| g.as_table()) {
        for group in TEST_EXTRAS {
            p.requirements.extend(string_list(groups.get(group)));
        }
    }
    if pp.get("tool").and_then(|t| t.get("pytest")).is_some() {
        p.runner = Some(Runner::Pytest);
    }
}

/// `[tool.poetry]`: its name, dependencies of every test group, and its Python range.
fn read_poetry(p: &mut Project, poetry: &toml::Value) {
    if p.name.is_none() {
        p.name = poetry.get("name").and_then(|n| n.as_str()).map(str::to_string);
    }
    let deps = |t: Option<&toml::Value>| -> Vec<String> {
        t.and_then(|d| d.as_table())
            .map(|d| d.keys().filter(|k| *k != "python").cloned().collect())
            .unwrap_or_default()
    };
    p.requirements.extend(deps(poetry.get("dependencies")));
    p.requirements.extend(deps(poetry.get("dev-dependencies")));
    if let Some(groups) = poetry.get("group").and_then(|g| g.as_table()) {
        for g in ["dev", "test", "tests"] {
            p.requirements.extend(deps(groups.get(g).and_then(|x| x.get("dependencies"))));
        }
    }
    if p.requires_python.is_none() {
        p.requires_python = poetry
            .get("dependencies")
            .and_then(|d| d.get("python"))
            .and_then(|v| v.as_str())
            .map(str::to_string);
    }
}

/// setup.py, read statically: the name, `install_requires`, `setup_requires`, the test extras and
/// `python_requires`.
fn read_setup_py(p: &mut Project, src: &str) {
    let first_quoted = |after: &str| {
        quoted(src.split(after).nth(1).unwrap_or("").lines().next().unwrap_or("")).into_iter().next()
    };
    if p.name.is_none() {
        p.name = first_quoted("name=");
    }
    p.requirements.extend(setup_py_list(src, "install_requires"));
    for r in setup_py_list(src, "setup_requires") {
        let r = build_requirement(&r);
        if !p.build_requires.contains(&r) {
            p.build_requires.push(r);
        }
    }
    for (extra, reqs) in setup_py_extras(src) {
        if !p.extras.contains(&extra) {
            p.extras.push(extra);
        }
        p.requirements.extend(reqs);
    }
    if p.requires_python.is_none() {
        p.requires_python = first_quoted("python_requires");
    }
}

/// setup.cfg: `[metadata]`'s name, `[options]`, the test extras, and whether it configures pytest.
fn read_setup_cfg(p: &mut Project, cfg: &str) {
    if p.name.is_none() {
        p.name = ini_section(cfg, "metadata").into_iter().find(|(k, _)| k == "name").map(|(_, v)| v);
    }
    for (k, v) in &ini_section(cfg, "options") {
        if k == "install_requires" {
            p.requirements.extend(requirement_lines(v));
        }
        if k == "python_requires" && p.requires_python.is_none() {
            p.requires_python = Some(v.clone());
        }
    }
    for (k, v) in ini_section(cfg, "options.extras_require") {
        if TEST_EXTRAS.contains(&k.as_str()) {
            if !p.extras.contains(&k) {
                p.extras.push(k.clone());
            }
            p.requirements.extend(requirement_lines(&v));
        }
    }
    if cfg.contains("[tool:pytest]") {
        p.runner = Some(Runner::Pytest);
    }
}

/// tox.ini: the `deps` of the default environments (with the files they include) and whether the
/// commands run pytest. Dependencies of environments tox does not make by default (an `mpi4py:`
/// factor left out of the envlist) are not the test suite's.
fn read_tox(p: &mut Project, tox: &str, read: &dyn Fn(&str) -> Option<String>) {
    let envlist = tox_envlist_factors(tox);
    for (k, v) in ini_section(tox, "testenv") {
        if k == "deps" {
            // The factor first: `pypy: -r {toxinidir}/req.txt` is a condition and an include, not
            // a requirement named `pypy:`.
            for raw in v.lines() {
                let (condition, rest) = split_tox_factor(raw.trim());
                if !tox_condition_holds(condition, &envlist) {
                    continue;
                }
                if let Some(file) = tox_include(rest) {
                    p.requirements.extend(read(&file).map(|t| requirement_lines(&t)).unwrap_or_default());
                    continue;
                }
                p.requirements.extend(requirement_lines(rest).into_iter().filter(|r| !r.contains('{')));
            }
        }
        if k == "commands" && v.contains("pytest") {
            p.runner = Some(Runner::Pytest);
        }
    }
}

/// What follows from everything read: the runner when no file named one, the requirements without
/// the project itself and local paths (sorted, once each), the modules to import and their root.
fn settle(p: &mut Project, listing: &[String]) {
    let has = |path: &str| listing.iter().any(|l| l == path);
    if p.runner.is_none() {
        let pytest_files =
            has("pytest.ini") || has("conftest.py") || listing.iter().any(|l| l.ends_with("/conftest.py"));
        let names_pytest = p.requirements.iter().any(|r| requirement_name(r) == "pytest");
        p.runner = Some(if pytest_files || names_pytest { Runner::Pytest } else { Runner::Unittest });
    }
    // Requirements that are the project itself (an extra naming `pkg[test]`) or local paths are
    // installed with the project, not in the dependency layer.
    let own = p.name.as_deref().map(requirement_name);
    p.requirements.retain(|r| {
        let n = requirement_name(r);
        !n.is_empty() && Some(&n) != own.as_ref() && !r.starts_with('.') && !r.contains("://")
    });
    p.requirements.sort();
    p.requirements.dedup();
    p.imports = import_names(p.name.as_deref(), listing);
    let under_src = |m: &String| {
        listing.iter().any(|l| *l == format!("src/{m}/__init__.py") || *l == format!("src/{m}.py"))
    };
    if !p.imports.is_empty() && p.imports.iter().all(under_src) {
        p.import_root = "src".into();
    }
}

/// Top-level modules to import: the distribution's own module when the tree has it, else every
/// top-level package (flat or `src/` layout) that is not tests or docs.
fn import_names(name: Option<&str>, listing: &[String]) -> Vec<String> {
    let has = |path: String| listing.contains(&path);
    if let Some(name) = name {
        let m = module_name(name);
        for candidate in [
            format!("{m}/__init__.py"),
            format!("src/{m}/__init__.py"),
            format!("{m}.py"),
            format!("src/{m}.py"),
        ] {
            if has(candidate) {
                return vec![m];
            }
        }
    }
    let mut out: Vec<String> = listing
        .iter()
        .filter_map(|l| {
            let l = l.strip_prefix("src/").unwrap_or(l);
            let (top, rest) = l.split_once('/')?;
            (rest == "__init__.py").then(|| top.to_string())
        })
        .filter(|t| !["tests", "test", "docs", "doc", "examples", "benchmarks"].contains(&t.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn detect_in(files: &[(&str, &str)]) -> Project {
        let map: HashMap<String, String> =
            files.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let listing: Vec<String> = map.keys().cloned().collect();
        detect(&|p| map.get(p).cloned(), &listing)
    }

    #[test]
    fn pep_621_with_a_test_extra() {
        let p = detect_in(&[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"dur-ations\"\nrequires-python = \">=3.9\"\ndependencies = [\"attrs>=21\"]\n[project.optional-dependencies]\ntest = [\"pytest>=7\", \"dur-ations[extra]\"]\n",
            ),
            ("src/dur_ations/__init__.py", ""),
            ("tests/test_x.py", ""),
        ]);
        assert_eq!(p.backend, "setuptools");
        assert_eq!(p.requires_python.as_deref(), Some(">=3.9"));
        assert_eq!(p.requirements, vec!["attrs>=21", "pytest>=7"]);
        assert_eq!(p.extras, vec!["test"]);
        assert_eq!(p.runner, Some(Runner::Pytest));
        assert_eq!(p.imports, vec!["dur_ations"]);
        assert_eq!(p.build_requires, vec!["setuptools"]);
        assert_eq!(p.import_root, "src");
        assert_eq!(p.needs_build, None, "pure Python imports from the checkout");
    }

    #[test]
    fn build_requirements_keep_their_specs_but_build_tools_do_not() {
        let pp = detect_in(&[(
            "pyproject.toml",
            "[build-system]\nrequires = [\"Cython ~=0.29\", \"oldest-supported-numpy\", \"setuptools >=61\", \"wheel\"]\n",
        )]);
        assert_eq!(pp.build_requires, ["Cython ~=0.29", "oldest-supported-numpy", "setuptools", "wheel"]);
        // setup_requires through a name bound to a list; f-strings keep only a literal name.
        let bound = detect_in(&[(
            "setup.py",
            "import os\nNP = '1.17'\nSETUP_REQUIRES = [\n    'pkgconfig',\n    \"Cython >=0.29.14; python_version>='3.8'\",\n    f\"numpy =={NP}\",\n    f\"{os.name}\",\n] + ['more']\nif os.environ.get('NO_SETUP_REQUIRES'):\n    SETUP_REQUIRES = []\nsetup(name='h', setup_requires = SETUP_REQUIRES)\n",
        )]);
        assert_eq!(
            bound.build_requires,
            ["setuptools", "pkgconfig", "Cython >=0.29.14; python_version>='3.8'", "numpy", "more"]
        );
        let literal =
            detect_in(&[("setup.py", "setup(name='w', setup_requires=['numpy', 'setuptools>=40'])\n")]);
        assert_eq!(literal.build_requires, ["setuptools", "numpy"]);
        // install_requires reads the same way.
        let run = detect_in(&[(
            "setup.py",
            "RUN = ['cached-property'] + [f'numpy >={v}' for v in X]\nsetup(install_requires=RUN)\n",
        )]);
        assert_eq!(run.requirements, ["cached-property", "numpy"]);
        let sum = detect_in(&[(
            "setup.py",
            "RUN = [DEP, 'six']\nSETUP = RUN + [DEP, 'Cython>=0.25', 'pkgconfig']\nsetup(setup_requires = SETUP if x else [])\n",
        )]);
        assert_eq!(sum.build_requires, ["setuptools", "Cython>=0.25", "pkgconfig"]);
        let none = detect_in(&[("setup.py", "setup(name='w', my_setup_requires=x)\n")]);
        assert_eq!(none.build_requires, ["setuptools"]);
    }

    #[test]
    fn projects_that_must_be_built_to_import_are_told_apart() {
        let setup = |body: &str| detect_in(&[("setup.py", body), ("pkg/__init__.py", "")]);
        let flat = setup("from setuptools import setup\nsetup(name='pkg')\n");
        assert_eq!((flat.import_root.as_str(), flat.needs_build.as_deref()), ("", None));
        let ext = setup(
            "from setuptools import setup, Extension\nsetup(name='pkg', ext_modules=[Extension('pkg._c', ['pkg/_c.c'])])\n",
        );
        assert!(ext.needs_build.unwrap().starts_with("compiled extensions"));
        let scm = detect_in(&[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools\", \"setuptools_scm\"]\n[project]\nname = \"pkg\"\n",
            ),
            ("pkg/__init__.py", ""),
        ]);
        assert!(scm.needs_build.unwrap().contains("setuptools-scm"));
        let meson = detect_in(&[
            ("pyproject.toml", "[build-system]\nbuild-backend = \"mesonpy\"\n"),
            ("pkg/__init__.py", ""),
        ]);
        assert!(meson.needs_build.unwrap().contains("mesonpy"));
        let cython = detect_in(&[
            ("setup.cfg", "[metadata]\nname = pkg\n"),
            ("pkg/__init__.py", ""),
            ("pkg/fast.pyx", ""),
        ]);
        assert_eq!(cython.needs_build.as_deref(), Some("sources to compile, such as pkg/fast.pyx"));
    }

    #[test]
    fn setup_py_with_extras_and_a_requirements_file() {
        let p = detect_in(&[
            (
                "setup.py",
                "from setuptools import setup\nsetup(\n    name='confmerge',\n    python_requires='>=3.8',\n    install_requires=['click>=7', \"six\"],\n    extras_require={'tests': ['pytest', 'hypothesis']},\n)\n",
            ),
            ("requirements-dev.txt", "# dev\nflake8==6.0  # lint\n-r requirements.txt\n"),
            ("confmerge.py", ""),
        ]);
        assert_eq!(p.backend, "setuptools (setup.py)");
        assert_eq!(p.name.as_deref(), Some("confmerge"));
        assert_eq!(p.requires_python.as_deref(), Some(">=3.8"));
        assert_eq!(p.requirements, vec!["click>=7", "flake8==6.0", "hypothesis", "pytest", "six"]);
        assert_eq!(p.extras, vec!["tests"]);
        assert_eq!(p.imports, vec!["confmerge"]);
        assert!(p.spec_files.contains(&"requirements-dev.txt".to_string()));
    }

    #[test]
    fn poetry_flit_hatch_pdm_backends_and_setup_cfg() {
        let poetry = detect_in(&[(
            "pyproject.toml",
            "[build-system]\nrequires = [\"poetry-core\"]\nbuild-backend = \"poetry.core.masonry.api\"\n[tool.poetry]\nname = \"pkg\"\n[tool.poetry.dependencies]\npython = \"^3.8\"\nrequests = \"^2\"\n[tool.poetry.group.dev.dependencies]\npytest = \"*\"\n",
        )]);
        assert_eq!(poetry.backend, "poetry");
        assert_eq!(poetry.requirements, vec!["pytest", "requests"]);
        assert_eq!(poetry.requires_python.as_deref(), Some("^3.8"));
        for (backend, name) in
            [("flit_core.buildapi", "flit"), ("hatchling.build", "hatch"), ("pdm.backend", "pdm")]
        {
            let p =
                detect_in(&[("pyproject.toml", &format!("[build-system]\nbuild-backend = \"{backend}\"\n"))]);
            assert_eq!(p.backend, name);
        }
        let cfg = detect_in(&[
            ("setup.py", "from setuptools import setup\nsetup()\n"),
            (
                "setup.cfg",
                "[metadata]\nname = slugkit\n[options]\npython_requires = >=3.7\ninstall_requires =\n    unidecode\n[options.extras_require]\ntesting =\n    pytest\n[tool:pytest]\n",
            ),
        ]);
        assert_eq!(cfg.name.as_deref(), Some("slugkit"));
        assert_eq!(cfg.requirements, vec!["pytest", "unidecode"]);
        assert_eq!(cfg.extras, vec!["testing"]);
        assert_eq!(cfg.requires_python.as_deref(), Some(">=3.7"));
    }

    #[test]
    fn tox_factor_conditions_are_not_part_of_a_requirement() {
        assert_eq!(split_tox_factor("coverage: coverage"), ("coverage", "coverage"));
        assert_eq!(split_tox_factor("py38,!pypy: pytest-xdist>=2"), ("py38,!pypy", "pytest-xdist>=2"));
        assert_eq!(split_tox_factor("pytest>=6"), ("", "pytest>=6"));
        assert_eq!(split_tox_factor("git+https://example.org/x.git"), ("", "git+https://example.org/x.git"));
        let tox = "[tox]\n# envlist = {py38}-{test}-{mpi4py}\nenvlist = {py37,py38}-{test}-{deps,mindeps},docs\n\
                   [testenv]\ndeps =\n    test: pytest\n    py38-mindeps: cython==0.29.14\n    mpi4py: mpi4py>=2.0.0\n    \
                   tables-deps: tables>=3.4.4\n    !pypy: six\n    attrs\n";
        let p = detect_in(&[("setup.py", "setup(name='x')"), ("tox.ini", tox)]);
        assert_eq!(p.requirements, ["attrs", "cython==0.29.14", "pytest", "six"]);
        // pylint 7617: a factor on an include, read as the included file, not as `pypy:`.
        let tox = "[tox]\nenvlist = py39, pypy\n[testenv]\ndeps =\n    !pypy: -r {toxinidir}/requirements_test.txt\n    pypy: -r {toxinidir}/requirements_test_min.txt\n";
        let p = detect_in(&[
            ("setup.py", "setup(name='x')"),
            ("tox.ini", tox),
            ("requirements_test.txt", "pytest-xdist\n"),
            ("requirements_test_min.txt", "pytest>=7 # the minimum\n"),
        ]);
        assert!(p.requirements.iter().all(|r| !r.contains(':')), "{:?}", p.requirements);
        assert!(p.requirements.contains(&"pytest-xdist".to_string()), "{:?}", p.requirements);
        assert!(p.requirements.contains(&"pytest>=7".to_string()), "{:?}", p.requirements);
    }

    #[test]
    fn tox_and_pipfile_and_unittest() {
        let p = detect_in(&[
            ("setup.py", "setup(name='x')"),
            (
                "tox.ini",
                "[tox]\nenvlist = py39\n[testenv]\ndeps =\n    mock\n    -rrequirements.txt\ncommands = python -m unittest\n",
            ),
            ("Pipfile", "[packages]\n[dev-packages]\nnose = \"*\"\n"),
            ("x/__init__.py", ""),
        ]);
        assert_eq!(p.requirements, vec!["mock", "nose"]);
        assert_eq!(p.runner, Some(Runner::Unittest));
        assert_eq!(p.imports, vec!["x"]);
    }

    #[test]
    fn development_groups_of_pdm_and_pep_735_bring_the_tests_requirements() {
        let pdm = detect_in(&[(
            "pyproject.toml",
            "[project]\nname = \"pdm\"\ndependencies = [\"click\"]\n[tool.pdm.dev-dependencies]\ntest = [\"pytest\", \"pytest-mock\"]\ndoc = [\"mkdocs\"]\n",
        )]);
        assert_eq!(pdm.requirements, vec!["click", "pytest", "pytest-mock"]);
        let groups = detect_in(&[(
            "pyproject.toml",
            "[project]\nname = \"pkg\"\n[dependency-groups]\ntests = [\"hypothesis\", {include-group = \"lint\"}]\nlint = [\"ruff\"]\n",
        )]);
        assert_eq!(groups.requirements, vec!["hypothesis"]);
    }

    #[test]
    fn requirement_names() {
        assert_eq!(requirement_name("Foo_Bar[x]>=1; python_version<'3'"), "foo-bar");
        assert_eq!(requirement_name("pytest"), "pytest");
    }

    #[test]
    fn pip_options_after_a_requirement_are_left_out() {
        let lines = requirement_lines(
            "lxml --no-binary=lxml\nsix==1.16 --hash=sha256:abc \\\n--hash=sha256:def\nattrs>=20 # pinned\n",
        );
        assert_eq!(lines, ["lxml", "six==1.16", "attrs>=20"]);
    }
}
