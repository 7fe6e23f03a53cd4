//! Two slips of a small model's test mended before it runs, both seen on real PRs: it copies the
//! project's test modules' helper imports (`from tests.base import ALL_FIELDS, User`) that it
//! then never uses, which makes the whole test "import the project's tests"; and it uses a name
//! the project's tests import (`fields.DateTime`) without importing it, which fails on both sides
//! with a NameError that says nothing of the code. A used helper import stays: that test does
//! lean on the project's tests and is judged so. Where a test runs among the project's tests, a
//! third slip: a fixture of the project's (`project`) redefined in the test with a body that does
//! nothing, so the test gets None instead of the project's object. And a fourth: a module of the
//! standard library (`ipaddress.ip_address`), or the project's own package (`h5py.h5p`), used and
//! never imported.

use super::source::{code_only, imports};

/// What a test is mended with: how the project's tests import its modules, and the fixtures its
/// conftest files give a test that runs among them.
#[derive(Debug, Clone, Default)]
pub struct Mending {
    pub imports: Vec<String>,
    pub fixtures: Vec<String>,
    /// The project's top-level packages (`h5py`), put in like a standard module when a test uses
    /// one as `h5py.File(...)` and never imports it.
    pub packages: Vec<String>,
}

impl Mending {
    /// `code` mended: its imports of the project ([`mended`]), its stand-ins of the project's
    /// fixtures left out ([`without_stub_fixtures`]), and the standard modules and the project's
    /// packages it uses without importing them put in ([`with_modules`]).
    pub fn apply(&self, code: &str) -> String {
        let code = without_stub_fixtures(&mended(code, &self.imports), &self.fixtures);
        let packages = self.packages.iter().map(String::as_str).filter(|p| !p.contains('.'));
        with_modules(&code, STANDARD_MODULES.iter().copied().chain(packages))
    }
}

/// Modules of Python's standard library a small model uses in a test and forgets to import
/// (`ipaddress.ip_address(...)` with no `import ipaddress`, `tokenize.generate_tokens` with no
/// `import tokenize`: a NameError on both sides).
const STANDARD_MODULES: [&str; 40] = [
    "ast",
    "base64",
    "codecs",
    "collections",
    "contextlib",
    "copy",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "gc",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "math",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "random",
    "re",
    "string",
    "struct",
    "sys",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "tokenize",
    "types",
    "typing",
    "unicodedata",
    "uuid",
    "warnings",
    "zlib",
];

/// `code` with `import M` put in front for each module `M` of [`STANDARD_MODULES`] it uses as
/// `M.something` without binding `M`.
pub fn with_standard_modules(code: &str) -> String {
    with_modules(code, STANDARD_MODULES.iter().copied())
}

/// `code` with `import M` put in front for each of `modules` (top-level names) it uses as
/// `M.something` without binding `M`, once each.
fn with_modules<'a>(code: &str, modules: impl Iterator<Item = &'a str>) -> String {
    let plain = code_only(code);
    let bound = bound(&plain);
    let mut missing: Vec<&str> = Vec::new();
    for m in modules {
        if !missing.contains(&m) && !bound.iter().any(|b| b == m) && attribute_uses(&plain, m) {
            missing.push(m);
        }
    }
    if missing.is_empty() {
        return code.to_string();
    }
    let mut out: String = missing.iter().map(|m| format!("import {m}\n")).collect();
    out.push_str(code);
    out
}

/// Whether `name` occurs in `code` as a name ([`name_at`]) followed by a dot.
fn attribute_uses(code: &str, name: &str) -> bool {
    code.match_indices(name)
        .any(|(at, _)| name_at(code, at, name) && code[at + name.len()..].starts_with('.'))
}

/// Whether a line of a fixture's body does nothing: a comment, `pass`, `...`, a bare `return`
/// (or `return None`), or a docstring on one line.
fn does_nothing(line: &str) -> bool {
    let t = line.trim();
    let one_line_docstring = |q: &str| t.len() >= 2 * q.len() && t.starts_with(q) && t.ends_with(q);
    t.is_empty()
        || t.starts_with('#')
        || matches!(t, "pass" | "..." | "return" | "return None")
        || one_line_docstring("\"\"\"")
        || one_line_docstring("'''")
}

