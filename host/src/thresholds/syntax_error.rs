//! A syntax error in a piece of threshold text, shown with a caret under the bad part so
//! a typo in a long config is found at a glance.

use std::fmt;

/// A syntax error in a piece of threshold text, with the span to underline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The whole text.
    pub text: String,
    /// Byte offset where the bad part starts.
    pub start: usize,
    /// Byte offset where it ends (exclusive; at least one caret is drawn).
    pub end: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Carets count characters, not bytes, so they line up under non-ASCII text.
        let lead = self.text[..self.start.min(self.text.len())].chars().count();
        let width = self.text[self.start.min(self.text.len())..self.end.min(self.text.len())]
            .chars()
            .count()
            .max(1);
        write!(
            f,
            "{}\n      {}\n      {}{}",
            self.message,
            self.text,
            " ".repeat(lead),
            "^".repeat(width)
        )
    }
}

pub(super) fn syntax(
    text: &str,
    start: usize,
    end: usize,
    message: impl Into<String>,
) -> SyntaxError {
    // Offsets found by scanning bytes may fall inside a multi-byte character: widen
    // them to whole characters so the caret line can be drawn.
    let mut start = start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    SyntaxError {
        text: text.to_string(),
        start,
        end,
        message: message.into(),
    }
}

/// The caret line of an error, and the column its first caret is at.
#[cfg(test)]
pub(super) fn caret(e: &SyntaxError) -> (usize, usize) {
    let shown = e.to_string();
    let line = shown.lines().last().unwrap().to_string();
    let col = line.find('^').unwrap() - 6;
    (col, line.matches('^').count())
}
