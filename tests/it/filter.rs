//! The review_filter stage through the real binary, against a scripted model server: verdicts in
//! prose, drops with their reason, a re-ask after an unreadable answer, `unparseable`, a server
//! error retried by the next run, token usage in the report, and a replay with no server calls.

use std::sync::{Arc, Mutex};

use crate::common::openai::{Reply, Server};
use crate::common::{Scratch, root, stderr};
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

/// A filter prompt: `template`, then the shipped prompt's texts (what the stage tells the model of
/// an answer that is no verdict).
fn with_texts(template: &str) -> String {
    let shipped = std::fs::read_to_string(root().join("prompts/review_filter.md")).unwrap();
    let texts = &shipped[shipped.find("\n[text ").expect("the shipped prompt has texts") + 1..];
    format!("{template}{texts}")
}

fn pipeline(s: &Scratch, base_url: &str) {
    s.write(
        "prompt.md",
        &with_texts(
            "[system]\nJudge review comments.\n[user]\n{{pr_title}} {{path}}\n{{diff_hunk}}\n{{comment}}\n",
        ),
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
fn a_prompt_longer_than_the_models_context_is_a_rejection_asked_once() {
    // llama.cpp's refusal, whose numeric `code` async-openai's own error type cannot read.
    let refusal = r#"{"error":{"code":400,"message":"request (9120 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}}"#;
    let server = Server::responding(move |request| {
        if marker(request) == "KEEP-ME" {
            Reply::Answer(
                "{\"verdict\": \"keep\", \"category\": \"robustness\", \"reason\": \"crash\"}".into(),
            )
        } else {
            Reply::Status(400, vec![], refusal.to_string())
        }
    });
    let s = Scratch::new();
    pipeline(&s, &server.base_url);
    let comment = |text: &str| json!({"text": text, "path": "a.py", "diff_hunk": "@@ -1 +1 @@\n-y = 2\n+y = 3", "line": 1});
    let record = json!({
        "instance_id": "o__r-2", "repo": "o/r", "title": "T", "base_commit": "a",
        "commit_to_review": {"head_commit": "b"}, "merged_commit": "c",
        "reference_review_comments": [comment("KEEP-ME: crashes on empty input"), comment("DROP-ME: a huge comment")]
    });
    s.write("items.jsonl", &format!("{record}\n"));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "a refused prompt is a result, not an error: {}", stderr(&out));
    let calls = |m: &str| server.requests().iter().filter(|r| marker(r) == m).count();
    assert_eq!(calls("DROP-ME"), 1, "the same request is refused again: never retried");
    let report: Value =
        serde_json::from_slice(&s.curate(&["report", "p.yaml", "--format", "json"]).stdout).unwrap();
    let row = &report["funnel"][1];
    assert_eq!((row["comments"].as_u64(), row["rejected"].as_u64()), (Some(1), Some(1)), "{row}");
    let reason = row["reasons"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("longer than the model's context") && reason.contains("9120 tokens"), "{reason}");
    assert_eq!(s.curate(&["run", "p.yaml"]).status.code(), Some(0));
    assert_eq!(calls("DROP-ME"), 1, "a rejection is final: the next run does not ask again");
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
    s.write("prompt.md", &with_texts("[user]\n{{comment}} {{author}}\n"));
    let out = s.curate(&["validate", "p.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`stages[0].prompt`: stage `filter`: unknown placeholder `{{author}}`"),
        "{}",
        stderr(&out)
    );
}

/// A chat completion whose answer names `kind`, with log-probabilities that give the kept kind
/// `defect` probability `p` against `question` at the kind's token.
fn judged(kind: &str, p: f64) -> String {
    let verdict = if kind == "defect" { "keep" } else { "drop" };
    let category = if kind == "defect" { "\"robustness\"" } else { "null" };
    let rest = format!("\", \"verdict\": \"{verdict}\", \"category\": {category}, \"reason\": \"r\"}}");
    let token = |t: &str, top: Value| json!({"token": t, "logprob": 0.0, "bytes": null, "top_logprobs": top});
    let tokens = json!([
        token("{\"", json!([])),
        token("kind", json!([])),
        token("\":", json!([])),
        token(" \"", json!([])),
        token(
            kind,
            json!([
                {"token": "defect", "logprob": p.ln(), "bytes": null},
                {"token": "question", "logprob": (1.0 - p).ln(), "bytes": null}
            ])
        ),
        token(&rest, json!([])),
    ]);
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": {"content": tokens, "refusal": null},
                     "message": {"role": "assistant", "content": format!("{{\"kind\": \"{kind}{rest}")}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    })
    .to_string()
}

