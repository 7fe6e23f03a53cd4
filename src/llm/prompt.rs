//! Prompt templates. A template is a plain file in `prompts/` with a `[system]` part and a `[user]`
//! part; `{{name}}` placeholders are filled from the task. A placeholder the stage does not provide
//! is a config error when the pipeline loads, not a surprise mid-run.
//!
//! After its template, a prompt file may hold the shorter texts the stage sends the model in its
//! turn (what was wrong with a test, an answer that could not be read): each starts at a line
//! `[text KEY]` and runs to the next such line ([`Texts`]), so every word the model reads is in
//! `prompts/`.

use std::collections::BTreeMap;

use super::types::Message;

/// A prompt file that is not a template this stage can fill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("a prompt needs a `[user]` part, optionally after a `[system]` part")]
    NoUserPart,
    #[error("unknown placeholder `{{{{{name}}}}}`; this stage provides: {}", .known.join(", "))]
    UnknownPlaceholder { name: String, known: Vec<String> },
    #[error(
        "the file has no `[text {key}]` part, which this stage sends the model; add it after the template"
    )]
    MissingText { key: String },
}

/// Where a prompt file's texts start: its first `[text KEY]` line.
const TEXT_MARK: &str = "[text ";

#[derive(Debug, Clone)]
pub struct Template {
    system: String,
    user: String,
}

fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else { break };
        out.push(rest[start + 2..start + end].trim().to_string());
        rest = &rest[start + end + 2..];
    }
    out
}

impl Template {
    /// Parses a template and checks that it uses only the `known` placeholders.
    pub fn parse(text: &str, known: &[&str]) -> Result<Template, TemplateError> {
        let text = &text[..texts_start(text)];
        let (system, user) = match (text.find("[system]"), text.find("[user]")) {
            (Some(s), Some(u)) if s < u => {
                (text[s + 8..u].trim().to_string(), text[u + 6..].trim().to_string())
            }
            (None, Some(u)) => (String::new(), text[u + 6..].trim().to_string()),
            _ => return Err(TemplateError::NoUserPart),
        };
        check_placeholders(&format!("{system}\n{user}"), known)?;
        Ok(Template { system, user })
    }

    pub(crate) fn fill(text: &str, values: &BTreeMap<&str, String>) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(end) = rest[start..].find("}}") else { break };
            let name = rest[start + 2..start + end].trim();
            out.push_str(&rest[..start]);
            match values.get(name) {
                Some(v) => out.push_str(v),
                None => out.push_str(&rest[start..start + end + 2]),
            }
            rest = &rest[start + end + 2..];
        }
        out.push_str(rest);
        out
    }

    pub fn render(&self, values: &BTreeMap<&str, String>) -> Vec<Message> {
        let mut messages = Vec::new();
        if !self.system.is_empty() {
            messages.push(Message::system(Template::fill(&self.system, values)));
        }
        messages.push(Message::user(Template::fill(&self.user, values)));
        messages
    }
}

fn check_placeholders(text: &str, known: &[&str]) -> Result<(), TemplateError> {
    for name in placeholders(text) {
        if !known.contains(&name.as_str()) {
            let known = known.iter().map(|k| k.to_string()).collect();
            return Err(TemplateError::UnknownPlaceholder { name, known });
        }
    }
    Ok(())
}

/// A prompt file's template, without the texts after it.
pub fn template_part(text: &str) -> &str {
    &text[..texts_start(text)]
}

/// The byte offset of a file's first `[text KEY]` line, or its length.
fn texts_start(text: &str) -> usize {
    if text.starts_with(TEXT_MARK) {
        return 0;
    }
    text.find(&format!("\n{TEXT_MARK}")).map_or(text.len(), |at| at + 1)
}

