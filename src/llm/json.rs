//! Getting a JSON object out of what a model wrote: bare, in a code fence, or with prose around it.

use serde_json::Value;

/// Why no object came out of a model's answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// There are braces, but nothing between them parses as an object.
    #[error("the answer has no valid JSON object")]
    Invalid,
    #[error("the answer contains no JSON object")]
    Absent,
}

/// The first complete JSON object in `text`.
pub fn extract_object(text: &str) -> Result<Value, ObjectError> {
    let trimmed = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        return Ok(v);
    }
    // Try every `{` in turn: the object may follow prose that itself contains braces.
    for (start, _) in trimmed.match_indices('{') {
        if let Some(end) = matching_brace(&trimmed[start..])
            && let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&trimmed[start..start + end + 1])
        {
            return Ok(v);
        }
    }
    Err(if trimmed.contains('{') { ObjectError::Invalid } else { ObjectError::Absent })
}

/// Index of the `}` closing the `{` at the start of `s`, skipping braces inside strings.
fn matching_brace(s: &str) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_objects_in_fences_and_prose() {
        assert_eq!(extract_object("{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert_eq!(extract_object("```json\n{\"a\": \"}\"}\n```").unwrap(), json!({"a": "}"}));
        assert_eq!(
            extract_object("Sure! In {short}: {\"verdict\": \"keep\", \"n\": {\"x\": [1]}} Hope it helps")
                .unwrap(),
            json!({"verdict": "keep", "n": {"x": [1]}})
        );
    }

    #[test]
    fn says_what_is_wrong() {
        assert!(extract_object("no json here").unwrap_err().to_string().contains("no JSON object"));
        assert!(extract_object("{\"a\": }").unwrap_err().to_string().contains("no valid JSON"));
        assert!(extract_object("[1, 2]").is_err());
    }
}
