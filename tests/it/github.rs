//! The `github` source and `curate collect` against a scripted GraphQL server shaped like GitHub's
//! (tests/it/common/graphql.rs), over a real git repository: paging of PRs and of review threads,
//! the filters, rate limits and retries, resuming after a kill -9, and errors a user can act on.
//! No test needs the network.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::graphql::{Reply, Request, Server};
use crate::common::{Scratch, curate_cmd, stderr, stdout};
use serde_json::{Value, json};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The commits of the scratch repository `o/r`: the base, the reviewed commit, the fixed one.
struct Commits {
    base: String,
    reviewed: String,
    fixed: String,
}

fn repository(s: &Scratch) -> Commits {
    let dir = s.path("mirrors/o/r");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    let commit = |text: &str, message: &str| {
        std::fs::write(dir.join("a.py"), text).unwrap();
        git(&dir, &["add", "a.py"]);
        git(&dir, &["commit", "-q", "-m", message]);
        git(&dir, &["rev-parse", "HEAD"])
    };
    let base = commit("def f(x):\n    return x\n", "base");
    let reviewed = commit("def f(x):\n    return x + 1\n", "reviewed");
    let fixed = commit("def f(x):\n    return x + 2\n", "fixed");
    Commits { base, reviewed, fixed }
}

/// An ISO 8601 UTC timestamp `secs` from now, as GitHub writes `resetAt`.
fn iso_in(secs: u64) -> String {
    curate::dates::rfc3339((SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + secs) as i64)
}

fn limit(remaining: u64, reset: &str) -> Value {
    json!({"remaining": remaining, "resetAt": reset})
}

fn thread(path: &str, line: u64, commit: &str, body: &str, author: &str) -> Value {
    json!({
        "isResolved": true, "isOutdated": false, "path": path, "diffSide": "RIGHT",
        "line": line, "originalLine": line, "startLine": null, "originalStartLine": null,
        "comments": {"nodes": [
            {"id": format!("C-{body}"), "body": body, "diffHunk": "@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1",
             "createdAt": "2024-01-05T00:00:00Z", "author": {"login": author, "__typename": if author.ends_with("[bot]") { "Bot" } else { "User" }},
             "replyTo": null, "commit": {"oid": commit}, "originalCommit": {"oid": commit}},
            {"id": format!("R-{body}"), "body": "done", "diffHunk": "", "createdAt": "2024-01-06T00:00:00Z",
             "author": {"login": "ana", "__typename": "User"}, "replyTo": {"id": format!("C-{body}")},
             "commit": {"oid": commit}, "originalCommit": {"oid": commit}}
        ]}
    })
}

fn pr(
    number: u64,
    author: &str,
    additions: u64,
    threads: Vec<Value>,
    more: Option<&str>,
    c: &Commits,
) -> Value {
    json!({
        "id": format!("PR_{number}"), "number": number, "title": format!("PR {number}"), "body": "Why it changes",
        "createdAt": "2024-01-02T00:00:00Z", "mergedAt": "2024-01-09T00:00:00Z",
        "additions": additions, "deletions": 1, "baseRefOid": c.base, "headRefOid": c.fixed,
        "mergeCommit": {"oid": c.fixed},
        "author": {"login": author, "__typename": if author == "dependabot" { "Bot" } else { "User" }},
        "reviewThreads": {"pageInfo": {"hasNextPage": more.is_some(), "endCursor": more}, "nodes": threads}
    })
}

fn search(nodes: Vec<Value>, next: Option<&str>, rate: Value) -> Reply {
    Reply::Json(json!({"data": {"rateLimit": rate, "search": {
        "pageInfo": {"hasNextPage": next.is_some(), "endCursor": next}, "nodes": nodes}}}))
}

