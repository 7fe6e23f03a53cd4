//! LLM settings: `defaults.llm` in the pipeline, overridable per stage with the stage's own `llm:`.
//! Unset fields fall back to the environment (`OPENAI_BASE_URL`) and then to the local model server
//! that `scripts/model-server` starts.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::types::{CacheMode, LlmSettings};

/// The local llama.cpp server's address and model alias (see `scripts/model-server`).
pub const LOCAL_BASE_URL: &str = "http://127.0.0.1:8012/v1";
pub const LOCAL_MODEL: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m";

/// The cache mode `CURATE_LLM_CACHE` sets for every stage, when it is set to one.
pub fn cache_from_env() -> Option<CacheMode> {
    std::env::var("CURATE_LLM_CACHE").ok().and_then(|m| m.parse().ok())
}

/// As written in YAML: every field optional, so a stage can override one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmSpec {
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the API key (default `OPENAI_API_KEY`).
    pub api_key_env: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub seed: Option<i64>,
    /// Strings that end the answer where they appear (not included in it).
    pub stop: Option<Vec<String>>,
    /// Seconds one request may take, answer included (default 300).
    pub timeout_secs: Option<u64>,
    /// Seconds from sending a request to the answer's first token (default 120): the server's
    /// queue and reading the prompt. A server that says nothing for this long is given up on.
    pub first_token_secs: Option<u64>,
    /// Seconds the answer may pause between two tokens (default 30).
    pub idle_secs: Option<u64>,
    /// Attempts after the first for 429, 5xx, timeouts and dropped connections (default 4).
    pub max_retries: Option<u32>,
    /// Seconds after a request's first attempt began past which no retry starts (default 300): a
    /// server that hangs before its first token holds a task for about this plus one
    /// `first_token_secs` (7 minutes by default), one that hangs mid-answer this plus one `idle_secs`.
    pub retry_budget_secs: Option<u64>,
    /// Requests in flight at once to this server, shared with the stages that set the same server and
    /// limits; a stage with other limits has its own (see `transport`).
    pub concurrency: Option<usize>,
    /// Requests a minute to this server, shared like `concurrency`.
    pub requests_per_minute: Option<u32>,
    /// First wait between retries, in milliseconds; it doubles each time.
    pub backoff_ms: Option<u64>,
    pub cache: Option<CacheMode>,
}

impl LlmSpec {
    /// `self` with `over`'s set fields on top.
    pub fn merged(&self, over: &LlmSpec) -> LlmSpec {
        macro_rules! pick {
            ($($f:ident),*) => { LlmSpec { $($f: over.$f.clone().or_else(|| self.$f.clone()),)* } };
        }
        pick!(
            base_url,
            model,
            api_key_env,
            temperature,
            max_tokens,
            seed,
            stop,
            timeout_secs,
            first_token_secs,
            idle_secs,
            max_retries,
            retry_budget_secs,
            concurrency,
            requests_per_minute,
            backoff_ms,
            cache
        )
    }

    /// Resolves defaults and the environment. `CURATE_LLM_CACHE` overrides the cache mode, so CI
    /// can force `replay`.
    pub fn settings(&self) -> LlmSettings {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let api_key_env = self.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
        LlmSettings {
            base_url: self
                .base_url
                .clone()
                .or_else(|| env("OPENAI_BASE_URL"))
                .unwrap_or_else(|| LOCAL_BASE_URL.into())
                .trim_end_matches('/')
                .to_string(),
            model: self.model.clone().unwrap_or_else(|| LOCAL_MODEL.into()),
            api_key: env(&api_key_env).unwrap_or_else(|| "none".into()),
            temperature: self.temperature.unwrap_or(0.0),
            max_tokens: self.max_tokens.unwrap_or(512),
            seed: self.seed.or(Some(7)),
            stop: self.stop.clone().unwrap_or_default(),
            timeout: Duration::from_secs(self.timeout_secs.unwrap_or(300)),
            first_token: Duration::from_secs(self.first_token_secs.unwrap_or(120)),
            idle: Duration::from_secs(self.idle_secs.unwrap_or(30)),
            max_retries: self.max_retries.unwrap_or(4),
            retry_budget: Duration::from_secs(self.retry_budget_secs.unwrap_or(300)),
            concurrency: self.concurrency.unwrap_or(1).max(1),
            requests_per_minute: self.requests_per_minute,
            backoff: Duration::from_millis(self.backoff_ms.unwrap_or(500)),
            cache: cache_from_env().or(self.cache).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_fields_override_defaults_field_by_field() {
        let defaults = LlmSpec { model: Some("a".into()), temperature: Some(0.2), ..LlmSpec::default() };
        let stage = LlmSpec { temperature: Some(0.0), max_tokens: Some(64), ..LlmSpec::default() };
        let m = defaults.merged(&stage);
        assert_eq!(m.model.as_deref(), Some("a"));
        assert_eq!(m.temperature, Some(0.0));
        assert_eq!(m.max_tokens, Some(64));
    }

    #[test]
    fn fingerprint_ignores_where_and_how_fast() {
        let a = LlmSpec { base_url: Some("http://a/v1".into()), concurrency: Some(1), ..LlmSpec::default() };
        let b = LlmSpec { base_url: Some("http://b/v1".into()), concurrency: Some(8), ..LlmSpec::default() };
        assert_eq!(a.settings().fingerprint(), b.settings().fingerprint());
        let c = LlmSpec { model: Some("other".into()), ..LlmSpec::default() };
        assert_ne!(a.settings().fingerprint(), c.settings().fingerprint());
    }
}
