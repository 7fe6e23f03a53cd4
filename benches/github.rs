//! A GitHub collection's cost against a local scripted GraphQL server (tests/common/graphql.rs):
//! `cargo bench --bench github`. `CURATE_BENCH_PRS` merged PRs a month (default 100) over three
//! months, 20 a page, three review threads each and every tenth PR with a second page of threads,
//! over a real git repository whose diffs every instance reads. Prints the requests per PR and the
//! time per PR of a first collection, and of a second one that replays the stored answers.

#[allow(dead_code)]
#[path = "../tests/it/common"]
mod common {
    pub mod graphql;
    pub mod openai;
}
use common::graphql;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use curate::github::{self, Client, Date, Filters, Plan, Settings};
use curate::repo::Mirrors;
use graphql::{Reply, Server};
use serde_json::{Value, json};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.org")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.org")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn thread(commit: &str, n: u64) -> Value {
    json!({"path": "a.py", "diffSide": "RIGHT", "line": 2, "originalLine": 2, "comments": {"nodes": [
        {"id": format!("C{n}"), "body": format!("comment {n}"), "diffHunk": "@@ -1 +1 @@",
         "author": {"login": "ana", "__typename": "User"}, "originalCommit": {"oid": commit}}]}})
}

fn answer(request: &graphql::Request, per_month: u64, commits: &[String; 3]) -> Reply {
    let ok = json!({"remaining": 4999, "resetAt": "2030-01-01T00:00:00Z"});
    let (q, v) = (request.query(), request.variables());
    if q.contains("repository(") {
        return Reply::Json(
            json!({"data": {"rateLimit": ok, "repository": {"nameWithOwner": "o/r", "primaryLanguage": {"name": "Python"}}}}),
        );
    }
    if q.contains("node(") {
        return Reply::Json(json!({"data": {"rateLimit": ok, "node": {"reviewThreads": {
            "pageInfo": {"hasNextPage": false, "endCursor": null}, "nodes": [thread(&commits[1], 99)]}}}}));
    }
    let window = v["q"].as_str().unwrap_or("");
    let month: u64 = if window.contains("2024-01") {
        0
    } else if window.contains("2024-02") {
        1
    } else {
        2
    };
    let first = v["first"].as_u64().unwrap_or(20);
    let from: u64 = v["after"].as_str().and_then(|c| c.parse().ok()).unwrap_or(0);
    let to = (from + first).min(per_month);
    let nodes: Vec<Value> = (from..to)
        .map(|i| {
            let number = month * per_month + i + 1;
            let more = number.is_multiple_of(10);
            json!({"id": format!("PR_{number}"), "number": number, "title": "t", "body": "b",
                "createdAt": "2024-01-02T00:00:00Z", "mergedAt": "2024-01-03T00:00:00Z", "additions": 3, "deletions": 1,
                "baseRefOid": commits[0], "headRefOid": commits[2], "mergeCommit": {"oid": commits[2]},
                "author": {"login": "bo", "__typename": "User"},
                "reviewThreads": {"pageInfo": {"hasNextPage": more, "endCursor": if more { Some("T") } else { None }},
                    "nodes": [thread(&commits[1], 1), thread(&commits[1], 2), thread(&commits[1], 3)]}})
        })
        .collect();
    let next = (to < per_month).then(|| to.to_string());
    Reply::Json(json!({"data": {"rateLimit": ok, "search": {
        "pageInfo": {"hasNextPage": next.is_some(), "endCursor": next}, "nodes": nodes}}}))
}

fn main() {
    let per_month: u64 = std::env::var("CURATE_BENCH_PRS").ok().and_then(|n| n.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("mirrors/o/r");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let mut commits = Vec::new();
    for text in
        ["def f(x):\n    return x\n", "def f(x):\n    return x + 1\n", "def f(x):\n    return x + 2\n"]
    {
        std::fs::write(repo.join("a.py"), text).unwrap();
        git(&repo, &["add", "a.py"]);
        git(&repo, &["commit", "-q", "-m", "c"]);
        commits.push(git(&repo, &["rev-parse", "HEAD"]));
    }
    let commits: [String; 3] = commits.try_into().unwrap();
    let server = Server::responding(move |request, _| answer(request, per_month, &commits));
    let mirrors = Mirrors::new(&format!("{}/mirrors/{{repo}}", dir.path().display()), dir.path(), dir.path());
    let plan = Plan {
        repos: vec!["o/r".into()],
        since: Date::parse("2024-01-01").unwrap(),
        until: Date::parse("2024-03-31").unwrap(),
        filters: Filters { min_comments: 1, max_changed_lines: None, languages: vec![], skip_bots: true },
        page_size: 20,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    println!(
        "{} merged PRs over three months, 20 a page, 3 threads each (every tenth with a second page)",
        per_month * 3
    );
    for run in ["first collection", "second (stored answers)"] {
        let settings = Settings {
            api: server.url.clone(),
            tokens: vec!["t".into()],
            cache: dir.path().join("cache/github"),
            backoff: Duration::from_millis(10),
            tries: 3,
            timeout: Duration::from_secs(10),
        };
        let mut client = Client::new(settings, Arc::new(|_| {})).unwrap();
        let started = Instant::now();
        let prs = runtime.block_on(github::collect(&mut client, &plan, &Quiet)).expect("collect");
        let (instances, _) = github::instances(&prs, &mirrors).expect("instances");
        let took = started.elapsed();
        let n = prs.len().max(1) as f64;
        println!(
            "{run}: {} PRs, {} instances; {} requests ({:.3} a PR), {} answered from the store; {:.2} ms a PR ({:.2} s in all)",
            prs.len(),
            instances.len(),
            client.counts.requested,
            client.counts.requested as f64 / n,
            client.counts.replayed,
            took.as_secs_f64() * 1000.0 / n,
            took.as_secs_f64()
        );
    }
}

struct Quiet;

impl github::Progress for Quiet {
    fn page(&self, _: &str, _: &str, _: u32, _: usize) {}
    fn notice(&self, _: String) {}
}
