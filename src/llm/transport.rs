//! The HTTP exchange under async-openai. async-openai builds the request and parses the answer; this
//! service sends it, and retries 429s, 5xx, timeouts and dropped connections on the [`RetryPolicy`]'s
//! schedule, waiting as long as a `Retry-After` header asks. The stages that talk to one server with
//! the same limits share one concurrency limit and requests-per-minute window (see `endpoint`);
//! retry policy and timeout are each client's own. The concurrency permit is the client's to hold
//! ([`Endpoint::acquire`]): an answer streams in after its response began, and the request counts as
//! in flight until its last token.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_openai::error::{ApiError, ApiErrorResponse, OpenAIError};
use async_openai::middleware::HttpRequestFactory;
use reqwest::Response;
use tokio::sync::Semaphore;

use super::retry::RetryPolicy;
use super::types::LlmSettings;

/// The limits shared by every client that talks to one server with the same limits.
pub struct Endpoint {
    permits: Semaphore,
    rpm: Option<(u32, Mutex<VecDeque<Instant>>)>,
}

/// A server and the limits asked of it: what `endpoint` shares by.
#[derive(PartialEq, Eq, Hash)]
struct EndpointKey {
    base_url: String,
    concurrency: usize,
    requests_per_minute: Option<u32>,
}

/// Why a client of the model server cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot make an HTTP client: {0}")]
    Http(#[source] reqwest::Error),
    #[error("the registry of model servers is poisoned (a thread panicked holding it)")]
    Poisoned,
}

/// The endpoint for `settings`' base URL and limits, made on first use; later clients with the same
/// server and the same `concurrency` and `requests_per_minute` share it.
///
/// A stage that gives the same server other limits gets an endpoint of its own, so its limits hold
/// as it wrote them rather than whichever stage connected first; the server then sees the stages'
/// limits added up. To cap a server as a whole, give every stage that uses it the same limits, most
/// simply by setting them only in `defaults.llm`.
fn endpoint(settings: &LlmSettings) -> Result<Arc<Endpoint>, SetupError> {
    static ENDPOINTS: OnceLock<Mutex<HashMap<EndpointKey, Arc<Endpoint>>>> = OnceLock::new();
    let mut all = ENDPOINTS.get_or_init(Default::default).lock().map_err(|_| SetupError::Poisoned)?;
    let key = EndpointKey {
        base_url: settings.base_url.clone(),
        concurrency: settings.concurrency,
        requests_per_minute: settings.requests_per_minute,
    };
    let endpoint = all.entry(key).or_insert_with(|| {
        Arc::new(Endpoint {
            permits: Semaphore::new(settings.concurrency),
            rpm: settings.requests_per_minute.map(|n| (n.max(1), Mutex::new(VecDeque::new()))),
        })
    });
    Ok(endpoint.clone())
}

/// The wait a `Retry-After` header asks for, in seconds; the date form is not read (the retry
/// policy's own wait applies).
fn retry_after(response: &Response) -> Option<Duration> {
    seconds(response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?)
}