#[test]
fn gold_words_only_sets_aside_who_wrote_each_comment() {
    let server = Server::responding(|_| Reply::Completion(judged("defect", 0.99)));
    let s = Scratch::new();
    pipeline(&s, &server.base_url);
    let yaml =
        s.read("p.yaml").replace("    prompt: prompt.md\n", "    prompt: prompt.md\n    pr_facts: true\n");
    s.write("p.yaml", &yaml);
    // The PR's author answering: the `author` rule drops it, unless the words alone are judged.
    let rows = [
        json!({"id": "a", "split": "heldout", "comment": "the loop skips the last item", "label": "drop",
               "category": null, "by_pr_author": true, "is_reply": true}),
        json!({"id": "b", "split": "heldout", "comment": "the loop skips the first item", "label": "keep",
               "category": "robustness", "by_pr_author": false, "is_reply": false}),
    ];
    let outside = tempfile::tempdir().unwrap();
    let rows_path = outside.path().join("real.jsonl");
    std::fs::write(&rows_path, rows.map(|r| r.to_string()).join("\n") + "\n").unwrap();
    let rows_path = rows_path.to_str().unwrap();

    let out = s.curate(&["gold", "p.yaml", "--gold", rows_path]);
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(printed.contains("- `author`: 1 / 0"), "{printed}{}", stderr(&out));
    assert!(printed.contains("| heldout | 2 | 1 | 0 | 0 | 1 |"), "{printed}");

    let out = s.curate(&["gold", "p.yaml", "--gold", rows_path, "--words-only"]);
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!printed.contains("`author`"), "{printed}{}", stderr(&out));
    assert!(printed.contains("| heldout | 2 | 1 | 1 | 0 | 0 |"), "the model keeps both: {printed}");

    let out = s.curate(&["gold", "p.yaml", "--words-only", "--record"]);
    assert_eq!(out.status.code(), Some(2), "words only never calibrates: {}", stderr(&out));
}

