//! Items are what flows through a pipeline: pull requests and the review comments that belong to
//! them. A task (one stage applied to one item) ends in one of three [`Outcome`]s.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether a stage works on whole pull requests or on single review comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Pr,
    Comment,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Scope::Pr => "pr",
            Scope::Comment => "comment",
        })
    }
}

/// One PR or one review comment, with the record it came from.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// Unique within the dataset.
    pub id: String,
    /// The PR this item belongs to; a PR item names itself.
    pub pr: String,
    pub scope: Scope,
    /// The source record, as JSON.
    pub data: Value,
}

impl Item {
    pub fn pr(id: impl Into<String>, data: Value) -> Item {
        let id = id.into();
        Item { pr: id.clone(), id, scope: Scope::Pr, data }
    }

    pub fn comment(id: impl Into<String>, pr: impl Into<String>, data: Value) -> Item {
        Item { id: id.into(), pr: pr.into(), scope: Scope::Comment, data }
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The item goes on, with the stage's output attached.
    Kept { output: Value },
    /// The item is dropped for a stated reason. Final, and counted in the funnel. `detail` keeps
    /// what led there (every attempt of a test synthesis, say); `Value::Null` for nothing more.
    Rejected { reason: String, detail: Value },
    /// The infrastructure failed. Not a result: the next run tries again.
    Errored { error: String },
}

impl Outcome {
    /// A rejection with nothing more to keep than its reason.
    pub fn rejected(reason: impl Into<String>) -> Outcome {
        Outcome::Rejected { reason: reason.into(), detail: Value::Null }
    }

    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Kept { .. } => OutcomeKind::Kept,
            Outcome::Rejected { .. } => OutcomeKind::Rejected,
            Outcome::Errored { .. } => OutcomeKind::Errored,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutcomeKind {
    Kept,
    Rejected,
    Errored,
}

/// All items of a run, PRs first in source order, with the comment lists of each PR.
///
/// Every comment's PR exists as an item: a PR that the source names only through its comments is
/// added with an empty record.
#[derive(Debug, Default)]
pub struct Dataset {
    pub items: Vec<Item>,
    /// For each item index, the indices of its comments (empty for comments).
    pub comments: Vec<Vec<usize>>,
    /// For each item index, the index of its PR item.
    pub pr_index: Vec<usize>,
}

impl Dataset {
    /// Builds the dataset, keeping only the first `limit` PRs (in order of first appearance) and their
    /// comments when a limit is given.
    pub fn new(items: Vec<Item>, limit: Option<usize>) -> Dataset {
        let mut pr_order: Vec<String> = Vec::new();
        let mut prs: HashMap<String, Item> = HashMap::new();
        let mut comments: Vec<Item> = Vec::new();
        for item in items {
            if !prs.contains_key(&item.pr) {
                pr_order.push(item.pr.clone());
                prs.insert(item.pr.clone(), Item::pr(item.pr.clone(), Value::Null));
            }
            match item.scope {
                Scope::Pr => {
                    prs.insert(item.id.clone(), item);
                }
                Scope::Comment => comments.push(item),
            }
        }
        if let Some(limit) = limit {
            pr_order.truncate(limit);
        }
        let mut out = Dataset::default();
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for id in &pr_order {
            if let Some(pr) = prs.remove(id) {
                index_of.insert(id.clone(), out.items.len());
                out.pr_index.push(out.items.len());
                out.items.push(pr);
                out.comments.push(Vec::new());
            }
        }
        for comment in comments {
            let Some(&pr) = index_of.get(&comment.pr) else { continue };
            let idx = out.items.len();
            out.comments[pr].push(idx);
            out.pr_index.push(pr);
            out.items.push(comment);
            out.comments.push(Vec::new());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn count(&self, scope: Scope) -> usize {
        self.items.iter().filter(|i| i.scope == scope).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_attach_to_their_pr_and_implicit_prs_are_created() {
        let items = vec![
            Item::comment("c1", "p2", json!({})),
            Item::pr("p1", json!({"title": "one"})),
            Item::comment("c2", "p1", json!({})),
            Item::pr("p2", json!({"title": "two"})),
        ];
        let ds = Dataset::new(items, None);
        let ids: Vec<&str> = ds.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["p2", "p1", "c1", "c2"]);
        assert_eq!(ds.items[0].data, json!({"title": "two"}), "explicit record replaces the implicit one");
        assert_eq!(ds.comments[0], vec![2]);
        assert_eq!(ds.comments[1], vec![3]);
        assert_eq!(ds.pr_index, vec![0, 1, 0, 1]);
    }

    #[test]
    fn limit_keeps_the_first_prs_and_only_their_comments() {
        let items = vec![
            Item::pr("p1", json!({})),
            Item::pr("p2", json!({})),
            Item::comment("c1", "p1", json!({})),
            Item::comment("c2", "p2", json!({})),
        ];
        let ds = Dataset::new(items, Some(1));
        let ids: Vec<&str> = ds.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["p1", "c1"]);
    }
}
