//! Facts for the model that writes a test, so it need not guess them: the signatures of the public
//! functions, classes and methods of the commented module (as reviewed, and those the fix adds or
//! changes), and how the project's own tests import that module. Read from the source text with a
//! line scanner, not by running anything: a header that spans lines is joined, nested functions and
//! private names are left out.

use std::collections::BTreeMap;
use std::path::Path;

use super::source::{Import, code_only, imports};

/// Signature lines shown at most, so a large module does not crowd out the rest of the prompt.
pub const MAX_SIGNATURES: usize = 40;
/// Lines of the fix's diff of the commented file shown to the model at most.
pub const MAX_FIX_DIFF_LINES: usize = 120;
/// Import lines of the project's tests shown at most.
pub const MAX_TEST_IMPORTS: usize = 6;
/// Test files read at most when looking for imports.
const MAX_TEST_FILES: usize = 400;

/// Decorators that change how a definition is used, kept in front of it.
const TELLING_DECORATORS: [&str; 4] = ["property", "staticmethod", "classmethod", "dataclass"];

/// The import path of a Python file: `src/pkg/mod.py` is `pkg.mod`, `pkg/__init__.py` is `pkg`.
pub fn module_of(path: &str, packages: &[String]) -> String {
    let Some(stem) = path.strip_suffix(".py") else {
        return packages.first().cloned().unwrap_or_default();
    };
    let stem = stem.strip_prefix("src/").unwrap_or(stem);
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    stem.replace('/', ".")
}

/// The public definitions of `source`, one a line, as Python stubs: `def f(a, b=1) -> int`, and a
/// class's public methods indented under `class C(Base)`.
pub fn signatures(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    // Enclosing definitions: (indent, is a class, is public).
    let mut stack: Vec<(usize, bool, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let header = trimmed.strip_prefix("async ").unwrap_or(trimmed);
        let is_class = header.starts_with("class ");
        if !(is_class || header.starts_with("def ")) {
            i += 1;
            continue;
        }
        while stack.last().is_some_and(|(at, _, _)| *at >= indent) {
            stack.pop();
        }
        let (text, next) = joined_header(&lines, i);
        let name = header[if is_class { 6 } else { 4 }..]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        let public = !name.starts_with('_') || name == "__init__";
        let inside_function = stack.iter().any(|(_, class, _)| !class);
        let enclosing_public = stack.iter().all(|(_, _, public)| *public);
        if public && !inside_function && enclosing_public && !name.is_empty() {
            let depth = stack.len();
            let decorator = decorator_before(&lines, i);
            let prefix = decorator.map(|d| format!("@{d} ")).unwrap_or_default();
            out.push(format!("{}{prefix}{text}", "    ".repeat(depth)));
        }
        stack.push((indent, is_class, public));
        i = next;
    }
    out
}

/// The header that starts at line `at`, joined over its lines up to the `:` that ends it, with
/// whitespace collapsed and the colon dropped; and the index of the line after it.
pub(crate) fn joined_header(lines: &[&str], at: usize) -> (String, usize) {
    let mut text = String::new();
    let mut depth = 0i32;
    let mut i = at;
    while i < lines.len() {
        let line = lines[i].split(" #").next().unwrap_or("").trim();
        i += 1;
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        if !text.is_empty() && !text.ends_with('(') && !line.starts_with(')') {
            text.push(' ');
        }
        text.push_str(line);
        if depth <= 0 && line.ends_with(':') {
            break;
        }
    }
    let text = text.strip_prefix("async ").map_or(text.clone(), |t| format!("async {t}"));
    let text = text.trim_end_matches(':').replace(", )", ")").replace(",)", ")");
    (text.split_whitespace().collect::<Vec<_>>().join(" "), i)
}

/// The telling decorator right above line `at`, if any.
fn decorator_before(lines: &[&str], at: usize) -> Option<&'static str> {
    lines[..at].iter().rev().map(|l| l.trim()).take_while(|l| l.starts_with('@')).find_map(|l| {
        let name = l.trim_start_matches('@').split(['(', ' ']).next().unwrap_or("");
        let name = name.rsplit('.').next().unwrap_or(name);
        TELLING_DECORATORS.iter().find(|d| **d == name).copied()
    })
}

