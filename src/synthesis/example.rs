//! One of the project's own tests as a template for the model (issue 26, item 2): a small model
//! guesses badly how a real project builds the objects its functions take, and the project's
//! tests already do it. Of the test functions of the reviewed tree that call a function the
//! comment is about (the definitions that hold the attributed change, then those that hold the
//! commented line), the one most like a test the model can copy is shown: in a test module the fix
//! changes, with no fixture of the project's own, and short.
//!
//! Read from the text with a line scanner, like the other facts: nothing runs.

use std::path::Path;

use super::facts;
use super::source::code_only;

/// Lines of the chosen test shown at most; a longer one is cut, and says so.
pub const MAX_EXAMPLE_LINES: usize = 24;

/// pytest's own fixtures: a test that asks only for these runs anywhere.
const BUILTIN_FIXTURES: [&str; 11] = [
    "self",
    "tmp_path",
    "tmpdir",
    "monkeypatch",
    "capsys",
    "capfd",
    "caplog",
    "recwarn",
    "request",
    "tmp_path_factory",
    "cls",
];

/// A test function of a test module, as the scanner read it.
#[derive(Debug, Clone, PartialEq)]
pub struct TestFunction {
    pub name: String,
    /// The class it is a method of, if any.
    pub class: Option<String>,
    /// Its decorators, header and body, dedented to the header's indentation.
    pub text: String,
    /// The header's parameters that name a fixture of the project's (not pytest's own, not one a
    /// `parametrize` decorator fills).
    pub fixtures: Vec<String>,
}

/// The example chosen for a comment: where it is, and the test itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub path: String,
    /// The definition of the project's it calls.
    pub calls: String,
    pub test: TestFunction,
}

impl Example {
    /// The example as the prompt shows it: a comment line saying where it is from, then the test,
    /// cut to `max` lines.
    pub fn shown(&self, max: usize) -> String {
        let place = match &self.test.class {
            Some(class) => format!("{}, in class {class}", self.path),
            None => self.path.clone(),
        };
        let lines: Vec<&str> = self.test.text.lines().collect();
        let mut out = format!("# {place}\n{}", lines[..lines.len().min(max)].join("\n"));
        if lines.len() > max {
            out.push_str(&format!("\n    # … {} more lines", lines.len() - max));
        }
        out
    }
}

/// The test functions of a test module's `source`: top-level `def test_*` and the `test_*`
/// methods of its classes, with the decorators above them.
pub fn test_functions(source: &str) -> Vec<TestFunction> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    let mut class: Option<(usize, String)> = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if class.as_ref().is_some_and(|(at, _)| indent <= *at) {
            class = None;
        }
        if let Some(rest) = trimmed.strip_prefix("class ") {
            class = Some((indent, word(rest)));
            continue;
        }
        let header = trimmed.strip_prefix("async ").unwrap_or(trimmed);
        let Some(rest) = header.strip_prefix("def ") else { continue };
        let name = word(rest);
        let in_class = class.as_ref().is_some_and(|(at, _)| indent > *at);
        if !name.starts_with("test") || !(indent == 0 || in_class) {
            continue;
        }
        let first = decorators_start(&lines, i);
        let end = block_end(&lines, i, indent);
        let text: Vec<&str> =
            lines[first..end].iter().map(|l| l.get(indent..).unwrap_or(l.trim_start())).collect();
        let decorators = lines[first..i].join("\n");
        let fixtures = parameters(&lines[i..end])
            .into_iter()
            .filter(|p| !BUILTIN_FIXTURES.contains(&p.as_str()) && !decorators.contains(p.as_str()))
            .collect();
        out.push(TestFunction {
            name,
            class: if in_class { class.as_ref().map(|(_, c)| c.clone()) } else { None },
            text: text.join("\n").trim_end().to_string(),
            fixtures,
        });
    }
    out
}

/// The identifier `text` starts with.
fn word(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The first line of the decorators right above the definition at `at`.
fn decorators_start(lines: &[&str], at: usize) -> usize {
    let mut first = at;
    while first > 0 && lines[first - 1].trim_start().starts_with('@') {
        first -= 1;
    }
    first
}

/// The index after the last line of the block whose header, at `indent`, is line `at`.
fn block_end(lines: &[&str], at: usize, indent: usize) -> usize {
    let mut end = at + 1;
    let mut last = at + 1;
    while end < lines.len() {
        let line = lines[end];
        let trimmed = line.trim_start();
        if !trimmed.is_empty() {
            if line.len() - trimmed.len() <= indent && !trimmed.starts_with(')') {
                break;
            }
            last = end + 1;
        }
        end += 1;
    }
    last
}

/// The parameter names of the `def` header that starts `block`.
fn parameters(block: &[&str]) -> Vec<String> {
    let header: String = block.iter().take(8).copied().collect::<Vec<_>>().join(" ");
    let Some(open) = header.find('(') else { return Vec::new() };
    let mut depth = 0;
    let mut inner = String::new();
    for c in header[open + 1..].chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => break,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        inner.push(if depth > 0 { ' ' } else { c });
    }
    inner.split(',').map(|p| word(p.trim().trim_start_matches('*'))).filter(|p| !p.is_empty()).collect()
}

