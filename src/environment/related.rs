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
}