/// The signatures of `after` that `before` does not have as they are: what the fix added or changed.
pub fn changed_signatures(before: &[String], after: &[String]) -> Vec<String> {
    // A method is known by its class too: the stub lines are compared with the class line above.
    let qualified = |sigs: &[String]| -> Vec<(String, String)> {
        let mut class = String::new();
        sigs.iter()
            .map(|s| {
                if !s.starts_with(' ') {
                    class = s.clone();
                    (s.clone(), s.clone())
                } else {
                    (format!("{class}\n{s}"), s.clone())
                }
            })
            .collect()
    };
    let old: Vec<String> = qualified(before).into_iter().map(|(q, _)| q).collect();
    qualified(after)
        .into_iter()
        .filter(|(q, _)| !old.contains(q))
        .map(|(_, s)| s.trim().to_string())
        .collect()
}

/// Whether a directory (or top-level package) of this name holds a project's tests: `test`,
/// `tests`, `testing`, or `testsuite` (pycodestyle's, whose checks read the cases in its
/// `testsuite/E22.py`).
pub fn is_test_dir(name: &str) -> bool {
    matches!(name, "test" | "tests" | "testing" | "testsuite")
}

/// Whether `path` (relative to the repository) is one of the project's test files.
pub fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_tests = path.components().any(|c| c.as_os_str().to_str().is_some_and(is_test_dir));
    name.ends_with(".py")
        && name != "conftest.py"
        && (name.starts_with("test_") || name.ends_with("_test.py") || in_tests)
}

/// The import lines of the project's test files under `root` that import `module` or a module of
/// its top-level package, the most used first (then in text order).
pub fn test_imports(root: &Path, module: &str) -> Vec<String> {
    let top = module.split('.').next().unwrap_or(module);
    if top.is_empty() {
        return Vec::new();
    }
    import_lines(root, |found| found.iter().any(|i| i.top() == top), MAX_TEST_IMPORTS)
}

/// Lines at most of [`helper_imports`].
pub const MAX_HELPER_IMPORTS: usize = 200;

/// The import lines of the project's test files under `root` that import neither the project's
/// tests nor `package` (`from numpy.testing import assert_allclose`, `from unittest import mock`),
/// the most used first: what a test that uses such a name and forgets its import is mended with.
pub fn helper_imports(root: &Path, package: &str) -> Vec<String> {
    let keep = |found: &[Import]| found.iter().all(|i| i.top() != package && !is_test_package(i.top()));
    let mut lines = import_lines(root, keep, MAX_HELPER_IMPORTS);
    // The first line of an import that goes on over several is no import alone (pywt 471:
    // `from numpy.testing import (assert_allclose, assert_raises, assert_,`).
    lines.retain(|l| l.matches('(').count() == l.matches(')').count());
    lines
}

/// The import lines of the test files under `root` whose imports pass `keep`, counted over the
/// files, the most used first (then in text order), at most `max`.
fn import_lines(root: &Path, keep: impl Fn(&[Import]) -> bool, max: usize) -> Vec<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for file in test_files(root) {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let code = code_only(&text);
        for line in code.lines().map(str::trim) {
            if !(line.starts_with("import ") || line.starts_with("from ")) || line.ends_with('(') {
                continue;
            }
            let found = imports(line);
            if !found.is_empty() && keep(&found) {
                *counts.entry(line.to_string()).or_default() += 1;
            }
        }
    }
    let mut lines: Vec<(String, usize)> = counts.into_iter().collect();
    lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    lines.into_iter().take(max).map(|(line, _)| line).collect()
}

/// The directory (relative to `root`) where a test of curate's runs among the project's tests:
/// that of `beside` (a test module of the project's, such as the template's), else that of the
/// first test file under `root`; `None` when the project has none.
pub fn test_dir(root: &Path, beside: Option<&str>) -> Option<String> {
    let parent = |p: &Path| p.parent().map(|d| d.to_string_lossy().into_owned());
    match beside {
        Some(path) => parent(Path::new(path)),
        None => test_files(root).first().and_then(|f| f.strip_prefix(root).ok().and_then(parent)),
    }
}

/// Fixtures at most listed for the model.
pub const MAX_FIXTURES: usize = 30;

