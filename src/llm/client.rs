//! A chat call: the recorded answer if there is one, otherwise one request through async-openai and
//! the retrying transport, recorded for next time. Identical requests in flight are sent once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{ChatCompletionTokenLogprob, CreateChatCompletionRequest, FinishReason};
use tokio::sync::OnceCell;

use super::cache::ResponseCache;
use super::retry::RetryPolicy;
use super::transport::Transport;
use super::types::{Answer, CacheMode, ChatRequest, LlmSettings, Message, TokenLogprob, Usage};

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error(
        "no recorded answer for request {hash} and the LLM cache is in replay mode; start a model server (scripts/model-server) and set CURATE_LLM_CACHE=readwrite to record it"
    )]
    ReplayMiss { hash: String },
    #[error("the model server failed: {0}")]
    Failed(String),
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
    pub fn new(settings: LlmSettings, cache_dir: &Path) -> Result<Llm, String> {
        let config = OpenAIConfig::new().with_api_base(&settings.base_url).with_api_key(&settings.api_key);
        let client = Client::with_config(config).with_http_service(Transport::new(&settings)?);
        Ok(Llm {
            settings,
            client,
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
        let mut attempt = 0;
        let started = Instant::now();
        loop {
            let t0 = Instant::now();
            match self.client.chat().create(typed.clone()).await {
                Ok(response) => {
                    let choice = response
                        .choices
                        .first()
                        .ok_or_else(|| LlmError::Failed("the answer has no choices".into()))?;
                    let text = choice
                        .message
                        .content
                        .clone()
                        .ok_or_else(|| LlmError::Failed("the answer has no message content".into()))?;
                    let truncated = matches!(choice.finish_reason, Some(FinishReason::Length));
                    let usage = response.usage.map_or(Usage::default(), |u| Usage {
                        prompt_tokens: u64::from(u.prompt_tokens),
                        completion_tokens: u64::from(u.completion_tokens),
                    });
                    let logprobs = choice
                        .logprobs
                        .as_ref()
                        .and_then(|l| l.content.as_ref())
                        .map(|tokens| tokens.iter().map(token_logprob).collect())
                        .unwrap_or_default();
                    let created_at = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    return Ok(Answer {
                        text,
                        truncated,
                        model: response.model,
                        usage,
                        elapsed_ms: t0.elapsed().as_millis() as u64,
                        created_at,
                        logprobs,
                    });
                }
                // A body that is not a chat completion (a proxy's error page, a cut-off stream):
                // the transport saw a 200, so retry here.
                Err(OpenAIError::JSONDeserialize(..)) if retry.may_retry(attempt, started.elapsed()) => {
                    tokio::time::sleep(retry.delay(attempt, None)).await;
                    attempt += 1;
                }
                Err(e) => return Err(LlmError::Failed(describe(&e))),
            }
        }
    }
}