/// A text the stage may send, with the placeholders it fills in.
pub type TextSpec = (&'static str, &'static [&'static str]);

/// The `[text KEY]` parts of a prompt file, each trimmed, by key.
#[derive(Debug, Clone, Default)]
pub struct Texts(BTreeMap<String, String>);

impl Texts {
    /// Reads the texts of a prompt file and checks that each of `wanted` is there and uses only
    /// its placeholders.
    pub fn parse(text: &str, wanted: &[TextSpec]) -> Result<Texts, TemplateError> {
        let mut texts = BTreeMap::new();
        let mut rest = &text[texts_start(text)..];
        while let Some(after) = rest.strip_prefix(TEXT_MARK) {
            let Some(close) = after.find(']') else { break };
            let key = after[..close].trim().to_string();
            let body = &after[close + 1..];
            let end = texts_start(body);
            texts.insert(key, body[..end].trim().to_string());
            rest = &body[end..];
        }
        for (key, known) in wanted {
            let text = texts.get(*key).ok_or_else(|| TemplateError::MissingText { key: key.to_string() })?;
            check_placeholders(text, known)?;
        }
        Ok(Texts(texts))
    }

    /// The text `key` with its placeholders filled; empty for a key [`Texts::parse`] was not
    /// asked for and the file does not have.
    pub fn render(&self, key: &str, values: &BTreeMap<&str, String>) -> String {
        // A key the code names but no file holds is a typo beside its `TEXTS` table (a key renamed
        // in one place): loud in debug builds and tests, empty in a release.
        debug_assert!(
            self.0.contains_key(key),
            "no [text {key}] in the prompt file: is it in the stage's TEXTS?"
        );
        self.0.get(key).map(|t| Template::fill(t, values)).unwrap_or_default()
    }

    /// The text `key` with the placeholders `values` names filled.
    pub fn with(&self, key: &str, values: &[(&str, String)]) -> String {
        self.render(key, &values.iter().cloned().collect())
    }

    /// The text `key`, which has no placeholders.
    pub fn get(&self, key: &str) -> String {
        self.render(key, &BTreeMap::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_both_parts_and_checks_placeholders() {
        let t = Template::parse(
            "[system]\nYou judge.\n[user]\nComment: {{comment}}\nFile: {{ path }}",
            &["comment", "path"],
        )
        .unwrap();
        let values = BTreeMap::from([("comment", "off by one".to_string()), ("path", "a.py".to_string())]);
        let m = t.render(&values);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].content, "You judge.");
        assert_eq!(m[1].content, "Comment: off by one\nFile: a.py");
        assert!(
            Template::parse("[user]\n{{nope}}", &["comment"])
                .unwrap_err()
                .to_string()
                .contains("unknown placeholder `{{nope}}`")
        );
        assert!(Template::parse("just text", &[]).is_err());
    }

    #[test]
    fn texts_follow_the_template_and_are_checked_like_it() {
        let file = "[user]\nFix it: {{problem}}\n\n[text slow]\nThe test did not finish.\n\n[text wrote]\nIt wrote {{files}}.\n";
        let t = Template::parse(file, &["problem"]).unwrap();
        let values = BTreeMap::from([("problem", "x".to_string())]);
        assert_eq!(t.render(&values)[0].content, "Fix it: x", "the texts are not part of the message");
        let texts = Texts::parse(file, &[("slow", &[]), ("wrote", &["files"])]).unwrap();
        assert_eq!(texts.get("slow"), "The test did not finish.");
        let files = BTreeMap::from([("files", "a.py".to_string())]);
        assert_eq!(texts.render("wrote", &files), "It wrote a.py.");
        let missing = Texts::parse(file, &[("flaky", &[])]).unwrap_err();
        assert_eq!(missing, TemplateError::MissingText { key: "flaky".into() });
        assert!(missing.to_string().contains("`[text flaky]`"), "{missing}");
        let unknown = Texts::parse(file, &[("wrote", &[])]).unwrap_err();
        assert!(matches!(unknown, TemplateError::UnknownPlaceholder { name, .. } if name == "files"));
        // A `[text` inside a line is text, not a part's start.
        let inline = Texts::parse("[text a]\nsee [text b] here\n", &[("a", &[])]).unwrap();
        assert_eq!(inline.get("a"), "see [text b] here");
    }
}
