//! The sample's durations#3 as a fixture for the synthesis and validation tests: its record, and
//! scripted model answers that behave in known ways on its reviewed and fixed commits.

use std::path::Path;

use serde_json::Value;

use super::openai::Reply;
use super::root;

pub fn fence(code: &str) -> Reply {
    Reply::Answer(format!("Here is the test.\n```python\n{code}```\n"))
}

pub const BEHAVIOURAL: &str = "from durations import parse_duration\n\n\ndef test_fractions_are_rounded():\n    assert parse_duration(\"4.1m\") == 246\n    assert parse_duration(\"0.7d\") == 60480\n";
pub const PASSES_BOTH: &str = "from durations import parse_duration\n\n\ndef test_hours():\n    assert parse_duration(\"1h\") == 3600\n";
pub const STRUCTURAL: &str = "from durations import parse_duration\n\n\ndef test_docstring():\n    doc = parse_duration.__doc__ or \"\"\n    assert \"week\" in doc\n    assert \"round\" in doc\n";
pub const SYNTAX: &str =
    "from durations import parse_duration\n\ndef test_x(:\n    assert parse_duration('1.2.3h')\n";
pub const NOWHERE: &str = "import durations_helpers\nfrom durations import parse_duration\n\n\ndef test_x():\n    assert parse_duration(\"4.1m\") == 246\n";
// Right on the reviewed/fixed question, but it also asserts on a string hash: even under hash seed
// 0 (the first run), odd under seeds 1 and 2 (the repeats).
pub const FLAKY: &str = "from durations import parse_duration\n\n\ndef test_x():\n    assert parse_duration(\"4.1m\") == 246\n    assert hash(\"curate-0\") % 2 == 0\n";

/// The sample's durations#3 record and its comments' texts, in order.
pub fn durations3() -> (Value, Vec<String>) {
    let record: Value = std::fs::read_to_string(root().join("sample/swe-care.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["instance_id"] == "curate-sample__durations-3")
        .unwrap();
    let texts = record["reference_review_comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    (record, texts)
}

/// A curation pipeline over `one.jsonl` with the sample's mirrors and a model at `url`: comment
/// context, environment and test synthesis (the repository's prompts, plus `tests_extra`, lines
/// indented as the stage's keys), then `more` (whole stages). `{prompts}` in `more` is the prompts
/// directory.
pub fn curation_pipeline(name: &str, mirrors: &Path, url: &str, tests_extra: &str, more: &str) -> String {
    let prompts = root().join("prompts");
    let prompts = prompts.display();
    let head = format!(
        "name: {name}
source: {{kind: swe-care, path: one.jsonl}}
defaults:
  cache: cache
  repos: {{url: '{mirrors}/{{repo}}.git'}}
  llm: {{base_url: '{url}', max_retries: 0}}
  concurrency: {{docker: 1, llm: 2}}
stages:
  - id: context
    kind: comment_context
  - id: environment
    kind: environment
    needs: context
  - id: tests
    kind: test_synthesis
    title: Converting NL Comments to Tests
    needs: [context, environment]
    prompt: {prompts}/test_synthesis.md
    feedback_prompt: {prompts}/test_synthesis_feedback.md
",
        mirrors = mirrors.display(),
    );
    format!("{head}{tests_extra}{}", more.replace("{prompts}", &prompts.to_string()))
}
