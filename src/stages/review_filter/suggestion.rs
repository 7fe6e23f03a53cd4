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
    /// Only values: numbers, string, boolean and null literals, comparison and arithmetic
    /// operators, a keyword argument with such a value added, or a name misspelt or swapped for a
    /// near one (`i < hi` to `i <= hi`, `timeout=None` to `timeout=5.0`, `open(p)` to `open(p,
    /// encoding="utf-8")`, `timout=` to `timeout=`, `MIN_ZOOM` to `MAX_ZOOM`). On the gold set
    /// and on real review traffic such suggestions mostly fix a defect, while those that change
    /// names, calls or structure are mostly taste.
    Values,
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
    let (before, after) = (tokens(&original, comments), tokens(&suggested, comments));
    if before == after {
        Change::Layout
    } else if only_values(&before, &after) {
        Change::Values
    } else {
        Change::Tokens
    }
}

/// At most this many tokens changed for a change to count as one of values only.
const MOST_VALUES: usize = 4;

/// Whether `token` is a value: a number, a string literal (as [`tokens`] writes it), a boolean or
/// null literal, or an operator character of a comparison or of arithmetic.
fn is_value(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_digit() || c == '"')
        || matches!(token, "True" | "False" | "None" | "true" | "false" | "null" | "nil")
        || matches!(token, "<" | ">" | "=" | "!" | "+" | "-" | "*" | "/" | "%")
}

/// Whether `after` differs from `before` in a few values only (see [`Change::Values`]).
fn only_values(before: &[String], after: &[String]) -> bool {
    let (mut changed, mut near) = (Vec::new(), 0);
    for (old, new) in gaps(before, after) {
        match (old, new) {
            // A keyword argument added: `, name = value` or `name = value ,`.
            ([], [comma, name, eq, value] | [name, eq, value, comma])
                if comma == "," && eq == "=" && is_name(name) =>
            {
                changed.push(value)
            }
            ([a], [b]) if near_miss(a, b) => near += 1,
            _ => changed.extend(old.iter().chain(new)),
        }
    }
    let count = changed.len() + near;
    count > 0 && count <= MOST_VALUES && changed.iter().all(|t| is_value(t))
}

/// Whether `token` is an identifier or keyword.
fn is_name(token: &str) -> bool {
    token.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Whether the name `b` in place of `a` fixes a misspelling or swaps in a near name (`timout` to
/// `timeout`, `MIN_ZOOM` to `MAX_ZOOM`): both at least 4 characters, at most 2 edits apart, and
/// not the same name in another case or with other underscores, which is a rename.
fn near_miss(a: &str, b: &str) -> bool {
    let plain = |s: &str| s.replace('_', "").to_lowercase();
    is_name(a)
        && is_name(b)
        && a.chars().count() >= 4
        && b.chars().count() >= 4
        && plain(a) != plain(b)
        && edit_distance(a, b) <= 2
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The runs of `before` and `after` between the tokens of their longest common subsequence: what
/// was taken out and what was put in at each place.
fn gaps<'a>(before: &'a [String], after: &'a [String]) -> Vec<(&'a [String], &'a [String])> {
    let (n, m) = (before.len(), after.len());
    // lcs[i][j]: the longest common subsequence of before[i..] and after[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] =
                if before[i] == after[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut out, mut i, mut j, mut from) = (Vec::new(), 0, 0, (0, 0));
    while i < n || j < m {
        if i < n && j < m && before[i] == after[j] {
            if from != (i, j) {
                out.push((&before[from.0..i], &after[from.1..j]));
            }
            i += 1;
            j += 1;
            from = (i, j);
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            j += 1;
        } else {
            i += 1;
        }
    }
    if from != (n, m) {
        out.push((&before[from.0..], &after[from.1..]));
    }
    out
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
pub(super) enum Comments {
    Hash,
    Slashes,
    None,
}

impl Comments {
    pub(super) fn of(path: &str) -> Comments {
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
pub(super) fn tokens(code: &str, comments: Comments) -> Vec<String> {
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
        assert_eq!(change(&suggest("x = f(\"b\", b)"), quotes, "m.py", None), Change::Values, "a literal");
        assert_eq!(change(&suggest("x = f('a', c)"), quotes, "m.py", None), Change::Tokens, "a name");
        let two =
            suggest("        data = json.loads(\n            f.read(), strict=True)\n        return data");
        assert_eq!(change(&two, HUNK, "io.py", Some(2)), Change::Values, "a keyword's value");
        let wrapped = suggest(
            "        data = json.loads(\n            f.read(), strict=False\n        )\n        return data",
        );
        assert_eq!(change(&wrapped, HUNK, "io.py", Some(2)), Change::Layout, "only wrapped");
    }

    #[test]
    fn a_change_of_values_is_told_from_one_of_names_or_structure() {
        let at = |line: &str| format!("@@ -1 +1 @@\n+{line}");
        let values = |line: &str, suggested: &str| change(&suggest(suggested), &at(line), "m.py", None);
        assert_eq!(values("for i in range(lo, hi):", "for i in range(lo, hi + 1):"), Change::Values);
        assert_eq!(values("if self.tokens > 1:", "if self.tokens >= 1:"), Change::Values);
        assert_eq!(values("def probe(host, timeout=None):", "def probe(host, timeout=5.0):"), Change::Values);
        assert_eq!(values("with open(p) as fh:", "with open(p, encoding='utf-8') as fh:"), Change::Values);
        assert_eq!(values("os.makedirs(d)", "os.makedirs(d, exist_ok=True)"), Change::Values);
        assert_eq!(values("l = []", "links = []"), Change::Tokens, "a rename");
        assert_eq!(values("x = new(a)", "x = List.copyOf(a)"), Change::Tokens, "another call");
        assert_eq!(
            values("job = q.pop()", "job := q.pop()"),
            Change::Tokens,
            "another operator than a value's"
        );
        assert_eq!(values("def parse(line):", "def parse(line: str) -> Entry | None:"), Change::Tokens);
        assert_eq!(values("n = 1", "n = 1 + 2 + 3 + 4"), Change::Tokens, "more than a few values");
        assert_eq!(values("get(url, timout=5)", "get(url, timeout=5)"), Change::Values, "a misspelt keyword");
        assert_eq!(values("z = min(MIN_ZOOM, z)", "z = min(MAX_ZOOM, z)"), Change::Values, "a near name");
        assert_eq!(values("fn expr(e: &Expr)", "fn expression(e: &Expr)"), Change::Tokens, "a rename");
        assert_eq!(values("BIND = 1", "Bind = 1"), Change::Tokens, "another case is a rename");
        assert_eq!(values("max_len = 1", "maxLen = 1"), Change::Tokens, "another spelling of one name");
        assert_eq!(values("x = a", "x = b"), Change::Tokens, "short names are not told apart");
    }

    #[test]
    fn comments_follow_the_language_and_floor_division_is_no_comment() {
        let hunk = "@@ -1 +1 @@\n+n = a // b";
        assert_eq!(change(&suggest("n = a / b"), hunk, "m.py", None), Change::Values);
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
