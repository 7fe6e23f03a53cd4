//! Merged PRs as SWE-CARE instances, the records the `swe-care` source reads: one instance per
//! commit that was reviewed (a review comment is on the commit it was written on, its
//! `originalCommit`), the PR's last commit as the fixed state, and the diffs read from the
//! repository's mirror.

use serde_json::{Value, json};

use super::collect::{Actor, MergedPr, Thread};
use crate::repo::{Mirror, Mirrors, RepoError};

/// A PR, or one of its reviewed commits, that gave no instance, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub instance: String,
    pub why: String,
}

/// The instances of `prs`, in their order; what could not be had from the mirrors is skipped and
/// said. Blocking (it reads, and may clone, mirrors).
pub fn instances(prs: &[MergedPr], mirrors: &Mirrors) -> Result<(Vec<Value>, Vec<Skipped>), RepoError> {
    let (mut out, mut skipped) = (Vec::new(), Vec::new());
    for pr in prs {
        let id = format!("{}-{}", pr.repo.replace('/', "__"), pr.number);
        let mirror = match mirrors.open(&pr.repo, &[&pr.base_ref, &pr.head]) {
            Ok(m) => m,
            Err(e) if e.is_data_error() => {
                skipped.push(Skipped { instance: id, why: e.to_string() });
                continue;
            }
            Err(e) => return Err(e),
        };
        let groups = by_reviewed_commit(&pr.threads);
        for (commit, threads) in &groups {
            let instance = if groups.len() == 1 {
                id.clone()
            } else {
                format!("{id}-{}", &commit[..commit.len().min(7)])
            };
            match one(pr, &mirror, commit, threads, &instance) {
                Ok(value) => out.push(value),
                Err(e) => skipped.push(Skipped { instance, why: e.to_string() }),
            }
        }
    }
    Ok((out, skipped))
}

/// The threads by the commit their first comment was written on, in the order first seen.
fn by_reviewed_commit(threads: &[Thread]) -> Vec<(String, Vec<&Thread>)> {
    let mut groups: Vec<(String, Vec<&Thread>)> = Vec::new();
    for thread in threads {
        let Some(opener) = thread.comments().first() else { continue };
        let Some(commit) = opener.original_commit.as_ref().or(opener.commit.as_ref()).map(|c| c.oid.clone())
        else {
            continue;
        };
        match groups.iter_mut().find(|(c, _)| *c == commit) {
            Some((_, list)) => list.push(thread),
            None => groups.push((commit, vec![thread])),
        }
    }
    groups
}

fn one(
    pr: &MergedPr,
    mirror: &Mirror,
    reviewed: &str,
    threads: &[&Thread],
    id: &str,
) -> Result<Value, RepoError> {
    // A commit pushed over by a later force-push is not in a clone: the comments on it are lost.
    mirror.commit_time(reviewed)?;
    let base = mirror.merge_base(&pr.base_ref, reviewed).unwrap_or_else(|_| pr.base_ref.clone());
    let comments: Vec<Value> = threads.iter().filter_map(|t| comment(t, pr.author.as_ref())).collect();
    Ok(json!({
        "instance_id": id,
        "repo": pr.repo,
        "language": pr.language,
        "pull_number": pr.number,
        "title": pr.title,
        "body": pr.body,
        "created_at": pr.created_at,
        "merged_at": pr.merged_at,
        "base_commit": base,
        "commit_to_review": {"head_commit": reviewed, "patch_to_review": mirror.diff(&base, reviewed)?},
        "merged_commit": pr.head,
        "merged_patch": mirror.diff(&base, &pr.head)?,
        "merge_commit": pr.merge_commit,
        "reference_review_comments": comments,
    }))
}

/// The thread's first comment as a reference review comment, with its lines on the reviewed commit.
fn comment(thread: &Thread, pr_author: Option<&Actor>) -> Option<Value> {
    let opener = thread.comments().first()?;
    let by_pr_author = match (&opener.author, pr_author) {
        (Some(a), Some(b)) => Some(a.login == b.login),
        _ => None,
    };
    // A comment on a deleted line has no line on the reviewed commit.
    let new_side = thread.diff_side.as_deref() != Some("LEFT");
    let line = thread.original_line.or(thread.line).filter(|_| new_side);
    let start_line = thread.original_start_line.or(thread.start_line).filter(|_| new_side);
    Some(json!({
        "text": opener.body,
        "path": thread.path,
        "diff_hunk": opener.diff_hunk,
        "line": line,
        "start_line": start_line,
        "original_line": thread.original_line,
        "original_start_line": thread.original_start_line,
        "by_pr_author": by_pr_author,
        // The thread's first comment answers none.
        "is_reply": false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(commit: &str, line: u64) -> Thread {
        serde_json::from_value(
            json!({"path": "a.py", "line": null, "originalLine": line, "comments": {"nodes": [
                {"id": "C", "body": "check it", "diffHunk": "@@ -1 +1 @@", "author": {"login": "ana"},
                 "originalCommit": {"oid": commit}},
                {"id": "D", "body": "done", "author": {"login": "bo"}, "replyTo": {"id": "C"}}
            ]}}),
        )
        .unwrap()
    }

    #[test]
    fn threads_are_grouped_by_the_commit_they_were_written_on() {
        let threads = [thread("aaa", 1), thread("bbb", 2), thread("aaa", 3)];
        let groups = by_reviewed_commit(&threads);
        let lines: Vec<(&str, Vec<Option<u64>>)> =
            groups.iter().map(|(c, ts)| (c.as_str(), ts.iter().map(|t| t.original_line).collect())).collect();
        assert_eq!(lines, [("aaa", vec![Some(1), Some(3)]), ("bbb", vec![Some(2)])]);
    }

    #[test]
    fn a_comment_keeps_its_line_on_the_reviewed_commit_and_whether_the_author_wrote_it() {
        let author: Actor = serde_json::from_value(json!({"login": "ana"})).unwrap();
        let c = comment(&thread("aaa", 9), Some(&author)).unwrap();
        assert_eq!(c["text"], "check it");
        assert_eq!(
            c["line"], 9,
            "an outdated thread has no `line`; the original one is on the reviewed commit"
        );
        assert_eq!(c["by_pr_author"], true);
    }
}
