//! How sure the model was of a word it chose: read from the log-probabilities of the answer's tokens
//! (`Answer::logprobs`), at the place where a JSON field's string value begins. A verdict's
//! confidence then costs no extra call.

use super::types::TokenLogprob;

/// The probability that the string value of `"key"` in the answer begins one of `yes` rather than
/// one of `no`, from the alternatives the model weighed at the value's first token: the mass of
/// the alternatives that begin a `yes` word over that of those that begin any listed word.
/// Alternatives that begin none, or words of both lists, are left out. `None` when the answer has
/// no log-probabilities, no such field, or no alternative begins a listed word.
pub fn choice_probability(tokens: &[TokenLogprob], key: &str, yes: &[&str], no: &[&str]) -> Option<f64> {
    let text: String = tokens.iter().map(|t| t.token.as_str()).collect();
    let value_at = value_start(&text, key)?;
    let mut start = 0;
    let (token, offset) = tokens.iter().find_map(|t| {
        let end = start + t.token.len();
        let hit = (start <= value_at && value_at < end).then_some((t, value_at - start));
        start = end;
        hit
    })?;
    // What the token holds before the value (a space, the opening quote).
    let before = token.token.get(..offset)?;
    let strip = |alternative: &str| -> String {
        alternative.strip_prefix(before).unwrap_or_else(|| alternative.trim_start_matches([' ', '"'])).into()
    };
    split_mass(token, strip, yes, no)
}

/// The probability that an answer's first word is one of `yes` rather than one of `no` (a one-word
/// answer to a question: "yes" or "no"), from the alternatives at its first token that holds more
/// than space, quotes or emphasis. `None` as for [`choice_probability`].
pub fn first_word_probability(tokens: &[TokenLogprob], yes: &[&str], no: &[&str]) -> Option<f64> {
    let token = tokens.iter().find(|t| !t.token.trim_start_matches(DECORATION).is_empty())?;
    split_mass(token, |alternative| alternative.trim_start_matches(DECORATION).into(), yes, no)
}

/// What may stand before an answer's first word.
const DECORATION: [char; 6] = [' ', '\n', '"', '*', '`', '\''];

/// The mass of `token`'s alternatives that begin a `yes` word over that of those that begin any
/// listed word; `strip` takes off what an alternative holds before the word.
fn split_mass(
    token: &TokenLogprob,
    strip: impl Fn(&str) -> String,
    yes: &[&str],
    no: &[&str],
) -> Option<f64> {
    let chosen = [(token.token.clone(), token.logprob)];
    let alternatives = if token.top.is_empty() { &chosen[..] } else { &token.top[..] };
    let (mut mass_yes, mut mass_no) = (0.0, 0.0);
    for (alternative, logprob) in alternatives {
        let rest = strip(alternative).to_lowercase();
        if rest.is_empty() {
            continue;
        }
        let begins = |words: &[&str]| words.iter().any(|w| w.starts_with(&rest) || rest.starts_with(w));
        match (begins(yes), begins(no)) {
            (true, false) => mass_yes += f64::from(*logprob).exp(),
            (false, true) => mass_no += f64::from(*logprob).exp(),
            _ => {}
        }
    }
    (mass_yes + mass_no > 0.0).then(|| mass_yes / (mass_yes + mass_no))
}

/// The byte offset where the string value of `"key": "` begins in `text`.
fn value_start(text: &str, key: &str) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    let after_key = text.find(&quoted)? + quoted.len();
    let rest = &text[after_key..];
    let colon = rest.trim_start().strip_prefix(':')?;
    let value = colon.trim_start().strip_prefix('"')?;
    Some(text.len() - value.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(token: &str, top: &[(&str, f32)]) -> TokenLogprob {
        let logprob = top.iter().find(|(t, _)| *t == token).map_or(0.0, |(_, p)| *p);
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, p)| (t.to_string(), *p)).collect(),
        }
    }

    fn answer(value_token: TokenLogprob) -> Vec<TokenLogprob> {
        vec![token("{\"", &[]), token("kind", &[]), token("\":", &[]), value_token, token("\"}", &[])]
    }

    #[test]
    fn the_mass_of_kept_words_over_all_listed_words() {
        let ln = |p: f64| p.ln() as f32;
        // The value's first token carries the space and quote before it, as tokenizers often do.
        let tokens = answer(token(
            " \"def",
            &[(" \"def", ln(0.6)), (" \"question", ln(0.2)), (" \"change", ln(0.1)), (" \"{", ln(0.1))],
        ));
        let p = choice_probability(&tokens, "kind", &["defect", "change"], &["question", "style"]).unwrap();
        assert!((p - 0.7 / 0.9).abs() < 1e-6, "{p}");
    }

    #[test]
    fn a_prefix_shared_by_both_lists_counts_for_neither() {
        let ln = |p: f64| p.ln() as f32;
        let tokens =
            answer(token(" \"pr", &[(" \"pr", ln(0.5)), (" \"keep", ln(0.25)), (" \"drop", ln(0.25))]));
        let p = choice_probability(&tokens, "kind", &["keep", "process"], &["drop", "praise"]).unwrap();
        assert!((p - 0.5).abs() < 1e-6, "{p}");
    }

    #[test]
    fn no_logprobs_no_field_or_no_listed_word_is_none() {
        assert_eq!(choice_probability(&[], "kind", &["a"], &["b"]), None);
        let tokens = answer(token(" \"x", &[(" \"x", -0.1)]));
        assert_eq!(choice_probability(&tokens, "kind", &["defect"], &["style"]), None);
        assert_eq!(choice_probability(&tokens, "verdict", &["x"], &["y"]), None);
    }

    #[test]
    fn without_alternatives_the_chosen_token_decides() {
        let tokens = answer(TokenLogprob { token: "\"style".into(), logprob: -0.3, top: vec![] });
        assert_eq!(choice_probability(&tokens, "kind", &["defect"], &["style"]), Some(0.0));
    }

    #[test]
    fn a_one_word_answer_is_read_at_its_first_word() {
        let ln = |p: f64| p.ln() as f32;
        let tokens = vec![
            token("\n", &[("\n", ln(0.9))]),
            token("Yes", &[("Yes", ln(0.6)), ("No", ln(0.2)), (" no", ln(0.1)), ("Maybe", ln(0.1))]),
            token(".", &[]),
        ];
        let p = first_word_probability(&tokens, &["yes"], &["no"]).unwrap();
        assert!((p - 0.6 / 0.9).abs() < 1e-6, "{p}");
        assert_eq!(first_word_probability(&[], &["yes"], &["no"]), None);
        let unsure = vec![token("Perhaps", &[("Perhaps", ln(0.9))])];
        assert_eq!(first_word_probability(&unsure, &["yes"], &["no"]), None);
    }
}
