//! What the report-site tests share: headless Chromium (found by
//! `scripts/deb.sh chromium`, installed by scripts/services.sh; a test
//! fails, never skips, when it is missing), and small readers of the DOM it dumps.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The Chromium binary (`scripts/deb.sh chromium` prints its path as its last line).
pub fn chromium() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let script = dhp_kit::checkout().join("scripts/deb.sh");
        let o = Command::new("bash").arg(&script).arg("chromium").output().expect("running scripts/deb.sh");
        assert!(
            o.status.success(),
            "scripts/deb.sh chromium failed (the page tests need headless Chromium):\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        PathBuf::from(out.lines().last().expect("deb.sh printed the path").trim())
    })
    .clone()
}

/// Run headless Chromium with `args` and `url`, at most `timeout`; its stdout.
fn run_chromium(args: &[String], url: &str, timeout: Duration) -> String {
    let profile = tempfile::tempdir().expect("a Chromium profile directory");
    let mut cmd = Command::new(chromium());
    cmd.args(["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1600,1200"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut g = dhp_kit::ProcessGroup::spawn(cmd);
    let mut stdout = g.child.stdout.take().expect("chromium's stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(st)) = g.child.try_wait() {
            assert!(st.success(), "chromium {args:?} {url} failed: {st}");
            break;
        }
        assert!(Instant::now() < deadline, "chromium {args:?} {url} took longer than {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reading chromium's output")
}

/// The DOM of `url` after Chromium rendered it (scripts run for `budget_ms` of virtual time).
pub fn dump_dom(url: &str, budget_ms: u64) -> String {
    run_chromium(&["--dump-dom".into(), format!("--virtual-time-budget={budget_ms}")], url, Duration::from_secs(120))
}

/// A screenshot of `url` into `png` (`extra`: more Chromium flags).
pub fn screenshot(url: &str, png: &Path, extra: &[&str]) {
    let _ = std::fs::remove_file(png);
    let mut args = vec![format!("--screenshot={}", png.display())];
    args.extend(extra.iter().map(|a| a.to_string()));
    run_chromium(&args, url, Duration::from_secs(120));
    let len = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
    assert!(len > 10_000, "no screenshot of {url} in {} ({len} bytes)", png.display());
}

/// `file://` URL of a path.
pub fn file_url(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// Where a test keeps what it wants a person to look at (the screenshots): the target's test directory.
pub fn keep_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("site");
    std::fs::create_dir_all(&d).expect("creating the screenshot directory");
    d
}

/// The start tags in `html` that contain every one of `attrs` (e.g. `class="round-link"`).
pub fn tags_with<'a>(html: &'a str, attrs: &[&str]) -> Vec<&'a str> {
    html.split('<').filter_map(|t| t.split('>').next()).filter(|t| attrs.iter().all(|a| t.contains(a))).collect()
}

/// The value of attribute `name` in the start tag `tag`.
pub fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let k = format!(" {name}=\"");
    let i = tag.find(&k)? + k.len();
    tag[i..].split('"').next()
}

/// The text of the element with `id="ID"` (up to its first child tag).
pub fn text_of<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let k = format!("id=\"{id}\"");
    let i = html.find(&k)?;
    let rest = &html[i..];
    let start = rest.find('>')? + 1;
    rest[start..].split('<').next()
}

/// The part of `html` from the section whose `data-round` is `rel` to the next section.
pub fn section<'a>(html: &'a str, rel: &str) -> Option<&'a str> {
    let k = format!("<section class=\"round\" id=\"r-{}\" data-round=\"{rel}\"", rel.replace(['/', '.'], "-"));
    let i = html.find(&k)?;
    let rest = &html[i + k.len()..];
    Some(&html[i..i + k.len() + rest.find("<section").unwrap_or(rest.len())])
}
