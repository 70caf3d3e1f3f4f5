//! Link the `dhp` program with packed relative relocations (DT_RELR) on
//! Linux/glibc: a position-independent executable carries one 24-byte
//! `R_X86_64_RELATIVE` entry per pointer in its read-only data (≈32,000,
//! 770 KiB of `.rela.dyn` in a release build), and the dynamic loader reads
//! every one at start, so each `dhp work` paid ~0.8 MB of resident pages
//! for them; packed, they take a few KiB. Same code, same relocations
//! applied (glibc ≥ 2.36 and binutils ≥ 2.38 or lld; issue 49 item 5).
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("DHP_NO_RELR").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-env-changed=DHP_NO_RELR");
    println!("cargo:rerun-if-changed=build.rs");
}
