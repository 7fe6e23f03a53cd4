//! A chat call: the recorded answer if there is one, otherwise one request through async-openai and
//! the retrying transport, recorded for next time. Identical requests in flight are sent once.
//! Answers are streamed, so a server that has gone quiet is told from one still writing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionTokenLogprob, CreateChatCompletionRequest, CreateChatCompletionStreamResponse, FinishReason,
};
use futures_util::StreamExt;
use tokio::sync::OnceCell;

use super::cache::ResponseCache;
use super::retry::RetryPolicy;
use super::transport::{Endpoint, Transport, exceeds_context};
use super::types::{Answer, CacheMode, ChatRequest, LlmSettings, Message, TokenLogprob, Usage};

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error(
        "no recorded answer for request {hash} and the LLM cache is in replay mode; start a model server (scripts/model-server) and set CURATE_LLM_CACHE=readwrite to record it"
    )]
    ReplayMiss { hash: String },
    #[error("the model server failed: {0}")]
    Failed(String),
    /// The server refused the request as longer than the model's context: the same request will
    /// be refused again, so this is the input's doing, not the server's.
    #[error("the prompt is longer than the model's context: {0}")]
    ContextExceeded(String),
    /// Without its recording a later replay would miss with no clue why, so the call fails and the
    /// next run asks again.
    #[error(
        "the model answered but the answer cannot be recorded in {path}: {error}; make that path writable, or set CURATE_LLM_CACHE=off to record nothing"
    )]
    CacheWrite { path: PathBuf, error: Arc<std::io::Error> },
}

pub struct Llm {
    pub settings: LlmSettings,
    client: Client<OpenAIConfig>,
    /// The server's shared limits; a request holds a place until its answer has streamed in.
    endpoint: Arc<Endpoint>,
    /// Why the transport cut an answer's body off, when it did.
    cut: super::transport::CutReason,
    cache: ResponseCache,
    in_flight: Mutex<HashMap<String, Arc<Pending>>>,
}

/// A request in flight; later askers of the same request wait on it.
type Pending = OnceCell<Result<Answer, LlmError>>;

fn describe(e: &OpenAIError) -> String {
    match e {
        OpenAIError::ApiError(api) => format!("HTTP {}: {}", api.status_code, api.api_error.message),
        OpenAIError::Reqwest(r) if r.is_timeout() => format!("timed out: {r}"),
        other => other.to_string(),
    }
}

fn token_logprob(t: &ChatCompletionTokenLogprob) -> TokenLogprob {
    TokenLogprob {
        token: t.token.clone(),
        logprob: t.logprob,
        top: t.top_logprobs.iter().map(|a| (a.token.clone(), a.logprob)).collect(),
    }
}

impl Llm {
    /// `cache_dir` is where recorded answers live (`cache/llm`).
    pub fn new(settings: LlmSettings, cache_dir: &Path) -> Result<Llm, super::transport::SetupError> {
        let config = OpenAIConfig::new().with_api_base(&settings.base_url).with_api_key(&settings.api_key);
        let transport = Transport::new(&settings)?;
        let endpoint = transport.endpoint();
        let cut = transport.cut_reason();
        let client = Client::with_config(config).with_http_service(transport);
        Ok(Llm {
            settings,
            client,
            endpoint,
            cut,
            cache: ResponseCache::new(cache_dir),
            in_flight: Mutex::new(HashMap::new()),
        })
    }

