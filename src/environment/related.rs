//! Which of a repository's tests relate to a pull request: the test files it changes, and those
//! named after a module it changes (`test_fields.py` for `fields.py`). Verification collects these
//! rather than the whole suite, where test modules of optional frameworks the PR never touches may
//! not import; the whole suite is the fallback when none relate.

use std::collections::BTreeSet;

/// Files a unified diff changes (their new paths; a deleted file is not there any more).
pub fn changed_files(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(|p| p.trim().to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// The test files of `listing` (the checkout's files) that relate to the changes in `patch`.
pub fn related_tests(patch: &str, listing: &[String]) -> Vec<String> {
    let changed = changed_files(patch);
    let present: BTreeSet<&str> = listing.iter().map(String::as_str).collect();
    let mut related: BTreeSet<String> =
        changed.iter().filter(|p| is_test_file(p) && present.contains(p.as_str())).cloned().collect();
    let stems: BTreeSet<&str> = changed
        .iter()
        .filter(|p| p.ends_with(".py") && !is_test_file(p))
        .filter_map(|p| p.rsplit('/').next()?.strip_suffix(".py"))
        .filter(|stem| *stem != "__init__" && *stem != "setup" && *stem != "conftest")
        .collect();
    for path in listing.iter().filter(|p| is_test_file(p)) {
        let name = path.rsplit('/').next().unwrap_or(path);
        let subject = name.trim_start_matches("test_").trim_end_matches(".py").trim_end_matches("_test");
        if stems.contains(subject) {
            related.insert(path.clone());
        }
    }
    related.into_iter().collect()
}

/// The test files of `listing` that import a module `patch` changes (`import a.b.m`, `from a.b.m
/// import ...`, `from a.b import m`), read with `read`: for a change whose tests are not named after
/// it (`util/debug.py` tested in `test_Util.py`), rather than the whole suite, whose test modules of
/// optional frameworks the PR never touches may not import.
pub fn importing_tests(
    patch: &str,
    listing: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let modules: Vec<(String, String, String)> = changed_files(patch)
        .iter()
        .filter(|p| p.ends_with(".py") && !is_test_file(p))
        .filter_map(|p| {
            let parts: Vec<&str> = p.trim_end_matches(".py").split('/').collect();
            let parts = match parts.first() {
                Some(&"src") | Some(&"lib") if parts.len() > 1 => &parts[1..],
                _ => &parts[..],
            };
            let (name, parent) = parts.split_last()?;
            if matches!(*name, "__init__" | "setup" | "conftest") {
                return None;
            }
            Some((parts.join("."), parent.join("."), name.to_string()))
        })
        .collect();
    if modules.is_empty() {
        return Vec::new();
    }
    listing
        .iter()
        .filter(|path| is_test_file(path))
        .filter(|path| {
            let Some(text) = read(path) else { return false };
            modules.iter().any(|(dotted, parent, name)| {
                text.contains(&format!("import {dotted}"))
                    || text.contains(&format!("from {dotted} import"))
                    || (!parent.is_empty() && text.contains(&format!("from {parent} import {name}")))
            })
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_changed_or_named_after_a_changed_module() {
        let patch = "--- a/src/pkg/fields.py\n+++ b/src/pkg/fields.py\n@@ -1 +1 @@\n-a\n+b\n--- a/tests/test_api.py\n+++ b/tests/test_api.py\n@@ -1 +1 @@\n-a\n+b\n--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n";
        let listing: Vec<String> = [
            "tests/test_api.py",
            "tests/test_fields.py",
            "tests/test_tf.py",
            "tests/test_init.py",
            "src/pkg/fields.py",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(related_tests(patch, &listing), ["tests/test_api.py", "tests/test_fields.py"]);
        assert!(related_tests("", &listing).is_empty(), "nothing changed: the whole suite");
        assert_eq!(changed_files(patch), ["pkg/__init__.py", "src/pkg/fields.py", "tests/test_api.py"]);
    }

    #[test]
    fn tests_that_import_a_changed_module_relate_to_it() {
        let patch = "--- a/returnn/util/debug.py\n+++ b/returnn/util/debug.py\n@@ -1 +1 @@\n-a\n+b\n";
        let listing: Vec<String> =
            ["tests/test_Util.py", "tests/test_TF.py", "tests/test_other.py"].map(String::from).to_vec();
        let read = |p: &str| -> Option<String> {
            Some(match p {
                "tests/test_Util.py" => "from returnn.util import debug\n".into(),
                "tests/test_other.py" => "import returnn.util.debug as d\n".into(),
                _ => "import tensorflow\n".into(),
            })
        };
        assert!(related_tests(patch, &listing).is_empty(), "none is named after debug.py");
        assert_eq!(importing_tests(patch, &listing, &read), ["tests/test_Util.py", "tests/test_other.py"]);
    }
}
