//! A GraphQL client for GitHub's API that a collection can stop and resume: every answer is stored
//! under the hash of its request (API URL, query and variables, never the token), so a request
//! asked before is answered from disk, offline, and an interrupted collection asks only for what it
//! had not got. Rate limits are waited out, never spun on: GitHub's `rateLimit` of each answer says
//! how many points a token has left, several tokens are used in turn, and a secondary limit's
//! `Retry-After` is obeyed. 5xx answers and timeouts are tried again with a growing wait.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::error::{GithubError, NODE_LIMIT};
use crate::dates::{clock, epoch_seconds, now_seconds};

/// Points below which a token is rested until its reset: a query costs one point or a few.
const LOW: i64 = 5;
/// Secondary-limit waits in a row before the collection gives up.
const MAX_WAITS: u32 = 20;

/// What the client says while it waits (a rate limit, a retry).
pub type Notify = Arc<dyn Fn(String) + Send + Sync>;

/// How the client reaches the API.
pub struct Settings {
    /// The GraphQL endpoint, `https://api.github.com/graphql` for github.com.
    pub api: String,
    pub tokens: Vec<String>,
    /// Where answers are stored (`cache/github`).
    pub cache: PathBuf,
    /// The first wait before a failed request is tried again; it doubles each time.
    pub backoff: Duration,
    /// Tries of one request that fails with a 5xx or a timeout.
    pub tries: u32,
    pub timeout: Duration,
}

struct Token {
    secret: String,
    remaining: Option<i64>,
    reset_at: Option<i64>,
}

/// Requests made and answered from the store, for the collection's figures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub requested: u64,
    pub replayed: u64,
}

pub struct Client {
    api: String,
    tokens: Vec<Token>,
    http: reqwest::Client,
    cache: PathBuf,
    backoff: Duration,
    tries: u32,
    notify: Notify,
    pub counts: Counts,
}

/// One HTTP exchange as the client reads it.
enum Exchange {
    Data(Value),
    /// Wait this long and ask again (a secondary limit, or a token whose points are spent).
    Wait(Duration, String),
    Retry(String, Option<u16>),
}

impl Client {
    pub fn new(settings: Settings, notify: Notify) -> Result<Client, GithubError> {
        let tokens: Vec<Token> = settings
            .tokens
            .into_iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(|secret| Token { secret, remaining: None, reset_at: None })
            .collect();
        if tokens.is_empty() {
            return Err(GithubError::NoToken);
        }
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .user_agent(concat!("curate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| GithubError::Network {
                api: settings.api.clone(),
                tries: 0,
                error: e.to_string(),
            })?;
        Ok(Client {
            api: settings.api,
            tokens,
            http,
            cache: settings.cache,
            backoff: settings.backoff,
            tries: settings.tries.max(1),
            notify,
            counts: Counts::default(),
        })
    }

    /// The GraphQL endpoint asked.
    pub fn api(&self) -> &str {
        &self.api
    }

    /// The `data` of the answer to `query` with `variables`: from the store when it was asked
    /// before, else from the API (and then stored). GraphQL errors come back as
    /// [`GithubError::Api`] with GitHub's error type; of those only a page too large is stored,
    /// the one answer that the same request always gets.
    pub async fn query(&mut self, query: &str, variables: &Value) -> Result<Value, GithubError> {
        let request = json!({"api": self.api, "query": query, "variables": variables});
        let path = entry_path(&self.cache, &request);
        if let Some(stored) = read_entry(&path) {
            self.counts.replayed += 1;
            return match stored {
                Stored::Data(data) => Ok(data),
                Stored::Error { kind, message } => {
                    Err(GithubError::Api { api: self.api.clone(), kind, message })
                }
            };
        }
        let stored = match self.ask(query, variables).await {
            Ok(data) => Stored::Data(data),
            Err(GithubError::Api { kind, message, .. }) if kind.as_deref() == Some(NODE_LIMIT) => {
                Stored::Error { kind, message }
            }
            Err(e) => return Err(e),
        };
        write_entry(&path, &request, &stored)
            .map_err(|error| GithubError::Cache { path: path.clone(), error })?;
        match stored {
            Stored::Data(data) => Ok(data),
            Stored::Error { kind, message } => Err(GithubError::Api { api: self.api.clone(), kind, message }),
        }
    }

