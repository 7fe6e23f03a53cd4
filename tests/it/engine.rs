//! The engine end to end, through the real binary: resume after `kill -9`, re-runs after edits, the
//! lock, retries of errored tasks, Ctrl-C, and pipeline errors.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::common::{Scratch, counts, curate_cmd, funnel, stderr, stdout};

/// Two exec stages that log every execution, the second rejecting every seventh item, then a noop.
fn logging_pipeline(s: &Scratch, log: &str, items: &str) -> std::path::PathBuf {
    s.write(
        "p.yaml",
        &format!(
            r#"name: killtest
source: {{kind: jsonl, path: {items}}}
defaults:
  concurrency: {{cpu: 4}}
stages:
  - id: first
    kind: exec
    command: 'echo "first $CURATE_ITEM_ID" >> {log}; cat > /dev/null'
  - id: second
    kind: exec
    needs: first
    command: |
      echo "second $CURATE_ITEM_ID" >> {log}
      n=$(echo "$CURATE_ITEM_ID" | sed 's/item-0*//')
      if [ $(( ${{n:-0}} % 7 )) -eq 0 ]; then echo "multiple of seven" >&2; exit 1; fi
  - id: last
    kind: noop
    needs: second
"#
        ),
    )
}

#[test]
fn kill_9_mid_run_loses_only_tasks_in_flight_and_the_funnel_matches_an_uninterrupted_run() {
    let s = Scratch::new();
    s.items("items.jsonl", 2000);
    logging_pipeline(&s, "log.txt", "items.jsonl");

    let mut child = curate_cmd(s.dir.path(), &["run", "p.yaml", "--state", "state-a"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start curate");
    let t0 = Instant::now();
    while s.read("log.txt").lines().count() < 1500 {
        assert!(t0.elapsed() < Duration::from_secs(120), "the run made no progress");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill -9");
    child.wait().unwrap();
    let at_kill = s.read("log.txt").lines().count();
    assert!(at_kill < 4000, "killed too late to prove anything: {at_kill} executions");

    // What the store says was in flight when the process died.
    let db = rusqlite::Connection::open(s.path("state-a/state.db")).unwrap();
    let in_flight: HashSet<String> = db
        .prepare("SELECT stage || ' ' || item FROM tasks WHERE state = 'running'")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(db);
    assert!(in_flight.len() <= 4, "more tasks in flight than the concurrency limit: {in_flight:?}");
    eprintln!("killed after {at_kill} executions with {} task(s) in flight", in_flight.len());

    // Orphaned commands of the killed run finish within moments; let them, then resume.
    std::thread::sleep(Duration::from_millis(300));
    let out = s.curate(&["run", "p.yaml", "--state", "state-a"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let seen = counts(&s.read("log.txt"));
    for i in 0..2000 {
        for stage in ["first", "second"] {
            let task = format!("{stage} item-{i:04}");
            let n = seen.get(&task).copied().unwrap_or(0);
            if in_flight.contains(&task) {
                assert!((1..=2).contains(&n), "{task} was in flight and ran {n} times");
            } else {
                assert_eq!(n, 1, "{task} ran {n} times");
            }
        }
    }
    assert_eq!(seen.len(), 4000, "every item went through both exec stages, and nothing else ran");

    // The same pipeline, never interrupted, gives the same funnel.
    let clean = Scratch::new();
    clean.items("items.jsonl", 2000);
    logging_pipeline(&clean, "log.txt", "items.jsonl");
    let out = clean.curate(&["run", "p.yaml", "--state", "state-b"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let resumed = funnel(&s, "p.yaml", &["--state", "state-a"]);
    assert_eq!(resumed, funnel(&clean, "p.yaml", &["--state", "state-b"]));
    let rejected = (0..2000).filter(|i| i % 7 == 0).count() as u64;
    assert_eq!(resumed[2], ("second".to_string(), 2000 - rejected, 0));
}

#[test]
fn editing_a_prompt_reruns_that_stage_and_its_downstream_only() {
    let s = Scratch::new();
    s.items("items.jsonl", 20);
    s.write("prompt.txt", "Is this comment actionable?\n");
    let stage = |id: &str, needs: &str, extra: &str| {
        format!(
            "  - id: {id}\n    kind: exec\n{needs}{extra}    command: 'echo \"{id} $CURATE_ITEM_ID\" >> log.txt'\n"
        )
    };
    let yaml = format!(
        "name: prompts\nsource: {{kind: jsonl, path: items.jsonl}}\nstages:\n{}{}{}{}",
        stage("a", "", ""),
        stage("b", "    needs: a\n", "    inputs: [prompt.txt]\n"),
        stage("c", "    needs: b\n", ""),
        stage("d", "    needs: a\n", ""),
    );
    s.write("p.yaml", &yaml);
    assert!(s.curate(&["run", "p.yaml"]).status.success());
    s.write("prompt.txt", "Is this comment specific and actionable?\n");
    let out = s.curate(&["run", "p.yaml"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let seen = counts(&s.read("log.txt"));
    for i in 0..20 {
        let item = format!("item-{i:04}");
        assert_eq!(seen[&format!("a {item}")], 1, "a is upstream of the edit");
        assert_eq!(seen[&format!("d {item}")], 1, "d does not depend on b");
        assert_eq!(seen[&format!("b {item}")], 2, "b uses the prompt");
        assert_eq!(seen[&format!("c {item}")], 2, "c is downstream of b");
    }
    assert!(stdout(&out).contains("40 task(s) done now, 40 taken from the store"), "{}", stdout(&out));
}

#[test]
fn adding_items_runs_only_the_new_ones_and_limit_selects_the_first_prs() {
    let s = Scratch::new();
    s.items("items.jsonl", 15);
    s.write(
        "p.yaml",
        "name: grow\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: a\n    kind: exec\n    command: 'echo \"$CURATE_ITEM_ID\" >> log.txt'\n",
    );
    assert!(s.curate(&["run", "p.yaml", "--limit", "10"]).status.success());
    assert_eq!(s.read("log.txt").lines().count(), 10);
    let out = s.curate(&["run", "p.yaml"]);
    assert!(out.status.success());
    let seen = counts(&s.read("log.txt"));
    assert_eq!(seen.len(), 15);
    assert!(seen.values().all(|&n| n == 1), "{seen:?}");
}

#[test]
fn errored_tasks_are_reported_and_retried_by_the_next_run() {
    let s = Scratch::new();
    s.items("items.jsonl", 6);
    s.write(
        "p.yaml",
        r#"name: flaky
source: {kind: jsonl, path: items.jsonl}
stages:
  - id: call
    kind: exec
    command: |
      echo "$CURATE_ITEM_ID" >> log.txt
      case "$CURATE_ITEM_ID" in *[24]) [ -f healed ] || { echo "service unavailable" >&2; exit 3; } ;; esac
      echo '{"ok": true}'
  - id: after
    kind: noop
    needs: call
"#,
    );
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(1), "errored tasks make exit 1");
    let status = stdout(&s.curate(&["status", "p.yaml"]));
    assert!(status.contains("call item-0002: exit status 3: service unavailable (attempts: 1)"), "{status}");
    let report = stdout(&s.curate(&["report", "p.yaml"]));
    assert!(report.contains("**Incomplete**"), "{report}");

    s.write("healed", "");
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = counts(&s.read("log.txt"));
    assert_eq!(seen["item-0002"], 2);
    assert_eq!(seen["item-0004"], 2);
    assert_eq!(seen["item-0001"], 1);
    assert_eq!(funnel(&s, "p.yaml", &[]).last().unwrap(), &("after".to_string(), 6, 0));
}

#[test]
fn a_second_run_on_the_same_state_exits_at_once_naming_the_first() {
    let s = Scratch::new();
    s.items("items.jsonl", 2);
    s.write(
        "p.yaml",
        "name: slow\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: wait\n    kind: exec\n    command: 'touch started; sleep 3'\n",
    );
    let mut first = curate_cmd(s.dir.path(), &["run", "p.yaml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !s.path("started").exists() {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(20));
    }
    let t1 = Instant::now();
    let out = s.curate(&["run", "p.yaml"]);
    let waited = t1.elapsed();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&format!("in use by another `curate run` (pid {}", first.id())), "{err}");
    assert!(waited < Duration::from_secs(2), "should fail at once, took {waited:?}");
    let status = stdout(&s.curate(&["status", "p.yaml"]));
    assert!(status.contains("A run is in progress"), "{status}");
    assert!(first.wait().unwrap().success());
}

#[test]
fn ctrl_c_lets_running_tasks_finish_then_the_next_run_does_the_rest() {
    let s = Scratch::new();
    s.items("items.jsonl", 8);
    s.write(
        "p.yaml",
        r#"name: stop
source: {kind: jsonl, path: items.jsonl}
defaults:
  concurrency: {cpu: 2}
stages:
  - id: slow
    kind: exec
    command: 'echo "start $CURATE_ITEM_ID" >> log.txt; sleep 1; echo "end $CURATE_ITEM_ID" >> log.txt'
"#,
    );
    let child = curate_cmd(s.dir.path(), &["run", "p.yaml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !s.read("log.txt").contains("start") {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let log = s.read("log.txt");
    let started = log.lines().filter(|l| l.starts_with("start")).count();
    let ended = log.lines().filter(|l| l.starts_with("end")).count();
    assert_eq!(started, ended, "every started task finished: {log}");
    assert!(started < 8, "no new tasks after the signal: {log}");

    let out = s.curate(&["run", "p.yaml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = counts(&s.read("log.txt"));
    assert_eq!(seen.len(), 16);
    assert!(seen.values().all(|&n| n == 1), "nothing ran twice: {seen:?}");
}

#[test]
fn pipeline_errors_name_file_line_and_key_and_exit_2() {
    let s = Scratch::new();
    s.items("items.jsonl", 1);
    let head = "name: bad\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n";
    s.write(
        "cycle.yaml",
        &format!("{head}  - id: a\n    kind: noop\n    needs: b\n  - id: b\n    kind: noop\n    needs: a\n"),
    );
    s.write(
        "dangling.yaml",
        &format!("{head}  - id: a\n    kind: noop\n  - id: synth\n    kind: noop\n    needs: [a, env2]\n"),
    );
    s.write("unknown.yaml", &format!("{head}  - id: a\n    kind: noop\n    colour: red\n"));
    s.write("empty.yaml", "");

    let cases = [
        ("cycle.yaml", "cycle.yaml:6:5: `stages[0].needs`: the stages form a cycle: a -> b -> a"),
        (
            "dangling.yaml",
            "dangling.yaml:8:5: `stages[1].needs[1]`: stage `synth` needs `env2`, which no stage defines",
        ),
        ("unknown.yaml", "unknown.yaml:6:5: `stages[0].colour`: stage `a`: unknown field `colour`"),
        ("empty.yaml", "empty.yaml: the pipeline file is empty"),
    ];
    for (file, expected) in cases {
        for cmd in ["validate", "run"] {
            let out = s.curate(&[cmd, file]);
            assert_eq!(out.status.code(), Some(2), "{cmd} {file}");
            assert!(stderr(&out).contains(expected), "{cmd} {file}: {}", stderr(&out));
        }
    }
    let out = s.curate(&["graph", "cycle.yaml"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_source_lines_are_counted_and_skipped_unless_strict() {
    let s = Scratch::new();
    s.write("items.jsonl", "{\"id\": \"a\"}\nnot json\n{\"id\": \"a\"}\n{\"id\": \"b\", \"pr\": \"a\"}\n");
    s.write(
        "p.yaml",
        "name: src\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: a\n    kind: noop\n",
    );
    let out = s.curate(&["run", "p.yaml"]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(err.contains("items.jsonl:2: malformed JSON"), "{err}");
    assert!(err.contains("items.jsonl:3: field `id`: duplicate id `a` (first on line 1)"), "{err}");
    assert_eq!(funnel(&s, "p.yaml", &[]), vec![("ingest".into(), 1, 1), ("a".into(), 1, 1)]);

    let out = s.curate(&["run", "p.yaml", "--strict"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("2 bad record(s)"), "{}", stderr(&out));
}

#[test]
fn exec_output_reaches_downstream_stages_on_stdin() {
    let s = Scratch::new();
    s.write("items.jsonl", "{\"id\": \"pr1\", \"title\": \"Fix\"}\n{\"id\": \"c1\", \"pr\": \"pr1\", \"body\": \"nit\"}\n{\"id\": \"c2\", \"pr\": \"pr1\", \"body\": \"bug\"}\n");
    s.write(
        "p.yaml",
        r#"name: io
source: {kind: jsonl, path: items.jsonl}
stages:
  - id: judge
    kind: exec
    scope: comment
    command: |
      python3 -c '
      import json, sys
      item = json.load(sys.stdin)
      if item["data"]["body"] == "nit":
          sys.stderr.write("a nit\n"); sys.exit(1)
      print(json.dumps({"category": "correctness", "pr": item["pr"]}))'
  - id: collect
    kind: exec
    needs: judge
    command: 'cat > pr-input.json'
"#,
    );
    let out = s.curate(&["run", "p.yaml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let input: serde_json::Value = serde_json::from_str(&s.read("pr-input.json")).unwrap();
    assert_eq!(input["id"], "pr1");
    assert_eq!(input["data"]["title"], "Fix");
    assert_eq!(
        input["upstream"]["judge"],
        serde_json::json!({"c2": {"category": "correctness", "pr": "pr1"}})
    );
    assert_eq!(
        funnel(&s, "p.yaml", &[]),
        vec![("ingest".into(), 1, 2), ("judge".into(), 1, 1), ("collect".into(), 1, 1)]
    );
}

#[test]
fn an_unusable_state_directory_is_a_clear_error() {
    let s = Scratch::new();
    s.items("items.jsonl", 1);
    s.write(
        "p.yaml",
        "name: st\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: a\n    kind: noop\n",
    );
    s.write("not-a-dir", "");
    let out = s.curate(&["run", "p.yaml", "--state", "not-a-dir/state"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot create state directory not-a-dir/state"), "{}", stderr(&out));
}

#[test]
fn a_damaged_or_emptied_state_database_stops_with_the_way_out_and_a_fresh_one_recovers() {
    let s = Scratch::new();
    s.items("items.jsonl", 2);
    s.write(
        "p.yaml",
        "name: db\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: a\n    kind: noop\n",
    );
    assert_eq!(s.curate(&["run", "p.yaml"]).status.code(), Some(0));
    let db = s.path(".curate/db/state.db");
    let good = std::fs::read(&db).unwrap();
    for wal in ["state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(s.path(&format!(".curate/db/{wal}")));
    }

    // Overwritten past its header: SQLite's own words, the file, and how to go on.
    let mut damaged = good.clone();
    for byte in damaged.iter_mut().skip(100) {
        *byte = 0x5a;
    }
    std::fs::write(&db, &damaged).unwrap();
    for command in [vec!["run", "p.yaml"], vec!["status", "p.yaml"]] {
        let out = s.curate(&command);
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let err = stderr(&out);
        assert!(err.contains("is damaged") && err.contains("curate state repair"), "{command:?}: {err}");
    }

    // Emptied: not taken for a new database, which would redo everything unsaid.
    std::fs::write(&db, b"").unwrap();
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is empty (0 bytes)"), "{}", stderr(&out));

    // The way out works: moved aside, the next run starts over and finishes.
    let out = s.curate(&["state", "repair", "p.yaml"]);
    assert!(stdout(&out).starts_with("kept 0 task(s); the damaged file is now"), "{}", stdout(&out));
    assert_eq!(s.curate(&["run", "p.yaml"]).status.code(), Some(0));
}

#[test]
fn a_damaged_state_is_repaired_keeping_every_task_still_readable_and_the_next_run_redoes_the_rest() {
    let s = Scratch::new();
    s.items("items.jsonl", 300);
    s.write(
        "p.yaml",
        "name: db\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: a\n    kind: noop\n",
    );
    assert_eq!(s.curate(&["run", "p.yaml"]).status.code(), Some(0));
    let out = s.curate(&["state", "check", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("is sound"), "{}", stdout(&out));

    // One leaf page of the task table in the middle of the file overwritten: the rows on it are
    // lost, the rest can be read from either side of it.
    let db = s.path(".curate/db/state.db");
    let mut bytes = std::fs::read(&db).unwrap();
    let page = 4096;
    let leaves: Vec<usize> = (1..bytes.len() / page).filter(|p| bytes[p * page] == 0x0a).collect();
    assert!(leaves.len() >= 3, "the task table spans several leaf pages: {leaves:?}");
    let middle = leaves[leaves.len() / 2];
    for byte in &mut bytes[middle * page + 8..(middle + 1) * page] {
        *byte = 0x5a;
    }
    std::fs::write(&db, &bytes).unwrap();

    let out = s.curate(&["state", "check", "p.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("is damaged") && stdout(&out).contains("state repair"), "{}", stdout(&out));
    let out = s.curate(&["state", "repair", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    let kept: usize = said.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect(&said);
    assert!(kept > 100 && kept < 300, "{said}");
    assert!(said.contains("of the 300 it counts") && said.contains("state.db.damaged-"), "{said}");

    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ran = format!("{} task(s) done now, {kept} taken from the store", 300 - kept);
    assert!(stderr(&out).contains(&ran) || stdout(&out).contains(&ran), "{ran}: {}", stderr(&out));
    assert!(stdout(&s.curate(&["state", "check", "p.yaml"])).contains("is sound"));
}

#[test]
fn the_funnel_counts_prs_that_have_a_comment_and_an_instance_pipeline_counts_instances() {
    let s = Scratch::new();
    // p2's only comment is a bad record: p2 has nothing to curate.
    s.write(
        "items.jsonl",
        "{\"id\": \"p1\"}\n{\"id\": \"p2\"}\n{\"id\": \"c1\", \"pr\": \"p1\"}\n{\"id\": \"c2\", \"pr\": \"p2\"\n",
    );
    s.write(
        "p.yaml",
        "name: f\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: look\n    kind: noop\n    scope: comment\n",
    );
    assert!(s.curate(&["run", "p.yaml"]).status.success());
    let rows = funnel(&s, "p.yaml", &[]);
    assert_eq!(rows[0], ("ingest".to_string(), 1, 1), "p2 has no comment left");
    assert_eq!(rows[1], ("look".to_string(), 1, 1));

    s.write(
        "q.yaml",
        "name: g\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: build\n    kind: noop\n",
    );
    s.write("items.jsonl", "{\"id\": \"p1\"}\n{\"id\": \"p2\"}\n");
    assert!(s.curate(&["run", "q.yaml"]).status.success());
    let report = stdout(&s.curate(&["report", "q.yaml"]));
    assert!(report.contains("| Stage | Instances | Rejected | Errored | Pending |"), "{report}");
    assert!(report.contains("| Initial dataset | 2 | 0 | 0 | 0 |"), "{report}");
}

#[test]
fn a_command_whose_reader_stops_reading_ends_without_a_panic() {
    let s = Scratch::new();
    s.items("items.jsonl", 30);
    s.write(
        "p.yaml",
        "name: pipe\nsource: {kind: jsonl, path: items.jsonl}\nstages:\n  - id: a\n    kind: noop\n",
    );
    for args in [&["status", "p.yaml"][..], &["graph", "p.yaml"], &["report", "p.yaml"]] {
        let mut child = curate_cmd(s.dir.path(), args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the first line is written.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && out.status.code() != Some(101),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}

#[test]
fn a_fifo_or_a_device_named_as_a_pipeline_or_an_input_is_refused_at_once() {
    let s = Scratch::new();
    s.items("items.jsonl", 1);
    let fifo = s.path("p.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let with_input = |input: &str| {
        format!(
            "name: f\nsource: {{kind: jsonl, path: items.jsonl}}\nstages:\n  - id: a\n    kind: exec\n    command: 'true'\n    inputs: [{input}]\n"
        )
    };
    s.write("zero.yaml", &with_input("/dev/zero"));
    s.write("fifo.yaml", &with_input("p.fifo"));
    for (pipeline, says) in
        [("p.fifo", "not a regular file"), ("zero.yaml", "/dev/zero"), ("fifo.yaml", "p.fifo")]
    {
        let mut child = curate_cmd(s.dir.path(), &["validate", pipeline])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("`curate validate {pipeline}` hangs");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{pipeline}: {err}");
        assert!(err.contains(says) && err.contains("not a regular file"), "{pipeline}: {err}");
    }
}
