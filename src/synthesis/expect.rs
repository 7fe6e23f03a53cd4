//! The fixed code's value as a test's expectation. A small model often picks the right call for a
//! reviewer's concern and then expects a wrong value of it: `assert clamp(5, 0, 3) == 5`, where the
//! fixed code gives 3. Such a test fails on both sides and is lost, although its call tells the two
//! versions apart. When the fixed side failed at a check `assert LEFT == EXPECTED` (or `is`) and
//! pytest showed LEFT's value as a plain literal, the same test expecting that literal, cut to that
//! one check when it had several (the others may be about other parts of the fix), is a new
//! candidate, judged like any other: it must still fail on the reviewed code, and the relevance
//! gate and the partial revert still decide whether the difference is the comment's.
//!
//! Read by lines and a small scanner of Python's brackets and strings, not parsed: a check this
//! cannot read (over several lines, with `and`, a comparison chain) yields nothing.

use super::split::{failed_line, only_check_at};

/// Longest value, in characters, taken from pytest's output: past it pytest may have cut the
/// value's middle out.
const MAX_VALUE_CHARS: usize = 120;

/// What changed in a test that now expects the fixed code's value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Expected {
    /// The test file with the new expectation.
    #[serde(skip)]
    pub code: String,
    /// The check's line, from 1.
    pub line: usize,
    /// What the model expected, as written.
    pub was: String,
    /// What the fixed code gave, as pytest showed it.
    pub now: String,
    /// Whether the test was cut to that one check (its other checks, on other parts of the fix or
    /// of the code, left out).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub alone: bool,
}

/// The comparison operators a check may hold at its top level for its expectation to be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Is,
}

