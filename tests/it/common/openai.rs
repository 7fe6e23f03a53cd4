//! A small scripted OpenAI-compatible server for tests: it answers `POST .../chat/completions` with
//! the replies it was given, in order, and counts and keeps every request, and how many it was
//! working on at once. Replies can be answers (streamed as server-sent events when the request asks,
//! as every real client request does), HTTP errors with headers, delays, answers that pause between
//! tokens, dropped connections and malformed bodies.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum Reply {
    /// A chat completion whose message is this text (streamed when the request asks).
    Answer(String),
    /// This whole chat completion (JSON), sent as one event of a stream when the request asks.
    Completion(String),
    /// A streamed answer sent a character at a time, with this pause before each.
    Trickle(String, Duration),
    /// An HTTP status with extra headers and a body.
    Status(u16, Vec<(String, String)>, String),
    /// Wait, then give the inner reply.
    Delay(Duration, Box<Reply>),
    /// Close the connection without answering.
    Drop,
    /// A 200 whose body is not a chat completion.
    Malformed,
}

type Responder = Box<dyn Fn(&serde_json::Value) -> Reply + Send>;

#[derive(Default)]
struct State {
    /// When set, decides every reply from the request; the script is not used.
    responder: Option<Responder>,
    script: Vec<Reply>,
    /// Given once the script is used up.
    fallback: Option<Reply>,
    requests: Vec<serde_json::Value>,
    /// Requests received and not yet answered, and the most there have been.
    in_flight: usize,
    most_in_flight: usize,
}

pub struct Server {
    pub base_url: String,
    state: Arc<Mutex<State>>,
}

impl Server {
    pub fn start(script: Vec<Reply>, fallback: Option<Reply>) -> Server {
        Server::with_state(State { script, fallback, ..State::default() })
    }

    /// A server whose reply to each request is `responder(request body)`.
    pub fn responding(responder: impl Fn(&serde_json::Value) -> Reply + Send + 'static) -> Server {
        Server::with_state(State { responder: Some(Box::new(responder)), ..State::default() })
    }

    fn with_state(state: State) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Server { base_url, state }
    }

    pub fn calls(&self) -> usize {
        self.state.lock().unwrap().requests.len()
    }

    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The most requests the server has been working on at once.
    pub fn most_in_flight(&self) -> usize {
        self.state.lock().unwrap().most_in_flight
    }
}

/// The text of the first user message of a chat request: which comment a scripted answer is for.
pub fn first_user(body: &serde_json::Value) -> String {
    body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn completion(text: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    })
    .to_string()
}

/// One server-sent event of a streamed answer: a piece of the text, or its end.
fn chunk(text: Option<&str>, finish: Option<&str>, usage: bool) -> String {
    let mut value = serde_json::json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "finish_reason": finish, "delta": {"content": text}}],
    });
    if usage {
        value["choices"] = serde_json::json!([]);
        value["usage"] =
            serde_json::json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
    }
    format!("data: {value}\n\n")
}

/// Streams `text` in pieces of one character, `pause` before each, then the end of the answer.
fn stream_answer(stream: &mut TcpStream, text: &str, pause: Duration) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let _ = stream.write_all(head.as_bytes());
    // At once, a piece of up to 64 KiB an event (a server's chunks are a few tokens each; one
    // event of megabytes is a test of its own); trickled, a character an event.
    let pieces: Vec<String> = if pause.is_zero() {
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(64 << 10).map(|c| c.iter().collect()).collect()
    } else {
        text.chars().map(String::from).collect()
    };
    for piece in pieces {
        std::thread::sleep(pause);
        if stream.write_all(chunk(Some(&piece), None, false).as_bytes()).is_err() {
            return;
        }
    }
    let _ = stream.write_all(chunk(None, Some("stop"), false).as_bytes());
    let _ = stream.write_all(chunk(None, None, true).as_bytes());
    let _ = stream.write_all(b"data: [DONE]\n\n");
}

/// `completion` (a chat completion's JSON) as the events of a stream: its message and
/// log-probabilities in one chunk, then its end and its usage.
fn stream_completion(stream: &mut TcpStream, completion: &str) {
    let value: serde_json::Value = serde_json::from_str(completion).expect("a scripted completion is JSON");
    let choice = &value["choices"][0];
    let mut first = serde_json::json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": value["model"],
        "choices": [{"index": 0, "finish_reason": null, "delta": {"content": choice["message"]["content"]}}],
    });
    if !choice["logprobs"].is_null() {
        first["choices"][0]["logprobs"] = choice["logprobs"].clone();
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(format!("data: {first}\n\n").as_bytes());
    let finish = choice["finish_reason"].as_str().unwrap_or("stop");
    let _ = stream.write_all(chunk(None, Some(finish), false).as_bytes());
    let _ = stream.write_all(chunk(None, None, true).as_bytes());
    let _ = stream.write_all(b"data: [DONE]\n\n");
}

pub fn respond(stream: &mut TcpStream, status: u16, headers: &[(String, String)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    let streamed = request["stream"] == serde_json::json!(true);
    let reply = {
        let mut s = state.lock().unwrap();
        let reply = match &s.responder {
            Some(f) => Some(f(&request)),
            None if s.script.is_empty() => s.fallback.clone(),
            None => Some(s.script.remove(0)),
        };
        s.requests.push(request);
        s.in_flight += 1;
        s.most_in_flight = s.most_in_flight.max(s.in_flight);
        reply
    };
    let mut reply = reply.unwrap_or(Reply::Status(
        500,
        vec![],
        "{\"error\": {\"message\": \"script exhausted\"}}".into(),
    ));
    while let Reply::Delay(d, inner) = reply {
        std::thread::sleep(d);
        reply = *inner;
    }
    // Before answering, so the client cannot send its next request while this one still counts.
    state.lock().unwrap().in_flight -= 1;
    match reply {
        Reply::Answer(text) if streamed => stream_answer(&mut stream, &text, Duration::ZERO),
        Reply::Trickle(text, pause) => stream_answer(&mut stream, &text, pause),
        Reply::Completion(json) if streamed => stream_completion(&mut stream, &json),
        Reply::Completion(json) => respond(&mut stream, 200, &[], &json),
        Reply::Answer(text) => respond(&mut stream, 200, &[], &completion(&text)),
        Reply::Status(code, headers, body) => respond(&mut stream, code, &headers, &body),
        Reply::Malformed => respond(&mut stream, 200, &[], "<html>bad gateway</html>"),
        Reply::Drop | Reply::Delay(..) => {}
    }
}
