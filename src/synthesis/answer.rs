//! Getting one pytest file out of what a model wrote: the first fenced Python block, or the whole
//! answer when it is bare code. An answer with no test function in it is not a test.

/// Why an answer holds no test; what the model is told of it is the feedback prompt's
/// (`oracle::Problem::NotATest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotATest {
    /// Cut off at the length limit before its first test ended.
    CutOff,
    Empty,
    /// Prose with no fenced Python block.
    NoCodeBlock,
    /// Code with no pytest test function in it.
    NoTestFunction,
}

/// The test file in `answer`, or why there is none. When the answer was cut off at the token limit,
/// its last top-level block is unfinished and is dropped.
pub fn test_code(answer: &str, truncated: bool) -> Result<String, NotATest> {
    let mut code = fenced(answer).unwrap_or_else(|| answer.trim().to_string());
    if truncated {
        code = without_last_block(&code);
    }
    if code.is_empty() {
        return Err(if truncated { NotATest::CutOff } else { NotATest::Empty });
    }
    let has_test = code.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("def test") || l.starts_with("async def test") || l.starts_with("class Test")
    });
    if !has_test && truncated {
        return Err(NotATest::CutOff);
    }
    if !has_test {
        return Err(if fenced(answer).is_none() && !looks_like_code(&code) {
            NotATest::NoCodeBlock
        } else {
            NotATest::NoTestFunction
        });
    }
    Ok(format!("{}{}\n", missing_pytest_import(&code), code.trim_end()))
}

/// `import pytest` when the code uses `pytest.` without importing it: the commonest slip of a small
/// model, which would otherwise fail on both sides with a NameError that says nothing of the code.
fn missing_pytest_import(code: &str) -> &'static str {
    let imports = code.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("import pytest") || (l.starts_with("import ") && l.contains(" pytest"))
    });
    if code.contains("pytest.") && !imports { "import pytest\n" } else { "" }
}

/// The first fenced block tagged python (or untagged); a block cut off at the token limit counts
/// up to the end of the answer.
fn fenced(answer: &str) -> Option<String> {
    let mut rest = answer;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let (tag, body) = after.split_once('\n').unwrap_or((after, ""));
        let tag = tag.trim().to_lowercase();
        let end = body.find("```").unwrap_or(body.len());
        if tag.is_empty() || tag == "python" || tag == "py" || tag == "python3" {
            return Some(body[..end].trim_matches('\n').to_string());
        }
        rest = &body[(end + 3).min(body.len())..];
    }
    None
}

/// `code` up to the start of its last top-level statement (with the decorators and comments
/// right above it).
fn without_last_block(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let top = |l: &str| !l.is_empty() && !l.starts_with([' ', '\t', ')', ']', '}']);
    let Some(mut cut) = lines.iter().rposition(|l| top(l)) else { return code.to_string() };
    while cut > 0 && (lines[cut - 1].starts_with('@') || lines[cut - 1].starts_with('#')) {
        cut -= 1;
    }
    lines[..cut].join("\n").trim_end().to_string()
}

fn looks_like_code(text: &str) -> bool {
    text.lines().next().is_some_and(|l| {
        let l = l.trim_start();
        l.starts_with("import ") || l.starts_with("from ") || l.starts_with("def ") || l.starts_with('#')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_import_of_pytest_is_added_and_a_present_one_kept() {
        let used = "from m import f\n\ndef test_f():\n    with pytest.raises(ValueError):\n        f()";
        let code = test_code(&format!("```python\n{used}\n```"), false).unwrap();
        assert_eq!(code, format!("import pytest\n{used}\n"));
        let imported = format!("import pytest\n{used}");
        assert_eq!(test_code(&imported, false).unwrap(), format!("{imported}\n"));
        let unused = "from m import f\n\ndef test_f():\n    assert f() == 1";
        assert_eq!(test_code(unused, false).unwrap(), format!("{unused}\n"));
    }

    #[test]
    fn the_first_python_block_is_taken() {
        let a = "Here is a test:\n```text\nnot this\n```\n```python\nimport x\n\ndef test_a():\n    assert x.f()\n```\nand another\n```python\ndef test_b(): pass\n```";
        assert_eq!(test_code(a, false).unwrap(), "import x\n\ndef test_a():\n    assert x.f()\n");
    }

    #[test]
    fn bare_code_and_cut_off_blocks_are_read() {
        assert_eq!(
            test_code("def test_a():\n    assert 1\n", false).unwrap(),
            "def test_a():\n    assert 1\n"
        );
        let cut = "```python\ndef test_a():\n    assert f(1) ==";
        assert_eq!(test_code(cut, false).unwrap(), "def test_a():\n    assert f(1) ==\n");
    }

    #[test]
    fn a_cut_off_answer_loses_its_unfinished_last_block() {
        let cut = "```python\nimport x\n\ndef test_a():\n    assert x.f()\n\n\n@pytest.mark.slow\ndef test_b():\n    assert x.g(\n";
        assert_eq!(test_code(cut, true).unwrap(), "import x\n\ndef test_a():\n    assert x.f()\n");
        assert!(
            test_code("```python\ndef test_a():\n    assert (\n", true).is_err_and(|e| e == NotATest::CutOff),
            "nothing complete is left"
        );
        let only_imports = test_code("```python\nimport x\n\ndef test_a():\n    assert (\n", true);
        assert_eq!(only_imports, Err(NotATest::CutOff));
    }

    #[test]
    fn answers_without_a_test_say_why() {
        assert_eq!(test_code("", false), Err(NotATest::Empty));
        assert_eq!(test_code("I cannot write this test.", false), Err(NotATest::NoCodeBlock));
        assert_eq!(test_code("```python\nx = 1\n```", false), Err(NotATest::NoTestFunction));
    }
}
