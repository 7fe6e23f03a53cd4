//! Paging through GitHub: per repository, its merged PRs month by month of the window (a search
//! each, newest pages last), every review thread of each (a PR with more than a page of threads is
//! asked for the rest by its node id), and the filters a benchmark wants. The window's months are
//! separate requests, so a window widened by a month asks only for that month; the filters are
//! applied to what was fetched, so a changed filter asks for nothing.

use serde::Deserialize;
use serde_json::{Value, json};

use super::client::Client;
use super::error::GithubError;
use crate::dates::{Date, months};

const REPOSITORY: &str = include_str!("queries/repository.graphql");
const SEARCH: &str = concat!(include_str!("queries/search.graphql"), include_str!("queries/thread.graphql"));
const THREADS: &str =
    concat!(include_str!("queries/threads.graphql"), include_str!("queries/thread.graphql"));

/// What to collect.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `owner/name` each.
    pub repos: Vec<String>,
    pub since: Date,
    pub until: Date,
    pub filters: Filters,
    /// PRs asked for per page; halved while GitHub says a page has too many nodes.
    pub page_size: u32,
}

/// Which merged PRs a benchmark keeps.
#[derive(Debug, Clone)]
pub struct Filters {
    /// Review threads opened by a person (not a bot when `skip_bots`), at least.
    pub min_comments: usize,
    /// Lines added and deleted, at most.
    pub max_changed_lines: Option<u64>,
    /// The repository's primary language is one of these (any case); empty: any.
    pub languages: Vec<String>,
    /// PRs opened by bots and threads opened by bots are left out.
    pub skip_bots: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    pub login: String,
    #[serde(rename = "__typename", default)]
    pub typename: String,
}