    async fn ask(&mut self, query: &str, variables: &Value) -> Result<Value, GithubError> {
        let body = json!({"query": query, "variables": variables}).to_string();
        let (mut failures, mut waits) = (0u32, 0u32);
        loop {
            let token = self.rested_token().await;
            self.counts.requested += 1;
            match self.exchange(token, &body).await? {
                Exchange::Data(data) => return Ok(data),
                Exchange::Wait(wait, why) => {
                    waits += 1;
                    if waits > MAX_WAITS {
                        return Err(GithubError::Throttled { api: self.api.clone(), waits: waits - 1 });
                    }
                    (self.notify)(format!("{why}: waiting {} s, until {}", wait.as_secs(), until(wait)));
                    tokio::time::sleep(wait).await;
                }
                Exchange::Retry(error, status) => {
                    failures += 1;
                    if failures >= self.tries {
                        return Err(match status {
                            Some(status) => GithubError::Http {
                                api: self.api.clone(),
                                status,
                                tries: failures,
                                body: error,
                            },
                            None => GithubError::Network { api: self.api.clone(), tries: failures, error },
                        });
                    }
                    let wait = self.backoff * 2u32.pow(failures - 1);
                    (self.notify)(format!(
                        "GitHub: {error}; trying again in {:.1} s (try {} of {})",
                        wait.as_secs_f64(),
                        failures + 1,
                        self.tries
                    ));
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// The token with the most points left; when every token is low, the wait until the first of
    /// them is reset, said and slept.
    async fn rested_token(&mut self) -> usize {
        let best = |tokens: &[Token]| {
            (0..tokens.len()).max_by_key(|&i| (tokens[i].remaining.unwrap_or(i64::MAX), std::cmp::Reverse(i)))
        };
        let mut i = best(&self.tokens).unwrap_or(0);
        if self.tokens[i].remaining.is_some_and(|r| r < LOW) {
            let reset = self.tokens.iter().filter_map(|t| t.reset_at).min().unwrap_or_else(now_seconds);
            let wait = Duration::from_secs((reset - now_seconds()).max(0) as u64 + 1);
            (self.notify)(format!(
                "GitHub's rate limit is spent on {} token(s): waiting {} s, until {}",
                self.tokens.len(),
                wait.as_secs(),
                clock(reset + 1)
            ));
            tokio::time::sleep(wait).await;
            for t in &mut self.tokens {
                if t.reset_at.is_some_and(|r| r <= now_seconds()) {
                    t.remaining = None;
                }
            }
            i = best(&self.tokens).unwrap_or(0);
        }
        i
    }

    async fn exchange(&mut self, token: usize, body: &str) -> Result<Exchange, GithubError> {
        let sent = self
            .http
            .post(&self.api)
            .header("authorization", format!("bearer {}", self.tokens[token].secret))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => return Ok(Exchange::Retry(e.to_string(), None)),
        };
        let status = response.status().as_u16();
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim).map(str::to_string)
        };
        let retry_after = header("retry-after").and_then(|v| v.parse::<u64>().ok());
        let limit_reset = header("x-ratelimit-reset").and_then(|v| v.parse::<i64>().ok());
        let limit_spent = header("x-ratelimit-remaining").is_some_and(|v| v == "0");
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Ok(Exchange::Retry(e.to_string(), None)),
        };
        if status == 401 {
            return Err(GithubError::BadToken { api: self.api.clone(), status });
        }
        if matches!(status, 403 | 429) {
            if let Some(secs) = retry_after {
                let why = "GitHub asked to slow down (secondary rate limit)".to_string();
                return Ok(Exchange::Wait(Duration::from_secs(secs), why));
            }
            if limit_spent {
                self.spend(token, limit_reset);
                return Ok(Exchange::Wait(Duration::ZERO, "the token's points are spent".into()));
            }
            return Err(GithubError::BadToken { api: self.api.clone(), status });
        }
        if status >= 500 || status == 408 {
            return Ok(Exchange::Retry(format!("HTTP {status}"), Some(status)));
        }
        let parsed: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) if status == 200 => {
                return Err(GithubError::Body { api: self.api.clone(), error: e.to_string() });
            }
            Err(_) => {
                return Err(GithubError::Http { api: self.api.clone(), status, tries: 1, body: clip(&text) });
            }
        };
        if let Some(error) = parsed.get("errors").and_then(Value::as_array).and_then(|e| e.first()) {
            let kind = error.get("type").and_then(Value::as_str).map(str::to_string);
            if kind.as_deref() == Some("RATE_LIMITED") {
                self.spend(token, limit_reset);
                return Ok(Exchange::Wait(Duration::ZERO, "the token's points are spent".into()));
            }
            let message = error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_string();
            return Err(GithubError::Api { api: self.api.clone(), kind, message });
        }
        let Some(data) = parsed.get("data").filter(|d| d.is_object()) else {
            return Err(GithubError::Body { api: self.api.clone(), error: "no `data` in the answer".into() });
        };
        if let Some(limit) = data.get("rateLimit") {
            let t = &mut self.tokens[token];
            t.remaining = limit.get("remaining").and_then(Value::as_i64);
            t.reset_at = limit.get("resetAt").and_then(Value::as_str).and_then(epoch_seconds);
        }
        Ok(Exchange::Data(data.clone()))
    }

    /// A token whose points are spent rests until its reset (the header's, or a minute from now).
    fn spend(&mut self, token: usize, reset: Option<i64>) {
        let t = &mut self.tokens[token];
        t.remaining = Some(0);
        t.reset_at = Some(reset.unwrap_or_else(|| now_seconds() + 60));
    }
}