#[test]
fn gold_calibrates_a_threshold_the_stage_keeps_by_and_a_changed_prompt_needs_a_new_one() {
    // Each comment says how sure the scripted model is that it is a defect.
    let server = Server::responding(|request| {
        let text = request["messages"].to_string();
        assert_eq!(request["logprobs"], true, "the filter asks for log-probabilities");
        let p: f64 =
            text.split("SURE=").nth(1).and_then(|t| t.get(..4)).and_then(|t| t.parse().ok()).unwrap();
        Reply::Completion(judged(if p >= 0.5 { "defect" } else { "question" }, p))
    });
    let s = Scratch::new();
    pipeline(&s, &server.base_url);
    let row = |id: &str, split: &str, label: &str, sure: &str| {
        json!({"id": id, "split": split, "comment": format!("SURE={sure} the value is wrong here"), "label": label, "category": if label == "keep" { json!("robustness") } else { json!(null) }}).to_string()
    };
    // Tuning: keeps at 0.95 and 0.70, a drop at 0.80, drops below. At the low end of its one-sided
    // 95% interval, the precision of 2 of 3 (from 0.70) is 0.254, of 1 of 1 (from 0.95) 0.270:
    // the bar of 0.26 is reached at 0.95.
    let gold = [
        row("t1", "tune", "keep", "0.95"),
        row("t2", "tune", "drop", "0.80"),
        row("t3", "tune", "keep", "0.70"),
        row("t4", "tune", "drop", "0.60"),
        row("t5", "tune", "drop", "0.20"),
        row("h1", "heldout", "keep", "0.97"),
        row("h2", "heldout", "drop", "0.75"),
    ];
    s.write("gold.jsonl", &(gold.join("\n") + "\n"));
    let yaml = s.read("p.yaml").replace(
        "    prompt: prompt.md\n",
        "    prompt: prompt.md\n    gold: gold.jsonl\n    precision_bar: 0.26\n    calibration: calibration.json\n",
    );
    s.write("p.yaml", &yaml);

    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(2), "no calibration yet: {}", stderr(&out));
    assert!(stderr(&out).contains("--record"), "{}", stderr(&out));

    let out = s.curate(&["gold", "p.yaml", "--record"]);
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "held-out precision 1.0 at 0.95: {printed}{}", stderr(&out));
    assert!(printed.contains("at least 0.9500"), "{printed}");
    assert!(printed.contains("at the low end of its one-sided 95% interval, reaches 0.26"), "{printed}");
    let calibration: Value = serde_json::from_str(&s.read("calibration.json")).unwrap();
    let threshold = calibration["threshold"].as_f64().unwrap();
    assert!((threshold - 0.95).abs() < 1e-6, "{threshold}");
    assert_eq!(calibration["heldout"], json!({"tp": 1, "fp": 0, "fn": 0, "tn": 1}));

    // A measurement set from elsewhere is scored at the recorded threshold, never calibrated on.
    let measured = [
        row("m1", "tune", "keep", "0.96"),
        row("m2", "tune", "keep", "0.90"),
        row("m3", "heldout", "drop", "0.99"),
        row("m4", "heldout", "drop", "0.30"),
    ];
    let outside = tempfile::tempdir().unwrap();
    let measured_path = outside.path().join("real.jsonl");
    std::fs::write(&measured_path, measured.join("\n") + "\n").unwrap();
    let measured_path = measured_path.to_str().unwrap();
    let out = s.curate(&["gold", "p.yaml", "--gold", measured_path, "--record"]);
    assert_eq!(out.status.code(), Some(2), "a measurement set never calibrates: {}", stderr(&out));
    let out = s.curate(&["gold", "p.yaml", "--gold", measured_path]);
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(printed.contains("At the stage's recorded threshold 0.9500"), "{printed}{}", stderr(&out));
    let at_threshold = printed.split("At the stage's recorded threshold").nth(1).unwrap();
    assert!(at_threshold.contains("| tune | 2 | 1 | 0 | 1 | 0 |"), "{at_threshold}");
    assert!(at_threshold.contains("| heldout | 2 | 0 | 1 | 0 | 1 |"), "{at_threshold}");
    assert!(at_threshold.contains("| all | 4 | 1 | 1 | 1 | 1 | 0.500 | 0.500 | 0.500 |"), "{at_threshold}");
    let recorded: Value = serde_json::from_str(&s.read("calibration.json")).unwrap();
    assert_eq!(recorded, calibration, "the calibration is untouched");

    // The stage now keeps only what reaches 0.95: the record's comments are all "SURE=" free, so
    // give it two of its own.
    let items = json!({
        "instance_id": "o__r-1", "repo": "o/r", "title": "t", "base_commit": "a",
        "commit_to_review": {"head_commit": "b"}, "merged_commit": "c",
        "reference_review_comments": [
            {"text": "SURE=0.96 this breaks on empty input", "path": "a.py", "line": 2},
            {"text": "SURE=0.90 this breaks on None", "path": "a.py", "line": 2},
            {"text": "LGTM, thanks!", "path": "a.py", "line": 2},
        ]
    });
    s.write("items.jsonl", &format!("{items}\n"));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value =
        serde_json::from_slice(&s.curate(&["report", "p.yaml", "--format", "json"]).stdout).unwrap();
    let row = &report["funnel"][1];
    assert_eq!(row["comments"], 1, "{row}");
    let reasons = row["reasons"].to_string();
    assert!(reasons.contains("under the calibrated keep threshold"), "{reasons}");
    assert!(reasons.contains("rule `praise`"), "{reasons}");

    s.write("prompt.md", &with_texts("[system]\nJudge review comments, strictly.\n[user]\n{{comment}}\n"));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("calibrated for another version of the prompt"), "{}", stderr(&out));
}