impl Actor {
    pub fn is_bot(&self) -> bool {
        self.typename == "Bot" || self.login.ends_with("[bot]")
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Oid {
    pub oid: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: String,
    pub body: String,
    pub diff_hunk: Option<String>,
    pub created_at: Option<String>,
    pub author: Option<Actor>,
    pub reply_to: Option<Value>,
    pub commit: Option<Oid>,
    pub original_commit: Option<Oid>,
}

#[derive(Debug, Clone, Deserialize)]
struct Nodes<T> {
    nodes: Vec<T>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    page_info: PageInfo,
    nodes: Vec<T>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    #[serde(default)]
    pub is_resolved: bool,
    #[serde(default)]
    pub is_outdated: bool,
    pub path: Option<String>,
    /// `LEFT` for a comment on the old side of the diff (a deleted line).
    pub diff_side: Option<String>,
    pub line: Option<u64>,
    pub original_line: Option<u64>,
    pub start_line: Option<u64>,
    pub original_start_line: Option<u64>,
    comments: Nodes<Comment>,
}

impl Thread {
    /// The comment that opened the thread, then its replies.
    pub fn comments(&self) -> &[Comment] {
        &self.comments.nodes
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrNode {
    id: String,
    number: u64,
    title: String,
    body: Option<String>,
    created_at: String,
    merged_at: Option<String>,
    #[serde(default)]
    additions: u64,
    #[serde(default)]
    deletions: u64,
    base_ref_oid: String,
    head_ref_oid: String,
    merge_commit: Option<Oid>,
    author: Option<Actor>,
    review_threads: Page<Thread>,
}

/// A merged PR that passed the filters, with all of its review threads.
#[derive(Debug, Clone)]
pub struct MergedPr {
    pub repo: String,
    pub language: Option<String>,
    pub number: u64,
    pub title: String,
    pub body: String,
    pub created_at: String,
    pub merged_at: Option<String>,
    pub base_ref: String,
    /// The PR's last commit: the state in which its review was answered.
    pub head: String,
    pub merge_commit: Option<String>,
    pub author: Option<Actor>,
    pub threads: Vec<Thread>,
}

/// What a collection says as it goes (a repository started, a page read, a PR kept).
pub trait Progress {
    fn page(&self, repo: &str, month: &str, page: u32, kept: usize);
    fn notice(&self, text: String);
}

/// Every merged PR of the plan's repositories and window that passes its filters, in the order of
/// the plan's repositories, then by PR number.
pub async fn collect(
    client: &mut Client,
    plan: &Plan,
    progress: &dyn Progress,
) -> Result<Vec<MergedPr>, GithubError> {
    let mut kept = Vec::new();
    let mut page_size = plan.page_size.max(1);
    for repo in &plan.repos {
        let language = repository(client, repo).await?;
        if !plan.filters.languages.is_empty()
            && !language
                .as_deref()
                .is_some_and(|l| plan.filters.languages.iter().any(|w| w.eq_ignore_ascii_case(l)))
        {
            progress.notice(format!(
                "{repo}: its language is {}, not one of {}; skipped",
                language.as_deref().unwrap_or("not known"),
                plan.filters.languages.join(", ")
            ));
            continue;
        }
        let mut of_repo = Vec::new();
        for (from, to) in months(plan.since, plan.until) {
            let month = format!("{from}..{to}");
            let query = format!("repo:{repo} is:pr is:merged merged:{month}");
            let mut cursor: Option<String> = None;
            let mut page = 0;
            loop {
                let variables = json!({"q": query, "first": page_size, "after": cursor});
                let data = match client.query(SEARCH, &variables).await {
                    Ok(data) => data,
                    Err(e) if e.is_node_limit() && page_size > 1 => {
                        page_size /= 2;
                        progress.notice(format!(
                            "GitHub: too many nodes in a page; asking {page_size} PRs a page"
                        ));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                page += 1;
                let found: Page<Value> = field(client, &data, "search")?;
                for node in found.nodes {
                    // A search for PRs can still answer other kinds of node, as empty objects.
                    if node.get("number").is_none() {
                        continue;
                    }
                    let pr: PrNode = typed(client, node)?;
                    let pr = with_all_threads(client, pr).await?;
                    if let Some(pr) = filtered(repo, language.clone(), pr, &plan.filters) {
                        of_repo.push(pr);
                    }
                }
                progress.page(repo, &month, page, kept.len() + of_repo.len());
                match (found.page_info.has_next_page, found.page_info.end_cursor) {
                    (true, Some(next)) => cursor = Some(next),
                    _ => break,
                }
            }
        }
        of_repo.sort_by_key(|pr| pr.number);
        of_repo.dedup_by_key(|pr| pr.number);
        kept.extend(of_repo);
    }
    Ok(kept)
}

/// The repository's primary language; an error that names it when GitHub does not know it.
async fn repository(client: &mut Client, repo: &str) -> Result<Option<String>, GithubError> {
    let (owner, name) = repo.split_once('/').unwrap_or((repo, ""));
    let api = client.api().to_string();
    let not_found = || GithubError::NotFound { repo: repo.to_string(), api: api.clone() };
    let data = match client.query(REPOSITORY, &json!({"owner": owner, "name": name})).await {
        Ok(data) => data,
        Err(e) if e.is_not_found() => return Err(not_found()),
        Err(e) => return Err(e),
    };
    let repository = data.get("repository").filter(|r| r.is_object()).ok_or_else(not_found)?;
    Ok(repository.pointer("/primaryLanguage/name").and_then(Value::as_str).map(str::to_string))
}

/// The PR with every page of its review threads.
async fn with_all_threads(client: &mut Client, mut pr: PrNode) -> Result<PrNode, GithubError> {
    while pr.review_threads.page_info.has_next_page {
        let Some(after) = pr.review_threads.page_info.end_cursor.clone() else { break };
        let data = client.query(THREADS, &json!({"id": pr.id, "after": after})).await?;
        let node = data.get("node").cloned().unwrap_or(Value::Null);
        let more: Page<Thread> = field(client, &node, "reviewThreads")?;
        pr.review_threads.nodes.extend(more.nodes);
        pr.review_threads.page_info = more.page_info;
    }
    Ok(pr)
}

/// The PR as kept, or `None` when a filter leaves it out.
fn filtered(repo: &str, language: Option<String>, pr: PrNode, filters: &Filters) -> Option<MergedPr> {
    if filters.skip_bots && pr.author.as_ref().is_some_and(Actor::is_bot) {
        return None;
    }
    if filters.max_changed_lines.is_some_and(|max| pr.additions + pr.deletions > max) {
        return None;
    }
    let opened_by_person = |t: &Thread| {
        t.comments()
            .first()
            .is_some_and(|c| !(filters.skip_bots && c.author.as_ref().is_some_and(Actor::is_bot)))
    };
    let threads: Vec<Thread> = pr.review_threads.nodes.into_iter().filter(opened_by_person).collect();
    if threads.len() < filters.min_comments.max(1) {
        return None;
    }
    Some(MergedPr {
        repo: repo.to_string(),
        language,
        number: pr.number,
        title: pr.title,
        body: pr.body.unwrap_or_default(),
        created_at: pr.created_at,
        merged_at: pr.merged_at,
        base_ref: pr.base_ref_oid,
        head: pr.head_ref_oid,
        merge_commit: pr.merge_commit.map(|c| c.oid),
        author: pr.author,
        threads,
    })
}

fn field<T: serde::de::DeserializeOwned>(
    client: &Client,
    data: &Value,
    name: &str,
) -> Result<T, GithubError> {
    let value = data.get(name).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value)
        .map_err(|e| GithubError::Body { api: client.api().to_string(), error: format!("`{name}`: {e}") })
}

fn typed<T: serde::de::DeserializeOwned>(client: &Client, value: Value) -> Result<T, GithubError> {
    serde_json::from_value(value)
        .map_err(|e| GithubError::Body { api: client.api().to_string(), error: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(author: &str, typename: &str, additions: u64, threads: Vec<Value>) -> PrNode {
        serde_json::from_value(json!({
            "id": "PR_1", "number": 7, "title": "T", "body": null, "createdAt": "2024-01-02T00:00:00Z",
            "mergedAt": "2024-01-03T00:00:00Z", "additions": additions, "deletions": 10,
            "baseRefOid": "b", "headRefOid": "h", "mergeCommit": {"oid": "m"},
            "author": {"login": author, "__typename": typename},
            "reviewThreads": {"pageInfo": {"hasNextPage": false, "endCursor": null}, "nodes": threads}
        }))
        .unwrap()
    }

    fn thread(author: &str) -> Value {
        json!({"path": "a.py", "line": 3, "originalLine": 3, "comments": {"nodes": [
            {"id": "C", "body": "x", "author": {"login": author, "__typename": "User"}}
        ]}})
    }

    fn filters(min_comments: usize, max: Option<u64>) -> Filters {
        Filters { min_comments, max_changed_lines: max, languages: vec![], skip_bots: true }
    }

    #[test]
    fn bots_small_reviews_and_large_prs_are_left_out() {
        let two = || vec![thread("ana"), thread("renovate[bot]"), thread("bo")];
        let kept = filtered("o/r", None, pr("ana", "User", 5, two()), &filters(2, Some(100))).unwrap();
        assert_eq!(kept.threads.len(), 2, "the bot's thread is not counted or kept");
        assert!(filtered("o/r", None, pr("ana", "User", 5, two()), &filters(3, None)).is_none());
        assert!(filtered("o/r", None, pr("ana", "User", 95, two()), &filters(1, Some(100))).is_none());
        assert!(filtered("o/r", None, pr("dependabot", "Bot", 5, two()), &filters(1, None)).is_none());
        let mut with_bots = filters(3, None);
        with_bots.skip_bots = false;
        assert!(filtered("o/r", None, pr("dependabot", "Bot", 5, two()), &with_bots).is_some());
        assert!(
            filtered("o/r", None, pr("ana", "User", 5, vec![]), &filters(0, None)).is_none(),
            "a PR needs a thread"
        );
    }
}
