//! Two slips of a small model's test mended before it runs, both seen on real PRs: it copies the
//! project's test modules' helper imports (`from tests.base import ALL_FIELDS, User`) that it
//! then never uses, which makes the whole test "import the project's tests"; and it uses a name
//! the project's tests import (`fields.DateTime`) without importing it, which fails on both sides
//! with a NameError that says nothing of the code. A used helper import stays: that test does
//! lean on the project's tests and is judged so.

use super::source::{code_only, imports};

/// `code` with its unused imports of the project's tests left out and, for each name it uses
/// but never binds, the one line of `test_imports` (how the project's tests import the module)
/// that binds it put in front.
pub fn mended(code: &str, test_imports: &[String]) -> String {
    let plain = code_only(code);
    let lines: Vec<&str> = code.lines().collect();
    let plain_lines: Vec<&str> = plain.lines().collect();
    // Uses of a name outside the import statements: a helper imported on two lines is still unused.
    let body_only: String =
        plain_lines.iter().filter(|l| imports(l).is_empty()).map(|l| format!("{l}\n")).collect();
    let mut kept: Vec<&str> = Vec::with_capacity(lines.len());
    for (at, line) in lines.iter().enumerate() {
        let statement = plain_lines.get(at).copied().unwrap_or("");
        let unused_helper = imports(statement).first().is_some_and(|i| {
            matches!(i.top(), "tests" | "test" | "testing" | "conftest")
                && !i.binds.is_empty()
                && i.binds.iter().all(|b| uses(&body_only, b) == 0)
        });
        // One line only: a parenthesised list over several lines is left as it is.
        if unused_helper && !statement.contains('(') && !line.starts_with([' ', '\t']) {
            continue;
        }
        kept.push(line);
    }
    let body = kept.join("\n");
    let plain = code_only(&body);
    let bound: Vec<String> =
        imports(&plain).into_iter().flat_map(|i| i.binds).chain(defined(&plain)).collect();
    let mut added: Vec<&str> = Vec::new();
    for line in test_imports {
        for name in imports(line).into_iter().flat_map(|i| i.binds) {
            if bound.contains(&name) || uses(&plain, &name) == 0 {
                continue;
            }
            if let Some(chosen) = import_for(&name, test_imports)
                && !added.contains(&chosen)
            {
                added.push(chosen);
            }
        }
    }
    let mut out: String = added.iter().map(|l| format!("{l}\n")).collect();
    out.push_str(&body);
    if code.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The line of `test_imports` to put in for `name`: of the lines that bind it, the shortest, when
/// they all import it from one module (`from marshmallow import fields` and `from marshmallow
/// import Schema, fields`); two modules leave nothing to choose by.
fn import_for<'a>(name: &str, test_imports: &'a [String]) -> Option<&'a str> {
    let binding: Vec<(&str, String)> = test_imports
        .iter()
        .filter_map(|l| {
            let from = imports(l).into_iter().find(|i| i.binds.iter().any(|b| b == name))?;
            Some((l.as_str(), from.module))
        })
        .collect();
    let (_, module) = binding.first()?;
    if binding.iter().any(|(_, m)| m != module) {
        return None;
    }
    binding.iter().map(|(l, _)| *l).min_by_key(|l| l.len())
}

/// How often `name` occurs in `code` as a whole word not preceded by a dot (an attribute of
/// something else is not the name).
fn uses(code: &str, name: &str) -> usize {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name)
        .filter(|(at, _)| {
            let before = code[..*at].chars().next_back();
            let after = code[at + name.len()..].chars().next();
            !before.is_some_and(|c| word(c) || c == '.') && !after.is_some_and(word)
        })
        .count()
}

/// The names `code` defines at its top level or in a function: `def`, `class`, simple
/// assignments and `for`/`with … as` targets.
fn defined(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut out = Vec::new();
    for line in code.lines().map(str::trim) {
        let line = line.strip_prefix("async ").unwrap_or(line);
        if let Some(rest) = line.strip_prefix("def ").or_else(|| line.strip_prefix("class ")) {
            out.push(ident(rest));
        } else if let Some(rest) = line.strip_prefix("for ") {
            out.extend(rest.split(" in ").next().unwrap_or("").split(',').map(|t| ident(t.trim())));
        } else if let Some((_, target)) = line.split_once(" as ") {
            out.push(ident(target.trim()));
        } else if let Some((target, _)) = line.split_once('=')
            && !target.ends_with(['=', '!', '<', '>'])
        {
            out.extend(target.split(',').map(|t| ident(t.trim())));
        }
        // A function's parameters are bound inside it.
        if let Some(open) = line.find('(')
            && (line.starts_with("def ") || line.starts_with("async def "))
        {
            let params = &line[open + 1..line.rfind(')').unwrap_or(line.len())];
            out.extend(params.split(',').map(|p| ident(p.trim().trim_start_matches('*'))));
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unused_helper_import_goes_and_a_missing_project_import_comes() {
        let code = "import pytest\nfrom tests.base import ALL_FIELDS, User, central\n\ndef test_none():\n    field = fields.DateTime(allow_none=True)\n    assert field.deserialize(None) is None\n";
        let test_imports =
            vec!["from marshmallow import fields".to_string(), "from marshmallow import Schema".to_string()];
        assert_eq!(
            mended(code, &test_imports),
            "from marshmallow import fields\nimport pytest\n\ndef test_none():\n    field = fields.DateTime(allow_none=True)\n    assert field.deserialize(None) is None\n"
        );
    }

    #[test]
    fn a_helper_imported_twice_is_still_unused_and_one_module_imported_on_two_lines_is_no_ambiguity() {
        // marshmallow 2264's first answer, and the project's tests importing `fields` two ways.
        let code = "import pytest
from tests.base import ALL_FIELDS, User, central
from tests.base import assert_date_equal, central

def test_none():
    field = fields.DateTime(allow_none=True)
    assert field.deserialize(None) is None
";
        let test_imports = vec![
            "from marshmallow import Schema, fields, validate".to_string(),
            "from marshmallow import fields".to_string(),
        ];
        assert_eq!(
            mended(code, &test_imports),
            "from marshmallow import fields
import pytest

def test_none():
    field = fields.DateTime(allow_none=True)
    assert field.deserialize(None) is None
"
        );
    }

    #[test]
    fn a_used_helper_import_and_names_the_test_binds_itself_stay_as_they_are() {
        let code = "from tests.base import User\nfrom marshmallow import fields as f\n\ndef test_u():\n    fields = f\n    assert User(fields)\n";
        let test_imports = vec!["from marshmallow import fields".to_string()];
        assert_eq!(mended(code, &test_imports), code);
    }

    #[test]
    fn a_name_two_import_lines_bind_is_not_guessed_and_attributes_are_not_names() {
        let code = "def test_a():\n    assert obj.fields == dump(1)\n";
        let test_imports = vec![
            "from marshmallow import fields".to_string(),
            "from pkg.json import dump".to_string(),
            "from pkg.yaml import dump".to_string(),
        ];
        assert_eq!(mended(code, &test_imports), code);
    }
}
