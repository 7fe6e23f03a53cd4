//! When to try a request again and how long to wait first. One schedule for every retry: the
//! transport's (429s, 5xx, timeouts, dropped connections) and the client's (a 200 whose body is not a
//! chat completion).

use std::time::Duration;

use super::types::LlmSettings;

/// Longest wait between two attempts, whatever the server asks.
pub const MAX_DELAY: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub max_retries: u32,
    /// The wait after the first failure; it doubles with each failure after that.
    pub backoff: Duration,
    /// No retry starts once this long has passed since the first attempt began, so a hung server
    /// holds a task for about `budget` plus one request timeout, not `max_retries` timeouts.
    pub budget: Duration,
}

impl RetryPolicy {
    pub fn of(settings: &LlmSettings) -> RetryPolicy {
        RetryPolicy {
            max_retries: settings.max_retries,
            backoff: settings.backoff,
            budget: settings.retry_budget,
        }
    }

    /// Whether another attempt may follow failed attempt `attempt` (0 is the first try) of a
    /// request whose first attempt began `elapsed` ago.
    pub fn may_retry(&self, attempt: u32, elapsed: Duration) -> bool {
        attempt < self.max_retries && elapsed < self.budget
    }

    /// The wait after failed attempt `attempt`: what the server `asked` (a `Retry-After`) if it
    /// said, otherwise the doubled backoff with jitter; never more than [`MAX_DELAY`].
    pub fn delay(&self, attempt: u32, asked: Option<Duration>) -> Duration {
        asked.unwrap_or_else(|| self.backoff_after(attempt, rand::random())).min(MAX_DELAY)
    }

    /// `backoff` doubled once per earlier failure and capped, then scaled into its upper half by
    /// `jitter` (0 to 1), so many clients that failed together do not retry in step.
    fn backoff_after(&self, attempt: u32, jitter: f64) -> Duration {
        let doubled = self.backoff.saturating_mul(1u32 << attempt.min(16)).min(MAX_DELAY);
        doubled.mul_f64(0.5 + jitter.clamp(0.0, 1.0) * 0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy =
        RetryPolicy { max_retries: 3, backoff: Duration::from_millis(500), budget: Duration::from_secs(60) };

    #[test]
    fn the_wait_doubles_from_the_backoff_with_jitter_in_its_upper_half_up_to_the_cap() {
        let ms = |attempt, jitter| POLICY.backoff_after(attempt, jitter).as_millis();
        let longest: Vec<_> = (0..10).map(|attempt| ms(attempt, 1.0)).collect();
        assert_eq!(longest, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 120_000, 120_000]);
        let shortest: Vec<_> = (0..10).map(|attempt| ms(attempt, 0.0)).collect();
        assert_eq!(shortest, [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
        assert_eq!(ms(u32::MAX, 1.0), 120_000, "no overflow however many attempts");
        for attempt in 0..10 {
            let wait = POLICY.delay(attempt, None).as_millis();
            assert!((ms(attempt, 0.0)..=ms(attempt, 1.0)).contains(&wait), "attempt {attempt}: {wait} ms");
        }
    }

    #[test]
    fn the_server_s_wait_wins_up_to_the_cap() {
        assert_eq!(POLICY.delay(0, Some(Duration::from_secs(7))), Duration::from_secs(7));
        assert_eq!(POLICY.delay(0, Some(Duration::from_secs(3_600))), MAX_DELAY);
    }

    #[test]
    fn max_retries_counts_attempts_after_the_first() {
        let tries: Vec<_> = (0..5).map(|attempt| POLICY.may_retry(attempt, Duration::ZERO)).collect();
        assert_eq!(tries, [true, true, true, false, false]);
    }

    #[test]
    fn no_retry_starts_once_the_budget_is_spent() {
        assert!(POLICY.may_retry(0, Duration::from_secs(59)));
        assert!(!POLICY.may_retry(0, Duration::from_secs(60)));
    }
}
