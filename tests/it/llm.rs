//! The LLM client against a scripted OpenAI-compatible server: retries, Retry-After, timeouts,
//! dropped connections, malformed bodies, the response cache and its modes, and in-flight dedupe.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::openai::{Reply, Server};
use curate::llm::cache::Entry;
use curate::llm::client::Llm;
use curate::llm::{CacheMode, LlmError, LlmSpec, Message};

fn error(status: u16) -> Reply {
    Reply::Status(status, vec![], format!("{{\"error\": {{\"message\": \"status {status}\"}}}}"))
}

fn client(server: &Server, cache: &std::path::Path, mode: CacheMode, tweak: impl Fn(&mut LlmSpec)) -> Llm {
    let mut spec = LlmSpec {
        base_url: Some(server.base_url.clone()),
        model: Some("m".into()),
        backoff_ms: Some(20),
        max_retries: Some(3),
        cache: Some(mode),
        concurrency: Some(4),
        ..LlmSpec::default()
    };
    tweak(&mut spec);
    Llm::new(spec.settings(), cache).unwrap()
}

async fn ask(llm: &Llm, text: &str) -> Result<(String, bool), LlmError> {
    llm.chat(&llm.request(vec![Message::user(text)])).await.map(|(a, cached)| (a.text, cached))
}

#[tokio::test]
async fn a_429_is_retried_after_the_time_the_server_asks() {
    let server = Server::start(
        vec![
            Reply::Status(429, vec![("Retry-After".into(), "1".into())], "{}".into()),
            Reply::Answer("ok".into()),
        ],
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |_| {});
    let t0 = Instant::now();
    assert_eq!(ask(&llm, "a").await.unwrap().0, "ok");
    assert_eq!(server.calls(), 2);
    assert!(t0.elapsed() >= Duration::from_millis(950), "waited {:?}", t0.elapsed());
}

#[tokio::test]
async fn server_errors_dropped_connections_and_malformed_bodies_are_retried() {
    let server = Server::start(
        vec![error(500), error(503), Reply::Drop, Reply::Malformed, Reply::Answer("fine".into())],
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |s| s.max_retries = Some(3));
    assert_eq!(ask(&llm, "b").await.unwrap().0, "fine");
    assert_eq!(server.calls(), 5);
}

#[tokio::test]
async fn an_endless_answer_is_cut_off_with_the_reason_and_not_recorded() {
    let server = Server::start(vec![], Some(Reply::Answer("x".repeat(1100 << 10))));
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Readwrite, |_| {});
    let err = ask(&llm, "d").await.unwrap_err().to_string();
    assert!(err.contains("passed 1 MiB"), "{err}");
    assert_eq!(server.calls(), 1, "a server that answers without end is not asked again");
    let recorded = std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0);
    assert_eq!(recorded, 0, "nothing is recorded");
}

#[tokio::test]
async fn one_endless_event_is_cut_off_at_its_bound_before_it_is_parsed() {
    // 4 MiB in one event: the event-stream parser would take minutes over it (its time grows with
    // the square of an event's length), and then the answer's own 1 MiB bound would name it.
    let completion = serde_json::json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x".repeat(4 << 20)}}],
    });
    let server = Server::start(vec![], Some(Reply::Completion(completion.to_string())));
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Readwrite, |s| s.max_retries = Some(1));
    let err = ask(&llm, "e").await.unwrap_err().to_string();
    assert!(err.contains("one event of the answer passed 256 KiB"), "{err}");
    assert_eq!(server.calls(), 1, "the same server would send the same again: not asked again");
    let recorded = std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0);
    assert_eq!(recorded, 0, "nothing is recorded");
}

#[tokio::test]
async fn persistent_failures_become_an_error_after_the_retries() {
    let server = Server::start(vec![], Some(error(500)));
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |s| s.max_retries = Some(2));
    let err = ask(&llm, "c").await.unwrap_err().to_string();
    assert!(err.contains("HTTP 500"), "{err}");
    assert_eq!(server.calls(), 3, "one try and two retries");
}

#[tokio::test]
async fn a_slow_server_times_out_and_is_retried() {
    let slow = Reply::Delay(Duration::from_secs(3), Box::new(Reply::Answer("late".into())));
    let server = Server::start(vec![slow.clone(), slow], None);
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |s| {
        s.timeout_secs = Some(1);
        s.max_retries = Some(1);
    });
    let err = ask(&llm, "d").await.unwrap_err().to_string();
    assert!(err.contains("timed out"), "{err}");
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn a_server_silent_before_its_first_token_is_given_up_and_asked_again() {
    let silent = Reply::Delay(Duration::from_secs(5), Box::new(Reply::Answer("late".into())));
    let server = Server::start(vec![silent, Reply::Answer("prompt".into())], None);
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |s| s.first_token_secs = Some(1));
    assert_eq!(ask(&llm, "g").await.unwrap().0, "prompt");
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn an_answer_that_stalls_midway_is_given_up_but_a_slow_steady_one_is_not() {
    let steady = Reply::Trickle("0123456789".into(), Duration::from_millis(250));
    let stalled = Reply::Trickle("ab".into(), Duration::from_secs(3));
    let server = Server::start(vec![steady, stalled, Reply::Answer("second".into())], None);
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |s| s.idle_secs = Some(1));
    // 2.5 s in all, longer than the idle limit, but never 1 s without a token.
    assert_eq!(ask(&llm, "h").await.unwrap().0, "0123456789");
    assert_eq!(server.calls(), 1);
    assert_eq!(ask(&llm, "i").await.unwrap().0, "second");
    assert_eq!(server.calls(), 3, "the stalled answer was asked again");
}