/// A chat completion answering one word, with the probability `p_yes` of "Yes" against "No" at it.
fn one_word(p_yes: f64) -> String {
    let word = if p_yes >= 0.5 { "Yes" } else { "No" };
    let top = json!([
        {"token": "Yes", "logprob": p_yes.ln(), "bytes": null},
        {"token": "No", "logprob": (1.0 - p_yes).ln(), "bytes": null}
    ]);
    json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "finish_reason": "length", "logprobs": {"content": [
                        {"token": word, "logprob": 0.0, "bytes": null, "top_logprobs": top}], "refusal": null},
                     "message": {"role": "assistant", "content": word}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21}
    })
    .to_string()
}

#[test]
fn questions_after_the_verdict_multiply_the_confidence_stop_under_even_odds_and_are_part_of_the_calibration()
{
    // The verdict is a defect at 0.9; the question that follows it is answered "yes" at 0.5.
    let server = Server::responding(|request| {
        let messages = request["messages"].as_array().unwrap();
        if messages.last().unwrap()["content"].as_str().unwrap().contains("ASKED") {
            Reply::Completion(one_word(0.5))
        } else {
            Reply::Completion(judged("defect", 0.9))
        }
    });
    let s = Scratch::new();
    pipeline(&s, &server.base_url);
    s.write("ask.md", "[user]\nASKED: would a test see the change? One word, yes or no.\n");
    s.write("more.md", "[user]\nMORE: is it a defect? One word, yes or no.\n");
    let yaml = s.read("p.yaml").replace(
        "    prompt: prompt.md\n",
        "    prompt: prompt.md\n    gold: gold.jsonl\n    precision_bar: 0.5\n    calibration: calibration.json\n    questions: [ask.md, more.md]\n",
    );
    s.write("p.yaml", &yaml);
    let row = |id: &str, split: &str, label: &str| {
        json!({"id": id, "split": split, "comment": format!("{id}: the value is wrong"), "label": label, "category": if label == "keep" { json!("robustness") } else { json!(null) }}).to_string()
    };
    s.write("gold.jsonl", &[row("t1", "tune", "keep"), row("h1", "heldout", "keep")].join("\n"));

    let scores = s.path("scores.jsonl");
    let out = s.curate(&["gold", "p.yaml", "--record", "--scores", scores.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let first: Value = serde_json::from_str(s.read("scores.jsonl").lines().next().unwrap()).unwrap();
    assert!((first["confidence"].as_f64().unwrap() - 0.45).abs() < 1e-6, "{first}");
    assert!((first["answers"]["ask"].as_f64().unwrap() - 0.5).abs() < 1e-6, "{first}");
    assert!((first["p_keep"].as_f64().unwrap() - 0.9).abs() < 1e-6, "{first}");

    // The question follows the verdict in its conversation, with the model's answer before it.
    let asked = server
        .requests()
        .into_iter()
        .find(|r| r["messages"].to_string().contains("ASKED"))
        .expect("the question was asked");
    let roles: Vec<&str> =
        asked["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{asked}");
    assert!(asked["messages"][2]["content"].as_str().unwrap().contains("\"kind\": \"defect"), "{asked}");
    assert_eq!(asked["max_tokens"], 2, "{asked}");
    let more = server.requests().iter().filter(|r| r["messages"].to_string().contains("MORE")).count();
    assert_eq!(more, 0, "at 0.45 the confidence is under even odds: the second question is not asked");

    // The question's words are part of what the calibration holds for.
    s.write("ask.md", "[user]\nASKED: could a test tell them apart? One word, yes or no.\n");
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("calibrated for another version of the prompt"), "{}", stderr(&out));
}

/// `git` in `dir`, which must succeed; its output.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn with_fix_facts_comments_the_fix_leaves_alone_or_only_renames_are_dropped_before_the_model() {
    let s = Scratch::new();
    // A real repository: the reviewed commit and a fix that changes `clamp`'s bound and renames a
    // local in `total`, and leaves `greet` as it was.
    let work = s.path("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let reviewed = "def greet(name):\n    return 'hi ' + name\n\n\ndef clamp(n, hi):\n    if n > hi:\n        return hi\n    return n\n\n\ndef total(xs):\n    acc = 0\n    for x in xs:\n        acc += x\n    return acc\n";
    std::fs::write(work.join("m.py"), reviewed).unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "reviewed"]);
    let head = git(&work, &["rev-parse", "HEAD"]);
    let fixed = reviewed.replace("if n > hi:", "if n >= hi:").replace("acc", "sum_");
    std::fs::write(work.join("m.py"), fixed).unwrap();
    git(&work, &["commit", "-q", "-am", "fix"]);
    let fix = git(&work, &["rev-parse", "HEAD"]);
    git(s.dir.path(), &["clone", "-q", "--bare", "work", "mirrors/o/r.git"]);

    let comment = |text: &str, line: u64, hunk: &str| json!({"text": text, "path": "m.py", "diff_hunk": hunk, "line": line});
    let record = json!({
        "instance_id": "o__r-1", "repo": "o/r", "title": "Small helpers", "base_commit": head,
        "commit_to_review": {"head_commit": head}, "merged_commit": fix,
        "reference_review_comments": [
            comment("greet: the greeting should be capitalised", 2, "@@ -0,0 +1,2 @@\n+def greet(name):\n+    return 'hi ' + name"),
            comment("clamp: an n equal to hi should also return hi", 6, "@@ -0,0 +1,6 @@\n+def greet(name):\n+    return 'hi ' + name\n+\n+\n+def clamp(n, hi):\n+    if n > hi:"),
            comment("total: `acc` should be called `running`", 12, "@@ -0,0 +1,12 @@\n+def greet(name):\n+    return 'hi ' + name\n+\n+\n+def clamp(n, hi):\n+    if n > hi:\n+        return hi\n+    return n\n+\n+\n+def total(xs):\n+    acc = 0"),
        ]
    });
    s.write("items.jsonl", &format!("{record}\n"));
    s.write(
        "prompt.md",
        &with_texts("[system]\nJudge review comments.\n[user]\n{{path}}\n{{diff_hunk}}\n{{comment}}\n"),
    );
    let server = Server::responding(|_| {
        Reply::Answer(
            "{\"verdict\": \"keep\", \"category\": \"functional correctness\", \"reason\": \"r\"}".into(),
        )
    });
    let pipeline = |fix_facts: bool| {
        format!(
            "name: filt\nsource: {{kind: swe-care, path: items.jsonl}}\ndefaults:\n  cache: cache\n  repos: {{url: 'mirrors/{{repo}}.git'}}\n  llm: {{base_url: '{}', model: m, max_retries: 1, backoff_ms: 10}}\nstages:\n  - id: filter\n    kind: review_filter\n    prompt: prompt.md\n    pr_facts: true\n    fix_facts: {fix_facts}\n",
            server.base_url
        )
    };
    s.write("p.yaml", &pipeline(true));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let asked: Vec<String> = server.requests().iter().map(crate::common::openai::first_user).collect();
    assert_eq!(asked.len(), 1, "only the comment whose lines the fix changes reaches the model: {asked:?}");
    assert!(asked[0].contains("clamp:"), "{asked:?}");
    let report: Value =
        serde_json::from_slice(&s.curate(&["report", "p.yaml", "--format", "json"]).stdout).unwrap();
    let reasons: Vec<String> = report["funnel"][1]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert!(reasons.iter().any(|r| r.starts_with("rule `fix untouched`")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("rule `fix same behaviour`")), "{reasons:?}");
    assert_eq!(report["funnel"][1]["comments"], 1);

    // Without the setting the fix is not read: all three are asked.
    s.write("p.yaml", &pipeline(false));
    let out = s.curate(&["run", "p.yaml", "--state", "plain"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 3, "the two others asked now, the first replayed from the cache");
}
