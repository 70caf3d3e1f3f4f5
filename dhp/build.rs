//! How the `dhp` program is linked on Linux/glibc, for a small worker
//! (issue 49, item 5; benches/PROFILES.md). A worker's peak RSS is mostly
//! program text: the kernel maps 64 KiB around every page a process first
//! touches, and the functions one `dhp work` runs are spread over ~145 such
//! windows of a 13 MB `.text`.
//!
//! - By default: packed relative relocations (DT_RELR, glibc ≥ 2.36,
//!   binutils ≥ 2.38): the ≈32,000 `R_X86_64_RELATIVE` entries of a
//!   position-independent executable (770 KiB of `.rela.dyn` the loader
//!   reads at every start) take a few KiB. `DHP_NO_RELR` leaves them unpacked.
//! - `DHP_TEXT_ORDER=gold` (opt-in, for deployed workers): gold with
//!   `--section-ordering-file=worker-text-order.txt`, the functions one
//!   `dhp work` runs (scripts/worker-text-order.sh) placed together at the
//!   start of `.text`. Measured (release): a SQLite worker 10.4–10.7 →
//!   8.3–8.8 MB, a PostgreSQL worker 9.7–9.8 → 8.4–8.8 MB. Not the default:
//!   rustc warns that gold is deprecated and has known bugs with Rust, and
//!   gold cannot pack relocations; the GNU ld here (2.40) cannot order
//!   sections. A build that asks for it without `ld.gold` fails, saying so.
use std::path::Path;

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let order = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("worker-text-order.txt");
    let ask = std::env::var("DHP_TEXT_ORDER").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        match ask.as_str() {
            "gold" => {
                let gold = ["/usr/bin/ld.gold", "/bin/ld.gold", "/usr/local/bin/ld.gold"];
                if !gold.iter().any(|p| Path::new(p).exists()) {
                    eprintln!("DHP_TEXT_ORDER=gold: no ld.gold (install binutils), or unset DHP_TEXT_ORDER");
                    std::process::exit(1);
                }
                println!("cargo:rustc-link-arg-bins=-fuse-ld=gold");
                println!("cargo:rustc-link-arg-bins=-Wl,--section-ordering-file={}", order.display());
            }
            "" => {
                if std::env::var_os("DHP_NO_RELR").is_none() {
                    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
                }
            }
            other => {
                eprintln!("DHP_TEXT_ORDER={other}: the only value is `gold` (or leave it unset)");
                std::process::exit(1);
            }
        }
    }
    println!("cargo:rerun-if-env-changed=DHP_NO_RELR");
    println!("cargo:rerun-if-env-changed=DHP_TEXT_ORDER");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=worker-text-order.txt");
}
