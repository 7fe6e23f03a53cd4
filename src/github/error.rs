//! What can go wrong collecting from GitHub, each with the way out.

use std::path::PathBuf;

use crate::repo::RepoError;

/// GitHub's error type for a query that asks for too many nodes at once.
pub const NODE_LIMIT: &str = "MAX_NODE_LIMIT_EXCEEDED";

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error(
        "the github source needs a GitHub token: set GITHUB_TOKEN (several tokens may be given, comma separated, and are used in turn as their rate limits run low)"
    )]
    NoToken,
    #[error(
        "{api} refused the token (HTTP {status}): check GITHUB_TOKEN; an expired or revoked token, or one for another server, reads like this"
    )]
    BadToken { api: String, status: u16 },
    #[error(
        "repository {repo} was not found at {api}: check its name in `source.repos`, or that the token may read it"
    )]
    NotFound { repo: String, api: String },
    #[error("{api} answered with an error: {message}")]
    Api { api: String, kind: Option<String>, message: String },
    #[error("{api} answered HTTP {status} {tries} times in a row: {body}")]
    Http { api: String, status: u16, tries: u32, body: String },
    #[error("cannot reach {api} ({tries} tries): {error}; check `source.api` or CURATE_GITHUB_API")]
    Network { api: String, tries: u32, error: String },
    #[error("{api} sent a body that is not a GraphQL response: {error}")]
    Body { api: String, error: String },
    #[error("{api} kept asking to slow down ({waits} waits) and never answered")]
    Throttled { api: String, waits: u32 },
    #[error("the response cache {path}: {error}")]
    Cache { path: PathBuf, error: std::io::Error },
    #[error(transparent)]
    Mirror(#[from] RepoError),
}

impl GithubError {
    /// GitHub's answer that a query asks for more nodes than it serves at once: the page is asked
    /// for again, smaller.
    pub fn is_node_limit(&self) -> bool {
        matches!(self, GithubError::Api { kind: Some(k), .. } if k == NODE_LIMIT)
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, GithubError::Api { kind: Some(k), .. } if k == "NOT_FOUND")
    }
}
