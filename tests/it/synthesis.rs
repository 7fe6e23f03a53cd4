//! The test_synthesis stage against the real Docker daemon on the sample's durations#3, with a
//! scripted model: a test accepted on the first answer, one accepted after execution feedback, one
//! rejected after three answers, broken tests (a syntax error, an import of a module present on
//! neither side) that never count as a failure on the reviewed side, and a flaky test. Skips loudly
//! without Docker; fails under CURATE_REQUIRE_DOCKER=1.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::common::durations::*;
use crate::common::openai::{Reply, Server, first_user};
use crate::common::{Scratch, docker_or_skip, stderr};
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
    // An answer that repeats an earlier one word for word is asked once more, sampled: c2's second
    // and third, c4's third.
    assert_eq!(server.calls(), 1 + (3 + 2) + 2 + (3 + 1) + 1);
    let resampled: Vec<&Value> = requests
        .iter()
        .filter(|r| r["temperature"].as_f64().is_some_and(|t| (t - 0.7).abs() < 1e-6))
        .collect();
    assert_eq!(resampled.len(), 3, "{resampled:?}");
    assert!(resampled.iter().all(|r| r["seed"].as_i64() != Some(7)), "{resampled:?}");

    // The report's funnel row and reasons.
    let report = s.curate(&["report", "p.yaml"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("| Converting NL Comments to Tests | 1 | 2 | 3 | 0 | 0 |"), "{text}");
    assert!(text.contains("1 × flaky") && text.contains("1 × passed on both sides"), "{text}");

    // A second run does nothing and asks the model nothing.
    let again = s.curate(&["run", "p.yaml"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(server.calls(), 13);
}

/// The containers of a state directory, as `docker ps -a` lists them: name and state.
fn containers_of(state: &std::path::Path) -> Vec<(String, String)> {
    let owner = std::fs::canonicalize(state).unwrap();
    let out = std::process::Command::new("docker")
        .args(["ps", "-a", "--filter"])
        .arg(format!("label=dev.curate.state={}", owner.display()))
        .args(["--format", "{{.Names}} {{.State}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(n, s)| (n.to_string(), s.to_string())))
        .collect()
}

/// The containers of `state` that are running now.
fn running(state: &std::path::Path) -> usize {
    containers_of(state).into_iter().filter(|(_, st)| st == "running").count()
}

/// `curate run` of a one-comment curation pipeline named `name` (tests limited to `timeout_secs`)
/// in `s`, started in the background and returned once a test's container runs; with its state.
fn run_until_a_test_runs(
    s: &Scratch,
    name: &str,
    record: &serde_json::Value,
    base_url: &str,
    timeout_secs: u64,
) -> (std::process::Child, std::path::PathBuf) {
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let extra = format!("    repeats: 1\n    max_attempts: 1\n    timeout_secs: {timeout_secs}\n");
    s.write("p.yaml", &curation_pipeline(name, &mirrors, base_url, &extra, ""));
    let mut run = crate::common::curate_cmd(s.dir.path(), &["run", "p.yaml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let state = s.path(&format!(".curate/{name}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while !state.exists() || running(&state) == 0 {
        assert!(std::time::Instant::now() < deadline, "no test container started");
        assert!(run.try_wait().unwrap().is_none(), "the run ended before a test ran");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (run, state)
}

/// `curate` killed with -9 while a test runs: the test's containers stop by themselves at their
/// limit (it is enforced inside them too), and the next run of the state removes them.
#[test]
fn containers_do_not_outlive_a_killed_run() {
    if !docker_or_skip("the killed-run container test") {
        return;
    }
    let (record, _) = durations3();
    let slow = Arc::new(Mutex::new(true));
    let flag = slow.clone();
    let server = Server::responding(move |_| {
        if *flag.lock().unwrap() {
            fence("import time\n\n\ndef test_slow():\n    time.sleep(600)\n")
        } else {
            fence(PASSES_BOTH)
        }
    });
    let s = Scratch::new();
    let (mut run, state) = run_until_a_test_runs(&s, "syn", &record, &server.base_url, 5);
    let seen = std::time::Instant::now();
    run.kill().unwrap(); // SIGKILL: nothing of curate's runs after this
    run.wait().unwrap();
    assert!(running(&state) > 0, "the test's containers still run right after the kill");
    // The host's timer (5 s) died with curate; the limit inside the container (5 + 10 s) holds.
    std::thread::sleep(std::time::Duration::from_secs(20).saturating_sub(seen.elapsed()));
    assert_eq!(running(&state), 0, "{:?}", containers_of(&state));
    assert!(!containers_of(&state).is_empty(), "the stopped containers wait for the next run");

    *slow.lock().unwrap() = false;
    let out = s.curate(&["run", "p.yaml"]);
    assert!(stderr(&out).contains("an earlier run of this state left"), "{}", stderr(&out));
    assert_eq!(containers_of(&state), vec![], "the next run removed them, and its own");
}

/// Two SIGTERMs while a test runs: the second cuts the running tasks off, and their containers are
/// removed before curate exits, not left running to their limit.
#[test]
fn a_second_signal_removes_the_running_containers_before_exit() {
    if !docker_or_skip("the second-signal container test") {
        return;
    }
    let (record, _) = durations3();
    let server = Server::responding(|_| fence("import time\n\n\ndef test_slow():\n    time.sleep(600)\n"));
    let s = Scratch::new();
    let (mut run, state) = run_until_a_test_runs(&s, "sig", &record, &server.base_url, 120);
    for _ in 0..2 {
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(containers_of(&state), vec![], "containers left by the cut-off tasks");
}

/// With an attribution stage upstream, a test that fails then passes must also reach the change
/// that answers its comment: a test of the rounding fix, written for the comment that asks for the
/// docstring, is sent back with the docstring's lines; a test that reads the docstring is taken.
#[test]
fn a_test_of_another_part_of_the_fix_is_sent_back_with_the_lines_that_answer() {
    if !docker_or_skip("the relevance gate test") {
        return;
    }
    let (record, texts) = durations3();
    let keys: Vec<String> = texts.iter().map(|t| t.chars().take(60).collect()).collect();
    let server = Server::responding(move |body| {
        let messages = body["messages"].as_array().unwrap();
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
        let attempt = messages.iter().filter(|m| m["role"] == "assistant").count();
        match (keys.iter().position(|k| first_user.contains(k.as_str())), attempt) {
            (Some(0), _) => fence(BEHAVIOURAL),
            // The rounding test for the pattern comment: it imports the module, so it "runs" the
            // pattern's lines (they run at import), but it passes with the pattern undone.
            (Some(1), 0) => fence(BEHAVIOURAL),
            (Some(2), 0) => fence(BEHAVIOURAL),
            (Some(2), _) => fence(STRUCTURAL),
            _ => Reply::Answer("I cannot write a test for this.".into()),
        }
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let attribution = format!(
        "  - id: attribution\n    kind: attribution\n    needs: context\n    prompt: {}/prompts/attribution.md\n",
        crate::common::root().display()
    );
    let yaml = curation_pipeline("syn", &mirrors, &server.base_url, "    repeats: 1\n", &attribution)
        .replace("needs: [context, environment]\n", "needs: [context, environment, attribution]\n");
    s.write("p.yaml", &yaml);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = rows(&s);
    let id = |n: usize| format!("curate-sample__durations-3#{n}");

    // The rounding test for the rounding comment: it ran the attributed lines.
    let (state, _, c1) = &rows[&id(1)];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["relevance"]["how"], "position");
    let covered = c1["relevance"]["covered"]["src/durations/__init__.py"].as_array().unwrap();
    assert!(!covered.is_empty(), "{c1}");
    assert_eq!(c1["relevance"]["partial_revert"], "assertion", "it fails with the rounding undone: {c1}");

    // The rounding test for the pattern comment: it reaches the pattern's lines, but passes with
    // only them undone, so it is sent back.
    let (state, reason, c2) = &rows[&id(2)];
    assert_eq!(state, "rejected", "{c2}");
    assert_eq!(reason.as_deref(), Some("unparseable"), "the second answer has no test: {c2}");
    let first = &c2["history"][0];
    assert_eq!(first["result"], "does not exercise the change that answers the comment", "{c2}");
    assert_eq!(first["relevance"]["partial_revert"], "passed", "{c2}");
    assert!(
        first["problem"].as_str().unwrap().contains("only the change that answers the comment is undone"),
        "{c2}"
    );

    // The rounding test for the docstring comment: fail-then-pass, but not about its comment.
    let (state, _, c3) = &rows[&id(3)];
    assert_eq!(state, "kept", "{c3}");
    let history = c3["history"].as_array().unwrap();
    assert_eq!(history[0]["result"], "does not exercise the change that answers the comment");
    let problem = history[0]["problem"].as_str().unwrap();
    assert!(problem.contains("src/durations/__init__.py:19:"), "the docstring's lines are shown: {problem}");
    assert_eq!(c3["attempts"], 2);
    assert_eq!(c3["kind"], "structural");
    assert_eq!(c3["relevance"]["named"], "parse_duration");

    // The report lists the accepted tests with their evidence.
    let report = String::from_utf8_lossy(&s.curate(&["report", "p.yaml"]).stdout).to_string();
    assert!(report.contains("## Accepted tests and the change they test"), "{report}");
    assert!(report.contains(&format!("| {} | structural | position |", id(3))), "{report}");
}

/// The `observed_behaviour` stage runs the changed functions on both commits in the PR's image:
/// the rounding comment gets the call it names with both results, the pattern comment the
/// malformed inputs of the project's tests, and the docstring comment, whose change does nothing
/// a call can see, no difference.
#[test]
fn calls_whose_results_differ_between_the_commits_are_found_for_each_comment() {
    if !docker_or_skip("the observed behaviour test") {
        return;
    }
    let (record, _) = durations3();
    let server = Server::responding(|_| fence(PASSES_BOTH));
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let more = format!(
        "  - id: attribution\n    kind: attribution\n    needs: context\n    prompt: {}/prompts/attribution.md\n\
         \x20 - id: behaviour\n    kind: observed_behaviour\n    needs: [context, environment, attribution]\n",
        crate::common::root().display()
    );
    let extra = "    repeats: 1\n    max_attempts: 1\n    from_observed: true\n";
    let yaml = curation_pipeline("syn", &mirrors, &server.base_url, extra, &more).replace(
        "needs: [context, environment]\n",
        "needs: [context, environment, attribution, behaviour]\n",
    );
    s.write("p.yaml", &yaml);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let db = rusqlite::Connection::open(s.path(".curate/syn/state.db")).unwrap();
    let observed = |n: usize| -> Value {
        let out: String = db
            .query_row(
                "SELECT output FROM tasks WHERE stage = 'behaviour' AND item = ?1",
                [format!("curate-sample__durations-3#{n}")],
                |r| r.get(0),
            )
            .unwrap();
        serde_json::from_str(&out).unwrap()
    };
    let calls = |o: &Value| -> Vec<String> {
        o["differences"].as_array().unwrap().iter().map(|d| d["call"].as_str().unwrap().to_string()).collect()
    };

    let c1 = observed(1);
    assert_eq!(c1["targets"], serde_json::json!(["parse_duration"]), "{c1}");
    let first = &c1["differences"][0];
    assert_eq!(first["call"], "parse_duration('4.1m')", "the comment's own call comes first: {c1}");
    assert_eq!(first["from"], "comment");
    assert_eq!(first["reviewed"], "returns 245");
    assert_eq!(first["fixed"], "returns 246");

    let c2 = observed(2);
    assert!(calls(&c2).contains(&"parse_duration('1.2.3h')".to_string()), "{c2}");
    let malformed =
        c2["differences"].as_array().unwrap().iter().find(|d| d["call"] == "parse_duration('1.2.3h')");
    assert_eq!(malformed.unwrap()["fixed"], "raises ValueError: malformed duration: '1.2.3h'", "{c2}");

    let c3 = observed(3);
    assert_eq!(c3["differences"], serde_json::json!([]), "a docstring changes no result: {c3}");
    assert_eq!(c3["errors"], serde_json::json!([null, null, null]), "{c3}");

    // The model's test passes on both sides; the probe's test of the comment's call is judged last
    // and accepted, through the relevance gate like any other.
    let tests = rows(&s);
    let (state, _, t1) = &tests["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{t1}");
    assert_eq!(t1["written_by"], "observed call");
    assert!(t1["test"].as_str().unwrap().contains("assert parse_duration('4.1m') == 246"), "{t1}");
    assert_eq!(t1["history"][0]["result"], "passed on both sides");
    assert_eq!(t1["relevance"]["partial_revert"], "assertion", "{t1}");
    // No difference, no test of the probe's: the model's miss stands.
    let (state, reason, _) = &tests["curate-sample__durations-3#3"];
    assert_eq!((state.as_str(), reason.as_deref()), ("rejected", Some("passed on both sides")));
    // Every miss, the probe's included, says what was wrong with it.
    for (item, (_, _, out)) in &tests {
        for entry in out["history"].as_array().into_iter().flatten() {
            if entry["result"] != "accepted" {
                assert!(entry["problem"].is_string(), "{item}: {entry}");
            }
        }
    }
}

/// With `candidates: 2`, an attempt whose first answer misses asks for one more, sampled under a
/// seed of its own; the first accepted candidate is kept, every candidate is stored, and the
/// conversation goes on from the first answer when none is accepted.
#[test]
fn a_second_sampled_candidate_is_judged_when_the_first_misses() {
    if !docker_or_skip("the candidates test") {
        return;
    }
    let (record, texts) = durations3();
    let keys: Vec<String> = texts.iter().map(|t| t.chars().take(60).collect()).collect();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = Server::responding(move |body| {
        let messages = body["messages"].as_array().unwrap();
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
        let comment = keys.iter().position(|k| first_user.contains(k.as_str()));
        let sampled = body["temperature"].as_f64().unwrap_or(0.0) > 0.0;
        let attempt = messages.iter().filter(|m| m["role"] == "assistant").count();
        log.lock().unwrap().push((comment, attempt, sampled, body["seed"].as_i64()));
        match (comment, sampled) {
            // The rounding comment: the first answer passes on both sides, the sampled one is right.
            (Some(0), false) => fence(PASSES_BOTH),
            (Some(0), true) => fence(BEHAVIOURAL),
            // The others: never right, so both attempts ask for a second candidate.
            _ => fence(PASSES_BOTH),
        }
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let extra = "    repeats: 1\n    max_attempts: 2\n    candidates: 2\n    llm: {seed: 7}\n";
    s.write("p.yaml", &curation_pipeline("syn", &mirrors, &server.base_url, extra, ""));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = rows(&s);
    let id = |n: usize| format!("curate-sample__durations-3#{n}");

    let (state, _, c1) = &rows[&id(1)];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["attempts"], 1);
    let history = c1["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{c1}");
    assert_eq!(history[0]["result"], "passed on both sides");
    assert_eq!(history[1]["result"], "accepted");
    assert_eq!(history[1]["candidate"], 2);
    assert_eq!(c1["test"].as_str().unwrap(), BEHAVIOURAL);

    // A comment no candidate answers: two attempts of two candidates, the second of each a repeat
    // of an earlier answer (the same test), stored but not run again.
    let (state, reason, c2) = &rows[&id(2)];
    assert_eq!(state, "rejected", "{c2}");
    assert_eq!(reason.as_deref(), Some("passed on both sides"), "the first candidate's miss is the reason");
    let history = c2["history"].as_array().unwrap();
    let results: Vec<&str> = history.iter().map(|h| h["result"].as_str().unwrap()).collect();
    assert_eq!(
        results,
        [
            "passed on both sides",
            "the same answer as an earlier one",
            "passed on both sides",
            "the same answer as an earlier one"
        ],
        "{c2}"
    );

    // The sampled requests carry their own seeds: attempt a's candidate k has 7 + 1000 a + k.
    let seen = seen.lock().unwrap();
    let sampled: Vec<Option<i64>> = seen
        .iter()
        .filter(|(c, _, sampled, _)| *c == Some(0) && *sampled)
        .map(|(_, _, _, seed)| *seed)
        .collect();
    assert_eq!(sampled, [Some(1009)], "{seen:?}");
}

/// With a `project_tests` stage and `from_project_tests`, the tests the fix adds to the project are
/// candidates before the model: durations#3's fix adds a rounding test and a malformed-numbers
/// table, which fail on the reviewed code (with the fixed test module put in) and pass on the fixed
/// code. One traced run of them all keeps those that run the comment's change; the rounding
/// comment gets the project's rounding test, judged by the same oracle and the relevance gate; the
/// docstring comment, which no project test reaches, goes on to the model.
#[test]
fn the_tests_a_fix_adds_to_the_project_are_candidates_for_its_comments() {
    if !docker_or_skip("the project tests test") {
        return;
    }
    let (record, _) = durations3();
    let server = Server::responding(|_| Reply::Answer("I cannot write a test for this.".into()));
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let more = format!(
        "  - id: attribution\n    kind: attribution\n    needs: context\n    prompt: {}/prompts/attribution.md\n\
         \x20 - id: project\n    kind: project_tests\n    needs: environment\n",
        crate::common::root().display()
    );
    let yaml = curation_pipeline(
        "syn",
        &mirrors,
        &server.base_url,
        "    repeats: 2\n    max_attempts: 1\n    from_project_tests: true\n",
        &more,
    )
    .replace("needs: [context, environment]\n", "needs: [context, environment, attribution, project]\n");
    s.write("p.yaml", &yaml);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let db = rusqlite::Connection::open(s.path(".curate/syn/state.db")).unwrap();
    let project: String =
        db.query_row("SELECT output FROM tasks WHERE stage = 'project'", [], |r| r.get(0)).unwrap();
    let project: Value = serde_json::from_str(&project).unwrap();
    let f2p: Vec<&str> =
        project["fail_to_pass"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(f2p.contains(&"tests/test_parse.py::test_fractions_are_rounded_not_truncated"), "{project}");
    assert_eq!(f2p.iter().filter(|n| n.contains("test_rejects_malformed_numbers[")).count(), 4, "{project}");
    assert_eq!(f2p.len(), 5, "only the tests the fix adds fail on the reviewed code: {project}");
    let p2p = project["pass_to_pass"].as_array().unwrap();
    assert!(p2p.iter().any(|n| n.as_str().unwrap().contains("test_rejects_malformed[")), "{project}");
    assert_eq!(project["test_paths"], serde_json::json!(["tests/test_parse.py"]));

    let rows = rows(&s);
    let id = |n: usize| format!("curate-sample__durations-3#{n}");
    let (state, _, c1) = &rows[&id(1)];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["written_by"], "project test", "{c1}");
    assert_eq!(
        c1["project"]["node"], "tests/test_parse.py::test_fractions_are_rounded_not_truncated",
        "{c1}"
    );
    assert_eq!(c1["test_file"], "tests/test_parse.py");
    assert!(
        c1["project"]["files"]["tests/test_parse.py"]
            .as_str()
            .unwrap()
            .contains("def test_fractions_are_rounded")
    );
    assert_eq!(c1["reviewed_verdict"], "assertion", "{c1}");
    assert!(!c1["relevance"]["covered"]["src/durations/__init__.py"].as_array().unwrap().is_empty(), "{c1}");
    assert_eq!(c1["relevance"]["partial_revert"], "assertion", "it fails with the rounding undone: {c1}");

    // One traced run of the five picked out the one that runs the rounding lines before any was
    // judged.
    let screen = &c1["history"][0];
    assert_eq!(screen["result"], "screened", "{c1}");
    assert_eq!(screen["fail_to_pass"], 5, "{c1}");
    assert_eq!(
        screen["reaching"],
        serde_json::json!(["tests/test_parse.py::test_fractions_are_rounded_not_truncated"]),
        "{c1}"
    );

    // The docstring comment: no project test runs its lines, so none is judged, and the model
    // (which wrote nothing) is asked.
    let (state, reason, c3) = &rows[&id(3)];
    assert_eq!((state.as_str(), reason.as_deref()), ("rejected", Some("unparseable")), "{c3}");
    let history = c3["history"].as_array().unwrap();
    let by_project: Vec<&Value> = history.iter().filter(|h| h["written_by"] == "project test").collect();
    assert_eq!(by_project.len(), 1, "{c3}");
    assert_eq!(
        (&by_project[0]["result"], &by_project[0]["reaching"]),
        (&"screened".into(), &serde_json::json!([]))
    );
    assert_eq!(history.last().unwrap()["result"], "unparseable", "{c3}");

    // `curate explain` says the same without SQLite: where each comment stopped and who wrote its
    // test, and one comment's candidates.
    let table = crate::common::stdout(&s.curate(&["explain", "p.yaml"]));
    assert!(table.contains(&format!("| {} | tests | kept |  | project test |", id(1))), "{table}");
    assert!(table.contains(&format!("| {} | tests | rejected | unparseable |  |", id(3))), "{table}");
    let one = crate::common::stdout(&s.curate(&["explain", "p.yaml", "--comment", &id(3)]));
    assert!(one.contains("| 1 | project test | 0 reach the change | screened |"), "{one}");
    assert!(one.contains("| 2 | model | attempt 1 | unparseable |"), "{one}");
    let missing = s.curate(&["explain", "p.yaml", "--comment", "no-such#1"]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
}

/// Tests the PR wrote after the fix: the fixed side is a commit with durations#3's code change
/// alone, and its tests come in the PR's merge (`metadata.pr_merged_commit`, as the real-world set
/// names it). The fix's own tests give no candidate; with `tests_from_merge` the merge's test module
/// is run on both sides, and comment 1 gets the project's rounding test from it.
#[test]
fn the_tests_a_pr_writes_after_the_fix_are_candidates_with_tests_from_merge() {
    if !docker_or_skip("the tests-from-merge test") {
        return;
    }
    let (mut record, _) = durations3();
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    // The fix's code without its tests, as a commit of the mirror.
    let git_dir = mirrors.join("curate-sample/durations.git");
    let (head, merge) = (
        record["commit_to_review"]["head_commit"].as_str().unwrap().to_string(),
        record["merged_commit"].as_str().unwrap().to_string(),
    );
    let work = s.path("work");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"])
            .args(["--git-dir", git_dir.to_str().unwrap(), "--work-tree", work.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    std::fs::create_dir_all(&work).unwrap();
    git(&["read-tree", &head]);
    git(&["checkout-index", "-a"]);
    git(&["checkout", &merge, "--", "src"]);
    let tree = git(&["write-tree"]);
    let fix = git(&["commit-tree", &tree, "-p", &head, "-m", "the fix, without its tests"]);
    git(&["update-ref", "refs/heads/fix-only", &fix]);
    record["merged_commit"] = Value::String(fix);
    record["metadata"] = serde_json::json!({"pr_merged_commit": merge});
    s.write("one.jsonl", &format!("{record}\n"));

    let server = Server::responding(|_| Reply::Answer("I cannot write a test for this.".into()));
    // Each setting in a state of its own: `plain`, then `syn`.
    let pipeline = |name: &str, from_merge: bool| {
        let more = format!(
            "  - id: attribution\n    kind: attribution\n    needs: context\n    prompt: {}/prompts/attribution.md\n\
             \x20 - id: project\n    kind: project_tests\n    needs: environment\n    tests_from_merge: {from_merge}\n",
            crate::common::root().display()
        );
        curation_pipeline(
            name,
            &mirrors,
            &server.base_url,
            "    repeats: 1\n    max_attempts: 1\n    from_project_tests: true\n",
            &more,
        )
        .replace("needs: [context, environment]\n", "needs: [context, environment, attribution, project]\n")
    };
    let project_of = |name: &str| -> Value {
        let db = rusqlite::Connection::open(s.path(&format!(".curate/{name}/state.db"))).unwrap();
        let output: String =
            db.query_row("SELECT output FROM tasks WHERE stage = 'project'", [], |r| r.get(0)).unwrap();
        serde_json::from_str(&output).unwrap()
    };

    s.write("plain.yaml", &pipeline("plain", false));
    let out = s.curate(&["run", "plain.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let without = project_of("plain");
    assert_eq!(without["fail_to_pass"], serde_json::json!([]), "the fix commit has no new test: {without}");
    assert!(without.get("tests_commit").is_none(), "{without}");

    s.write("p.yaml", &pipeline("syn", true));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let with = project_of("syn");
    assert_eq!(with["tests_commit"], Value::String(merge), "{with}");
    assert_eq!(with["test_paths"], serde_json::json!(["tests/test_parse.py"]), "{with}");
    let f2p = with["fail_to_pass"].as_array().unwrap();
    assert!(
        f2p.iter().any(|n| n == "tests/test_parse.py::test_fractions_are_rounded_not_truncated"),
        "{with}"
    );
    let (state, _, c1) = &rows(&s)["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["written_by"], "project test", "{c1}");
    assert!(
        c1["project"]["files"]["tests/test_parse.py"]
            .as_str()
            .unwrap()
            .contains("def test_fractions_are_rounded"),
        "the merge's test module, as it ran: {c1}"
    );
}

/// A test whose one wrong assertion makes it fail on the fixed code too is judged again one check
/// at a time: the rounding check alone fails on the reviewed code and passes on the fixed one.
#[test]
fn a_missed_test_with_several_checks_is_judged_one_check_at_a_time() {
    if !docker_or_skip("the split checks test") {
        return;
    }
    let (record, texts) = durations3();
    let key: String = texts[0].chars().take(60).collect();
    const TWO: &str = "from durations import parse_duration\n\n\ndef test_x():\n    assert parse_duration(\"1h\") == 3601\n    assert parse_duration(\"4.1m\") == 246\n";
    let server = Server::responding(move |body| {
        let first_user = first_user(body);
        if first_user.contains(&key) { fence(TWO) } else { Reply::Answer("no test".into()) }
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    s.write(
        "p.yaml",
        &curation_pipeline("syn", &mirrors, &server.base_url, "    repeats: 1\n    max_attempts: 1\n", ""),
    );
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = rows(&s);
    let (state, _, c1) = &rows["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{c1}");
    let history = c1["history"].as_array().unwrap();
    assert_eq!(history[0]["result"], "failed on both sides", "{c1}");
    assert_eq!(history[1]["split"], "1 of 2", "{c1}");
    assert_eq!(history[1]["result"], "failed on both sides", "the wrong check alone: {c1}");
    assert_eq!(history[2]["split"], "2 of 2", "{c1}");
    assert_eq!(
        c1["test"],
        "from durations import parse_duration\n\n\ndef test_x():\n    assert parse_duration(\"4.1m\") == 246\n"
    );
    assert_eq!(c1["reviewed_verdict"], "assertion");
}

/// An answer cut off at the token cap before its first test ended is asked once more with the
/// stage's `cut_off_max_tokens`, and that answer is judged.
#[test]
fn an_answer_cut_off_at_the_cap_is_asked_again_with_room() {
    if !docker_or_skip("the cut-off test") {
        return;
    }
    let (record, texts) = durations3();
    let key: String = texts[0].chars().take(60).collect();
    let caps = Arc::new(Mutex::new(Vec::new()));
    let log = caps.clone();
    let server = Server::responding(move |body| {
        let first_user = first_user(body);
        if !first_user.contains(&key) {
            return Reply::Answer("no test".into());
        }
        let cap = body["max_tokens"].as_u64().unwrap();
        log.lock().unwrap().push(cap);
        if cap >= 400 {
            return fence(BEHAVIOURAL);
        }
        let cut = "```python\nfrom durations import parse_duration\n\n\ndef test_rou";
        Reply::Completion(
            serde_json::json!({
                "id": "chatcmpl-cut", "object": "chat.completion", "created": 1, "model": "scripted-model",
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": cut}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 160, "total_tokens": 260}
            })
            .to_string(),
        )
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let extra =
        "    repeats: 1\n    max_attempts: 1\n    cut_off_max_tokens: 400\n    llm: {max_tokens: 160}\n";
    s.write("p.yaml", &curation_pipeline("syn", &mirrors, &server.base_url, extra, ""));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = rows(&s);
    let (state, _, c1) = &rows["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["test"].as_str().unwrap(), BEHAVIOURAL);
    assert_eq!(*caps.lock().unwrap(), [160, 400], "the cut-off answer was asked again with room");
}

/// A test that calls the right code and expects a wrong value fails on both sides; with
/// `expect_from_fixed`, it is judged again expecting what the fixed code gave, and that test fails
/// on the reviewed code and passes on the fixed one.
#[test]
fn a_wrong_expectation_is_judged_again_with_the_fixed_codes_value() {
    if !docker_or_skip("the fixed value test") {
        return;
    }
    let (record, texts) = durations3();
    let key: String = texts[0].chars().take(60).collect();
    const WRONG: &str =
        "from durations import parse_duration\n\n\ndef test_x():\n    assert parse_duration(\"4.1m\") == 1\n";
    let server = Server::responding(move |body| {
        let first_user = first_user(body);
        if first_user.contains(&key) { fence(WRONG) } else { Reply::Answer("no test".into()) }
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let extra = "    repeats: 1\n    max_attempts: 1\n    expect_from_fixed: true\n";
    s.write("p.yaml", &curation_pipeline("syn", &mirrors, &server.base_url, extra, ""));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = rows(&s);
    let (state, _, c1) = &rows["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{c1}");
    let history = c1["history"].as_array().unwrap();
    assert_eq!(history[0]["result"], "failed on both sides", "{c1}");
    assert_eq!(history[1]["result"], "accepted", "{c1}");
    assert_eq!(c1["test"], WRONG.replace("== 1\n", "== 246\n"), "{c1}");
    assert_eq!(c1["expected_from_fixed"], serde_json::json!({"line": 5, "was": "1", "now": "246"}));
    assert_eq!(c1["reviewed_verdict"], "assertion");
    // `explain` names who wrote the expectation.
    let table = crate::common::stdout(&s.curate(&["explain", "p.yaml"]));
    let row = table.lines().find(|l| l.contains("durations-3#1 ")).unwrap_or_default();
    assert!(row.ends_with("| model, fixed code's value |"), "{table}");
}