fn until(wait: Duration) -> String {
    clock(now_seconds() + wait.as_secs() as i64)
}

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Where the answer to `request` is stored: `<cache>/<first two hex digits>/<sha256>.json`.
fn entry_path(cache: &Path, request: &Value) -> PathBuf {
    // serde_json's maps are sorted, so the same request always gives the same text.
    let hash = hex::encode(Sha256::digest(request.to_string().as_bytes()));
    cache.join(&hash[..2]).join(format!("{hash}.json"))
}

/// A stored answer: the data, or the error a request always gets.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Stored {
    Data(Value),
    Error { kind: Option<String>, message: String },
}

fn read_entry(path: &Path) -> Option<Stored> {
    let mut entry: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    serde_json::from_value(entry.get_mut("answer")?.take()).ok()
}

/// Written to a temporary file and renamed, so a kill leaves a whole answer or none.
fn write_entry(path: &Path, request: &Value, answer: &Stored) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let text = serde_json::to_vec_pretty(&json!({"request": request, "answer": answer}))
        .map_err(std::io::Error::other)?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_request_is_stored_at_the_same_place_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = json!({"api": "http://x/graphql", "query": "q", "variables": {"b": 1, "a": "z"}});
        let b = json!({"variables": {"a": "z", "b": 1}, "query": "q", "api": "http://x/graphql"});
        assert_eq!(entry_path(dir.path(), &a), entry_path(dir.path(), &b));
        let other = json!({"api": "http://y/graphql", "query": "q", "variables": {"b": 1, "a": "z"}});
        assert_ne!(entry_path(dir.path(), &a), entry_path(dir.path(), &other));
        let path = entry_path(dir.path(), &a);
        assert_eq!(read_entry(&path), None);
        let data = Stored::Data(json!({"search": {"nodes": []}}));
        write_entry(&path, &a, &data).unwrap();
        assert_eq!(read_entry(&path), Some(data));
        let error = Stored::Error { kind: Some(NODE_LIMIT.into()), message: "too many".into() };
        write_entry(&path, &a, &error).unwrap();
        assert_eq!(read_entry(&path), Some(error));
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn no_token_is_an_error_that_names_the_variable() {
        let settings = Settings {
            api: "http://127.0.0.1:9/graphql".into(),
            tokens: vec![" ".into()],
            cache: PathBuf::from("unused"),
            backoff: Duration::from_millis(1),
            tries: 1,
            timeout: Duration::from_secs(1),
        };
        let error = Client::new(settings, Arc::new(|_| {})).err().unwrap();
        assert!(error.to_string().contains("GITHUB_TOKEN"), "{error}");
    }
}
