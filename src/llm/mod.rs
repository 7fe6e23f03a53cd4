//! One client for every LLM stage: any OpenAI-compatible server through async-openai, with a
//! content-addressed response cache (so a re-run replays instead of calling), retries with backoff
//! for 429s, 5xx, timeouts and dropped connections, per-endpoint concurrency and an optional
//! requests-per-minute limit.
//!
//! - [`config`]: the pipeline's `llm:` settings and how they merge;
//! - [`transport`]: the HTTP exchange under async-openai (retries, limits);
//! - [`cache`]: recorded answers, one file per request hash;
//! - [`client`]: a chat call through the cache and the transport;
//! - [`json`]: getting a JSON object out of what a model wrote;
//! - [`prompt`]: prompt templates from `prompts/`.

pub mod cache;
pub mod client;
pub mod config;
pub mod json;
pub mod prompt;
pub mod transport;

pub use cache::CacheMode;
pub use client::{Answer, ChatRequest, LlmError, Message, Usage};
pub use config::{LlmSettings, LlmSpec};
