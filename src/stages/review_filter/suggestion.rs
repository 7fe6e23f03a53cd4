//! What a suggestion block changes, read against the lines it would replace (issue 27): the same
//! tokens laid out another way (whitespace, line breaks, quotes, a trailing comma, a comment) is a
//! change no test can see; another identifier, keyword, literal or operator may be one. The lines
//! replaced are the end of the comment's diff hunk, where GitHub puts the commented lines.

/// What a comment's suggestion changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The comment holds no suggestion, or the lines it would replace are not known.
    Unknown,
    /// The same tokens as the lines it replaces: layout only.
    Layout,
    /// Other tokens.
    Tokens,
}

/// What the first suggestion block of `comment` changes against the end of `diff_hunk` (the new
/// side's lines, as many as the suggestion has, or `replaced` when the comment says how many).
pub fn change(comment: &str, diff_hunk: &str, path: &str, replaced: Option<usize>) -> Change {
    let Some(suggested) = block(comment) else { return Change::Unknown };
    let new_side: Vec<&str> = diff_hunk
        .lines()
        .filter(|l| !l.starts_with("@@") && !l.starts_with('-') && !l.starts_with('\\'))
        .map(|l| l.get(1..).unwrap_or(""))
        .collect();
    let count = replaced.unwrap_or_else(|| suggested.lines().count().max(1));
    if new_side.is_empty() || count > new_side.len() {
        return Change::Unknown;
    }
    let original = new_side[new_side.len() - count..].join("\n");
    let comments = Comments::of(path);
    if tokens(&suggested, comments) == tokens(&original, comments) { Change::Layout } else { Change::Tokens }
}

/// The body of the first ```suggestion block of `comment`.
fn block(comment: &str) -> Option<String> {
    let start = comment.find("```suggestion")?;
    let rest = &comment[start..];
    let body = &rest[rest.find('\n')? + 1..];
    let end = if body.starts_with("```") { 0 } else { body.find("\n```").map_or(body.len(), |e| e + 1) };
    Some(body[..end].trim_end_matches('\n').to_string())
}

/// Which line comments the file's language has: `#` (Python, Ruby, shell, YAML, TOML) or `//`
/// (C and its kin, Go, Rust, Java, JavaScript). Python's `//` is floor division, so it is only a
/// comment where `#` is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comments {
    Hash,
    Slashes,
    None,
}

impl Comments {
    fn of(path: &str) -> Comments {
        let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
        match ext {
            "py" | "pyi" | "rb" | "sh" | "bash" | "yaml" | "yml" | "toml" | "cfg" | "ini" | "r" | "pl" => {
                Comments::Hash
            }
            "c" | "h" | "cc" | "cpp" | "hpp" | "cxx" | "go" | "rs" | "java" | "kt" | "scala" | "js"
            | "jsx" | "ts" | "tsx" | "swift" | "cs" | "dart" | "php" => Comments::Slashes,
            _ => Comments::None,
        }
    }
}

/// The tokens of `code`: identifiers and numbers as written, a string literal by its contents
/// (either quote), every other character but whitespace alone; comments and a comma right before
/// a closing bracket or the end left out.
fn tokens(code: &str, comments: Comments) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if (comments == Comments::Hash && c == '#')
            || (comments == Comments::Slashes && c == '/' && next == Some('/'))
        {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric()
                    || chars[i] == '_'
                    || chars[i] == '.' && chars[start].is_ascii_digit())
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == '"' || c == '\'' {
            let mut text = String::from("\"");
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    text.push(chars[i]);
                    i += 1;
                }
                text.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push(text);
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    // A trailing comma is layout: `f(a, b,)` is `f(a, b)`.
    let closing = |t: Option<&String>| t.is_none_or(|t| matches!(t.as_str(), ")" | "]" | "}"));
    let mut kept = Vec::with_capacity(out.len());
    for (k, t) in out.iter().enumerate() {
        if t == "," && closing(out.get(k + 1)) {
            continue;
        }
        kept.push(t.clone());
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    const HUNK: &str = "@@ -10,4 +10,5 @@ def load(path):\n     with open(path) as f:\n-        data = f.read()\n+        data = json.loads(f.read(), strict=False)\n+        return data";

    fn suggest(code: &str) -> String {
        format!("```suggestion\n{code}\n```")
    }

    #[test]
    fn layout_only_is_told_from_a_changed_token() {
        let same = suggest("        return  data  # done");
        assert_eq!(change(&same, HUNK, "io.py", None), Change::Layout);
        let quotes = "@@ -1 +1 @@\n+x = f('a', b,)";
        assert_eq!(change(&suggest("x = f(\"a\", b)"), quotes, "m.py", None), Change::Layout);
        assert_eq!(change(&suggest("x = f(\"b\", b)"), quotes, "m.py", None), Change::Tokens, "a literal");
        assert_eq!(change(&suggest("x = f('a', c)"), quotes, "m.py", None), Change::Tokens, "a name");
        let two =
            suggest("        data = json.loads(\n            f.read(), strict=True)\n        return data");
        assert_eq!(change(&two, HUNK, "io.py", Some(2)), Change::Tokens, "a keyword's value");
        let wrapped = suggest(
            "        data = json.loads(\n            f.read(), strict=False\n        )\n        return data",
        );
        assert_eq!(change(&wrapped, HUNK, "io.py", Some(2)), Change::Layout, "only wrapped");
    }

    #[test]
    fn comments_follow_the_language_and_floor_division_is_no_comment() {
        let hunk = "@@ -1 +1 @@\n+n = a // b";
        assert_eq!(change(&suggest("n = a / b"), hunk, "m.py", None), Change::Tokens);
        let go = "@@ -1 +1 @@\n+n := a / b";
        assert_eq!(change(&suggest("n := a / b // halves"), go, "m.go", None), Change::Layout);
    }

    #[test]
    fn no_suggestion_or_no_lines_to_compare_is_unknown() {
        assert_eq!(change("this crashes on empty input", HUNK, "io.py", None), Change::Unknown);
        assert_eq!(change(&suggest("a\nb\nc\nd\ne\nf"), HUNK, "io.py", None), Change::Unknown);
        assert_eq!(change(&suggest("x"), "", "io.py", None), Change::Unknown);
    }
}
