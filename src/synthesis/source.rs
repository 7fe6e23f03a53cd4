//! Static reading of a generated pytest file, without running it: its imports, whether it calls the
//! project's code or only reads its text and API surface (the paper's behavioural and structural
//! tests), and whether it reaches for the network. Works on the text with comments and string
//! contents blanked, so words in a docstring or an assert message are not mistaken for code.

use serde::Serialize;

/// The text with `#` comments removed and the contents of string literals replaced by spaces (the
/// quotes stay), so positions and line numbers still match.
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            let triple = i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c;
            let quote_len = if triple { 3 } else { 1 };
            out.extend(std::iter::repeat_n(c, quote_len));
            i += quote_len;
            while i < chars.len() {
                if chars[i] == '\\' {
                    out.push_str("  ");
                    i += 2;
                    continue;
                }
                let closes = if triple {
                    i + 2 < chars.len() && chars[i] == c && chars[i + 1] == c && chars[i + 2] == c
                } else {
                    chars[i] == c || chars[i] == '\n'
                };
                if closes {
                    break;
                }
                out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            if i < chars.len() && chars[i] != '\n' {
                out.extend(std::iter::repeat_n(c, quote_len));
                i += quote_len;
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// One import: the module and the local names it binds.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    pub module: String,
    /// Names this statement binds in the test's namespace.
    pub binds: Vec<String>,
}

impl Import {
    pub fn top(&self) -> &str {
        self.module.split('.').next().unwrap_or("")
    }
}

/// The `import` and `from … import` statements of `code` (as given by [`code_only`]), at any
/// indentation, including parenthesised name lists over several lines.
pub fn imports(code: &str) -> Vec<Import> {
    let mut out = Vec::new();
    let lines: Vec<&str> = code.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        i += 1;
        if let Some(rest) = line.strip_prefix("import ") {
            for part in rest.split(',') {
                let mut words = part.split_whitespace();
                let Some(module) = words.next() else { continue };
                let bound = match (words.next(), words.next()) {
                    (Some("as"), Some(alias)) => alias.to_string(),
                    _ => module.split('.').next().unwrap_or(module).to_string(),
                };
                out.push(Import { module: module.to_string(), binds: vec![bound] });
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else { continue };
            let mut names = names.trim().to_string();
            if names.starts_with('(') {
                while !names.contains(')') && i < lines.len() {
                    names.push(' ');
                    names.push_str(lines[i].trim());
                    i += 1;
                }
            }
            let names = names.trim_matches(|c| c == '(' || c == ')' || c == ' ');
            let binds = names
                .split(',')
                .filter_map(|n| {
                    let mut words = n.split_whitespace();
                    let name = words.next()?;
                    Some(match (words.next(), words.next()) {
                        (Some("as"), Some(alias)) => alias.to_string(),
                        _ => name.to_string(),
                    })
                })
                .filter(|n| n != "*")
                .collect();
            out.push(Import { module: module.trim().to_string(), binds });
        }
    }
    out
}

/// Modules whose use means the test talks to the network.
const NETWORK_MODULES: [&str; 8] =
    ["socket", "requests", "httpx", "aiohttp", "urllib.request", "http.client", "urllib3", "ftplib"];

/// The network modules the test imports, unless they are the project's own.
pub fn network_use(code: &str, project: &[String]) -> Vec<String> {
    let mut found: Vec<String> = imports(code)
        .into_iter()
        .filter(|i| !project.iter().any(|p| p == i.top()))
        .filter(|i| {
            NETWORK_MODULES.iter().any(|n| i.module == *n || i.module.starts_with(&format!("{n}.")))
                || (i.module == "urllib" && i.binds.iter().any(|b| b == "request"))
        })
        .map(|i| i.module)
        .collect();
    if code.contains("urlopen(") && !found.iter().any(|m| m == "urllib.request") {
        found.push("urllib.request".into());
    }
    found.dedup();
    found
}

/// What a test checks, as the paper divides tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestKind {
    /// Imports the project's code and runs it.
    Behavioural,
    /// Reads the source text, its AST or its API surface (names, signatures, docstrings).
    Structural,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindReading {
    pub kind: TestKind,
    /// What the decision rests on: the source-reading constructs found, or the project calls.
    pub because: Vec<String>,
}

/// Constructs that read code as text or structure rather than run it.
const SOURCE_READS: [&str; 16] = [
    "getsource(",
    "getsourcelines(",
    "getsourcefile(",
    "ast.parse(",
    "ast.walk(",
    "tokenize.",
    "read_text(",
    "read_bytes(",
    "open(",
    "__file__",
    "signature(",
    "getfullargspec(",
    "__doc__",
    "__annotations__",
    "__code__",
    "co_varnames",
];

/// Whether `name` occurs in `code` as a whole identifier followed, through attribute accesses, by
/// a call: `name(`, `name.attr(`, `name.a.b (`.
fn is_called(code: &str, name: &str) -> bool {
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(at) = code[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        from = end;
        if (start > 0 && (ident(bytes[start - 1]) || bytes[start - 1] == b'.'))
            || (end < bytes.len() && ident(bytes[end]))
        {
            continue;
        }
        let mut j = end;
        loop {
            while j < bytes.len() && bytes[j] == b' ' {
                j += 1;
            }
            match bytes.get(j) {
                Some(b'(') => return true,
                Some(b'.') => {
                    j += 1;
                    while j < bytes.len() && ident(bytes[j]) {
                        j += 1;
                    }
                }
                _ => break,
            }
        }
    }
    false
}

/// Reads whether a test is behavioural or structural. A test that reads source text or structure
/// anywhere is structural, since its verdict may rest on that reading; otherwise it is behavioural
/// if it calls something it imported from the project (`project` are the import names of the
/// project's packages), and structural if it only looks at names.
pub fn test_kind(text: &str, project: &[String]) -> KindReading {
    let code = code_only(text);
    let reads: Vec<String> = SOURCE_READS
        .iter()
        .filter(|r| code.contains(*r))
        .map(|r| r.trim_end_matches('(').trim_end_matches('.').to_string())
        .collect();
    let reads: Vec<String> = reads.into_iter().filter(|r| r != "open" || text.contains(".py")).collect();
    if !reads.is_empty() {
        return KindReading { kind: TestKind::Structural, because: reads };
    }
    let bound: Vec<String> = imports(&code)
        .into_iter()
        .filter(|i| project.iter().any(|p| p == i.top()))
        .flat_map(|i| i.binds)
        .collect();
    let calls: Vec<String> = bound.into_iter().filter(|b| is_called(&code, b)).collect();
    if calls.is_empty() {
        KindReading { kind: TestKind::Structural, because: vec!["no call into the project".into()] }
    } else {
        KindReading {
            kind: TestKind::Behavioural,
            because: calls.iter().map(|c| format!("calls {c}")).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Vec<String> {
        vec!["durations".to_string()]
    }

    #[test]
    fn comments_and_strings_are_blanked_in_place() {
        let text = "x = 'open(a.py)'  # getsource(\ny = \"\"\"doc\nmore\"\"\"\nz = f('it\\'s')\n";
        let code = code_only(text);
        assert_eq!(code.lines().count(), text.lines().count());
        assert!(!code.contains("open(") && !code.contains("getsource") && !code.contains("doc"));
        assert!(code.contains("x = '") && code.contains("z = f('"));
    }

    #[test]
    fn imports_of_every_form_are_read() {
        let code = "import os, durations.core as core\nfrom durations import (\n    parse,\n    fmt as f,\n)\n    from x.y import z\n";
        let found = imports(code);
        assert_eq!(found[0], Import { module: "os".into(), binds: vec!["os".into()] });
        assert_eq!(found[1], Import { module: "durations.core".into(), binds: vec!["core".into()] });
        assert_eq!(found[2], Import { module: "durations".into(), binds: vec!["parse".into(), "f".into()] });
        assert_eq!(found[3].top(), "x");
    }

    #[test]
    fn a_test_that_runs_project_code_is_behavioural() {
        let t = "from durations import parse_duration\n\ndef test_x():\n    assert parse_duration('4.1m') == 246\n";
        let r = test_kind(t, &project());
        assert_eq!(r.kind, TestKind::Behavioural);
        assert_eq!(r.because, ["calls parse_duration"]);
        let through_module =
            "import durations as d\n\ndef test_x():\n    assert d.core.parse ('1h') == 3600\n";
        assert_eq!(test_kind(through_module, &project()).kind, TestKind::Behavioural);
    }

    #[test]
    fn a_test_that_reads_source_or_names_is_structural() {
        let source = "import inspect\nfrom durations import parse_duration\n\ndef test_x():\n    assert 'round' in inspect.getsource(parse_duration)\n    parse_duration('1h')\n";
        let r = test_kind(source, &project());
        assert_eq!(r.kind, TestKind::Structural, "reading source decides, even beside a call");
        assert_eq!(r.because, ["getsource"]);
        let doc = "from durations import parse_duration\n\ndef test_x():\n    assert 'week' in parse_duration.__doc__\n";
        assert_eq!(test_kind(doc, &project()).kind, TestKind::Structural);
        let names = "import durations\n\ndef test_x():\n    assert hasattr(durations, 'parse_duration')\n";
        assert_eq!(test_kind(names, &project()).kind, TestKind::Structural);
        let in_a_string =
            "from durations import p\n\ndef test_x():\n    assert p(1), 'see getsource(p) and ast.parse('\n";
        assert_eq!(test_kind(in_a_string, &project()).kind, TestKind::Behavioural, "strings are not code");
    }

    #[test]
    fn network_modules_are_found_unless_they_are_the_project() {
        let t = "import requests\nfrom urllib import request\nimport urllib.parse\n";
        assert_eq!(network_use(&code_only(t), &project()), ["requests", "urllib"]);
        assert!(network_use("import requests\n", &["requests".to_string()]).is_empty());
        assert!(network_use("import json\nfrom urllib.parse import quote\n", &project()).is_empty());
    }
}
