//! Finds where a key path (`stages[2].needs`) sits in a block-style YAML text, so errors found after
//! parsing (a dangling `needs`, a cycle, a bad stage config) can name a line and column.
//!
//! serde_yaml reports positions only for errors it finds itself; this recovers them for ours. It reads
//! indentation only, which is enough for the block style pipelines are written in; a path it cannot
//! follow (flow style) resolves to the deepest part it could.

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// Parses `stages[2].needs` or serde_path_to_error's `stages[2].needs` into segments.
pub fn parse_path(path: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty() && *p != "?") {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            if open > 0 {
                out.push(Segment::Key(rest[..open].to_string()));
            }
            rest = &rest[open..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let Some(close) = stripped.find(']') else { break };
                if let Ok(i) = stripped[..close].parse() {
                    out.push(Segment::Index(i));
                }
                rest = &stripped[close + 1..];
            }
        } else {
            out.push(Segment::Key(rest.to_string()));
        }
    }
    out
}

/// A position, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// A line of the document as the walker sees it. `- key: v` yields two entries: the dash at its
/// indent and `key: v` two columns in, so sequences and mappings nest the same way.
struct Entry<'a> {
    line: usize,
    indent: usize,
    text: &'a str,
}

fn entries(src: &str) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    for (no, raw) in src.lines().enumerate() {
        let trimmed = raw.trim_start_matches(' ');
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("---") {
            continue;
        }
        let mut indent = raw.len() - trimmed.len();
        let mut text = trimmed;
        while text == "-" || text.starts_with("- ") {
            out.push(Entry { line: no + 1, indent, text: "-" });
            let after = text[1..].trim_start_matches(' ');
            indent += text.len() - after.len();
            text = after;
            if text.is_empty() {
                break;
            }
        }
        if !text.is_empty() {
            out.push(Entry { line: no + 1, indent, text });
        }
    }
    out
}

fn is_key(text: &str, key: &str) -> bool {
    let unquoted = [key.to_string(), format!("\"{key}\""), format!("'{key}'")];
    unquoted.iter().any(|k| {
        text.strip_prefix(k.as_str()).is_some_and(|rest| rest.trim_start_matches(' ').starts_with(':'))
    })
}

/// Returns the position of the deepest segment of `path` that could be found.
pub fn locate(src: &str, path: &[Segment]) -> Option<Position> {
    let all = entries(src);
    let (mut start, mut end) = (0, all.len());
    let mut found = None;
    for segment in path {
        if start >= end {
            break;
        }
        let base = all[start].indent;
        let siblings = (start..end).filter(|&i| all[i].indent == base);
        let hit = match segment {
            Segment::Key(k) => siblings.into_iter().find(|&i| is_key(all[i].text, k)),
            Segment::Index(n) => siblings.filter(|&i| all[i].text == "-").nth(*n),
        };
        let Some(i) = hit else { break };
        found = Some(Position { line: all[i].line, column: all[i].indent + 1 });
        let child_end = (i + 1..end).find(|&j| all[j].indent <= all[i].indent).unwrap_or(end);
        start = i + 1;
        end = child_end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
name: demo
# a comment
source:
  kind: jsonl
  path: items.jsonl
stages:
  - id: a
    kind: noop
  - id: b
    kind: exec
    needs: [a]
    command: >
      echo hi
  -
    id: c
    needs:
      - b
      - zz
";

    fn at(path: &str) -> Option<(usize, usize)> {
        locate(DOC, &parse_path(path)).map(|p| (p.line, p.column))
    }

    #[test]
    fn finds_top_level_and_nested_keys() {
        assert_eq!(at("name"), Some((1, 1)));
        assert_eq!(at("source.path"), Some((5, 3)));
        assert_eq!(at("stages"), Some((6, 1)));
    }

    #[test]
    fn finds_sequence_items_and_their_keys() {
        assert_eq!(at("stages[0]"), Some((7, 3)));
        assert_eq!(at("stages[1].needs"), Some((11, 5)));
        assert_eq!(at("stages[1].command"), Some((12, 5)));
        assert_eq!(at("stages[2].id"), Some((15, 5)));
        assert_eq!(at("stages[2].needs[1]"), Some((18, 7)));
    }

    #[test]
    fn stops_at_the_deepest_part_it_can_follow() {
        assert_eq!(at("stages[1].nope"), Some((9, 3)));
        assert_eq!(at("stages[1].needs[0]"), Some((11, 5)), "flow sequence: the key's line");
        assert_eq!(at("missing"), None);
    }

    #[test]
    fn parses_paths() {
        assert_eq!(
            parse_path("stages[2].needs[0]"),
            vec![
                Segment::Key("stages".into()),
                Segment::Index(2),
                Segment::Key("needs".into()),
                Segment::Index(0)
            ]
        );
    }
}
