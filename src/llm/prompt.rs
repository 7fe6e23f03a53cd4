//! Prompt templates. A template is a plain file in `prompts/` with a `[system]` part and a `[user]`
//! part; `{{name}}` placeholders are filled from the task. A placeholder the stage does not provide
//! is a config error when the pipeline loads, not a surprise mid-run.

use std::collections::BTreeMap;

use super::types::Message;

/// A prompt file that is not a template this stage can fill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("a prompt needs a `[user]` part, optionally after a `[system]` part")]
    NoUserPart,
    #[error("unknown placeholder `{{{{{name}}}}}`; this stage provides: {}", .known.join(", "))]
    UnknownPlaceholder { name: String, known: Vec<String> },
}

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
        let (system, user) = match (text.find("[system]"), text.find("[user]")) {
            (Some(s), Some(u)) if s < u => {
                (text[s + 8..u].trim().to_string(), text[u + 6..].trim().to_string())
            }
            (None, Some(u)) => (String::new(), text[u + 6..].trim().to_string()),
            _ => return Err(TemplateError::NoUserPart),
        };
        for name in placeholders(&system).into_iter().chain(placeholders(&user)) {
            if !known.contains(&name.as_str()) {
                let known = known.iter().map(|k| k.to_string()).collect();
                return Err(TemplateError::UnknownPlaceholder { name, known });
            }
        }
        Ok(Template { system, user })
    }

    fn fill(text: &str, values: &BTreeMap<&str, String>) -> String {
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
}
