//! Review tools under evaluation (the paper's section 4.3): each gives review comments on a patch.
//! The human comments of the benchmark are a reviewer too (the upper bound); the built-in reviewer
//! is the configured LLM with a prompt; any other tool is a command whose output is read as
//! comments. What a tool printed becomes [`Finding`]s here, whatever form it took.

pub mod similarity;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One review comment from a reviewer: where, and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub path: Option<String>,
    pub line: Option<u64>,
    pub body: String,
}

fn finding_of(v: &Value) -> Option<Finding> {
    let body = ["body", "comment", "text", "message"].iter().find_map(|k| v.get(*k)?.as_str())?.trim();
    if body.is_empty() {
        return None;
    }
    let path = ["path", "file"].iter().find_map(|k| v.get(*k)?.as_str()).map(str::to_string);
    let line = ["line", "start_line"].iter().find_map(|k| {
        let x = v.get(*k)?;
        x.as_u64().or_else(|| x.as_str()?.trim().parse().ok())
    });
    Some(Finding { path, line, body: body.to_string() })
}

/// Reads the comments in what a reviewer printed: a JSON array of objects (`path`/`file`,
/// `line`, `body`/`comment`/`text`), an object holding such an array (`comments`, `findings`),
/// JSON lines, or plain `path:line: text` lines. Anything else is not a review.
pub fn findings(output: &str) -> Vec<Finding> {
    let trimmed = output.trim();
    let from_value = |v: &Value| -> Vec<Finding> {
        match v {
            Value::Array(items) => items.iter().filter_map(finding_of).collect(),
            Value::Object(o) => ["comments", "findings", "reviews"]
                .iter()
                .find_map(|k| o.get(*k)?.as_array())
                .map(|a| a.iter().filter_map(finding_of).collect())
                .unwrap_or_else(|| finding_of(v).into_iter().collect()),
            _ => Vec::new(),
        }
    };
    // The outermost JSON array or object, even inside prose or a code fence.
    for (open, close) in [('[', ']'), ('{', '}')] {
        if let (Some(a), Some(b)) = (trimmed.find(open), trimmed.rfind(close))
            && a < b
            && let Ok(v) = serde_json::from_str::<Value>(&trimmed[a..=b])
        {
            let found = from_value(&v);
            if !found.is_empty() {
                return found;
            }
        }
    }
    let json_lines: Vec<Finding> = trimmed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter_map(|v| finding_of(&v))
        .collect();
    if !json_lines.is_empty() {
        return json_lines;
    }
    trimmed
        .lines()
        .filter_map(|l| {
            let (path, rest) = l.trim().split_once(':')?;
            let (line, body) = rest.split_once(':')?;
            let line: u64 = line.trim().parse().ok()?;
            let body = body.trim();
            (!path.is_empty() && !path.contains(' ') && !body.is_empty()).then(|| Finding {
                path: Some(path.to_string()),
                line: Some(line),
                body: body.to_string(),
            })
        })
        .collect()
}

/// The human comment `finding` is compared with for text similarity: the nearest in file and
/// line. One on the same file beats any other; among those, the nearest line (a missing line
/// counts as farthest); ties go to the first. `None` only when there are no human comments.
pub fn nearest<'h>(finding: &Finding, humans: &'h [Finding]) -> Option<&'h Finding> {
    humans.iter().min_by_key(|h| {
        let other_file = finding.path.is_none() || h.path != finding.path;
        let distance = match (finding.line, h.line) {
            (Some(a), Some(b)) => a.abs_diff(b),
            _ => u64::MAX,
        };
        (other_file, distance)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_human_comment_shares_the_file_first_then_the_line() {
        let at = |path: &str, line: Option<u64>, body: &str| Finding {
            path: Some(path.into()),
            line,
            body: body.into(),
        };
        let humans = [at("a.py", Some(3), "a3"), at("b.py", Some(40), "b40"), at("b.py", Some(10), "b10")];
        assert_eq!(nearest(&at("b.py", Some(12), "x"), &humans).unwrap().body, "b10");
        assert_eq!(nearest(&at("a.py", Some(90), "x"), &humans).unwrap().body, "a3");
        assert_eq!(nearest(&at("c.py", Some(10), "x"), &humans).unwrap().body, "b10");
        assert_eq!(nearest(&at("b.py", None, "x"), &humans).unwrap().body, "b40");
        assert!(nearest(&at("b.py", None, "x"), &[]).is_none());
    }

    #[test]
    fn comments_are_read_from_every_form_tools_print() {
        let array = "Here you go:\n```json\n[{\"path\": \"a.py\", \"line\": 3, \"body\": \"off by one\"}, {\"file\": \"b.py\", \"line\": \"7\", \"comment\": \"leaks\"}]\n```";
        assert_eq!(
            findings(array),
            vec![
                Finding { path: Some("a.py".into()), line: Some(3), body: "off by one".into() },
                Finding { path: Some("b.py".into()), line: Some(7), body: "leaks".into() },
            ]
        );
        let object = r#"{"comments": [{"path": "a.py", "body": "x"}]}"#;
        assert_eq!(findings(object)[0].line, None);
        let lines = "{\"path\": \"a.py\", \"line\": 1, \"body\": \"one\"}\n{\"path\": \"a.py\", \"line\": 2, \"body\": \"two\"}\n";
        assert_eq!(findings(lines).len(), 2);
        let plain = "src/x.py:12: this can divide by zero\nnot a finding\n";
        assert_eq!(
            findings(plain),
            vec![Finding {
                path: Some("src/x.py".into()),
                line: Some(12),
                body: "this can divide by zero".into()
            }]
        );
        assert!(findings("Looks good to me!").is_empty());
        assert!(findings("[]").is_empty());
    }
}