/// `code` without the fixtures it defines at its top level that stand in for one of the project's
/// `fixtures` of the same name and do nothing (a small model writes `def project(): pass` for the
/// conftest's `project`, and every test that takes it then fails on both sides with an
/// AttributeError on None): the project's own fixture then serves. A fixture with a body stays.
pub fn without_stub_fixtures(code: &str, fixtures: &[String]) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let is_decorator = line.starts_with("@pytest.fixture") || line.starts_with("@fixture");
        let def = lines.get(i + 1).copied().unwrap_or("");
        let name: String = def
            .strip_prefix("def ")
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if is_decorator && def.trim_end().ends_with(':') && fixtures.contains(&name) {
            let end = (i + 2..lines.len())
                .find(|&k| !lines[k].trim().is_empty() && !lines[k].starts_with([' ', '\t']))
                .unwrap_or(lines.len());
            if lines[i + 2..end].iter().all(|l| does_nothing(l)) {
                i = end;
                continue;
            }
        }
        out.push(line);
        i += 1;
    }
    let mut text = out.join("\n");
    if code.ends_with('\n') {
        text.push('\n');
    }
    text
}

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
            super::facts::is_test_package(i.top())
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
    let bound = bound(&plain);
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
    code.match_indices(name).filter(|(at, _)| name_at(code, *at, name)).count()
}

/// Whether the occurrence of `name` at byte `at` of `code` is the name itself: a whole word, not
/// preceded by a dot (an attribute of something else is not the name).
fn name_at(code: &str, at: usize, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let before = code[..at].chars().next_back();
    let after = code[at + name.len()..].chars().next();
    !before.is_some_and(|c| word(c) || c == '.') && !after.is_some_and(word)
}

/// The names `plain` (code without strings and comments) binds: by its imports and by
/// [`defined`].
fn bound(plain: &str) -> Vec<String> {
    imports(plain).into_iter().flat_map(|i| i.binds).chain(defined(plain)).collect()
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
            // `f(x, key=1)` passes a keyword; it binds nothing.
            && !target.contains('(')
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
    fn a_standard_module_used_and_not_imported_is_put_in() {
        let code = "from marshmallow import fields\n\ndef test_a():\n    assert fields.IP().deserialize('::1') == ipaddress.ip_address('::1')\n";
        assert_eq!(with_standard_modules(code), format!("import ipaddress\n{code}"));
        // Imported already, bound otherwise, an attribute of something else, or only in a string.
        for code in [
            "import ipaddress\n\ndef test_a():\n    assert ipaddress.ip_address('::1')\n",
            "def test_a():\n    json = load()\n    assert json.x\n",
            "def test_a():\n    assert obj.json.x\n",
            "def test_a():\n    assert f('json.x')\n",
        ] {
            assert_eq!(with_standard_modules(code), code, "{code}");
        }
    }

    #[test]
    fn the_projects_own_package_used_and_not_imported_is_put_in() {
        // h5py 1468's second answer: `h5py.h5p...` with only pathlib and pytest imported.
        let code = "import pytest\n\ndef test_a(tmp_path):\n    plist = h5py.h5p.create(h5py.h5p.FILE_ACCESS)\n    assert plist\n";
        let mending =
            Mending { packages: vec!["h5py".into(), "zope.interface".into()], ..Mending::default() };
        assert_eq!(mending.apply(code), format!("import h5py\n{code}"));
        let imported = format!("import h5py\n{code}");
        assert_eq!(mending.apply(&imported), imported, "imported already");
        let real = "import pytest\nfrom pathlib import Path\n\n@pytest.fixture\ndef writable_file(tmp_path):\n    with Path(tmp_path / 'test.h5').open('w') as f:\n        return f\n\ndef test_set_fapl_split(writable_file):\n    # The reviewer asked.\n    prop_id = h5py.h5p.create(h5py.h5p.FILE_CREATE)\n    assert h5py.h5p.get_driver(prop_id) == h5py.h5fd.SPLIT\n";
        assert_eq!(mending.apply(real), format!("import h5py\n{real}"));
        // A keyword argument in a call (`meta_ext="-m.h5"`) binds nothing.
        let keyword = "def test_a():\n    h5py.h5p.set_fapl_split(plist, meta_ext='-m.h5')\n";
        assert_eq!(mending.apply(keyword), format!("import h5py\n{keyword}"));
        // Without the package named, nothing is put in.
        assert_eq!(Mending::default().apply(code), code);
    }

    #[test]
    fn a_stand_in_for_a_project_fixture_that_does_nothing_is_left_out() {
        let fixtures = ["project".to_string(), "core".to_string()];
        let code = "import pytest\n\n@pytest.fixture\ndef project():\n    # the project\n    pass\n\ndef test_a(project):\n    assert project.sources\n";
        assert_eq!(
            without_stub_fixtures(code, &fixtures),
            "import pytest\n\ndef test_a(project):\n    assert project.sources\n"
        );
        // A fixture that builds something, or one the project does not have, stays.
        let built = "import pytest\n\n@pytest.fixture\ndef project(tmp_path):\n    return make(tmp_path)\n\ndef test_a(project):\n    assert project\n";
        assert_eq!(without_stub_fixtures(built, &fixtures), built);
        let own = "import pytest\n\n@pytest.fixture\ndef thing():\n    pass\n\ndef test_a(thing):\n    assert thing is None\n";
        assert_eq!(without_stub_fixtures(own, &fixtures), own);
    }

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
