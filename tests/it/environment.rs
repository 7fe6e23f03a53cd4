//! The environment stage against the real Docker daemon: images for two PRs of one sample
//! repository (the second reuses the dependency layer), a dependency that does not exist, and a
//! package that does not import. Skips loudly without a daemon; fails under CURATE_REQUIRE_DOCKER=1.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Scratch, docker_or_skip, root, stderr};
use serde_json::{Value, json};

fn pipeline(s: &Scratch, jsonl: &Path, url: &str) {
    s.write(
        "p.yaml",
        &format!(
            "name: env\nsource: {{kind: swe-care, path: {}}}\ndefaults:\n  cache: cache\n  repos: {{url: '{url}'}}\n  concurrency: {{docker: 1}}\nstages:\n  - id: env\n    kind: environment\n    title: Executable Environment Construction\n",
            jsonl.display()
        ),
    );
}

fn outputs(s: &Scratch) -> Vec<(String, Value)> {
    let db = rusqlite::Connection::open(s.path(".curate/env/state.db")).unwrap();
    let mut stmt =
        db.prepare("SELECT item, output FROM tasks WHERE state = 'kept' ORDER BY finished_at").unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (item, out) = r.unwrap();
            (item, serde_json::from_str(&out).unwrap())
        })
        .collect()
}

