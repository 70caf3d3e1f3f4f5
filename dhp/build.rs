//! How the `dhp` program is linked on Linux/glibc, for a small worker
//! (issue 49, item 5; benches/PROFILES.md). A worker's peak RSS is mostly
//! program text: the kernel maps 64 KiB around every page a process first
//! touches (fault-around; `madvise(MADV_RANDOM)` does not stop it, measured),
//! and the functions one `dhp work` runs were spread over ~145 such windows
//! of a 13 MB `.text`.
//!
//! - Packed relative relocations (DT_RELR, glibc ≥ 2.36): the ≈32,000
//!   `R_X86_64_RELATIVE` entries of a position-independent executable
//!   (770 KiB of `.rela.dyn` the loader reads at every start) take a few
//!   KiB. `DHP_NO_RELR=1` leaves them unpacked.
//! - The worker's functions together: `worker-text-order.txt` lists, as
//!   section patterns (`.text.<mangled path>*`, the hash left out so the
//!   list survives rebuilds), the functions one `dhp work` runs on SQLite
//!   and on PostgreSQL (made by scripts/worker-text-order.sh with
//!   callgrind). This script turns it into a linker script that collects
//!   those sections into one output section placed just before `.text`
//!   (`INSERT BEFORE .text`: the default layout is otherwise kept). The
//!   linker rustc uses here (LLD) and GNU ld both read it; a function
//!   missing from the list still links, only elsewhere.
//!   `DHP_TEXT_ORDER=off` links without it.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The linker script for `order` (the listed patterns), or why the list is
/// unusable. `ordered`: each pattern its own input description, so the
/// sections land in the list's order (a worker's first functions first); else
/// one description for all (the listed sections in input order), which LLD
/// matches ≈ 10× faster: an unoptimised build keeps its link fast, and its
/// RSS is not what is measured.
fn script(order: &str, ordered: bool) -> Result<String, String> {
    let mut s = String::from(
        "/* dhp/build.rs from dhp/worker-text-order.txt: one `dhp work`'s functions together. */\n\
         SECTIONS\n{\n  .text.dhp_worker :\n  {\n",
    );
    if !ordered {
        s.push_str("    *(\n");
    }
    let mut n = 0;
    for (i, line) in order.lines().enumerate() {
        let pat = line.trim();
        if pat.is_empty() || pat.starts_with('#') {
            continue;
        }
        // Bare linker-script tokens only: a stray character would change
        // what the script means, not just miss a function.
        if !pat.starts_with(".text.") || !pat.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.$*".contains(&b)) {
            return Err(format!("line {}: {pat:?} is not a `.text.NAME` section pattern", i + 1));
        }
        let _ = match ordered {
            true => writeln!(s, "    *({pat})"),
            false => writeln!(s, "      {pat}"),
        };
        n += 1;
    }
    if n == 0 {
        return Err("no patterns".into());
    }
    if !ordered {
        s.push_str("    )\n");
    }
    s.push_str("  }\n}\nINSERT BEFORE .text;\n");
    Ok(s)
}

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let order = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("worker-text-order.txt");
    let ask = std::env::var("DHP_TEXT_ORDER").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        if std::env::var_os("DHP_NO_RELR").is_none() {
            println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        }
        match ask.as_str() {
            "" => {
                let text = std::fs::read_to_string(&order).unwrap_or_else(|e| {
                    eprintln!("{}: {e} (regenerate it with scripts/worker-text-order.sh)", order.display());
                    std::process::exit(1);
                });
                let ordered = std::env::var("OPT_LEVEL").is_ok_and(|o| o != "0");
                let ld = script(&text, ordered).unwrap_or_else(|e| {
                    eprintln!("{}: {e} (regenerate it with scripts/worker-text-order.sh)", order.display());
                    std::process::exit(1);
                });
                let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("worker-text-order.ld");
                if let Err(e) = std::fs::write(&out, ld) {
                    eprintln!("{}: {e}", out.display());
                    std::process::exit(1);
                }
                println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", out.display());
            }
            "off" => {}
            other => {
                eprintln!("DHP_TEXT_ORDER={other}: the only value is `off` (or leave it unset)");
                std::process::exit(1);
            }
        }
    }
    println!("cargo:rerun-if-env-changed=DHP_NO_RELR");
    println!("cargo:rerun-if-env-changed=DHP_TEXT_ORDER");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=worker-text-order.txt");
}
