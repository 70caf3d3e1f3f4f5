//! Installs happen in the project's setup scripts and nowhere else (issue
//! 46 item 4): no test, no program of the workspace and no script that a
//! program embeds runs a package manager. A missing tool is an error that
//! names scripts/services.sh.

use std::path::{Path, PathBuf};

/// The scripts that may install: Debian tools (services.sh) and the
/// reference venv with its Python packages (setup.sh, which also installs
/// faketime for `dhp-chaos --clock`).
const INSTALLERS: &[&str] = &["scripts/services.sh", "scripts/setup.sh"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | ".venv" | "node_modules") {
                files(&p, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".sh") || name.ends_with(".py") {
            out.push(p);
        }
    }
}

/// Does this line run a package manager (rather than name one in a message)?
fn runs_installer(line: &str) -> bool {
    let l = line.trim_start();
    if l.starts_with('#') || l.starts_with("//") || l.starts_with("echo") || l.starts_with("printf") {
        return false;
    }
    let rust =
        ["Command::new(\"apt-get\")", "Command::new(\"apt\")", "Command::new(\"dpkg\")", "Command::new(\"pip\")"];
    if rust.iter().any(|r| l.contains(r)) {
        return true;
    }
    // a shell command: its first word after a separator, past sudo, env,
    // VAR=value and $VARS (`$AS_ROOT env DEBIAN_FRONTEND=… apt-get install`)
    l.split(['&', '|', ';']).any(|part| {
        let mut words =
            part.split_whitespace().map(|w| w.trim_start_matches("$(").trim_start_matches('(')).skip_while(|w| {
                matches!(*w, "sudo" | "env" | "exec" | "if" | "!" | "-n") || w.contains('=') || w.starts_with('$')
            });
        let (cmd, arg) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        matches!(
            (cmd, arg),
            ("apt-get" | "apt", "install" | "update" | "-y") | ("dpkg", "-i") | ("pip" | "pip3", "install")
        )
    })
}

#[test]
fn nothing_installs_outside_the_setup_scripts() {
    let root = dhp_testkit::checkout();
    let mut all = vec![];
    files(&root, &mut all);
    assert!(all.len() > 100, "the walk found the checkout's sources ({} files)", all.len());
    let mut found = vec![];
    for f in &all {
        let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy().into_owned();
        if INSTALLERS.contains(&rel.as_str()) || rel.starts_with("dhp-testkit/tests/it/installs.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if runs_installer(line) {
                found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "installs outside scripts/services.sh and scripts/setup.sh:\n{}", found.join("\n"));
}

#[test]
fn the_detector_sees_installs_and_not_messages() {
    assert!(runs_installer("        apt-get install -y -qq postgresql >&2"));
    assert!(runs_installer("    [ -n \"$x\" ] && apt-get update -qq"));
    assert!(runs_installer("        let ok = Command::new(\"apt-get\")"));
    assert!(runs_installer("$AS_ROOT env DEBIAN_FRONTEND=noninteractive apt-get install -y faketime"));
    assert!(!runs_installer("    echo \"pg.sh: missing: apt-get install postgresql\" >&2"));
    assert!(!runs_installer("# apt-get install happens in services.sh"));
    assert!(!runs_installer("bail!(\"install faketime (apt-get install faketime)\")"));
}
