//! The main job as a newcomer runs it: pipelines/ccrab.yaml on the bundled sample, with no model
//! server, replaying the answers committed in cache/llm; and `curate gold` the same way. A prompt
//! edited without recording its answers again fails here.

mod common;

use std::process::Command;

use common::{curate_cmd, docker_or_skip, root, stderr, stdout};
use serde_json::Value;

/// Nothing listens here: a call that should have been replayed fails loudly.
const NOWHERE: &str = "http://127.0.0.1:9/v1";

#[test]
fn the_main_pipeline_replays_the_recorded_model_answers() {
    if !docker_or_skip("the main job test") {
        return;
    }
    let built = Command::new("python3")
        .arg("sample/build.py")
        .arg("--out")
        .arg("cache/mirrors")
        .current_dir(root())
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let state = tempfile::tempdir().unwrap();
    let state = state.path().to_str().unwrap();
    let out = curate_cmd(&root(), &["run", "pipelines/ccrab.yaml", "--state", state])
        .env("CURATE_LLM_CACHE", "replay")
        .env("OPENAI_BASE_URL", NOWHERE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    let report =
        curate_cmd(&root(), &["report", "pipelines/ccrab.yaml", "--state", state, "--format", "json"])
            .output()
            .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["complete"], true, "{report}");
    let rows = report["funnel"].as_array().unwrap();
    assert_eq!(rows[0]["comments"], 55);
    let kept = rows[1]["comments"].as_u64().unwrap();
    assert!(kept > 0 && kept < 55, "the filter keeps some and drops some: {kept}");
    assert_eq!(rows[3]["stage"], "environment");
    assert!(rows[3]["prs"].as_u64().unwrap() > 0);
}

#[test]
fn gold_replays_with_no_model_server() {
    let out = curate_cmd(&root(), &["gold", "pipelines/ccrab.yaml"])
        .env("CURATE_LLM_CACHE", "replay")
        .env("OPENAI_BASE_URL", NOWHERE)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("| heldout | 44 |"), "{text}\n{}", stderr(&out));
    let meets = text.contains("meets the bar");
    assert!(meets || text.contains("is below the bar"), "{text}");
    assert_eq!(out.status.code(), Some(if meets { 0 } else { 1 }));
}
