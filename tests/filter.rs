//! The review_filter stage through the real binary, against a scripted model server: verdicts in
//! prose, drops with their reason, a re-ask after an unreadable answer, `unparseable`, a server
//! error retried by the next run, token usage in the report, and a replay with no server calls.

mod common;

use std::sync::{Arc, Mutex};

use common::openai::{Reply, Server};
use common::{Scratch, stderr};
use serde_json::{Value, json};

fn record() -> String {
    let comment = |text: &str| json!({"text": text, "path": "a.py", "diff_hunk": "@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3", "line": 2});
    json!({
        "instance_id": "o__r-1", "repo": "o/r", "title": "Tidy the parser", "base_commit": "a",
        "commit_to_review": {"head_commit": "b"}, "merged_commit": "c",
        "reference_review_comments": [
            comment("KEEP-ME: this crashes on empty input"),
            comment("DROP-ME: nice work"),
            comment("GARBAGE: hmm"),
            comment("REASK: off by one here"),
            comment("FLAKY: the lock is never released"),
        ]
    })
    .to_string()
}

/// The comment a request is about, by its marker word.
fn marker(request: &Value) -> String {
    let text = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    ["KEEP-ME", "DROP-ME", "GARBAGE", "REASK", "FLAKY"]
        .iter()
        .find(|m| text.contains(*m))
        .unwrap()
        .to_string()
}

fn pipeline(s: &Scratch, base_url: &str) {
    s.write(
        "prompt.md",
        "[system]\nJudge review comments.\n[user]\n{{pr_title}} {{path}}\n{{diff_hunk}}\n{{comment}}\n",
    );
    s.write("items.jsonl", &format!("{}\n", record()));
    s.write(
        "p.yaml",
        &format!(
            "name: filt\nsource: {{kind: swe-care, path: items.jsonl}}\ndefaults:\n  cache: cache\n  llm: {{base_url: '{base_url}', model: m, max_retries: 1, backoff_ms: 10, concurrency: 2}}\nstages:\n  - id: filter\n    kind: review_filter\n    prompt: prompt.md\n"
        ),
    );
}

#[test]
fn the_filter_keeps_drops_reasks_and_retries_and_then_replays() {
    let flaky_ok = Arc::new(Mutex::new(false));
    let flag = flaky_ok.clone();
    let server = Server::responding(move |request| {
        let reasked = request["messages"].as_array().unwrap().len() > 2;
        match marker(request).as_str() {
            "KEEP-ME" => Reply::Answer("Sure. {\"verdict\": \"keep\", \"category\": \"robustness\", \"reason\": \"empty input crashes\"}".into()),
            "DROP-ME" => Reply::Answer("{\"verdict\": \"drop\", \"category\": null, \"reason\": \"praise only\"}".into()),
            "GARBAGE" => Reply::Answer("I cannot decide.".into()),
            "REASK" if reasked => Reply::Answer("{\"verdict\": \"keep\", \"category\": \"functional correctness\", \"reason\": \"off by one\"}".into()),
            "REASK" => Reply::Answer("{\"verdict\": \"keep\"}".into()),
            _ if *flag.lock().unwrap() => Reply::Answer("```json\n{\"verdict\": \"keep\", \"category\": \"error_handling\", \"reason\": \"lock leak\"}\n```".into()),
            _ => Reply::Status(500, vec![], "{\"error\": {\"message\": \"overloaded\"}}".into()),
        }
    });
    let s = Scratch::new();
    pipeline(&s, &server.base_url);

    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(1), "the flaky comment errored: {}", stderr(&out));
    assert!(stderr(&out).contains("HTTP 500"), "{}", stderr(&out));
    let calls = |m: &str| server.requests().iter().filter(|r| marker(r) == m).count();
    assert_eq!(calls("GARBAGE"), 2, "asked once more with the parse error");
    assert_eq!(calls("REASK"), 2);
    assert_eq!(calls("FLAKY"), 2, "one try and one retry");
    let reask = server
        .requests()
        .into_iter()
        .find(|r| marker(r) == "REASK" && r["messages"].as_array().unwrap().len() > 2)
        .unwrap();
    assert!(reask["messages"][3]["content"].as_str().unwrap().contains("needs a `category`"), "{reask}");

    *flaky_ok.lock().unwrap() = true;
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(calls("FLAKY"), 3, "only the errored comment ran again");
    assert_eq!(calls("KEEP-ME"), 1);

    let report: Value =
        serde_json::from_slice(&s.curate(&["report", "p.yaml", "--format", "json"]).stdout).unwrap();
    let row = &report["funnel"][1];
    assert_eq!(row["comments"], 3);
    assert_eq!(row["rejected"], 2);
    let reasons: Vec<(&str, u64)> = row["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["reason"].as_str().unwrap(), r["count"].as_u64().unwrap()))
        .collect();
    assert!(reasons.contains(&("praise only", 1)) && reasons.contains(&("unparseable", 1)), "{reasons:?}");
    // 1 + 1 + 2 + 2 answered calls of 100 prompt tokens each, and the successful flaky one.
    assert_eq!(row["prompt_tokens"], 700);

    // A fresh state in replay mode: every answer comes from cache/llm, none from the server.
    let before = server.calls();
    let out = s.curate_env(&["run", "p.yaml", "--state", "replayed"], &[("CURATE_LLM_CACHE", "replay")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.calls(), before);
    let replayed: Value = serde_json::from_slice(
        &s.curate(&["report", "p.yaml", "--state", "replayed", "--format", "json"]).stdout,
    )
    .unwrap();
    assert_eq!(replayed["funnel"][1]["comments"], 3);
}

#[test]
fn a_replay_miss_is_an_error_naming_the_request() {
    let server = Server::start(vec![], None);
    let s = Scratch::new();
    pipeline(&s, &server.base_url);
    let out = s.curate_env(&["run", "p.yaml"], &[("CURATE_LLM_CACHE", "replay")]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("error: filter o__r-1#1: no recorded answer for request "), "{err}");
    assert_eq!(server.calls(), 0);
}

#[test]
fn a_prompt_with_an_unknown_placeholder_is_a_pipeline_error() {
    let s = Scratch::new();
    pipeline(&s, "http://127.0.0.1:9/v1");
    s.write("prompt.md", "[user]\n{{comment}} {{author}}\n");
    let out = s.curate(&["validate", "p.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`stages[0].prompt`: stage `filter`: unknown placeholder `{{author}}`"),
        "{}",
        stderr(&out)
    );
}
