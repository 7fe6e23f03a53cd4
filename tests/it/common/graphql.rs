//! A small scripted GraphQL server shaped like GitHub's API, for the `github` source's tests: each
//! `POST` is answered by a responder from the request's body and token, and every request is kept.
//! Replies can be data, GraphQL errors, HTTP errors with headers (a secondary rate limit's
//! `Retry-After`), and answers held back for a while (to kill a collection in the middle).

use std::io::{BufRead, BufReader, Read};

use super::openai::respond;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

#[derive(Clone, Debug)]
pub enum Reply {
    /// A 200 with this JSON body (`{"data": ...}` or `{"errors": [...]}`).
    Json(Value),
    /// An HTTP status with extra headers and a body.
    Status(u16, Vec<(String, String)>, String),
    /// Wait, then give the inner reply.
    Hold(Duration, Box<Reply>),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Request {
    pub body: Value,
    pub authorization: String,
}

impl Request {
    pub fn query(&self) -> &str {
        self.body["query"].as_str().unwrap_or("")
    }

    pub fn variables(&self) -> &Value {
        &self.body["variables"]
    }
}

type Responder = Box<dyn Fn(&Request, usize) -> Reply + Send>;

struct State {
    responder: Responder,
    requests: Vec<Request>,
}

pub struct Server {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl Server {
    /// A server whose reply to each request is `responder(request, how many came before it)`.
    pub fn responding(responder: impl Fn(&Request, usize) -> Reply + Send + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/graphql", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State { responder: Box::new(responder), requests: Vec::new() }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Server { url, state }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut length, mut authorization) = (0, String::new());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            } else if k.eq_ignore_ascii_case("authorization") {
                authorization = v.trim().to_string();
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = Request { body: serde_json::from_slice(&body).unwrap_or(Value::Null), authorization };
    let mut reply = {
        let mut s = state.lock().unwrap();
        let before = s.requests.len();
        s.requests.push(request.clone());
        (s.responder)(&request, before)
    };
    loop {
        match reply {
            Reply::Json(value) => return respond(&mut stream, 200, &[], &value.to_string()),
            Reply::Status(status, headers, body) => return respond(&mut stream, status, &headers, &body),
            Reply::Hold(pause, inner) => {
                std::thread::sleep(pause);
                reply = *inner;
            }
        }
    }
}
