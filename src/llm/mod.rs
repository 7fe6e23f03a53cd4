//! One client for every LLM stage: any OpenAI-compatible server through async-openai, with a
//! content-addressed response cache (so a re-run replays instead of calling), retries with backoff
//! for 429s, 5xx, timeouts and dropped connections, per-endpoint concurrency and an optional
//! requests-per-minute limit.
//!
//! - [`types`]: the plain data the others share (messages, request, answer, usage, cache mode,
//!   resolved settings);
//! - [`config`]: the pipeline's `llm:` settings and how they merge;
//! - [`retry`]: when to try again and how long to wait first;
//! - [`transport`]: the HTTP exchange under async-openai (retries, limits);
//! - [`cache`]: recorded answers, one file per request hash;
//! - [`client`]: a chat call through the cache and the transport;
//! - [`json`]: getting a JSON object out of what a model wrote;
//! - [`confidence`]: how sure the model was of a word it chose, from the answer's log-probabilities;
//! - [`prompt`]: prompt templates from `prompts/`.
//!
//! Dependencies run one way: `config`, `cache`, `retry` and `prompt` use only `types`, `transport`
//! uses `retry` too, and `client` puts them together; `json` stands alone, `confidence` uses only `types`.

pub mod cache;
pub mod client;
pub mod confidence;
pub mod config;
pub mod json;
pub mod prompt;
pub mod retry;
pub mod transport;
pub mod types;

pub use client::LlmError;
pub use config::LlmSpec;
pub use types::{Answer, CacheMode, ChatRequest, LlmSettings, Message, TokenLogprob, Usage};
