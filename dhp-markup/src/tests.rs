//! The hostile corpus through every format.
use super::*;

/// What a hostile implementation or worker writes where a name or a
/// message is expected.
fn corpus() -> Vec<String> {
    let mut v: Vec<String> = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "\"><svg onload=alert(1)>",
        "' onmouseover='alert(1)",
        "&lt;already&gt; &amp; &#27; &#xFFFE;",
        "![remote](https://attacker.test/pixel.png)",
        "<details open><summary>✅ all passed</summary>",
        "a | b | c\n| --- |\n# heading\n`code` **bold** _it_ [link](javascript:alert(1))",
        "\u{1b}]0;title\u{7}\u{1b}[2J\u{1b}[31mred\u{1b}[0m\u{1b}]8;;https://x.test\u{1b}\\link",
        "\u{9b}31m C1 CSI \u{85} NEL \u{7f} DEL",
        "bidi \u{202E}evil\u{202C} \u{2066}iso\u{2069} \u{202A}\u{202B}\u{202D}\u{2067}\u{2068}",
        "xml-illegal \u{FFFE} \u{FFFF} \u{0} \u{1} \u{8} \u{b} \u{c} \u{e} \u{1f}",
        "tab\tlf\ncr\r end",
        "]]><!-- --> <?pi?> <!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]> &e;",
        "emoji 😀 and combining e\u{301}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let all: String = (0u32..0x300).filter_map(char::from_u32).collect();
    v.push(all.clone());
    v.push(all.repeat(10_000 / all.len() + 1).chars().take(10_000).collect());
    v.push("<".repeat(10_000));
    v.push("\u{1b}[2J".repeat(2_500));
    v
}

fn no_unsafe(out: &str) {
    assert!(!out.chars().any(|c| is_unsafe(c) || is_bidi_control(c)), "unsafe char left in {out:?}");
}

#[test]
fn xml_and_html_are_well_formed_and_literal_in_text_and_attributes() {
    for s in corpus() {
        let e = xml(&s);
        assert_eq!(e, html(&s));
        no_unsafe(&e);
        assert!(!e.contains(['<', '>', '"', '\'']), "{e:?}");
        let doc = format!("<r a=\"{e}\" b='{e}'><t>{e}</t></r>");
        let parsed = roxmltree::Document::parse(&doc).unwrap_or_else(|err| panic!("{err}: {s:?}"));
        let root = parsed.root_element();
        assert_eq!(root.children().count(), 1, "markup escaped the text: {s:?}");
        let text = root.first_child().and_then(|t| t.text()).unwrap_or("");
        // the text reads back as the input, unsafe characters replaced
        let want: String = s.chars().map(|c| if is_unsafe(c) { REPLACEMENT } else { c }).collect();
        // XML parsers normalise CR LF and lone CR to LF
        assert_eq!(text, want.replace("\r\n", "\n").replace('\r', "\n"), "{s:?}");
        assert!(root.attribute("a").is_some() && root.attribute("b").is_some());
        assert!(e.len() <= s.len() * 6 + 6, "bounded growth");
    }
}

#[test]
fn markdown_leaves_no_active_character() {
    for s in corpus() {
        let e = markdown(&s);
        no_unsafe(&e);
        // only our own entities carry '&', '#' and ';'
        let stripped = e
            .split('&')
            .enumerate()
            .map(|(i, part)| if i == 0 { part } else { part.split_once(';').map_or(part, |(_, rest)| rest) })
            .collect::<String>();
        for c in ['<', '>', '`', '|', '\\', '[', ']', '(', ')', '!', '*', '_', '~', '#', '\n', '\r', '"', '\''] {
            assert!(!stripped.contains(c), "{c:?} left raw in {e:?}");
        }
        assert!(e.len() <= s.len() * 6 + 6, "bounded growth");
    }
    assert_eq!(markdown("a|b`c\nd"), "a&#124;b&#96;c d");
}

#[test]
fn terminal_text_carries_no_control_sequence() {
    for s in corpus() {
        let e = terminal(&s);
        no_unsafe(&e);
        assert!(!e.contains(['\u{1b}', '\u{7}', '\r', '\u{9b}']), "{e:?}");
        assert!(e.len() <= s.len());
    }
    assert_eq!(terminal("\u{1b}[31mred\u{1b}[0m\tx\ny"), "[31mred[0m\tx\ny");
}