    pub fn request(&self, messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: self.settings.model.clone(),
            messages,
            temperature: self.settings.temperature,
            max_tokens: self.settings.max_tokens,
            seed: self.settings.seed,
            stop: self.settings.stop.clone(),
            top_logprobs: None,
        }
    }

    /// The answer and whether it came from the cache.
    pub async fn chat(&self, request: &ChatRequest) -> Result<(Answer, bool), LlmError> {
        let hash = request.hash();
        if self.settings.cache != CacheMode::Off
            && let Some(answer) = self.cache.get(&hash)
        {
            return Ok((answer, true));
        }
        if self.settings.cache == CacheMode::Replay {
            return Err(LlmError::ReplayMiss { hash });
        }
        let cell = {
            let mut map = self.in_flight.lock().map_err(|_| LlmError::Failed("lock poisoned".into()))?;
            map.entry(hash.clone()).or_default().clone()
        };
        let mut ours = false;
        let result = cell
            .get_or_init(|| {
                ours = true;
                self.call_and_record(request, &hash)
            })
            .await
            .clone();
        if ours && let Ok(mut map) = self.in_flight.lock() {
            map.remove(&hash);
        }
        result.map(|a| (a, !ours))
    }

    /// A live call, recorded in readwrite mode. Inside the in-flight cell, so everyone waiting on
    /// the same request sees a failed recording too.
    async fn call_and_record(&self, request: &ChatRequest, hash: &str) -> Result<Answer, LlmError> {
        let answer = self.call(request).await?;
        if self.settings.cache == CacheMode::Readwrite {
            self.cache.put(hash, request, &answer).map_err(|error| LlmError::CacheWrite {
                path: self.cache.path(hash),
                error: Arc::new(error),
            })?;
        }
        Ok(answer)
    }

    async fn call(&self, request: &ChatRequest) -> Result<Answer, LlmError> {
        let mut body = serde_json::json!({
            "model": request.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.stop.is_empty() {
            body["stop"] = serde_json::json!(request.stop);
        }
        if let Some(n) = request.top_logprobs {
            body["logprobs"] = serde_json::json!(true);
            body["top_logprobs"] = serde_json::json!(n);
        }
        let typed: CreateChatCompletionRequest = serde_json::from_value(body)
            .map_err(|e| LlmError::Failed(format!("cannot build the request: {e}")))?;
        let retry = RetryPolicy::of(&self.settings);
        let _permit = self.endpoint.acquire().await.map_err(|e| LlmError::Failed(e.to_string()))?;
        let mut attempt = 0;
        let started = Instant::now();
        loop {
            let t0 = Instant::now();
            match self.attempt(typed.clone(), t0).await {
                Ok(streamed) => return Ok(streamed.answer(t0.elapsed())),
                Err(Miss::Retry(_)) if retry.may_retry(attempt, started.elapsed()) => {
                    tokio::time::sleep(retry.delay(attempt, None)).await;
                    attempt += 1;
                }
                Err(Miss::Retry(reason) | Miss::Fail(reason)) => return Err(LlmError::Failed(reason)),
                Err(Miss::TooLong(reason)) => return Err(LlmError::ContextExceeded(reason)),
            }
        }
    }

    /// One try: the request sent and its answer read as it streams in, given up when the server
    /// says nothing for `first_token` after `sent`, or for `idle` once it has begun.
    async fn attempt(&self, request: CreateChatCompletionRequest, sent: Instant) -> Result<Streamed, Miss> {
        let (first, idle) = (self.settings.first_token, self.settings.idle);
        let silent = |secs: Duration, setting: &str| {
            Miss::Retry(format!("the server sent nothing for {} s ({setting})", secs.as_secs()))
        };
        let mut stream = tokio::time::timeout(first, self.client.chat().create_stream(request))
            .await
            .map_err(|_| silent(first, "first_token_secs"))?
            .map_err(|e| Miss::of(&e))?;
        let mut streamed = Streamed::default();
        loop {
            let wait = if streamed.begun { idle } else { first.saturating_sub(sent.elapsed()) };
            let setting = if streamed.begun { "idle_secs" } else { "first_token_secs" };
            match tokio::time::timeout(wait, stream.next()).await {
                Err(_) => return Err(silent(if streamed.begun { idle } else { first }, setting)),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    // Cut off by the transport: the same server would send the same again.
                    let cut = self.cut.lock().ok().and_then(|mut c| c.take());
                    return Err(cut.map_or_else(|| Miss::of(&e), Miss::Fail));
                }
                Ok(Some(Ok(chunk))) => streamed.add(chunk),
            }
            if streamed.text.len() > MAX_ANSWER_BYTES {
                return Err(Miss::Fail(format!(
                    "the answer passed {} MiB before it ended; no answer of a chat model within its max_tokens is that long, so the server at base_url is not behaving as one",
                    MAX_ANSWER_BYTES >> 20
                )));
            }
        }
        // A proxy's page in place of events, or a connection cut between two events.
        if streamed.finish.is_none() {
            return Err(Miss::Retry("the answer ended before the server said it was complete".into()));
        }
        Ok(streamed)
    }
}

/// The longest answer read: far beyond any `max_tokens` a stage asks for, short of what fills memory
/// or the state database.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Why a try gave no answer, and whether another may.
enum Miss {
    Retry(String),
    Fail(String),
    TooLong(String),
}

impl Miss {
    fn of(e: &OpenAIError) -> Miss {
        match e {
            OpenAIError::ApiError(api) if exceeds_context(&api.api_error) => Miss::TooLong(describe(e)),
            // The transport has retried these as far as the policy allows.
            OpenAIError::ApiError(_) | OpenAIError::Reqwest(_) | OpenAIError::InvalidArgument(_) => {
                Miss::Fail(describe(e))
            }
            // A body that is not a chat completion (a proxy's error page) or a stream cut off:
            // the transport saw a 200, so a retry is for the client to decide.
            _ => Miss::Retry(describe(e)),
        }
    }
}

/// An answer as its chunks come in.
#[derive(Default)]
struct Streamed {
    /// A chunk has come: from now on the server is writing, and `idle` applies.
    begun: bool,
    text: String,
    finish: Option<FinishReason>,
    model: String,
    usage: Option<Usage>,
    logprobs: Vec<TokenLogprob>,
}

impl Streamed {
    fn add(&mut self, chunk: CreateChatCompletionStreamResponse) {
        self.begun = true;
        if !chunk.model.is_empty() {
            self.model = chunk.model;
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(Usage {
                prompt_tokens: u64::from(u.prompt_tokens),
                completion_tokens: u64::from(u.completion_tokens),
            });
        }
        // One choice is asked for; others (a server that ignores `n`) are not read.
        let Some(choice) = chunk.choices.into_iter().find(|c| c.index == 0) else { return };
        if let Some(text) = choice.delta.content {
            self.text.push_str(&text);
        }
        if let Some(tokens) = choice.logprobs.and_then(|l| l.content) {
            self.logprobs.extend(tokens.iter().map(token_logprob));
        }
        if choice.finish_reason.is_some() {
            self.finish = choice.finish_reason;
        }
    }

    fn answer(self, elapsed: Duration) -> Answer {
        let created_at =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Answer {
            text: self.text,
            truncated: matches!(self.finish, Some(FinishReason::Length)),
            model: self.model,
            usage: self.usage.unwrap_or_default(),
            elapsed_ms: elapsed.as_millis() as u64,
            created_at,
            logprobs: self.logprobs,
        }
    }
}