/// Where, in `text`, each top-level (outside brackets and strings) occurrence of a word or
/// operator of `words` starts; `None` when the text's strings or brackets do not close.
fn top_level(text: &str, words: &[&str]) -> Option<Vec<(usize, usize)>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let (mut depth, mut i) = (0i32, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if i >= bytes.len() {
                    return None;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 => {
                if let Some(k) = words.iter().position(|w| text[i..].starts_with(w)) {
                    found.push((i, k));
                    i += words[k].len();
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (depth == 0).then_some(found)
}

/// Operators that make a check other than one plain comparison.
const OTHER: [&str; 10] = [" != ", " < ", " > ", " <= ", " >= ", " in ", " not ", " and ", " or ", " if "];

/// A check's operand pair: `assert LEFT OP RIGHT[, message]`, split at its one top-level
/// comparison; `None` for any other shape.
fn comparison(check: &str) -> Option<(&str, Op, &str)> {
    let body = check.trim().strip_prefix("assert ")?;
    // A message after a top-level comma stays where it is.
    let commas = top_level(body, &[","])?;
    let body = commas.first().map_or(body, |(at, _)| &body[..*at]);
    let mut words = vec![" == ", " is "];
    words.extend(OTHER);
    let found = top_level(body, &words)?;
    let [(at, k)] = found.as_slice() else { return None };
    let op = match k {
        0 => Op::Eq,
        1 => Op::Is,
        _ => return None,
    };
    let (left, right) = (&body[..*at], &body[at + words[*k].len()..]);
    (!left.trim().is_empty() && !right.trim().is_empty()).then_some((left.trim(), op, right.trim()))
}

/// Whether `text` is a Python literal pytest printed whole: numbers, strings, `True`, `False`,
/// `None`, and lists, tuples, sets and dicts of them; nothing cut short (`...`), no object's repr.
fn is_literal(text: &str) -> bool {
    if text.is_empty() || text.chars().count() > MAX_VALUE_CHARS || text.contains("...") {
        return false;
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' || c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            if i >= bytes.len() {
                return false;
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            // A bytes or raw string's prefix, right before its quote.
            let prefix = matches!(word, "b" | "r" | "br" | "rb")
                && i < bytes.len()
                && matches!(bytes[i], b'\'' | b'"');
            if !(matches!(word, "True" | "False" | "None") || prefix) {
                return false;
            }
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                // Digits, a decimal point, an exponent (`1e-05`) and nothing named after them.
                if bytes[i].is_ascii_alphabetic() && bytes[i] != b'e' {
                    return false;
                }
                if bytes[i] == b'e' && matches!(bytes.get(i + 1), Some(b'-' | b'+')) {
                    i += 1;
                }
                i += 1;
            }
        } else if b"[](){},: -+.".contains(&c) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

/// The left operand's value of the comparison pytest reported for the failure at the location line
/// `at` of `output`: the last `E       assert ...` line before it.
fn reported_left(output: &str, location: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let end = lines.iter().position(|l| l.contains(location))?;
    let shown = lines[..end].iter().rev().find_map(|l| {
        let rest = l.strip_prefix('E')?.trim_start();
        let rest = rest.strip_prefix("AssertionError: ").unwrap_or(rest);
        rest.starts_with("assert ").then_some(rest)
    })?;
    let (left, _, _) = comparison(shown)?;
    is_literal(left).then(|| left.to_string())
}

/// `code` (the test file `name`) expecting what the fixed code gave, from the output of its run on
/// the fixed code: `None` when that run did not fail at a plain one-line comparison with an
/// expectation, or when pytest did not show the value whole, or when it is what the test expected.
pub fn from_fixed(code: &str, fixed_output: &str, name: &str) -> Option<Expected> {
    let line = failed_line(fixed_output, name)?;
    let text = code.lines().nth(line.checked_sub(1)?)?;
    let (_, op, right) = comparison(text)?;
    let location = format!("{name}:{line}:");
    let now = reported_left(fixed_output, &location)?;
    if op == Op::Is && !matches!(now.as_str(), "True" | "False" | "None") {
        return None;
    }
    if now == right {
        return None;
    }
    // The expectation is the comparison's right side: a slice of `text`, replaced where it lies.
    let at = right.as_ptr() as usize - text.as_ptr() as usize;
    let new_line = format!("{}{}{}", &text[..at], now, &text[at + right.len()..]);
    let code = code
        .lines()
        .enumerate()
        .map(|(k, l)| if k + 1 == line { new_line.as_str() } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    // One check of several: the others may test other parts of the fix; only this one is the
    // model's call with the fixed code's answer.
    let (code, alone) = match only_check_at(&code, line) {
        Some(one) => (one, true),
        None => (code, false),
    };
    Some(Expected { code, line, was: right.to_string(), now, alone })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output of pytest -q for a failed `==` check, as it ran in the sandbox.
    fn failed_at(line: usize, shown: &str) -> String {
        format!(
            "F                                                                        [100%]\n=================================== FAILURES ===================================\n____________________________________ test_a ____________________________________\n\n    def test_a():\n>       assert f(1) == 4\n{shown}\n\n/curate-test/test_c.py:{line}: AssertionError\n=========================== short test summary info ============================\nFAILED ../curate-test/test_c.py::test_a - assert 3 == 4\n1 failed in 0.01s\n"
        )
    }

    #[test]
    fn a_wrong_expectation_becomes_the_fixed_codes_value() {
        let code = "from m import f\n\n\ndef test_a():\n    assert f(1) == 4\n";
        let out = failed_at(5, "E       assert 3 == 4\nE        +  where 3 = f(1)");
        let e = from_fixed(code, &out, "test_c.py").expect("an expectation");
        assert_eq!(e.code, "from m import f\n\n\ndef test_a():\n    assert f(1) == 3\n");
        assert_eq!((e.line, e.was.as_str(), e.now.as_str()), (5, "4", "3"));
        // The expectation is replaced where it stands, not where its text first occurs.
        let code = "def test_a():\n    assert f(4) == 4\n";
        let e = from_fixed(code, &failed_at(2, "E       assert 12 == 4"), "test_c.py").unwrap();
        assert_eq!(e.code, "def test_a():\n    assert f(4) == 12\n");
    }

    #[test]
    fn strings_lists_and_messages_keep_their_shape() {
        let code = "def test_a():\n    x = [f(1), 2]\n    assert x == [1, 2], \"x, [1, 2]\"\n";
        let out = failed_at(
            3,
            "E       AssertionError: x, [1, 2]\nE       assert [3, 2] == [1, 2]\nE         At index 0 diff: 3 != 1",
        );
        let e = from_fixed(code, &out, "test_c.py").expect("an expectation");
        assert!(e.code.contains("    assert x == [3, 2], \"x, [1, 2]\"\n"), "{}", e.code);
        assert!(!e.alone);
        let code = "def test_a():\n    assert str(f(1)) == \"4\"\n";
        let out = failed_at(2, "E       AssertionError: assert '3' == '4'\nE         - 4\nE         + 3");
        assert_eq!(from_fixed(code, &out, "test_c.py").unwrap().now, "'3'");
    }

    #[test]
    fn what_pytest_did_not_show_whole_or_cannot_be_written_is_left() {
        let code = "def test_a():\n    assert f(1) == 4\n";
        for shown in [
            "E       AssertionError: assert 'aaaaaaaa...aaaaaaaa' == 'b'",
            "E       assert <m.Thing object at 0x7f00> == 4",
            "E       assert Decimal('3') == 4",
            "E       assert (3 == 3) is False",
            "E       assert 4 == 4",
        ] {
            assert_eq!(from_fixed(code, &failed_at(2, shown), "test_c.py"), None, "{shown}");
        }
        // Another shape of check, or a failure elsewhere than at a check.
        for code in [
            "def test_a():\n    assert f(1) == 4 and g()\n",
            "def test_a():\n    assert f(1) >= 4\n",
            "def test_a():\n    x = f(1) == 4\n",
        ] {
            let out = failed_at(2, "E       assert 3 == 4");
            assert_eq!(from_fixed(code, &out, "test_c.py"), None, "{code}");
        }
    }

    #[test]
    fn of_several_checks_only_the_one_expecting_the_fixed_value_is_kept() {
        let code = "def test_a():\n    assert f(0) == 0\n    assert f(1) == 4\n\n\ndef test_b():\n    assert g() == 1\n";
        let e = from_fixed(code, &failed_at(3, "E       assert 3 == 4"), "test_c.py").unwrap();
        assert_eq!(e.code, "def test_a():\n    assert f(1) == 3\n\n\n");
        assert!(e.alone);
    }

    #[test]
    fn an_is_check_takes_only_a_singleton() {
        let code = "def test_a():\n    assert f([1]) is False\n";
        let e = from_fixed(code, &failed_at(2, "E       assert True is False"), "test_c.py").unwrap();
        assert!(e.code.contains("assert f([1]) is True"));
        assert_eq!(from_fixed(code, &failed_at(2, "E       assert 3 is False"), "test_c.py"), None);
    }

    #[test]
    fn literals_are_told_from_reprs() {
        for yes in ["3", "-1.5e-05", "'a b'", "b'x'", "[1, (2, 3)]", "{'a': None}", "True", "()"] {
            assert!(is_literal(yes), "{yes}");
        }
        for no in ["nan", "inf", "datetime.date(2020, 1, 1)", "<x>", "0x1f", "'unclosed", "[1, ...]"] {
            assert!(!is_literal(no), "{no}");
        }
    }
}
