//! The report's list of accepted tests with what ties each to its comment: the changes of the fix
//! attributed to the comment (and how they were chosen), and the relevance gate's evidence (the
//! lines the test executed, or the definition a structural test names).

use crate::engine::flow::{Flow, TaskState};
use crate::stages::contract::{self, Contract};

/// `lines` as `path:a-b,c` per file.
fn lines(value: &serde_json::Value) -> String {
    let Some(map) = value.as_object() else { return String::new() };
    map.iter()
        .map(|(path, lines)| {
            let numbers: Vec<u64> =
                lines.as_array().into_iter().flatten().filter_map(|n| n.as_u64()).collect();
            format!("{path}:{}", ranges(&numbers))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `1,2,3,7` as `1-3,7`.
fn ranges(numbers: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        out.push(if i == j { numbers[i].to_string() } else { format!("{}-{}", numbers[i], numbers[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// The Markdown section, when a test stage stored relevance evidence for an accepted test.
pub fn section(flow: &Flow, states: &[Vec<TaskState>]) -> Option<String> {
    let mut rows = Vec::new();
    for (s, _) in
        flow.pipeline.stages.iter().enumerate().filter(|(_, p)| p.provides == Some(contract::Test::NAME))
    {
        for x in flow.tasks(s) {
            let TaskState::Kept { output, .. } = &states[s][x] else { continue };
            let relevance = &output["relevance"];
            if relevance.is_null() {
                continue;
            }
            let evidence = if let Some(named) = relevance["named"].as_str() {
                format!("names `{named}`")
            } else if relevance["covered"].is_object() {
                let ran = format!("ran {}", lines(&relevance["covered"]));
                match relevance["partial_revert"].as_str() {
                    Some("not revertable alone") => format!("{ran}; the change cannot be undone alone"),
                    Some(verdict) => format!("{ran}; with only it undone: {}", verdict.replace('_', " ")),
                    None => ran,
                }
            } else {
                relevance["checked"].as_str().unwrap_or("").to_string()
            };
            rows.push(format!(
                "| {} | {} | {} | {} | {} |",
                flow.data.items[x].id,
                output["kind"].as_str().unwrap_or(""),
                relevance["how"].as_str().unwrap_or(""),
                lines(&relevance["targets"]),
                evidence
            ));
        }
    }
    if rows.is_empty() {
        return None;
    }
    Some(format!(
        "## Accepted tests and the change they test\n\n| Comment | Kind | Attributed by | Lines to reach (fixed code) | Evidence |\n|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_read_as_ranges_per_file() {
        assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
        assert_eq!(lines(&serde_json::json!({"a.py": [4, 5], "b.py": [1]})), "a.py:4-5 b.py:1");
    }
}