#[test]
fn two_prs_of_one_repository_share_the_dependency_layer() {
    if !docker_or_skip("an environment test") {
        return;
    }
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    // The first two sample PRs are both of curate-sample/confmerge.
    pipeline(&s, &root().join("sample/swe-care.jsonl"), &format!("{}/{{repo}}.git", mirrors.display()));
    let out = s.curate(&["run", "p.yaml", "--limit", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done = outputs(&s);
    assert_eq!(done.len(), 2, "both environments built and verified");
    let (first, second) = (&done[0].1, &done[1].1);
    assert_eq!(first["deps_image"], second["deps_image"]);
    assert_eq!(second["deps_reused"], true, "the second PR did not reinstall dependencies");
    assert_eq!(first["backend"], "setuptools (setup.py)");
    assert_eq!(first["imports"], json!(["confmerge"]));
    // Pure Python: no layer per PR; the image is the shared dependency layer.
    assert_eq!(first["instance_layer"], Value::Null);
    assert_eq!(first["image"], first["deps_image"]);
    assert!(!first["dockerfiles"]["instance"].as_str().unwrap().contains("RUN"));
    for (_, o) in &done {
        let image = o["image"].as_str().unwrap();
        assert!(
            Command::new("docker").args(["image", "inspect", image]).output().unwrap().status.success(),
            "{image}"
        );
    }
}

/// A one-commit repository with `files`, and a SWE-CARE record for it.
fn project(s: &Scratch, name: &str, files: &[(&str, &str)]) -> PathBuf {
    project_at(s, name, files, None)
}

/// A repository of `files` in one commit (made at `date`, 2024-06-01 if not given: dependencies
/// pin to it), and a SWE-CARE record of it.
fn project_at(s: &Scratch, name: &str, files: &[(&str, &str)], date: Option<&str>) -> PathBuf {
    let dir = s.path(&format!("src/{name}"));
    for (path, text) in files {
        s.write(&format!("src/{name}/{path}"), text);
    }
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.args(["-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"]).args(args);
        // A fixed date by default: dependencies pin to it, and it picks the Python (bookworm's).
        let date = date.unwrap_or("2024-06-01T00:00:00Z");
        cmd.env("GIT_AUTHOR_DATE", date).env("GIT_COMMITTER_DATE", date);
        let o = cmd.current_dir(&dir).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    let head = git(&["rev-parse", "HEAD"]);
    let record = json!({"instance_id": format!("t__{name}-1"), "repo": format!("t/{name}"), "base_commit": head,
        "created_at": "2025-01-02T00:00:00Z", "commit_to_review": {"head_commit": head}, "merged_commit": head,
        "reference_review_comments": []});
    let path = s.path(&format!("{name}.jsonl"));
    std::fs::write(&path, format!("{record}\n")).unwrap();
    path
}

#[test]
fn environments_that_do_not_install_or_import_are_rejected_with_the_step() {
    if !docker_or_skip("an environment test") {
        return;
    }
    let s = Scratch::new();
    // One Python fits: a failure is final after the rules, with no other Python to try.
    let pyproject = |deps: &str| pyproject_for("broken", deps, ">=3.11,<3.12");
    let missing = project(
        &s,
        "nodeps",
        &[("pyproject.toml", &pyproject("\"curate-no-such-package-zzz==9.9\"")), ("broken/__init__.py", "")],
    );
    let url = format!("{}/src/{{name}}", s.dir.path().display());
    pipeline(&s, &missing, &url);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "a rejection is a result: {}", stderr(&out));
    let report: Value =
        serde_json::from_slice(&s.curate(&["report", "p.yaml", "--format", "json"]).stdout).unwrap();
    let reason = report["funnel"][1]["reasons"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("dependency install failed:"), "{reason}");
    assert!(reason.contains("curate-no-such-package-zzz"), "{reason}");

    let noimport = project(
        &s,
        "noimport",
        &[
            ("pyproject.toml", &pyproject("")),
            ("broken/__init__.py", "raise ImportError('half-finished module')\n"),
        ],
    );
    pipeline(&s, &noimport, &url);
    let out = s.curate(&["run", "p.yaml", "--state", "second"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(
        &s.curate(&["report", "p.yaml", "--state", "second", "--format", "json"]).stdout,
    )
    .unwrap();
    let reason = report["funnel"][1]["reasons"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("verification failed: `python -c import broken`"), "{reason}");
    assert!(reason.contains("half-finished module"), "{reason}");
}

#[test]
fn a_src_layout_imports_from_the_tree_and_an_extension_gets_a_layer_of_its_own() {
    if !docker_or_skip("an environment test") {
        return;
    }
    let s = Scratch::new();
    let pyproject = |name: &str| {
        format!(
            "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"{name}\"\nversion = \"0.1\"\n"
        )
    };
    let url = format!("{}/src/{{name}}", s.dir.path().display());
    let test = "def test_one():\n    assert True\n";

    // src/ layout, pure Python: imported from the tree each run brings, through the dependency
    // layer's path entry.
    let srcpkg = project(
        &s,
        "srcpkg",
        &[
            ("pyproject.toml", &pyproject("srcpkg")),
            ("src/srcpkg/__init__.py", "X = 1\n"),
            ("tests/test_a.py", test),
        ],
    );
    pipeline(&s, &srcpkg, &url);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done = outputs(&s);
    assert_eq!(done.len(), 1, "built and verified: {}", stderr(&out));
    let o = &done[0].1;
    assert_eq!(o["instance_layer"], Value::Null);
    assert_eq!(o["image"], o["deps_image"]);
    assert!(o["dockerfiles"]["deps"].as_str().unwrap().contains("/repo/src"), "{o}");

    // A C extension must be compiled: the reviewed commit is installed in a layer of its own.
    let setup = "from setuptools import setup, Extension\nsetup(ext_modules=[Extension('cext._fast', ['cext/_fast.c'])])\n";
    let c = "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_fast\", NULL, -1, NULL};\nPyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&m); }\n";
    let cext = project(
        &s,
        "cext",
        &[
            ("pyproject.toml", &pyproject("cext")),
            ("setup.py", setup),
            ("cext/__init__.py", "from . import _fast\n"),
            ("cext/_fast.c", c),
            ("tests/test_a.py", test),
        ],
    );
    pipeline(&s, &cext, &url);
    let out = s.curate(&["run", "p.yaml", "--state", "second"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let db = rusqlite::Connection::open(s.path("second/state.db")).unwrap();
    let (state, output): (String, String) = db
        .query_row("SELECT state, coalesce(output, message) FROM tasks", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(state, "kept", "{output}");
    let o: Value = serde_json::from_str(&output).unwrap();
    assert!(o["instance_layer"].as_str().unwrap().starts_with("compiled extensions"), "{o}");
    assert_ne!(o["image"], o["deps_image"]);
    assert!(o["dockerfiles"]["instance"].as_str().unwrap().contains("--no-build-isolation -e"));
    let image = o["image"].as_str().unwrap();
    assert!(Command::new("docker").args(["image", "inspect", image]).output().unwrap().status.success());
    let _ = Command::new("docker").args(["image", "rm", image]).output();
}

/// The one environment of state `state`: its final state and its record (output or rejection).
fn pyproject_for(name: &str, deps: &str, python: &str) -> String {
    format!(
        "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"{name}\"\nversion = \"0.1\"\nrequires-python = \"{python}\"\ndependencies = [{deps}]\n"
    )
}

fn settled(s: &Scratch, state: &str) -> (String, Value) {
    let db = rusqlite::Connection::open(s.path(&format!("{state}/state.db"))).unwrap();
    let (st, out, msg): (String, Option<String>, Option<String>) = db
        .query_row("SELECT state, output, message FROM tasks", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    let mut record = out.map_or(json!({}), |o| serde_json::from_str(&o).unwrap());
    record["message"] = json!(msg);
    (st, record)
}

/// Curates the one-commit project `name` ([`project_at`]) in a state of its own, and says how its
/// environment settled.
fn curate_project(s: &Scratch, name: &str, files: &[(&str, &str)], date: Option<&str>) -> (String, Value) {
    let record = project_at(s, name, files, date);
    pipeline(s, &record, &format!("{}/src/{{name}}", s.dir.path().display()));
    let out = s.curate(&["run", "p.yaml", "--state", name]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    settled(s, name)
}

#[test]
fn failed_builds_are_repaired_by_rule_and_every_attempt_is_kept() {
    if !docker_or_skip("an environment repair test") {
        return;
    }
    let s = Scratch::new();
    let url = format!("{}/src/{{name}}", s.dir.path().display());
    let pyproject = |name: &str, deps: &str| pyproject_for(name, deps, ">=3.8");
    let test = "def test_one():\n    assert True\n";
    let run = |name: &str, files: &[(&str, &str)], date: Option<&str>| curate_project(&s, name, files, date);

    // A C extension that includes a header no package of the image provides: its Debian package.
    let setup = "from setuptools import setup, Extension\nsetup(ext_modules=[Extension('withffi._x', ['withffi/_x.c'])])\n";
    let c = "#include <Python.h>\n#include <ffi.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_x\", NULL, -1, NULL};\nPyMODINIT_FUNC PyInit__x(void) { return PyModule_Create(&m); }\n";
    let (state, o) = run(
        "withffi",
        &[
            ("pyproject.toml", &pyproject("withffi", "")),
            ("setup.py", setup),
            ("withffi/__init__.py", "from . import _x\n"),
            ("withffi/_x.c", c),
            ("tests/test_a.py", test),
        ],
        None,
    );
    assert_eq!(state, "kept", "{o}");
    assert_eq!(o["fixes"]["system_packages"], json!(["libffi-dev"]), "{o}");
    assert_eq!(o["repairs"].as_array().unwrap().len(), 1, "{o}");
    let failed = o["repairs"][0]["failed"].as_str().unwrap();
    assert!(failed.starts_with("the editable install failed: ") && failed.contains("ffi.h"), "{failed}");
    assert!(o["dockerfiles"]["deps"].as_str().unwrap().contains("apt-get install"), "{o}");
    let _ = Command::new("docker").args(["image", "rm", o["image"].as_str().unwrap()]).output();

    // A test module that imports what the project does not declare: that distribution.
    let (state, o) = run(
        "undeclared",
        &[
            ("pyproject.toml", &pyproject("undeclared", "")),
            ("undeclared/__init__.py", "X = 1\n"),
            ("conftest.py", ""),
            (
                "tests/test_a.py",
                "import simplejson\n\ndef test_one():\n    assert simplejson.dumps(1) == '1'\n",
            ),
        ],
        None,
    );
    assert_eq!(state, "kept", "{o}");
    assert_eq!(o["fixes"]["requirements"], json!(["simplejson"]), "{o}");
    assert!(o["repairs"][0]["failed"].as_str().unwrap().contains("No module named 'simplejson'"), "{o}");

    // The next run of the same recipe, in a fresh state, builds the repaired one first and records
    // the attempts it was spared; a memory that does not read is none, and is made again.
    let again = |state: &str| {
        let out = s.curate(&["run", "p.yaml", "--state", state]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        settled(&s, state)
    };
    let (state, second) = again("undeclared-again");
    assert_eq!(state, "kept", "{second}");
    assert_eq!(second["repairs_remembered"], json!(true), "{second}");
    assert_eq!((&second["fixes"], &second["repairs"]), (&o["fixes"], &o["repairs"]));
    let remembered = std::fs::read_dir(s.path("cache/environments/repairs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|f| std::fs::read_to_string(f).unwrap().contains("simplejson"))
        .expect("the repairs of `undeclared` are remembered");
    std::fs::write(&remembered, "damaged").unwrap();
    let (state, third) = again("undeclared-third");
    assert_eq!(state, "kept", "{third}");
    assert!(third.get("repairs_remembered").is_none() && third["fixes"] == o["fixes"], "{third}");
    assert!(std::fs::read_to_string(&remembered).unwrap().contains("simplejson"));

    // A dependency pinned to 2019 whose release then has no wheel for this Python and does not
    // build on it: that one package at its newest.
    let (state, o) = run(
        "oldpin",
        &[
            // Its range leaves only newer Pythons than the pin's date has wheels for.
            ("pyproject.toml", &pyproject_for("oldpin", "\"typed-ast\"", ">=3.11")),
            ("oldpin/__init__.py", "import typed_ast\n"),
            ("tests/test_a.py", test),
        ],
        Some("2019-06-01T00:00:00Z"),
    );
    assert_eq!(state, "kept", "{o}");
    assert_eq!(o["fixes"]["unpinned"], json!(["typed-ast"]), "{o}");
    assert!(o["pinned_to"].as_str().unwrap().starts_with("2019-06-01"), "{o}");
    assert!(o["repairs"][0]["failed"].as_str().unwrap().contains("typed-ast"), "{o}");

    // A test module of a framework the project does not install, next to the tests of what the PR
    // changes: verification collects the related tests only, and records what it ran.
    let record = project_at(
        &s,
        "unrelated",
        &[
            ("pyproject.toml", &pyproject("unrelated", "")),
            ("unrelated/__init__.py", ""),
            ("unrelated/core.py", "X = 1\n"),
            ("tests/test_core.py", "from unrelated.core import X\n\ndef test_x():\n    assert X == 1\n"),
            ("tests/test_gpu.py", "import tensorflow\n\ndef test_gpu():\n    pass\n"),
            ("conftest.py", ""),
        ],
        None,
    );
    let mut line: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    line["commit_to_review"]["patch_to_review"] =
        json!("--- a/unrelated/core.py\n+++ b/unrelated/core.py\n@@ -1 +1 @@\n-X = 0\n+X = 1\n");
    std::fs::write(&record, format!("{line}\n")).unwrap();
    pipeline(&s, &record, &url);
    let out = s.curate(&["run", "p.yaml", "--state", "unrelated"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (state, o) = settled(&s, "unrelated");
    assert_eq!(state, "kept", "{o}");
    let collected = o["verified"][1].as_str().unwrap();
    assert!(collected.ends_with("tests/test_core.py") && !collected.contains("test_gpu"), "{o}");

    // What no rule knows stays a rejection, with the first real error and every attempt.
    let (state, o) = run(
        "unknown",
        &[
            // One Python fits, so there is no other to try.
            ("pyproject.toml", &pyproject_for("unknown", "", ">=3.11,<3.12")),
            ("unknown/__init__.py", "raise RuntimeError('not ready')\n"),
        ],
        None,
    );
    assert_eq!(state, "rejected", "{o}");
    let reason = o["message"].as_str().unwrap();
    assert_eq!(reason, "verification failed: `python -c import unknown`: RuntimeError: not ready", "{o}");
    assert_eq!(o["attempts"].as_array().unwrap().len(), 1, "{o}");
    assert_eq!(o["attempts"][0]["fix"], Value::Null, "{o}");
}

#[test]
fn a_failure_no_rule_knows_is_tried_on_another_python_and_a_legacy_setup_py_is_built_in_place() {
    if !docker_or_skip("an environment repair test") {
        return;
    }
    let s = Scratch::new();
    let test = "def test_one():\n    assert True\n";
    let run = |name: &str, files: &[(&str, &str)]| curate_project(&s, name, files, None);

    // Tests that cannot run on the Python of the pin's date (2024: 3.11), as their check of
    // `sys.version_info` says; the project's range leaves one other, 3.9, which they run on.
    let (state, o) = run(
        "notonthree11",
        &[
            ("pyproject.toml", &pyproject_for("notonthree11", "", ">=3.8,<3.12")),
            ("notonthree11/__init__.py", ""),
            (
                "conftest.py",
                "import sys\nassert sys.version_info[:2] != (3, 11), 'the suite does not run on this Python'\n",
            ),
            ("tests/test_a.py", test),
        ],
    );
    assert_eq!(state, "kept", "{o}");
    assert_eq!((o["python"].as_str(), o["suite"].as_str()), (Some("3.9"), Some("bullseye")), "{o}");
    assert_eq!(o["repairs"][0]["python"], "3.11", "{o}");
    assert_eq!(o["repairs"][0]["fix"]["kind"], "python", "{o}");
    assert_eq!(o["fixes"]["suite"], "bullseye", "{o}");

    // A setup.py of before editable wheels: it refuses the commands an editable install runs, so
    // its extension is built in place and the checkout imported.
    let setup = "import sys\nfrom setuptools import setup, Extension\n\
                 if any(c in sys.argv for c in ('dist_info', 'editable_wheel', 'bdist_wheel')):\n    \
                 sys.exit('setup.py: unsupported command')\n\
                 setup(name='oldext', version='0.1', packages=['oldext'], libraries=[('oldhelp', {'sources': ['oldext/help.c']})], ext_modules=[Extension('oldext._x', ['oldext/_x.c'], libraries=['oldhelp'])])\n";
    let c = "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_x\", NULL, -1, NULL};\nPyMODINIT_FUNC PyInit__x(void) { return PyModule_Create(&m); }\n";
    let (state, o) = run(
        "oldext",
        &[
            ("setup.py", setup),
            ("setup.cfg", "[options]\npython_requires = >=3.11,<3.12\n"),
            ("oldext/__init__.py", "from . import _x\n"),
            ("oldext/_x.c", c),
            // A C library of the project's own that the extension links (pywt's `c_wt`).
            ("oldext/help.c", "int oldhelp_answer(void) { return 42; }\n"),
            ("tests/test_a.py", test),
        ],
    );
    assert_eq!(state, "kept", "{o}");
    assert_eq!(o["repairs"].as_array().unwrap().len(), 1, "{o}");
    assert_eq!(o["repairs"][0]["fix"]["kind"], "build_in_place", "{o}");
    assert!(o["repairs"][0]["failed"].as_str().unwrap().starts_with("the editable install failed"), "{o}");
    let instance = o["dockerfiles"]["instance"].as_str().unwrap();
    assert!(instance.contains("python setup.py build_clib build_ext --inplace"), "{instance}");
    assert!(o["verified"][0].as_str().unwrap().contains("import oldext"), "{o}");
}

/// The model's repair step, on an answer recorded from the default local model (cache/llm):
/// a suite that needs a variable set, which no rule knows and no other Python changes. Set
/// CURATE_LLM_CACHE=readwrite with scripts/model-server running to ask the model again.
#[test]
fn what_no_rule_knows_goes_to_the_model_whose_changes_are_checked_and_applied() {
    if !docker_or_skip("an environment repair test") {
        return;
    }
    let s = Scratch::new();
    let url = format!("{}/src/{{name}}", s.dir.path().display());
    let record = project_at(
        &s,
        "needsmode",
        &[
            ("pyproject.toml", &pyproject_for("needsmode", "", ">=3.11,<3.12")),
            ("needsmode/__init__.py", ""),
            (
                "conftest.py",
                "import os\nassert os.environ.get('NEEDSMODE_TESTING') == '1', 'the environment variable NEEDSMODE_TESTING must be set to 1'\n",
            ),
            ("tests/test_a.py", "def test_one():\n    assert True\n"),
        ],
        None,
    );
    s.write(
        "p.yaml",
        &format!(
            "name: env\nsource: {{kind: swe-care, path: {}}}\ndefaults:\n  cache: {}\n  repos: {{url: '{url}'}}\n  concurrency: {{docker: 1}}\n  \
             llm: {{model: qwen2.5-coder-1.5b-instruct-q4_k_m, temperature: 0, seed: 7, max_tokens: 128}}\n\
             stages:\n  - id: env\n    kind: environment\n    title: Executable Environment Construction\n    repair_prompt: {}\n",
            record.display(),
            root().join("cache").display(),
            root().join("prompts/environment_repair.md").display(),
        ),
    );
    let mode = std::env::var("CURATE_LLM_CACHE").unwrap_or_else(|_| "replay".into());
    let out = s.curate_env(&["run", "p.yaml", "--state", "st"], &[("CURATE_LLM_CACHE", &mode)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (state, o) = settled(&s, "st");
    assert_eq!(state, "kept", "{o}");
    let repair = &o["repairs"][0];
    assert!(repair["failed"].as_str().unwrap().contains("NEEDSMODE_TESTING"), "{o}");
    assert_eq!(repair["fix"]["kind"], "model", "{o}");
    assert!(repair["fix"]["answer"].as_str().unwrap().contains("NEEDSMODE_TESTING"), "{o}");
    assert_eq!(o["fixes"]["env"]["NEEDSMODE_TESTING"], "1", "{o}");
    assert!(o["dockerfiles"]["deps"].as_str().unwrap().contains("ENV NEEDSMODE_TESTING=1\n"), "{o}");
    assert!(o["install_script"].as_str().unwrap().contains("export NEEDSMODE_TESTING=1\n"), "{o}");
}

/// A fix in a C extension is built before the fixed side runs: the reviewed image holds the
/// reviewed build, and copying the fixed tree over it would run that build on both sides. The
/// project's test that the fix adds fails on the reviewed code and passes on the fixed code only
/// when the fixed side gets an image of its own with the extension rebuilt.
#[test]
fn a_fix_in_a_c_extension_runs_its_own_build() {
    if !docker_or_skip("a compiled-fix test") {
        return;
    }
    let s = Scratch::new();
    let name = "cfix";
    let c = |value: u32| {
        format!(
            "#include <Python.h>\nstatic PyObject *answer(PyObject *self, PyObject *args) {{ return PyLong_FromLong({value}); }}\n\
             static PyMethodDef methods[] = {{{{\"answer\", answer, METH_NOARGS, NULL}}, {{NULL, NULL, 0, NULL}}}};\n\
             static struct PyModuleDef m = {{PyModuleDef_HEAD_INIT, \"_fast\", NULL, -1, methods}};\n\
             PyMODINIT_FUNC PyInit__fast(void) {{ return PyModule_Create(&m); }}\n"
        )
    };
    let pyproject = "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"cfix\"\nversion = \"0.1\"\n";
    let setup = "from setuptools import setup, Extension\nsetup(ext_modules=[Extension('cfix._fast', ['cfix/_fast.c'])])\n";
    let dir = s.path(&format!("src/{name}"));
    let files = [
        ("pyproject.toml", pyproject.to_string()),
        ("setup.py", setup.to_string()),
        ("cfix/__init__.py", "from ._fast import answer\n".to_string()),
        ("cfix/_fast.c", c(1)),
        (
            "tests/test_fast.py",
            "import cfix\n\ndef test_module():\n    assert cfix.answer() > 0\n".to_string(),
        ),
    ];
    for (path, text) in &files {
        s.write(&format!("src/{name}/{path}"), text);
    }
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"])
            .args(args)
            .env("GIT_AUTHOR_DATE", "2024-06-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-06-01T00:00:00Z")
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "reviewed"]);
    let reviewed = git(&["rev-parse", "HEAD"]);
    s.write(&format!("src/{name}/cfix/_fast.c"), &c(2));
    s.write(
        &format!("src/{name}/tests/test_fast.py"),
        "import cfix\n\ndef test_module():\n    assert cfix.answer() > 0\n\ndef test_answer():\n    assert cfix.answer() == 2\n",
    );
    git(&["commit", "-qam", "fixed"]);
    let fixed = git(&["rev-parse", "HEAD"]);
    let record = json!({"instance_id": format!("t__{name}-1"), "repo": format!("t/{name}"), "base_commit": reviewed,
        "created_at": "2025-01-02T00:00:00Z", "commit_to_review": {"head_commit": reviewed}, "merged_commit": fixed,
        "reference_review_comments": []});
    let jsonl = s.write(&format!("{name}.jsonl"), &format!("{record}\n"));
    pipeline(&s, &jsonl, &format!("{}/src/{{name}}", s.dir.path().display()));
    let yaml = std::fs::read_to_string(s.path("p.yaml")).unwrap()
        + "  - id: project\n    kind: project_tests\n    needs: env\n";
    s.write("p.yaml", &yaml);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let done = outputs(&s);
    let env = &done.iter().find(|(_, o)| o.get("deps_image").is_some()).expect("the environment is built").1;
    assert!(env["rebuild"].as_str().unwrap().contains("-e"), "the install is recorded: {env}");
    let project = &done.iter().find(|(_, o)| o.get("fail_to_pass").is_some()).expect("project tests ran").1;
    assert_eq!(project["fail_to_pass"], json!(["tests/test_fast.py::test_answer"]), "{project}");
    assert_eq!(project["pass_to_pass"], json!(["tests/test_fast.py::test_module"]), "{project}");
    let image = env["image"].as_str().unwrap();
    let rebuilt = format!("{}-rebuilt", image.split(':').next().unwrap());
    let listed = Command::new("docker").args(["images", "-q", &rebuilt]).output().unwrap();
    let ids = String::from_utf8_lossy(&listed.stdout).trim().to_string();
    assert!(!ids.is_empty(), "the fixed side has an image of its own ({rebuilt})");
    let _ = Command::new("docker").args(["image", "rm", "-f", image]).args(ids.lines()).output();
}