/// GitHub as the tests script it: `o/r` has, merged in January, PR 1 (two threads, a third on a
/// second page of threads) and PR 2 (a bot's) on the first page and PR 3 (5,000 lines) on the
/// second; in February, PR 4 with a thread by a bot and one by a person. `o/missing` does not exist.
fn github(c: &Commits, request: &Request, low_after_first_page: bool) -> Reply {
    let (q, v) = (request.query(), request.variables());
    let ok = limit(4999, "2030-01-01T00:00:00Z");
    if q.contains("repository(") {
        if v["name"] == "missing" {
            return Reply::Json(json!({"data": {"repository": null}, "errors": [
                {"type": "NOT_FOUND", "path": ["repository"], "message": "Could not resolve to a Repository with the name 'o/missing'."}]}));
        }
        return Reply::Json(json!({"data": {"rateLimit": ok, "repository": {
            "nameWithOwner": "o/r", "primaryLanguage": {"name": "Python"}}}}));
    }
    if q.contains("node(") {
        return Reply::Json(json!({"data": {"rateLimit": ok, "node": {"reviewThreads": {
            "pageInfo": {"hasNextPage": false, "endCursor": null},
            "nodes": [thread("a.py", 2, &c.reviewed, "third: x + 1 overflows", "cy")]}}}}));
    }
    let window = v["q"].as_str().unwrap_or("");
    if window.contains("merged:2024-01-01..2024-01-31") {
        if v["after"].is_null() {
            let rate = if low_after_first_page { limit(2, &iso_in(1)) } else { ok };
            let one = pr(
                1,
                "ana",
                3,
                vec![
                    thread("a.py", 2, &c.reviewed, "first: should be + 2", "bo"),
                    thread("a.py", 1, &c.reviewed, "second: name it", "cy"),
                ],
                Some("T1"),
                c,
            );
            let two = pr(2, "dependabot", 2, vec![thread("a.py", 2, &c.reviewed, "bump", "bo")], None, c);
            return search(vec![one, two, json!({})], Some("P2"), rate);
        }
        return search(
            vec![pr(3, "ana", 5000, vec![thread("a.py", 2, &c.reviewed, "huge", "bo")], None, c)],
            None,
            ok,
        );
    }
    if window.contains("merged:2024-02-01..2024-02-29") {
        if v["first"].as_u64().unwrap_or(0) > 10 {
            return Reply::Json(json!({"errors": [{"type": "MAX_NODE_LIMIT_EXCEEDED",
                "message": "By the time this query traverses to the comments connection, it is requesting up to 1,000,000 possible nodes which exceeds the maximum limit of 500,000."}]}));
        }
        let four = pr(
            4,
            "bo",
            3,
            vec![
                thread("a.py", 2, &c.reviewed, "lint says", "lint[bot]"),
                thread("a.py", 2, &c.fixed, "fourth: and test it", "ana"),
                thread("a.py", 1, &c.reviewed, "fifth: say why", "bo"),
            ],
            None,
            c,
        );
        return search(vec![four], None, ok);
    }
    Reply::Status(400, vec![], format!("unexpected request {}", request.body))
}

fn pipeline(s: &Scratch, api: &str, repos: &str) {
    s.write(
        "gh.yaml",
        &format!(
            "name: gh\nsource:\n  kind: github\n  repos: [{repos}]\n  since: 2024-01-01\n  until: 2024-02-29\n  min_comments: 1\n  max_changed_lines: 1000\n  languages: [python]\n  api: {api}\n  backoff_ms: 50\nstages:\n  - id: last\n    kind: noop\n"
        ),
    );
}

fn collect(s: &Scratch, tokens: &str) -> std::process::Output {
    let mirrors = format!("{}/{{repo}}", s.path("mirrors").display());
    let mut cmd = curate_cmd(s.dir.path(), &["collect", "gh.yaml", "--out", "out/prs.jsonl"]);
    cmd.env("GITHUB_TOKEN", tokens).env("CURATE_REPOS_URL", mirrors).env_remove("CURATE_GITHUB_API");
    cmd.output().expect("run curate")
}

