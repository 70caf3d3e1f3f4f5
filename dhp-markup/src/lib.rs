//! One escaping function per output format, for text the judged wrote
//! (process names, actions, error messages, implementation names) that a
//! report embeds. Every HTML, SVG, XML, Markdown and terminal writer of
//! dhp-chaos and dhp-conform goes through here, so a hostile string is
//! inert in every report.
//!
//! Characters no format should carry are replaced by U+FFFD (visible, so a
//! reader sees that something was there): C0 controls other than tab, LF
//! and CR, DEL and the C1 controls, U+FFFE and U+FFFF (illegal in XML 1.0),
//! and the bidirectional embedding, override and isolate controls (they
//! reorder what a reader sees: "Trojan Source").
//!
//! ```
//! assert_eq!(dhp_markup::html("<b a=\"x\">&'"), "&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
//! assert_eq!(dhp_markup::terminal("\u{1b}]0;pwned\u{7}ok"), "]0;pwnedok");
//! ```

#![warn(missing_docs)]

/// The replacement for a character a format must not carry.
pub const REPLACEMENT: char = '\u{FFFD}';

/// Bidirectional embedding, override and isolate controls (U+202A..U+202E,
/// U+2066..U+2069).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A character no report format carries (see the crate docs); tab, LF and
/// CR are kept (each format decides about them).
pub fn is_unsafe(c: char) -> bool {
    let u = c as u32;
    (u < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
        || (0x7F..=0x9F).contains(&u)
        || matches!(c, '\u{FFFE}' | '\u{FFFF}')
        || is_bidi_control(c)
}

/// Text for HTML and SVG: element content and quoted attribute values
/// (single or double quotes). The result is also well-formed XML 1.0.
pub fn html(s: &str) -> String {
    xml(s)
}

/// Text for XML 1.0 (element content and quoted attribute values): the five
/// markup characters as entities, characters XML 1.0 forbids replaced.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if is_unsafe(c) => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

/// Inline Markdown (GitHub Flavored, a table cell included) that renders as
/// the literal text: HTML markup, entities, code spans, links and images,
/// emphasis, headings and table pipes are neutralised with numeric
/// entities; line breaks become spaces (a cell is one line). Not for use
/// inside a code span (entities are literal there): wrap in `<code>`.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' | '\t' => out.push(' '),
            '`' | '|' | '\\' | '[' | ']' | '(' | ')' | '!' | '*' | '_' | '~' | '#' | '"' | '\'' | ':' => {
                out.push_str(&format!("&#{};", c as u32))
            }
            c if is_unsafe(c) => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

/// Text for a terminal: ESC and every other C0 control but tab and LF, DEL,
/// the C1 controls and the bidi controls removed, so no escape sequence
/// (colour, title, screen clear, cursor moves, OSC 8 links) reaches the
/// operator's terminal. U+FFFE/U+FFFF are removed too.
pub fn terminal(s: &str) -> String {
    s.chars().filter(|c| matches!(c, '\t' | '\n') || !(is_unsafe(*c) || *c == '\r')).collect()
}

#[cfg(test)]
mod tests;
