//! The environment stage against the real Docker daemon: images for two PRs of one sample
//! repository (the second reuses the dependency layer), a dependency that does not exist, and a
//! package that does not import. Skips loudly without a daemon; fails under CURATE_REQUIRE_DOCKER=1.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Scratch, docker_or_skip, root, stderr};
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
    let dir = s.path(&format!("src/{name}"));
    for (path, text) in files {
        s.write(&format!("src/{name}/{path}"), text);
    }
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
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
    let pyproject = |deps: &str| {
        format!(
            "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"broken\"\nversion = \"0.1\"\ndependencies = [{deps}]\n"
        )
    };
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