#[tokio::test]
async fn a_hung_server_holds_a_request_only_until_the_retry_budget_is_spent() {
    let server = Server::start(vec![], Some(Reply::Delay(Duration::from_secs(60), Box::new(Reply::Drop))));
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Off, |s| {
        s.first_token_secs = Some(1);
        s.retry_budget_secs = Some(2);
        s.max_retries = Some(10);
    });
    let t0 = Instant::now();
    let err = ask(&llm, "j").await.unwrap_err().to_string();
    assert!(err.contains("first_token_secs"), "{err}");
    // Tries start at about 0, 1 and 2 s; none starts once 2 s have passed.
    assert!((2..=4).contains(&server.calls()), "{} tries", server.calls());
    assert!(t0.elapsed() < Duration::from_secs(10), "held for {:?}", t0.elapsed());
}

#[tokio::test]
async fn answers_are_recorded_and_replayed_without_the_server() {
    let server = Server::start(vec![Reply::Answer("recorded".into())], None);
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Readwrite, |_| {});
    assert_eq!(ask(&llm, "e").await.unwrap(), ("recorded".to_string(), false));
    let files: Vec<_> = walk(dir.path());
    assert_eq!(files.len(), 1, "one file per request");
    let entry: serde_json::Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(entry["request"]["messages"][0]["content"], "e");
    assert_eq!(entry["answer"]["model"], "scripted-model");
    assert_eq!(entry["answer"]["usage"]["prompt_tokens"], 100);

    let replay = client(&server, dir.path(), CacheMode::Replay, |_| {});
    assert_eq!(ask(&replay, "e").await.unwrap(), ("recorded".to_string(), true));
    assert_eq!(server.calls(), 1, "replayed, not called");
    match ask(&replay, "never asked").await {
        Err(LlmError::ReplayMiss { hash }) => assert_eq!(hash.len(), 64),
        other => panic!("expected a replay miss, got {other:?}"),
    }
    assert_eq!(server.calls(), 1);

    let off = client(&server, dir.path(), CacheMode::Off, |_| {});
    assert!(ask(&off, "e").await.is_err(), "off always calls; the script is used up");
    assert_eq!(walk(dir.path()).len(), 1, "off records nothing");
}

#[tokio::test]
async fn an_answer_that_cannot_be_recorded_fails_the_call_and_names_the_file() {
    let server = Server::start(vec![Reply::Answer("unrecorded".into())], None);
    let dir = tempfile::tempdir().unwrap();
    let llm = client(&server, dir.path(), CacheMode::Readwrite, |_| {});
    let request = llm.request(vec![Message::user("f")]);
    // A directory where the answer's file belongs stops the write even for root, who ignores
    // permissions.
    let hash = request.hash();
    let file = dir.path().join(&hash[..2]).join(format!("{hash}.json"));
    std::fs::create_dir_all(&file).unwrap();
    let err = llm.chat(&request).await.expect_err("an answer that was not recorded is not a success");
    assert!(err.to_string().contains(&file.display().to_string()), "{err}");
    match err {
        LlmError::CacheWrite { error, .. } => assert_eq!(error.kind(), std::io::ErrorKind::IsADirectory),
        other => panic!("expected a failed recording, got {other:?}"),
    }
    assert_eq!(server.calls(), 1);
    assert!(walk(dir.path()).is_empty(), "no temporary file left behind");
}

#[tokio::test]
async fn identical_requests_in_flight_are_sent_once() {
    let server = Server::start(
        vec![Reply::Delay(Duration::from_millis(300), Box::new(Reply::Answer("one".into())))],
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let llm = Arc::new(client(&server, dir.path(), CacheMode::Readwrite, |_| {}));
    let mut tasks = Vec::new();
    for _ in 0..5 {
        let llm = llm.clone();
        tasks.push(tokio::spawn(async move { ask(&llm, "same").await.unwrap().0 }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), "one");
    }
    assert_eq!(server.calls(), 1);
}

#[test]
fn every_recorded_answer_is_found_under_its_request_hash() {
    // Replay finds an answer by hashing the request it is about to send; a change to what the hash
    // covers, or to how a request serializes, would orphan every committed recording.
    let recorded = walk(&crate::common::root().join("cache/llm"));
    assert!(recorded.len() > 100, "the committed recordings: {}", recorded.len());
    for path in recorded {
        let entry: Entry = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy();
        assert_eq!(entry.request.hash(), name, "{}", path.display());
    }
}

#[tokio::test]
async fn stages_that_share_a_server_keep_their_own_concurrency() {
    let server = Server::responding(|_| {
        Reply::Delay(Duration::from_millis(300), Box::new(Reply::Answer("slow".into())))
    });
    let dir = tempfile::tempdir().unwrap();
    let one = Arc::new(client(&server, dir.path(), CacheMode::Off, |s| s.concurrency = Some(1)));
    let three = Arc::new(client(&server, dir.path(), CacheMode::Off, |s| s.concurrency = Some(3)));
    async fn three_at_once(llm: &Arc<Llm>) {
        let tasks: Vec<_> = ["x", "y", "z"]
            .into_iter()
            .map(|text| {
                let llm = llm.clone();
                tokio::spawn(async move { ask(&llm, text).await.unwrap() })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    }
    three_at_once(&one).await;
    assert_eq!(server.most_in_flight(), 1, "concurrency 1");
    three_at_once(&three).await;
    assert_eq!(server.most_in_flight(), 3, "concurrency 3, not the first stage's 1");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
