//! The plain data every other part of `llm` shares: the messages and request sent, the answer and its
//! token usage, the cache mode, and the resolved settings. Nothing here calls a server, touches the
//! cache or reads a pipeline.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// Everything that decides an answer; its hash names the recorded answer. Its serialized form is
/// what is hashed, so a change to a field's name, order or skipping orphans every recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub temperature: f32,
    pub max_tokens: u32,
    pub seed: Option<i64>,
    /// Left out of the hash when empty, so answers recorded before it existed still replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Ask for this many alternatives, with their log-probabilities, at each answer token. Left out
    /// of the hash when unset, like `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
}

impl ChatRequest {
    pub fn hash(&self) -> String {
        // Serializing plain strings and numbers cannot fail; field order is fixed by the struct.
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        hex::encode(Sha256::digest(&bytes))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub text: String,
    /// The answer was cut off at the token limit (older recordings do not say: `false`).
    #[serde(default)]
    pub truncated: bool,
    /// The model that answered, as the server named it.
    pub model: String,
    pub usage: Usage,
    pub elapsed_ms: u64,
    /// Seconds since the epoch.
    pub created_at: u64,
    /// Per answer token, its log-probability and the likeliest alternatives, when the request asked
    /// for them and the server gave them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logprobs: Vec<TokenLogprob>,
}

/// One token of an answer and the tokens the model weighed at its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f32,
    /// The likeliest tokens at this place, the chosen one among them, with their log-probabilities.
    pub top: Vec<(String, f32)>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Use a recorded answer when there is one, call the model and record otherwise.
    #[default]
    Readwrite,
    /// Only recorded answers; a miss is an error naming the request.
    Replay,
    /// Always call; record nothing.
    Off,
}

impl FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "readwrite" => Ok(CacheMode::Readwrite),
            "replay" => Ok(CacheMode::Replay),
            "off" => Ok(CacheMode::Off),
            _ => Err(format!("unknown LLM cache mode `{s}`; expected readwrite, replay or off")),
        }
    }
}

/// Resolved settings: the pipeline's `LlmSpec` with its defaults and the environment applied.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    pub base_url: String,
    pub model: String,
    pub api_key: String,
    pub temperature: f32,
    pub max_tokens: u32,
    pub seed: Option<i64>,
    pub stop: Vec<String>,
    /// The whole request, answer included.
    pub timeout: Duration,
    /// From sending the request to the answer's first token.
    pub first_token: Duration,
    /// Between two tokens of the answer.
    pub idle: Duration,
    pub max_retries: u32,
    /// No retry starts once this long has passed since a request's first attempt.
    pub retry_budget: Duration,
    pub concurrency: usize,
    pub requests_per_minute: Option<u32>,
    pub backoff: Duration,
    pub cache: CacheMode,
}

impl LlmSettings {
    /// What changes an answer, and so belongs in the task key: not where the server is, nor limits.
    pub fn fingerprint(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        });
        // Only when set, so keys made before stop sequences existed stay valid.
        if !self.stop.is_empty() {
            value["stop"] = serde_json::json!(self.stop);
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_stop_sequences_hashes_as_before_they_existed() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![Message::user("hi")],
            temperature: 0.0,
            max_tokens: 8,
            seed: Some(7),
            stop: Vec::new(),
            top_logprobs: None,
        };
        let old_form = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.0,"max_tokens":8,"seed":7}"#;
        assert_eq!(request.hash(), hex::encode(Sha256::digest(old_form.as_bytes())));
        let stopped = ChatRequest { stop: vec!["\n```\n".into()], ..request.clone() };
        assert_ne!(stopped.hash(), request.hash());
    }
}