fn seconds(value: &str) -> Option<Duration> {
    let seconds = value.trim().parse::<f64>().ok().filter(|s| *s >= 0.0)?;
    // Too many seconds for a Duration (`inf`, `1e300`): the longest wait, which the policy caps.
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

impl Endpoint {
    /// A place among the requests in flight to this server, held until dropped.
    pub async fn acquire(&self) -> Result<tokio::sync::SemaphorePermit<'_>, tokio::sync::AcquireError> {
        self.permits.acquire().await
    }

    /// Waits until one more request fits in the last minute's window.
    async fn wait_for_rate(&self) {
        let Some((limit, window)) = &self.rpm else { return };
        loop {
            let wait = {
                let Ok(mut w) = window.lock() else { return };
                let now = Instant::now();
                while w.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60)) {
                    w.pop_front();
                }
                if w.len() < *limit as usize {
                    w.push_back(now);
                    return;
                }
                w.front().map_or(Duration::ZERO, |t| {
                    Duration::from_secs(60).saturating_sub(now.duration_since(*t))
                })
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A 4xx response (429 aside) as async-openai's error, its fields read from whatever JSON the
/// server sent: `{"error": {...}}` or the object alone, `code` a string or a number; a body that
/// is no JSON is the message.
async fn refusal(response: Response) -> OpenAIError {
    let status = response.status();
    let body = match response.text().await {
        Ok(body) => body,
        Err(e) => return OpenAIError::Reqwest(e),
    };
    OpenAIError::ApiError(ApiErrorResponse { status_code: status, api_error: api_error(&body) })
}

/// The error object of a refusal's `body`.
fn api_error(body: &str) -> ApiError {
    let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let object = value.get("error").filter(|e| e.is_object()).unwrap_or(&value);
    let text = |key: &str| match object.get(key) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    let message =
        text("message").unwrap_or_else(|| body.chars().take(500).collect::<String>().trim().to_string());
    ApiError { message, r#type: text("type"), param: text("param"), code: text("code"), misalignment: None }
}

/// Whether a refusal says the request is longer than the model's context: llama.cpp's
/// `exceed_context_size_error`, OpenAI's `context_length_exceeded`, vLLM's "maximum context
/// length". Asking again cannot help: the same request is as long the next time.
pub fn exceeds_context(error: &ApiError) -> bool {
    let text = format!(
        "{} {} {}",
        error.r#type.as_deref().unwrap_or(""),
        error.code.as_deref().unwrap_or(""),
        error.message
    )
    .to_lowercase();
    text.contains("context") && ["exceed", "maximum", "too long"].iter().any(|w| text.contains(w))
}

/// The tower service async-openai sends through: one client's HTTP connection pool and retry
/// policy, over its endpoint's shared limits.
#[derive(Clone)]
pub struct Transport {
    endpoint: Arc<Endpoint>,
    http: reqwest::Client,
    retry: RetryPolicy,
    cut: CutReason,
}

/// Why the transport last cut an answer's body off. The stream error that reaches the client
/// says only "error decoding response body" (the event-stream parser keeps no source), so the
/// reason is left here for it. Shared by the requests of one client: two cut off at once leave one
/// reason, which is then true of both.
pub type CutReason = Arc<Mutex<Option<String>>>;

impl Transport {
    pub fn new(settings: &LlmSettings) -> Result<Transport, SetupError> {
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(SetupError::Http)?;
        Ok(Transport {
            endpoint: endpoint(settings)?,
            http,
            retry: RetryPolicy::of(settings),
            cut: CutReason::default(),
        })
    }

    /// Where this transport says why it cut an answer off.
    pub fn cut_reason(&self) -> CutReason {
        self.cut.clone()
    }

    /// The limits this transport shares with the other clients of its server.
    pub fn endpoint(&self) -> Arc<Endpoint> {
        self.endpoint.clone()
    }

    async fn send(self, factory: HttpRequestFactory) -> Result<Response, OpenAIError> {
        let mut attempt = 0;
        let started = Instant::now();
        loop {
            self.endpoint.wait_for_rate().await;
            let request = factory.build().await?;
            let wait = match self.http.execute(request).await {
                Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => {
                    if !self.retry.may_retry(attempt, started.elapsed()) {
                        return Ok(r);
                    }
                    self.retry.delay(attempt, retry_after(&r))
                }
                // A refusal is read here, not by async-openai: servers disagree on the error
                // object's shape (llama.cpp's `code` is a number), and a body that does not parse
                // would be retried as if the answer had been cut.
                Ok(r) if r.status().is_client_error() => return Err(refusal(r).await),
                Ok(r) => return Ok(bounded(r, self.cut.clone())),
                Err(e) if e.is_builder() => return Err(OpenAIError::Reqwest(e)),
                Err(e) => {
                    if !self.retry.may_retry(attempt, started.elapsed()) {
                        return Err(OpenAIError::Reqwest(e));
                    }
                    self.retry.delay(attempt, None)
                }
            };
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

/// The most bytes one event of a streamed answer may hold. An event is one chunk of a few tokens
/// (with their log-probabilities, a few KiB); the event-stream parser under async-openai reads one
/// event in time quadratic in its length (1.1 MiB: 9 s; 3 MiB: 75 s), so a server that sends
/// megabytes without an event's end must be cut off here, before the parser sees them.
const MAX_EVENT_BYTES: usize = 256 << 10;
/// The most bytes of a whole answer's body: past the client's own bound on the answer's text
/// (1 MiB) with every event's framing and log-probabilities around it.
const MAX_BODY_BYTES: usize = 32 << 20;

/// Counts what a body has sent: in all, and since its last blank line (an event's end).
#[derive(Default)]
struct BodyMeter {
    total: usize,
    in_event: usize,
    after_newline: bool,
}

impl BodyMeter {
    /// Takes in `bytes`; what is wrong once a bound is passed.
    fn take(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.total += bytes.len();
        if self.total > MAX_BODY_BYTES {
            return Err(format!("the answer's body passed {} MiB", MAX_BODY_BYTES >> 20));
        }
        for &b in bytes {
            match b {
                b'\r' => continue,
                b'\n' if self.after_newline => self.in_event = 0,
                _ => self.in_event += 1,
            }
            self.after_newline = b == b'\n';
        }
        if self.in_event > MAX_EVENT_BYTES {
            return Err(format!(
                "one event of the answer passed {} KiB without its end; the server is not streaming chat chunks",
                MAX_EVENT_BYTES >> 10
            ));
        }
        Ok(())
    }
}

/// `response` with its body read through a [`BodyMeter`]: past a bound, reading fails, and the
/// meter's reason is left in `cut`.
fn bounded(response: Response, cut: CutReason) -> Response {
    use futures_util::StreamExt;
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let mut meter = BodyMeter::default();
    let body = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if let Err(reason) = meter.take(&chunk) {
            if let Ok(mut slot) = cut.lock() {
                *slot = Some(reason.clone());
            }
            return Err(reason);
        }
        Ok::<_, String>(chunk)
    });
    let mut bounded = http::Response::new(reqwest::Body::wrap_stream(body));
    *bounded.status_mut() = status;
    *bounded.version_mut() = version;
    *bounded.headers_mut() = headers;
    Response::from(bounded)
}

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        Box::pin(self.clone().send(factory))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refusals_of_every_server_shape_are_read_and_a_long_prompt_is_told() {
        let llama = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}}"#;
        let e = super::api_error(llama);
        assert_eq!(e.code.as_deref(), Some("400"));
        assert!(super::exceeds_context(&e), "{e:?}");
        let openai = r#"{"error":{"message":"This model's maximum context length is 4097 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert!(super::exceeds_context(&super::api_error(openai)));
        let bare = super::api_error(r#"{"message":"unknown model","code":null}"#);
        assert_eq!((bare.message.as_str(), bare.code.as_deref()), ("unknown model", None));
        assert!(!super::exceeds_context(&bare));
        let page = super::api_error("<html>400 Bad Request</html>");
        assert_eq!(page.message, "<html>400 Bad Request</html>");
        assert!(!super::exceeds_context(&page));
    }

    use super::*;

    #[test]
    fn a_body_meter_counts_each_event_from_its_blank_line() {
        let mut meter = BodyMeter::default();
        let event = format!("data: {}\n\n", "x".repeat(200 << 10));
        for _ in 0..20 {
            meter.take(event.as_bytes()).unwrap();
        }
        // Split across chunks, and with CRLF line ends, an event still ends at its blank line.
        let mut split = BodyMeter::default();
        for part in [&b"data: a\r\n"[..], b"\r", b"\n", &vec![b'y'; 250 << 10]] {
            split.take(part).unwrap();
        }
        let err = split.take(&[b'y'; 10 << 10]).unwrap_err();
        assert!(err.contains("passed 256 KiB"), "{err}");
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_a_huge_one_is_the_longest_wait() {
        assert_eq!(seconds(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(seconds("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(seconds("-1"), None);
        assert_eq!(seconds("NaN"), None);
        assert_eq!(seconds("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        // The retry policy caps what is asked; what the server says must not panic on the way.
        assert_eq!(seconds("inf"), Some(Duration::MAX));
        assert_eq!(seconds("1e300"), Some(Duration::MAX));
    }
}
