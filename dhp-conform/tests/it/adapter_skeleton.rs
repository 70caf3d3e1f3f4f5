//! The Node skeleton of ADAPTERS.md §8, run with `node` as written: its
//! parser keeps what `JSON.parse` loses (`10.0`, integers above 2^53, the
//! order of integer-like keys) and writes it back unchanged, refuses what
//! is not JSON with a typed error, and the adapter loop echoes the request
//! id exactly and answers an unknown op with `Unsupported`. Needs `node`
//! on PATH (fails, never skips, without it).
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const DOC: &str = include_str!("../../ADAPTERS.md");

/// The ```js block after the `<!-- adapters-skeleton: NAME ... -->` marker.
fn block(name: &str) -> String {
    let marker = format!("<!-- adapters-skeleton: {name}");
    let (_, rest) = DOC.split_once(&marker).unwrap_or_else(|| panic!("ADAPTERS.md has no {marker}"));
    let (_, code) = rest.split_once("```js\n").expect("a js block after the marker");
    code.split_once("\n```").expect("the block's end").0.to_string() + "\n"
}

/// Run `node FILE` in `dir` with `input` on stdin; its stdout lines.
fn node(dir: &Path, file: &str, input: &str) -> Vec<String> {
    let mut child = Command::new("node")
        .arg(file)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node on PATH (the ADAPTERS.md skeleton is tested with it)");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "node {file}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
}

fn skeleton() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("json.mjs"), block("json.mjs")).unwrap();
    std::fs::write(dir.path().join("adapter.mjs"), block("adapter.mjs")).unwrap();
    // `my-dhp`, the implementation the skeleton imports: nothing, here
    std::fs::create_dir_all(dir.path().join("node_modules/my-dhp")).unwrap();
    std::fs::write(dir.path().join("node_modules/my-dhp/index.js"), "module.exports = {};\n").unwrap();
    std::fs::write(
        dir.path().join("roundtrip.mjs"),
        r#"import * as readline from "node:readline";
import { parse, stringify } from "./json.mjs";
for await (const line of readline.createInterface({ input: process.stdin })) {
  try { console.log(stringify(parse(line))); } catch (e) { console.log(`${e.kind}: ${e.message}`); }
}
"#,
    )
    .unwrap();
    dir
}

#[test]
fn the_node_parser_keeps_number_text_and_key_order() {
    let dir = skeleton();
    let kept = [
        r#"{"b":1,"a":10.0,"2":3,"10":[12345678901234567890,-0.5e3,1.5E+10,0]}"#,
        r#"{"s":"é\"\\\u0000","t":true,"f":false,"n":null,"o":{},"l":[]}"#,
        r#"[{"z":{"1":-0,"0":1e-7}}]"#,
    ];
    let bad = ["{\"a\":1,}", "[1,2", "01", "{\"a\" 1}", "\"\t\"", "nul", "1 2"];
    let input: String = kept.iter().chain(&bad).map(|l| format!("{l}\n")).collect();
    let out = node(dir.path(), "roundtrip.mjs", &input);
    assert_eq!(out.len(), kept.len() + bad.len(), "{out:#?}");
    for (got, want) in out.iter().zip(kept) {
        assert_eq!(got, want, "written back changed");
    }
    for (got, line) in out[kept.len()..].iter().zip(bad) {
        assert!(got.starts_with("ValidationError: "), "{line:?} was not refused: {got}");
    }
    // what JSON.parse makes of the first line: the check above can fail
    let plain = Command::new("node")
        .args(["-e", &format!("console.log(JSON.stringify(JSON.parse({:?})))", kept[0])])
        .output()
        .unwrap();
    assert_ne!(String::from_utf8_lossy(&plain.stdout).trim(), kept[0], "JSON.parse keeps it too?");
}

#[test]
fn the_node_adapter_loop_echoes_ids_and_refuses_unknown_ops() {
    let dir = skeleton();
    let input = concat!(
        r#"{"id":12345678901234567890,"op":"hello","args":{},"at":1.5}"#,
        "\n",
        "not json\n",
        r#"{"id":2,"op":"no-such-op","args":{}}"#,
        "\n",
        r#"{"id":3,"op":"shutdown","args":{}}"#,
        "\n",
        r#"{"id":4,"op":"hello","args":{}}"#,
        "\n",
    );
    let out = node(dir.path(), "adapter.mjs", input);
    assert_eq!(out.len(), 3, "one reply per request up to shutdown, none for a line that is not one: {out:#?}");
    assert!(
        out[0].starts_with(r#"{"id":12345678901234567890,"ok":true,"result":{"implementation":"my-dhp""#),
        "{}",
        out[0]
    );
    assert!(out[1].starts_with(r#"{"id":2,"ok":false,"error":{"kind":"Unsupported""#), "{}", out[1]);
    assert!(out[2].starts_with(r#"{"id":3,"#), "{}", out[2]);
}
