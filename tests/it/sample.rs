//! The comment-context stage on the bundled sample: real git repositories built by
//! `sample/build.py`, read through the mirror cache.

use std::path::Path;

use crate::common::{Scratch, funnel, root, stderr};
use serde_json::Value;

fn pipeline(s: &Scratch, jsonl: &Path, mirrors: &Path) {
    s.write(
        "ccrab.yaml",
        &format!(
            "name: sample\nsource: {{kind: swe-care, path: {}}}\ndefaults:\n  cache: cache\n  repos: {{url: '{}/{{repo}}.git'}}\nstages:\n  - id: context\n    kind: comment_context\n",
            jsonl.display(),
            mirrors.display()
        ),
    );
}

fn records() -> Vec<Value> {
    std::fs::read_to_string(root().join("sample/swe-care.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_sample_comment_is_placed_in_its_code_and_a_rerun_reads_the_store() {
    let s = Scratch::new();
    let m = s.sample_mirrors();
    pipeline(&s, &root().join("sample/swe-care.jsonl"), &m);
    let out = s.curate(&["run", "ccrab.yaml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let comments: u64 =
        records().iter().map(|r| r["reference_review_comments"].as_array().unwrap().len() as u64).sum();
    let rows = funnel(&s, "ccrab.yaml", &[]);
    assert_eq!(rows[0], ("ingest".to_string(), records().len() as u64, comments));
    assert_eq!(rows[1], ("context".to_string(), records().len() as u64, comments));

    let db = rusqlite::Connection::open(s.path(".curate/sample/state.db")).unwrap();
    let output: String = db
        .query_row("SELECT output FROM tasks WHERE item = 'curate-sample__durations-8#1'", [], |r| r.get(0))
        .unwrap();
    let output: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(output["side"], "left", "the comment on a deleted line");
    assert_eq!(output["code"], "    if seconds < 0:");
    assert!(output["file_after"].as_str().unwrap().contains("def format_duration"));

    let again = s.curate(&["run", "ccrab.yaml"]);
    assert!(
        crate::common::stdout(&again)
            .contains(&format!("0 task(s) done now, {comments} taken from the store"))
    );
}

#[test]
fn comments_that_cannot_be_placed_are_rejected_with_their_reason() {
    let s = Scratch::new();
    let m = s.sample_mirrors();
    let mut recs = records();
    let first = &mut recs[0];
    let c = first["reference_review_comments"].as_array_mut().unwrap();
    let hunk = c[0]["diff_hunk"].as_str().unwrap().to_string();
    c[0]["diff_hunk"] = Value::String(format!("{}\n+a line the file never had", hunk.trim_end()));
    c[1]["path"] = Value::String("nope.py".into());
    recs[1]["merged_commit"] = Value::Null;
    let n_second = recs[1]["reference_review_comments"].as_array().unwrap().len();
    let text: String = recs.iter().map(|r| format!("{r}\n")).collect();
    let jsonl = s.write("edited.jsonl", &text);
    pipeline(&s, &jsonl, &m);
    let out = s.curate(&["run", "ccrab.yaml"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let report = s.curate(&["report", "ccrab.yaml", "--format", "json"]);
    let json: Value = serde_json::from_slice(&report.stdout).unwrap();
    let reasons: Vec<(String, u64)> = json["funnel"][1]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["reason"].as_str().unwrap().to_string(), r["count"].as_u64().unwrap()))
        .collect();
    assert!(reasons.contains(&("the PR has no fixed commit".into(), n_second as u64)), "{reasons:?}");
    assert!(
        reasons.contains(&("the diff hunk does not match the file at the reviewed commit".into(), 1)),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("the commented file does not exist at the reviewed commit".into(), 1)),
        "{reasons:?}"
    );
}

#[test]
fn an_unreachable_repository_is_an_error_to_retry_not_a_rejection() {
    let s = Scratch::new();
    // A URL, not a local directory: whether it answers is for the next run to find out.
    let unreachable = format!("file://{}", s.path("no-mirrors-here").display());
    pipeline(&s, &root().join("sample/swe-care.jsonl"), Path::new(&unreachable));
    let out = s.curate(&["run", "ccrab.yaml", "--limit", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot get curate-sample/"), "{}", stderr(&out));
    let m = s.sample_mirrors();
    pipeline(&s, &root().join("sample/swe-care.jsonl"), &m);
    let out = s.curate(&["run", "ccrab.yaml", "--limit", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn missing_local_mirrors_stop_the_run_at_once_naming_them() {
    let s = Scratch::new();
    pipeline(&s, &root().join("sample/swe-care.jsonl"), &s.path("no-mirrors"));
    let out = s.curate(&["run", "ccrab.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("6 repositories of the source have no local mirror to clone from"), "{err}");
    assert!(err.contains("no-mirrors/curate-sample/durations.git"), "{err}");
    assert!(!s.path(".curate").exists(), "nothing ran, so no state was made");
}