fn instances(s: &Scratch) -> Vec<Value> {
    s.read("out/prs.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_collection_pages_filters_waits_out_limits_and_a_second_run_asks_nothing() {
    let s = Scratch::new();
    let c = Arc::new(repository(&s));
    // Once each: a secondary rate limit on the first request for more threads, a 502 on the
    // first February search that has a page size GitHub takes.
    let (slow, flaky) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(true)));
    let (seen, slow_, flaky_) = (c.clone(), slow.clone(), flaky.clone());
    let front = Server::responding(move |request, _| {
        if request.query().contains("node(") && slow_.swap(false, Ordering::SeqCst) {
            return Reply::Status(
                403,
                vec![("Retry-After".into(), "1".into())],
                "{\"message\": \"slow down\"}".into(),
            );
        }
        let february = request.variables()["q"].as_str().is_some_and(|q| q.contains("2024-02"));
        if february && request.variables()["first"] == 10 && flaky_.swap(false, Ordering::SeqCst) {
            return Reply::Status(502, vec![], "bad gateway".into());
        }
        github(&seen, request, true)
    });
    pipeline(&s, &front.url, "o/r");
    let started = Instant::now();
    let out = collect(&s, "t1");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}\n{}", stdout(&out));
    assert!(err.contains("rate limit is spent on 1 token(s): waiting"), "{err}");
    assert!(err.contains("too many nodes in a page; asking 10 PRs a page"), "{err}");
    assert!(err.contains("HTTP 502; trying again"), "{err}");
    assert!(err.contains("GitHub asked to slow down (secondary rate limit): waiting 1 s"), "{err}");
    assert!(!slow.load(Ordering::SeqCst) && !flaky.load(Ordering::SeqCst));
    assert!(started.elapsed() >= Duration::from_secs(1), "the spent token was rested until its reset");
    assert!(stdout(&out).contains("wrote 3 PR(s) with 5 review comment(s)"), "{}", stdout(&out));

    let got = instances(&s);
    let ids: Vec<&str> = got.iter().map(|i| i["instance_id"].as_str().unwrap()).collect();
    let short = |sha: &str| sha[..7].to_string();
    assert_eq!(
        ids,
        ["o__r-1", &format!("o__r-4-{}", short(&c.fixed)), &format!("o__r-4-{}", short(&c.reviewed))]
    );
    let one = &got[0];
    assert_eq!(one["base_commit"], c.base.as_str());
    assert_eq!(one["commit_to_review"]["head_commit"], c.reviewed.as_str());
    assert_eq!(one["merged_commit"], c.fixed.as_str());
    assert!(one["commit_to_review"]["patch_to_review"].as_str().unwrap().contains("+    return x + 1"));
    assert!(one["merged_patch"].as_str().unwrap().contains("+    return x + 2"));
    assert_eq!(one["language"], "Python");
    let texts: Vec<&str> = one["reference_review_comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["first: should be + 2", "second: name it", "third: x + 1 overflows"],
        "threads of both pages"
    );
    assert_eq!(one["reference_review_comments"][0]["line"], 2);
    assert_eq!(one["reference_review_comments"][0]["by_pr_author"], false);
    // PR 4's threads are on two commits, each its own instance; the bot's thread is left out.
    let texts = |i: usize| -> Vec<String> {
        got[i]["reference_review_comments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].to_string())
            .collect()
    };
    // in the order their threads were opened.
    assert_eq!(texts(1), ["\"fourth: and test it\""]);
    assert_eq!(texts(2), ["\"fifth: say why\""]);
    assert_eq!(got[1]["commit_to_review"]["head_commit"], c.fixed.as_str());
    assert_eq!(got[2]["reference_review_comments"][0]["by_pr_author"], true);
    assert!(front.requests().iter().all(|r| r.authorization == "bearer t1"));

    // Everything is stored: the same collection again asks GitHub nothing and writes the same file.
    let first = s.read("out/prs.jsonl");
    let asked = front.requests().len();
    let again = collect(&s, "t1");
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(front.requests().len(), asked, "a second run makes no request");
    assert_eq!(s.read("out/prs.jsonl"), first);
    assert!(stderr(&again).contains(&format!("0 request(s) to {}", front.url)), "{}", stderr(&again));

    // A file collected is a swe-care source's input, read as the same records.
    s.write("shared.yaml", "name: shared\nsource: {kind: swe-care, path: out/prs.jsonl}\nstages:\n  - id: last\n    kind: noop\n");
    let shared =
        curate_cmd(s.dir.path(), &["collect", "shared.yaml", "--out", "out/again.jsonl"]).output().unwrap();
    assert!(shared.status.success(), "{}", stderr(&shared));
    assert_eq!(s.read("out/again.jsonl"), first);
}