/// The names of the fixtures the conftest files of `dir` and of every directory above it (up to
/// `root`) define with `@pytest.fixture`, in the order found, the nearest conftest first; names
/// starting with `_` left out.
pub fn conftest_fixtures(root: &Path, dir: &str) -> Vec<String> {
    let mut dirs = vec![root.to_path_buf()];
    let mut at = root.to_path_buf();
    for part in Path::new(dir).components() {
        at.push(part);
        dirs.push(at.clone());
    }
    let mut out: Vec<String> = Vec::new();
    for d in dirs.iter().rev() {
        let Ok(text) = std::fs::read_to_string(d.join("conftest.py")) else { continue };
        for name in fixture_names(&code_only(&text)) {
            if !name.starts_with('_') && !out.contains(&name) && out.len() < MAX_FIXTURES {
                out.push(name);
            }
        }
    }
    out
}

/// The functions of `code` decorated `@pytest.fixture` (or `@fixture`), at the top level.
fn fixture_names(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut decorated = false;
    for line in code.lines() {
        let t = line.trim_end();
        if t.starts_with("@pytest.fixture") || t.starts_with("@fixture") {
            decorated = true;
        } else if decorated && (t.starts_with("def ") || t.starts_with("async def ")) {
            let rest = t.trim_start_matches("async ").trim_start_matches("def ");
            out.push(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
            decorated = false;
        } else if !t.starts_with('@') && !t.starts_with([' ', '\t', ')']) && !t.is_empty() {
            decorated = false;
        }
    }
    out
}

/// The test files under `root`, in a stable order, at most [`MAX_TEST_FILES`]; `.git` and
/// hidden directories are not entered.
pub(crate) fn test_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let hidden = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
            if hidden || path.is_symlink() {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path.strip_prefix(root).is_ok_and(is_test_file) {
                out.push(path);
                if out.len() >= MAX_TEST_FILES {
                    return out;
                }
            }
        }
    }
    out
}

/// Top-level modules of the project's tests that a test imports (`tests`, `tests.helpers`,
/// `conftest`): these are not the project's code and may not be on the path where it runs.
pub fn test_package_imports(code: &str) -> Vec<String> {
    imports(&code_only(code)).into_iter().filter(|i| is_test_package(i.top())).map(|i| i.module).collect()
}

/// Whether a top-level module name is the project's tests' (`tests`, `conftest`).
pub fn is_test_package(top: &str) -> bool {
    is_test_dir(top) || top == "conftest"
}

