//! The project's own tests as candidates, the way SWE-bench finds its FAIL_TO_PASS tests: most
//! merged PRs change the project's tests along with the code, and those tests already build the
//! objects, fixtures and inputs a model would have to guess. The test side of the fix (test modules,
//! conftest files, data under test directories) is put into the reviewed tree; a test node that
//! fails there and passes on the fixed tree is a candidate for a comment, judged like any other.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::exec::docker::ExecError;
use crate::exec::hosts::Executor;
use crate::exec::testrun::{NodeOutcome, project_outcomes};
use crate::repo::{Mirror, RepoError};

/// Whether `path` (repository-relative) belongs to the tests: under a test directory
/// ([`super::facts::is_test_dir`]), a `conftest.py`, or a module named `test_*.py` or `*_test.py`.
pub fn is_test_side(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts.iter().any(|d| super::facts::is_test_dir(d)) || name == "conftest.py" || is_test_module(path)
}

/// Whether `path` is a test module pytest collects by default.
pub fn is_test_module(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// What pytest is given to run a fix's tests, at most `max`, in order: the test modules among the
/// fix's changed test side `test_paths` that exist on the fixed side, the modules `named` after a
/// changed module, then the directories of the changed test data files. A case the fix adds to a
/// data file (`tests/snippets/toml/case.txt`) runs when its directory is collected: a conftest
/// that collects such files makes it a test. The directory, not the file: pytest refuses a file
/// it is given that nothing collects ("found no collectors", seen with pygments' `.output`
/// files), which ends the whole run. A data file straight under the tests' top directory is left
/// out (its directory is the whole suite). Helpers (`conftest.py`, `tests/base.py`) are no tests
/// of their own.
pub fn paths_to_run(
    test_paths: &[String],
    named: &[String],
    exists: impl Fn(&str) -> bool,
    max: usize,
) -> Vec<String> {
    let modules = test_paths.iter().filter(|p| is_test_module(p) && exists(p)).cloned();
    let data_dirs = test_paths
        .iter()
        .filter(|p| !p.ends_with(".py") && exists(p))
        .filter_map(|p| p.rsplit_once('/').map(|(dir, _)| dir.to_string()))
        .filter(|dir| dir.contains('/'));
    let mut paths: Vec<String> = Vec::new();
    for path in modules.chain(named.iter().cloned()).chain(data_dirs) {
        if !paths.contains(&path) && paths.len() < max {
            paths.push(path);
        }
    }
    paths
}

/// The test module a pytest node id names (`tests/test_a.py` of `tests/test_a.py::T::test_b[1]`).
pub fn module_of_node(node: &str) -> &str {
    node.split("::").next().unwrap_or(node)
}

/// The files a unified diff adds or changes (their new paths), in order, once each.
pub fn changed_paths(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for path in patch.lines().filter_map(|l| l.strip_prefix("+++ b/")).map(str::trim) {
        if !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    out
}

/// Writes `paths` as they are at `commit` of `mirror` into the tree `dest`, over what is there; a
/// path `commit` lacks is left as it was. For a fixed tree whose tests come from a later commit of
/// the PR ([`crate::stages::contract::ProjectTests::tests_commit`]).
pub fn put_in_from(mirror: &Mirror, commit: &str, paths: &[String], dest: &Path) -> Result<(), RepoError> {
    for path in paths {
        let io = |error| RepoError::Io { dir: dest.to_path_buf(), error };
        crate::record::check_repo_path(path).map_err(|e| io(std::io::Error::other(e)))?;
        let Some(bytes) = mirror.file_at(commit, path)? else { continue };
        let to = dest.join(path);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(&to, bytes).map_err(io)?;
    }
    Ok(())
}

/// The reviewed tree `reviewed` with the test side of the fix (`paths`, read from `fixed`) in it, in
/// a temporary directory removed with the value. A path the fixed tree lacks is left as it was.
pub async fn with_fixed_tests(
    reviewed: &Path,
    fixed: &Path,
    paths: &[String],
) -> std::io::Result<tempfile::TempDir> {
    let work = super::partial::copy_tree(reviewed).await?;
    for path in paths {
        crate::record::check_repo_path(path).map_err(std::io::Error::other)?;
        let from = fixed.join(path);
        if !from.is_file() {
            continue;
        }
        let to = work.path().join(path);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(&from, &to)?;
    }
    Ok(work)
}

/// The nodes that fail on the reviewed side (their call failed, or their setup; or their module
/// did not even import there) and pass on the fixed side: candidates, not yet judged.
pub fn fail_to_pass(
    reviewed: &BTreeMap<String, NodeOutcome>,
    fixed: &BTreeMap<String, NodeOutcome>,
) -> Vec<String> {
    let failing = |o: &NodeOutcome| matches!(o, NodeOutcome::Failed | NodeOutcome::Error);
    fixed
        .iter()
        .filter(|(_, o)| **o == NodeOutcome::Passed)
        .filter(|(node, _)| match reviewed.get(*node) {
            Some(o) => failing(o),
            // Not run on the reviewed side: a candidate when its module failed to collect there.
            None => {
                reviewed.iter().any(|(n, o)| *o == NodeOutcome::Error && node.starts_with(&format!("{n}::")))
            }
        })
        .map(|(node, _)| node.clone())
        .collect()
}

/// The nodes that pass on both sides: what a revision must not break.
pub fn pass_to_pass(
    reviewed: &BTreeMap<String, NodeOutcome>,
    fixed: &BTreeMap<String, NodeOutcome>,
) -> Vec<String> {
    fixed
        .iter()
        .filter(|(node, o)| **o == NodeOutcome::Passed && reviewed.get(*node) == Some(&NodeOutcome::Passed))
        .map(|(node, _)| node.clone())
        .collect()
}

/// The tests of `pass_to_pass` that did not pass in a run with `outcomes`: those that failed or
/// errored, and every one of a module that did not import. A test the run did not have (one the
/// fix's test side adds, when the hidden test is not the project's) is not checked.
pub fn regressions(pass_to_pass: &[String], outcomes: &BTreeMap<String, NodeOutcome>) -> Vec<String> {
    pass_to_pass
        .iter()
        .filter(|n| match outcomes.get(*n) {
            Some(o) => *o != NodeOutcome::Passed,
            None => outcomes.get(module_of_node(n)) == Some(&NodeOutcome::Error),
        })
        .cloned()
        .collect()
}

/// The tests of `pass_to_pass` that do not pass on the tree `tree` (a revision), run module by
/// module in `image`: the regression check of validation and of the evaluation's score.
pub async fn broken(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    pass_to_pass: &[String],
    timeout: Duration,
) -> Result<Vec<String>, ExecError> {
    let mut modules: Vec<String> = pass_to_pass.iter().map(|n| module_of_node(n).to_string()).collect();
    modules.sort();
    modules.dedup();
    let (_, outcomes) = project_outcomes(docker, image, tree, &modules, timeout).await?;
    Ok(regressions(pass_to_pass, &outcomes))
}

/// `nodes` in the order to try them: one node of each test function first (the parameters of one
/// function mostly reach the same lines, so a second is worth less than another function), and
/// within that, the nodes that name words of `hints` (the commented file's stem, identifiers of the
/// comment and of its code) first: a cheap guess at which test is about the comment before the
/// relevance gate decides.
pub fn ranked(nodes: &[String], hints: &[String]) -> Vec<String> {
    let score = |node: &String| {
        let lower = node.to_lowercase();
        hints.iter().filter(|h| lower.contains(h.as_str())).count()
    };
    let function = |node: &str| node.split('[').next().unwrap_or(node).to_string();
    let mut by_score = nodes.to_vec();
    by_score.sort_by_key(|n| std::cmp::Reverse(score(n)));
    let mut seen = std::collections::BTreeSet::new();
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for node in by_score {
        if seen.insert(function(&node)) { first.push(node) } else { rest.push(node) }
    }
    first.extend(rest);
    first
}

/// Lowercase identifiers of four letters or more in `text`, for [`ranked`].
pub fn hint_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|w| w.trim_matches('_').to_lowercase())
        .filter(|w| w.len() >= 4 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| {
            !matches!(w.as_str(), "self" | "test" | "tests" | "this" | "that" | "with" | "should" | "return")
        })
        .collect();
    words.sort();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regression_is_a_passing_test_that_fails_errors_or_loses_its_module() {
        use NodeOutcome::*;
        let p2p: Vec<String> =
            ["t/test_a.py::ok", "t/test_a.py::bad", "t/test_a.py::added", "t/test_b.py::one"]
                .map(String::from)
                .to_vec();
        let outcomes = [("t/test_a.py::ok", Passed), ("t/test_a.py::bad", Failed), ("t/test_b.py", Error)]
            .into_iter()
            .map(|(n, o)| (n.to_string(), o))
            .collect();
        assert_eq!(regressions(&p2p, &outcomes), ["t/test_a.py::bad", "t/test_b.py::one"]);
    }

    #[test]
    fn a_later_commits_tests_are_put_into_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("src/acme/widgets");
        std::fs::create_dir_all(repo.join("tests")).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=T", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"])
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("tests/test_a.py"), "def test_a(): pass\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "fix"]);
        let fix = git(&["rev-parse", "HEAD"]);
        std::fs::write(repo.join("tests/test_a.py"), "def test_a(): assert 1\n").unwrap();
        std::fs::write(repo.join("tests/data.bin"), [0u8, 159, 146, 150]).unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "tests after the fix"]);
        let merge = git(&["rev-parse", "HEAD"]);

        let mirrors = crate::repo::Mirrors::new("src/{repo}", dir.path(), &dir.path().join("cache"));
        let mirror = mirrors.open("acme/widgets", &[&fix, &merge]).unwrap();
        let tree = dir.path().join("tree");
        mirror.materialize(&fix, &tree).unwrap();
        let paths: Vec<String> =
            ["tests/test_a.py", "tests/data.bin", "tests/gone.py"].iter().map(|p| p.to_string()).collect();
        put_in_from(&mirror, &merge, &paths, &tree).unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.join("tests/test_a.py")).unwrap(),
            "def test_a(): assert 1\n"
        );
        assert_eq!(
            std::fs::read(tree.join("tests/data.bin")).unwrap(),
            [0u8, 159, 146, 150],
            "bytes as they are"
        );
        assert!(!tree.join("tests/gone.py").exists(), "a path the commit lacks is left as it was");
        let outside = vec!["../escape.py".to_string()];
        assert!(put_in_from(&mirror, &merge, &outside, &tree).is_err());
    }

    fn outcomes(pairs: &[(&str, NodeOutcome)]) -> BTreeMap<String, NodeOutcome> {
        pairs.iter().map(|(n, o)| (n.to_string(), *o)).collect()
    }

    #[test]
    fn test_side_paths_are_told_from_code() {
        for p in [
            "tests/test_a.py",
            "tests/data/case.toml",
            "src/pkg/conftest.py",
            "pkg/foo_test.py",
            "testing/x.py",
            "testsuite/E22.py",
        ] {
            assert!(is_test_side(p), "{p}");
        }
        for p in ["src/pkg/testing_utils.py", "pkg/core.py", "docs/tests.rst", "contest.py"] {
            assert!(!is_test_side(p), "{p}");
        }
        assert!(is_test_module("tests/test_a.py") && !is_test_module("tests/data/case.toml"));
    }

    #[test]
    fn a_fixs_test_modules_and_data_files_run_then_the_modules_named_after_its_changes() {
        let changed: Vec<String> = [
            "tests/conftest.py",
            "tests/base.py",
            "tests/snippets/toml/bool-comment.txt",
            "tests/snippets/toml/header.txt",
            "tests/test_lexer.py",
            "tests/examplefiles/gone.cmake",
            "tests/data.json",
        ]
        .map(String::from)
        .to_vec();
        let named = vec!["tests/test_api.py".to_string(), "tests/test_lexer.py".to_string()];
        let exists = |p: &str| p != "tests/examplefiles/gone.cmake";
        assert_eq!(
            paths_to_run(&changed, &named, exists, 8),
            ["tests/test_lexer.py", "tests/test_api.py", "tests/snippets/toml"]
        );
        assert_eq!(paths_to_run(&changed, &named, exists, 1), ["tests/test_lexer.py"]);
    }

    #[test]
    fn changed_paths_are_read_from_a_patch_once_each() {
        let patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n\
                     diff --git a/t/test_a.py b/t/test_a.py\nnew file mode 100644\n--- /dev/null\n+++ b/t/test_a.py\n@@ -0,0 +1 @@\n+z\n";
        assert_eq!(changed_paths(patch), ["a.py", "t/test_a.py"]);
    }

    #[test]
    fn fail_to_pass_takes_failures_and_uncollected_modules_and_pass_to_pass_the_rest() {
        use NodeOutcome::*;
        let reviewed = outcomes(&[
            ("t/test_a.py::test_old", Passed),
            ("t/test_a.py::test_bug", Failed),
            ("t/test_a.py::test_setup", Error),
            ("t/test_a.py::test_skip", Skipped),
            ("t/test_new.py", Error),
        ]);
        let fixed = outcomes(&[
            ("t/test_a.py::test_old", Passed),
            ("t/test_a.py::test_bug", Passed),
            ("t/test_a.py::test_setup", Passed),
            ("t/test_a.py::test_skip", Passed),
            ("t/test_a.py::test_added", Passed),
            ("t/test_new.py::test_one", Passed),
            ("t/test_new.py::test_two", Failed),
        ]);
        assert_eq!(
            fail_to_pass(&reviewed, &fixed),
            ["t/test_a.py::test_bug", "t/test_a.py::test_setup", "t/test_new.py::test_one"]
        );
        assert_eq!(pass_to_pass(&reviewed, &fixed), ["t/test_a.py::test_old"]);
    }

    #[test]
    fn nodes_naming_the_comment_come_first_one_per_function() {
        let nodes: Vec<String> = [
            "t/test_a.py::test_other",
            "t/test_a.py::test_parse_empty[a]",
            "t/test_a.py::test_parse_empty[b]",
        ]
        .map(String::from)
        .to_vec();
        let hints = hint_words("`parse` should reject an empty string");
        assert!(hints.contains(&"parse".to_string()) && !hints.contains(&"should".to_string()));
        assert_eq!(
            ranked(&nodes, &hints),
            [
                "t/test_a.py::test_parse_empty[a]",
                "t/test_a.py::test_other",
                "t/test_a.py::test_parse_empty[b]"
            ]
        );
    }
}
