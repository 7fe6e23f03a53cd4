//! One candidate per check: a small model's test often puts the reviewer's exact case among four
//! other assertions, one of them wrong, and the whole test then fails on the fixed code too. Split,
//! each check (an `assert` statement or a `with pytest.raises(...)` block at the top level of a
//! test function's body) becomes a test file of its own: that function with only that check, its
//! other statements (the set-up) kept, and the file's other test functions left out. Read by lines
//! and indentation, not parsed: what this cannot read (a decorator it does not know, a check inside
//! a loop) stays as it is.

/// A test function in a file: where it starts (its `def`, or its first decorator) and ends, and
/// its checks as line ranges.
struct Function {
    start: usize,
    end: usize,
    checks: Vec<(usize, usize)>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Whether brackets opened on `lines` are all closed by its end (a statement's last line).
fn balanced(lines: &[&str]) -> bool {
    let mut depth: i64 = 0;
    for line in lines {
        let code = line.split(" #").next().unwrap_or(line);
        for c in code.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
    }
    depth <= 0
}

/// The test functions of `lines` at the file's top level.
fn functions(lines: &[&str]) -> Vec<Function> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let is_def =
            indent(line) == 0 && (line.starts_with("def test") || line.starts_with("async def test"));
        if !is_def {
            i += 1;
            continue;
        }
        let mut start = i;
        while start > 0 && lines[start - 1].starts_with('@') {
            start -= 1;
        }
        // The signature may span lines; the body starts after the line that ends with `:`.
        let mut body = i;
        while body < lines.len() && !lines[body].trim_end().ends_with(':') {
            body += 1;
        }
        body += 1;
        let mut end = body;
        while end < lines.len() && (lines[end].trim().is_empty() || indent(lines[end]) > 0) {
            end += 1;
        }
        let body_indent = lines[body..end].iter().find(|l| !l.trim().is_empty()).map_or(4, |l| indent(l));
        let mut checks = Vec::new();
        let mut j = body;
        while j < end {
            let l = lines[j];
            if l.trim().is_empty() || indent(l) != body_indent {
                j += 1;
                continue;
            }
            let t = l.trim_start();
            let from = j;
            if t.starts_with("with pytest.raises") || t.starts_with("with pytest.warns") {
                j += 1;
                while j < end && (lines[j].trim().is_empty() || indent(lines[j]) > body_indent) {
                    j += 1;
                }
                checks.push((from, j));
                continue;
            }
            // Any statement, to its last line (brackets closed).
            j += 1;
            while j < end && !balanced(&lines[from..j]) {
                j += 1;
            }
            if t.starts_with("assert ") || t == "assert" {
                checks.push((from, j));
            }
        }
        out.push(Function { start, end, checks });
        i = end;
    }
    out
}

/// The test files `code` splits into, one per check, when it has two checks or more; none
/// otherwise. Blank lines left at a removed check's place are dropped with it.
pub fn one_check_each(code: &str) -> Vec<String> {
    one_check_each_past(code, None)
}

/// As [`one_check_each`], when the fixed side failed at line `failed_at` (from 1) of `code`:
/// a function that failed there before its first check (its set-up raised) fails the same way
/// whatever check it keeps, so none of its variants is made.
pub fn one_check_each_past(code: &str, failed_at: Option<usize>) -> Vec<String> {
    let lines: Vec<&str> = code.lines().collect();
    let functions = functions(&lines);
    if functions.iter().map(|f| f.checks.len()).sum::<usize>() < 2 {
        return Vec::new();
    }
    let in_set_up = |f: &Function| {
        failed_at.is_some_and(|n| {
            let first_check = f.checks.first().map_or(f.end, |c| c.0);
            (f.start..first_check).contains(&(n.saturating_sub(1)))
        })
    };
    let mut out = Vec::new();
    for (fi, f) in functions.iter().enumerate() {
        if in_set_up(f) {
            continue;
        }
        for ci in 0..f.checks.len() {
            out.push(keeping(&lines, &functions, fi, ci));
        }
    }
    out
}

/// The lines of the file with only check `ci` of function `fi`: every other test function and
/// every other check of `fi` left out.
fn keeping(lines: &[&str], functions: &[Function], fi: usize, ci: usize) -> String {
    let f = &functions[fi];
    let mut text = String::new();
    let mut n = 0;
    while n < lines.len() {
        if let Some(other) = functions.iter().enumerate().find(|(k, g)| *k != fi && g.start == n) {
            n = other.1.end;
            continue;
        }
        if let Some((_, to)) =
            f.checks.iter().enumerate().find(|(k, (a, _))| *k != ci && *a == n).map(|(_, c)| *c)
        {
            n = to;
            continue;
        }
        text.push_str(lines[n]);
        text.push('\n');
        n += 1;
    }
    text
}

