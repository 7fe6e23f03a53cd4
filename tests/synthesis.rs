//! The test_synthesis stage against the real Docker daemon on the sample's durations#3, with a
//! scripted model: a test accepted on the first answer, one accepted after execution feedback, one
//! rejected after three answers, broken tests (a syntax error, an import of a module present on
//! neither side) that never count as a failure on the reviewed side, and a flaky test. Skips loudly
//! without Docker; fails under CURATE_REQUIRE_DOCKER=1.

mod common;

use std::collections::HashMap;

use common::durations::*;
use common::openai::{Reply, Server};
use common::{Scratch, docker_or_skip, stderr};
use serde_json::Value;

fn rows(s: &Scratch) -> HashMap<String, (String, Option<String>, Value)> {
    let db = rusqlite::Connection::open(s.path(".curate/syn/state.db")).unwrap();
    let mut stmt =
        db.prepare("SELECT item, state, message, output FROM tasks WHERE stage = 'tests'").unwrap();
    stmt.query_map([], |r| {
        let out: Option<String> = r.get(3)?;
        Ok((
            r.get::<_, String>(0)?,
            (
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                out.map_or(Value::Null, |o| serde_json::from_str(&o).unwrap()),
            ),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn comments_become_fail_then_pass_tests_with_feedback() {
    if !docker_or_skip("the test synthesis test") {
        return;
    }
    let (record, texts) = durations3();
    // What the scripted model answers: by comment, by attempt.
    let plan: Vec<Vec<&str>> = vec![
        vec![BEHAVIOURAL],
        vec![PASSES_BOTH, PASSES_BOTH, PASSES_BOTH],
        vec![PASSES_BOTH, STRUCTURAL],
        vec![SYNTAX, NOWHERE, NOWHERE],
        vec![FLAKY, BEHAVIOURAL],
    ];
    let keys: Vec<String> = texts.iter().map(|t| t.chars().take(60).collect()).collect();
    let server = Server::responding(move |body| {
        let messages = body["messages"].as_array().unwrap();
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
        let attempt = messages.iter().filter(|m| m["role"] == "assistant").count();
        match keys.iter().position(|k| first_user.contains(k.as_str())) {
            Some(c) => fence(plan[c][attempt]),
            None => Reply::Status(500, vec![], "no such comment in the script".into()),
        }
    });

    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    s.write("p.yaml", &curation_pipeline("syn", &mirrors, &server.base_url, "", ""));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = rows(&s);
    assert_eq!(rows.len(), 5, "{rows:?}");
    let id = |n: usize| format!("curate-sample__durations-3#{n}");
    let history = |n: usize| -> Vec<Value> {
        let out = &rows[&id(n)].2;
        out["history"].as_array().unwrap_or_else(|| panic!("c{n}: {out}")).clone()
    };

    // Accepted on the first answer; it runs the project's code.
    let (state, _, c1) = &rows[&id(1)];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["attempts"], 1);
    assert_eq!(c1["kind"], "behavioural");
    assert_eq!(c1["test"], BEHAVIOURAL);
    assert_eq!(c1["reviewed_verdict"], "assertion");
    assert_eq!(history(1)[0]["repeats"].as_array().unwrap().len(), 2, "two repeats after the first run");

    // Three answers that pass on both sides: rejected, every attempt kept.
    let (state, reason, _) = &rows[&id(2)];
    assert_eq!((state.as_str(), reason.as_deref()), ("rejected", Some("passed on both sides")));
    let h = history(2);
    assert_eq!(h.len(), 3);
    assert!(h.iter().all(|a| a["reviewed"]["verdict"] == "passed" && a["fixed"]["verdict"] == "passed"));

    // Accepted after feedback; it reads a docstring, so it is structural.
    let (state, _, c3) = &rows[&id(3)];
    assert_eq!(state, "kept", "{c3}");
    assert_eq!((c3["attempts"].as_u64(), c3["kind"].as_str()), (Some(2), Some("structural")));
    assert_eq!(history(3)[0]["result"], "passed on both sides");

    // A syntax error and an import of a module that exists on neither side are broken tests, not
    // failures on the reviewed side.
    let (state, reason, _) = &rows[&id(4)];
    assert_eq!((state.as_str(), reason.as_deref()), ("rejected", Some("broken import in the test")));
    let h = history(4);
    assert_eq!(h[0]["result"], "syntax error in the test");
    assert_eq!(h[0]["reviewed"]["verdict"], "syntax_error");
    assert_eq!(h[1]["result"], "broken import in the test");
    assert_eq!(h[1]["reviewed"]["verdict"], "import_error");
    assert_eq!(h[1]["fixed"]["verdict"], "import_error");

    // Fail-then-pass on the first run, different under another hash seed: flaky, and final.
    let (state, reason, _) = &rows[&id(5)];
    assert_eq!((state.as_str(), reason.as_deref()), ("rejected", Some("flaky")));
    let h = history(5);
    assert_eq!(h.len(), 1, "a flaky test ends the comment's attempts");
    assert_eq!(h[0]["reviewed"]["verdict"], "assertion");
    assert_eq!(h[0]["fixed"]["verdict"], "passed");

    // The feedback the model got names the miss and shows the run's output.
    let requests = server.requests();
    let second_for_c3 = requests
        .iter()
        .find(|r| {
            let m = r["messages"].as_array().unwrap();
            m.len() == 4 && m[1]["content"].as_str().unwrap().contains(&texts[2][..60])
        })
        .expect("a second request for c3");
    let feedback = second_for_c3["messages"][3]["content"].as_str().unwrap();
    assert!(feedback.contains("passed on the reviewed commit"), "{feedback}");
    assert!(feedback.contains("1 passed in Ns"), "timings are made stable: {feedback}");
    assert_eq!(server.calls(), 1 + 3 + 2 + 3 + 1);

    // The report's funnel row and reasons.
    let report = s.curate(&["report", "p.yaml"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("| Converting NL Comments to Tests | 1 | 2 | 3 | 0 | 0 |"), "{text}");
    assert!(text.contains("1 × flaky") && text.contains("1 × passed on both sides"), "{text}");

    // A second run does nothing and asks the model nothing.
    let again = s.curate(&["run", "p.yaml"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(server.calls(), 10);
}
