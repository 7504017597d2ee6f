//! How long a line of a table output may be (docs/cli.md, "Output width"): at most [`WIDTH`]
//! characters, except a table's rows and a printed `retryctl …` command, which a reader
//! copies whole. The sentences that could run longer (a list of category changes, a long
//! warning) are laid out here: a list keeps one line while it fits and otherwise puts one item
//! a line; prose wraps at spaces, after a clause where it can.
//!
//! Owns: that layout. Must not: decide what is said (callers give the words).

/// The longest line a table output writes outside its tables' rows and its commands.
pub const WIDTH: usize = 160;

fn width(s: &str) -> usize {
    s.chars().count()
}

/// `lead` followed by `items` joined with `sep`, when that fits in [`WIDTH`]; else `lead`
/// (without its trailing space) alone, then each item on its own line after `indent`.
pub fn list(lead: &str, items: &[String], sep: &str, indent: &str) -> Vec<String> {
    let one = format!("{lead}{}", items.join(sep));
    if width(&one) <= WIDTH || items.len() < 2 {
        return vec![one];
    }
    let mut lines = vec![lead.trim_end().to_string()];
    lines.extend(items.iter().map(|i| format!("{indent}{i}")));
    lines
}

/// `text` after `first`, wrapped at spaces so that each line is at most [`WIDTH`] long
/// where the words allow it; the lines after the first start with `rest`. A line breaks
/// after its last clause when it has one (a word ending in `;`, else `:`, else `,`), so that
/// a clause is not split where it need not be.
pub fn wrap(first: &str, rest: &str, text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut lead = first;
    let mut words: Vec<&str> = Vec::new();
    let len = |lead: &str, words: &[&str]| {
        width(lead) + words.iter().map(|w| width(w)).sum::<usize>() + words.len().saturating_sub(1)
    };
    for word in text.split(' ') {
        words.push(word);
        if words.len() > 1 && len(lead, &words) > WIDTH {
            let fit = words.len() - 1;
            let cut = [';', ':', ',']
                .iter()
                .find_map(|&p| (1..=fit).rev().find(|&i| words[i - 1].ends_with(p)))
                .unwrap_or(fit);
            lines.push(format!("{lead}{}", words[..cut].join(" ")));
            words.drain(..cut);
            lead = rest;
        }
    }
    lines.push(format!("{lead}{}", words.join(" ")));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_that_fits_stays_on_one_line_else_one_item_a_line() {
        let items: Vec<String> = vec!["none → oom 2".into(), "x → user_error 1".into()];
        assert_eq!(
            list("  changes: ", &items, ", ", "    "),
            ["  changes: none → oom 2, x → user_error 1"]
        );
        let long: Vec<String> = (0..12).map(|i| format!("none → category-number-{i} {i}")).collect();
        let lines = list("  changes: ", &long, ", ", "    ");
        assert_eq!(lines[0], "  changes:");
        assert_eq!(lines[1], "    none → category-number-0 0");
        assert_eq!(lines.len(), 13);
    }

    #[test]
    fn prose_wraps_at_spaces_within_the_width() {
        let text = "word ".repeat(60);
        let lines = wrap("warning: ", "  ", text.trim_end());
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{lines:?}");
        assert!(lines[0].starts_with("warning: word word"));
        assert!(lines[1].starts_with("  word"));
        assert_eq!(lines.join(" ").split_whitespace().count(), 61);
        assert_eq!(wrap("a: ", "  ", "short"), ["a: short"]);
        // At the last clause's end, not at the last word that fits.
        let text = format!("{}: the rest of it in many words", "x ".repeat(70).trim_end());
        assert_eq!(
            wrap("", "  ", &text),
            [
                format!("{}:", "x ".repeat(70).trim_end()),
                "  the rest of it in many words".to_string()
            ]
        );
    }
}