/// `code` with only the check that starts at line `line` (from 1): its test function, with its
/// set-up, and no other check or test function. `None` when no check starts there, or when that
/// check is the file's only one (the file is already that test).
pub fn only_check_at(code: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = code.lines().collect();
    let functions = functions(&lines);
    if functions.iter().map(|f| f.checks.len()).sum::<usize>() < 2 {
        return None;
    }
    let at = line.checked_sub(1)?;
    functions.iter().enumerate().find_map(|(fi, f)| {
        let ci = f.checks.iter().position(|c| c.0 == at)?;
        Some(keeping(&lines, &functions, fi, ci))
    })
}

/// The line (from 1) of the test file `name` at which a pytest run's output says it failed: the
/// first traceback entry in it (`/curate-test/test_x.py:10: AttributeError`).
pub fn failed_line(output: &str, name: &str) -> Option<usize> {
    let marker = format!("{name}:");
    output.lines().find_map(|l| {
        let rest = &l[l.find(&marker)? + marker.len()..];
        let (n, after) = rest.split_once(':')?;
        (after.starts_with(' ') || after.is_empty()).then(|| n.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_whose_set_up_failed_is_not_split() {
        let code = "from pkg import Project\n\ndef test_sources():\n    project = Project(core=Core())\n    assert len(project.sources) == 1\n    assert project.sources[0].name == 'pypi'\n\ndef test_other():\n    assert f(1) == 2\n    assert f(2) == 3\n";
        assert_eq!(one_check_each(code).len(), 4);
        let output = "    def test_sources():\n>       project = Project(core=Core())\nE       NameError: name 'Core' is not defined\n\n/curate-test/test_c.py:4: NameError\nFAILED ../curate-test/test_c.py::test_sources - NameError\n";
        let at = failed_line(output, "test_c.py");
        assert_eq!(at, Some(4));
        let past = one_check_each_past(code, at);
        assert_eq!(past.len(), 2, "only test_other's checks: {past:?}");
        assert!(past.iter().all(|v| v.contains("def test_other") && !v.contains("def test_sources")));
        // A failure at a check is no set-up failure: every variant is made.
        assert_eq!(one_check_each_past(code, Some(6)).len(), 4);
        assert_eq!(failed_line("FAILED ../curate-test/test_c.py::test_sources", "test_c.py"), None);
    }

    #[test]
    fn one_check_is_kept_by_its_line() {
        let code = "from m import f\n\n\ndef test_a():\n    x = f(1)\n    assert x == 2\n    assert f(2) == 3\n\n\ndef test_b():\n    assert f(0) == 0\n";
        assert_eq!(
            only_check_at(code, 7).as_deref(),
            Some("from m import f\n\n\ndef test_a():\n    x = f(1)\n    assert f(2) == 3\n\n\n")
        );
        assert_eq!(
            only_check_at(code, 11).as_deref(),
            Some("from m import f\n\n\ndef test_b():\n    assert f(0) == 0\n")
        );
        assert_eq!(only_check_at(code, 5), None, "not a check");
        assert_eq!(only_check_at("def test_a():\n    assert f(1) == 2\n", 2), None, "the only check");
    }

    const FIVE: &str = "import pytest\nfrom m import f\n\n\ndef test_f():\n    x = f(1)\n    assert x == 2\n    assert f(\n        [1],\n    ) is False\n    with pytest.raises(ValueError):\n        f(None)\n    assert f(0) == 0\n\n\n@pytest.mark.parametrize(\"v\", [1])\ndef test_g(v):\n    assert f(v)\n";

    #[test]
    fn each_check_becomes_a_file_with_its_set_up_and_no_other_test() {
        let split = one_check_each(FIVE);
        assert_eq!(split.len(), 5);
        assert_eq!(
            split[0],
            "import pytest\nfrom m import f\n\n\ndef test_f():\n    x = f(1)\n    assert x == 2\n\n\n"
        );
        assert!(
            split[1].contains("    assert f(\n        [1],\n    ) is False\n")
                && !split[1].contains("x == 2"),
            "{}",
            split[1]
        );
        assert!(
            split[2].contains("with pytest.raises(ValueError):\n        f(None)\n")
                && !split[2].contains("assert"),
            "{}",
            split[2]
        );
        assert!(split[4].contains("@pytest.mark.parametrize(\"v\", [1])\ndef test_g(v):\n    assert f(v)\n"));
        assert!(!split[4].contains("def test_f"), "{}", split[4]);
    }

    #[test]
    fn a_test_with_one_check_is_not_split() {
        assert!(one_check_each("def test_a():\n    y = 1\n    assert y\n").is_empty());
        assert!(
            one_check_each(
                "def test_a():\n    for i in range(3):\n        assert i < 3\n        assert i >= 0\n"
            )
            .is_empty()
        );
    }
}