/// The diff of one file cut to at most `max` lines: whole hunks, nearest the commented `line`
/// (of the old side) first, shown in the file's order, and a line saying how many were left out.
/// A diff within `max` is unchanged. A PR merged long after its review carries the default
/// branch's changes too: 2,000 lines of xarray's `dataset.py` overflowed the model's context.
pub fn diff_near(diff: &str, line: u64, max: usize) -> String {
    if diff.lines().count() <= max {
        return diff.to_string();
    }
    let header: Vec<&str> = diff.lines().take_while(|l| !l.starts_with("@@")).collect();
    let mut hunks = crate::repo::hunks::parse(diff);
    let distance = |h: &crate::repo::hunks::Hunk| {
        let (from, to) = h.changed_span();
        if line < from { from - line } else { line.saturating_sub(to) }
    };
    hunks.sort_by_key(|h| (distance(h), h.old_start));
    let mut budget = max.saturating_sub(header.len() + 1);
    let mut kept = Vec::new();
    for h in &hunks {
        let size = h.text.lines().count() + 1;
        if size > budget {
            continue;
        }
        budget -= size;
        kept.push(h);
    }
    kept.sort_by_key(|h| h.old_start);
    let mut out: Vec<String> = header.iter().map(|l| l.to_string()).collect();
    for h in &kept {
        out.push(format!("@@ -{} +{} @@", h.old_start, h.new_start));
        out.extend(h.text.lines().map(str::to_string));
    }
    out.push(format!("… {} more hunks of this file left out", hunks.len() - kept.len()));
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_diff_keeps_the_hunks_nearest_the_comment() {
        let mut diff = String::from("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n");
        for k in 0..20u64 {
            let at = 10 + k * 100;
            diff.push_str(&format!("@@ -{at},3 +{at},3 @@\n ctx\n-old {k}\n+new {k}\n ctx\n"));
        }
        assert_eq!(diff_near(&diff, 1, 1000), diff, "a short diff is unchanged");
        let cut = diff_near(&diff, 1215, 20);
        assert!(cut.lines().count() <= 20, "{cut}");
        assert!(cut.starts_with("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1110 "), "{cut}");
        assert!(cut.contains("+new 12") && cut.contains("+new 11") && !cut.contains("+new 0"), "{cut}");
        assert!(cut.ends_with("… 17 more hunks of this file left out\n"), "{cut}");
    }

    const MODULE: &str = r#"
"""Config merging."""
import os


class ConfigError(ValueError):
    pass


def parse(text: str,
          *, strict: bool = False,
          ) -> dict:  # the entry point
    def helper(x):
        return x
    return {}


class _Hidden:
    def shown(self):
        pass


class Version:
    def __init__(self, major, minor=0):
        self.major = major

    @property
    def text(self) -> str:
        return ""

    def _private(self):
        pass

    async def bump(self, part="patch"):
        pass
"#;

    #[test]
    fn public_definitions_as_stubs_with_their_classes() {
        assert_eq!(
            signatures(MODULE),
            vec![
                "class ConfigError(ValueError)",
                "def parse(text: str, *, strict: bool = False) -> dict",
                "class Version",
                "    def __init__(self, major, minor=0)",
                "    @property def text(self) -> str",
                "    async def bump(self, part=\"patch\")",
            ]
        );
    }

    #[test]
    fn what_the_fix_adds_or_changes() {
        let before = signatures("def a(x):\n    pass\nclass C:\n    def m(self):\n        pass\n");
        let after = signatures(
            "def a(x, y=1):\n    pass\ndef b():\n    pass\nclass C:\n    def m(self):\n        pass\nclass D:\n    def m(self):\n        pass\n",
        );
        assert_eq!(
            changed_signatures(&before, &after),
            vec!["def a(x, y=1)", "def b()", "class D", "def m(self)"]
        );
    }

    #[test]
    fn the_tests_imports_of_the_module_most_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("tests/unit")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("tests/unit/test_a.py"), "import pytest\nfrom pkg.core import merge\n")
            .unwrap();
        std::fs::write(root.join("tests/test_b.py"), "from pkg.core import merge\nimport pkg\n").unwrap();
        std::fs::write(root.join("tests/conftest.py"), "from pkg.other import x\n").unwrap();
        std::fs::write(root.join(".git/test_c.py"), "from pkg.hidden import y\n").unwrap();
        std::fs::write(root.join("setup.py"), "from pkg import version\n").unwrap();
        assert_eq!(test_imports(root, "pkg.core"), vec!["from pkg.core import merge", "import pkg"]);
        assert!(test_imports(root, "other").is_empty());
        // A line that imports the module among others counts for it.
        std::fs::write(root.join("tests/test_d.py"), "import os, pkg\n").unwrap();
        assert!(test_imports(root, "pkg").contains(&"import os, pkg".to_string()));
        // The helpers: neither the project nor its tests, the most used first.
        std::fs::write(
            root.join("tests/test_e.py"),
            "import pytest\nfrom numpy.testing import assert_allclose\nfrom tests.helpers import make\nfrom numpy import (sin, cos,\n    tan)\n",
        )
        .unwrap();
        assert_eq!(
            helper_imports(root, "pkg"),
            vec!["import pytest", "from numpy.testing import assert_allclose"]
        );
    }

    #[test]
    fn fixtures_of_the_conftests_above_a_test_directory_nearest_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("tests/unit")).unwrap();
        std::fs::write(
            root.join("conftest.py"),
            "import pytest\n\n@pytest.fixture(scope=\"session\")\ndef project(tmp_path_factory):\n    return 1\n\ndef helper():\n    pass\n",
        )
        .unwrap();
        std::fs::write(
            root.join("tests/conftest.py"),
            "from pytest import fixture\n\n@fixture\ndef client():\n    yield 2\n\n@pytest.fixture(\n    params=[1, 2]\n)\ndef _private():\n    pass\n\n@pytest.fixture\ndef project():\n    pass\n",
        )
        .unwrap();
        std::fs::write(root.join("tests/unit/test_a.py"), "def test_a():\n    pass\n").unwrap();
        assert_eq!(conftest_fixtures(root, "tests/unit"), ["client", "project"]);
        assert_eq!(conftest_fixtures(root, ""), ["project"]);
        assert_eq!(test_dir(root, Some("tests/test_x.py")).as_deref(), Some("tests"));
        assert_eq!(test_dir(root, None).as_deref(), Some("tests/unit"));
    }

    #[test]
    fn imports_of_the_project_tests_are_named() {
        let code = "import pytest\nfrom tests.helpers import make\nimport conftest\nfrom pkg import f\n";
        assert_eq!(test_package_imports(code), vec!["tests.helpers", "conftest"]);
    }
}
