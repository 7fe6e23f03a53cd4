//! Cutting text to size: model output and logs for prompts, rejection reasons and stored records.
//! Every cut says where it is and never splits a character.

/// The last `n` lines of `text`, joined by newlines.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The first `n` lines of `text` (its end trimmed), and a line saying how many more there were.
pub fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        return text.trim_end().to_string();
    }
    format!("{}\n… {} more lines not shown", lines[..n].join("\n"), lines.len() - n)
}

/// At most the last `max` bytes of `text` (its end trimmed), cut at a character boundary.
pub fn last_bytes(text: &str, max: usize) -> &str {
    let text = text.trim_end();
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `text` cut to about `limit` bytes by dropping its middle: a test's failure summary is at the
/// end, its context at the start. The cut says how much went.
pub fn keep_ends(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut head = limit / 4;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (limit - head);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n[… {} bytes cut …]\n{}", &text[..head], tail - head, &text[tail..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_from_either_end() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a", 5), "a");
        assert_eq!(first_lines("a\nb\nc\n", 2), "a\nb\n… 1 more lines not shown");
        assert_eq!(first_lines("a\nb\n", 2), "a\nb");
    }

    #[test]
    fn bytes_cut_on_a_char_boundary() {
        assert_eq!(last_bytes("ééé", 3), "é");
        assert_eq!(last_bytes("abc\n", 10), "abc");
    }

    #[test]
    fn the_middle_goes_and_the_ends_stay() {
        let text = format!("HEAD{}TAIL", "x".repeat(100));
        let cut = keep_ends(&text, 40);
        assert!(cut.starts_with("HEAD") && cut.ends_with("TAIL") && cut.contains("bytes cut"), "{cut}");
        assert_eq!(keep_ends("short", 40), "short");
        let wide = "é".repeat(50);
        assert!(keep_ends(&wide, 21).contains("bytes cut"));
    }
}