#[test]
fn a_collection_killed_in_the_middle_resumes_without_asking_for_a_page_twice() {
    let s = Scratch::new();
    let c = Arc::new(repository(&s));
    let hold = Arc::new(AtomicBool::new(true));
    let (seen, held) = (c.clone(), hold.clone());
    let server = Server::responding(move |request, _| {
        let reply = github(&seen, request, false);
        let february = request.variables()["q"].as_str().is_some_and(|q| q.contains("2024-02"));
        if february && held.load(Ordering::SeqCst) {
            return Reply::Hold(Duration::from_secs(30), Box::new(reply));
        }
        reply
    });
    pipeline(&s, &server.url, "o/r");
    let mirrors = format!("{}/{{repo}}", s.path("mirrors").display());
    let mut child = curate_cmd(s.dir.path(), &["collect", "gh.yaml", "--out", "out/prs.jsonl"])
        .env("GITHUB_TOKEN", "t1,t2")
        .env("CURATE_REPOS_URL", &mirrors)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let waiting = Instant::now();
    let february = |r: &Request| r.variables()["q"].as_str().is_some_and(|q| q.contains("2024-02"));
    while !server.requests().iter().any(february) {
        assert!(waiting.elapsed() < Duration::from_secs(60), "the collection never reached February");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!s.path("out/prs.jsonl").exists(), "a killed collection writes no file");
    hold.store(false, Ordering::SeqCst);

    let out = collect(&s, "t1,t2");
    assert!(out.status.success(), "{}", stderr(&out));
    let asked: Vec<String> = server.requests().iter().map(|r| r.body.to_string()).collect();
    let mut counts = std::collections::BTreeMap::new();
    for body in &asked {
        *counts.entry(body.clone()).or_insert(0) += 1;
    }
    let twice: Vec<&String> = counts.iter().filter(|(_, n)| **n > 1).map(|(b, _)| b).collect();
    // Only the request that never got its answer (February's first page, asked at 20 and then
    // at 10 PRs a page) is asked again.
    assert!(twice.iter().all(|b| b.contains("2024-02")), "asked twice: {twice:#?}");
    assert!(!twice.is_empty());
    assert_eq!(instances(&s).len(), 3);
}

#[test]
fn errors_say_what_to_fix_and_ask_for_nothing_without_a_token() {
    let s = Scratch::new();
    let _ = repository(&s);
    let c = Arc::new(Commits { base: String::new(), reviewed: String::new(), fixed: String::new() });
    let server = Server::responding(move |request, _| {
        if request.authorization != "bearer good" {
            return Reply::Status(401, vec![], "{\"message\": \"Bad credentials\"}".into());
        }
        github(&c, request, false)
    });
    pipeline(&s, &server.url, "o/missing");

    let none = collect(&s, "");
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("set GITHUB_TOKEN"), "{}", stderr(&none));
    assert!(server.requests().is_empty(), "nothing is asked without a token");

    let bad = collect(&s, "expired");
    assert!(
        stderr(&bad).contains("refused the token (HTTP 401)") && stderr(&bad).contains("GITHUB_TOKEN"),
        "{}",
        stderr(&bad)
    );

    let missing = collect(&s, "good");
    assert!(
        stderr(&missing).contains("repository o/missing was not found")
            && stderr(&missing).contains("source.repos"),
        "{}",
        stderr(&missing)
    );

    s.write("bad.yaml", "name: bad\nsource: {kind: github, repos: [o/r], since: 2024-13-01}\nstages:\n  - id: last\n    kind: noop\n");
    let validate = curate_cmd(s.dir.path(), &["validate", "bad.yaml"]).output().unwrap();
    assert_eq!(validate.status.code(), Some(2));
    assert!(
        stderr(&validate).contains("since") && stderr(&validate).contains("YYYY-MM-DD"),
        "{}",
        stderr(&validate)
    );
}

#[test]
fn a_second_token_is_used_when_the_first_runs_low_and_nothing_waits() {
    let s = Scratch::new();
    let c = Arc::new(repository(&s));
    let seen = c.clone();
    let server = Server::responding(move |request, _| github(&seen, request, true));
    pipeline(&s, &server.url, "o/r");
    let out = collect(&s, "t1, t2");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("rate limit is spent"), "{}", stderr(&out));
    let tokens: Vec<String> = server.requests().iter().map(|r| r.authorization.clone()).collect();
    let low = server
        .requests()
        .iter()
        .position(|r| r.query().contains("search(") && r.variables()["after"].is_null())
        .unwrap();
    // A token not yet used counts as full, so each is tried; the one left low then rests.
    assert!(
        tokens.contains(&"bearer t1".to_string()) && tokens.contains(&"bearer t2".to_string()),
        "{tokens:?}"
    );
    let rested = &tokens[low];
    assert!(
        tokens[low + 1..].iter().all(|t| t != rested),
        "after the answer that left {rested} low: {tokens:?}"
    );
}