/// Whether the code of `text` (comments and strings left out) uses `name` as a word.
fn mentions(text: &str, name: &str) -> bool {
    let code = code_only(text);
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// A test's text without its `def` line, whose name often repeats the function's.
fn without_header(text: &str) -> String {
    let header = |l: &&str| {
        let t = l.trim_start();
        t.starts_with("def ") || t.starts_with("async def ")
    };
    text.lines().filter(|l| !header(l)).collect::<Vec<_>>().join("\n")
}

/// The example for a comment: of the test functions under `root` that use one of `names` (the
/// first name any test uses wins; public names before private ones), the one in a module of
/// `preferred` (the test modules the fix changes), asking for fewer of the project's fixtures, and
/// shorter, first. `None` when no test uses any of them.
pub fn example(root: &Path, names: &[String], preferred: &[String]) -> Option<Example> {
    let mut names: Vec<&String> = names.iter().filter(|n| !n.is_empty()).collect();
    names.sort_by_key(|n| n.starts_with('_'));
    let modules: Vec<(String, Vec<TestFunction>)> = facts::test_files(root)
        .into_iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(&file).ok()?;
            let path = file.strip_prefix(root).ok()?.to_string_lossy().into_owned();
            Some((path, test_functions(&text)))
        })
        .collect();
    for name in names {
        let mut found: Vec<(&str, &TestFunction)> = modules
            .iter()
            .flat_map(|(path, tests)| tests.iter().map(move |t| (path.as_str(), t)))
            .filter(|(_, t)| mentions(&without_header(&t.text), name))
            .collect();
        found.sort_by_key(|(path, t)| {
            (!preferred.iter().any(|p| p == path), t.fixtures.len(), t.text.lines().count())
        });
        if let Some((path, test)) = found.first() {
            return Some(Example { path: path.to_string(), calls: name.clone(), test: (*test).clone() });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#"import pytest
from pkg.core import merge, Config


@pytest.fixture
def config():
    return Config()


def helper():
    return merge({}, {})


@pytest.mark.parametrize("a, b", [(1, 2)])
def test_merge_numbers(a, b):
    # merge adds
    assert merge(
        a, b
    ) == 3


class TestConfig:
    def test_strict(self, config, tmp_path):
        assert config.strict is False

    def setup_method(self):
        pass


def test_loading_uses_fixture(config):
    assert merge(config, {}) == {}
"#;

    #[test]
    fn test_functions_with_their_decorators_classes_and_fixtures() {
        let tests = test_functions(MODULE);
        let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["test_merge_numbers", "test_strict", "test_loading_uses_fixture"]);
        assert_eq!(
            tests[0].text,
            "@pytest.mark.parametrize(\"a, b\", [(1, 2)])\ndef test_merge_numbers(a, b):\n    # merge adds\n    assert merge(\n        a, b\n    ) == 3"
        );
        assert!(tests[0].fixtures.is_empty(), "parametrized names are no fixtures: {:?}", tests[0].fixtures);
        assert_eq!(tests[1].class.as_deref(), Some("TestConfig"));
        assert_eq!(
            tests[1].text,
            "def test_strict(self, config, tmp_path):\n    assert config.strict is False"
        );
        assert_eq!(tests[1].fixtures, ["config"]);
        assert_eq!(tests[2].class, None, "a function after the class is no method");
        assert_eq!(tests[2].fixtures, ["config"]);
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        dir
    }

    #[test]
    fn the_example_prefers_the_changed_module_then_no_fixtures_then_short() {
        let other = "from pkg.core import merge\n\ndef test_short():\n    assert merge(1, 2) == 3\n";
        let dir =
            tree(&[("tests/test_core.py", MODULE), ("tests/test_other.py", other), ("pkg/core.py", "")]);
        let names = vec!["_private".to_string(), "merge".to_string()];
        let none: Vec<String> = Vec::new();
        let found = example(dir.path(), &names, &none).unwrap();
        assert_eq!((found.path.as_str(), found.test.name.as_str()), ("tests/test_other.py", "test_short"));
        assert_eq!(found.calls, "merge");
        let changed = vec!["tests/test_core.py".to_string()];
        let found = example(dir.path(), &names, &changed).unwrap();
        assert_eq!(found.test.name, "test_merge_numbers", "in the changed module, the one with no fixture");
        assert_eq!(
            found.shown(3),
            "# tests/test_core.py\n@pytest.mark.parametrize(\"a, b\", [(1, 2)])\ndef test_merge_numbers(a, b):\n    # merge adds\n    # … 3 more lines"
        );
    }

    #[test]
    fn names_in_comments_strings_or_longer_words_do_not_count() {
        let text = "def test_a():\n    # strict\n    assert 'strict' != x.strictly\n";
        let dir = tree(&[("tests/test_a.py", text)]);
        assert_eq!(example(dir.path(), &["strict".to_string()], &[]), None);
        let dir = tree(&[("tests/test_a.py", "def test_a():\n    assert x.strict\n")]);
        let found = example(dir.path(), &["strict".to_string()], &[]).unwrap();
        assert_eq!(found.shown(24), "# tests/test_a.py\ndef test_a():\n    assert x.strict");
    }
}
