#!/usr/bin/env bash
# Lists the dependencies whose enabled features differ between the builds
# the README runs (`cargo test` of the workspace; `cargo build`/`run`/
# `install` of dhp, dhp-conform, dhp-chaos, demo, benches). A crate
# listed here is compiled twice and recompiled on every switch between those
# commands; add the union of its features to workspace-hack/Cargo.toml.
# Exit 0 when nothing differs, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
# `cargo build -p dhp-core` alone is not compared: the protocol library does
# not depend on workspace-hack (it would pull the harnesses' crates into the
# library's build, issue 46), so that build has its own feature set of a few
# shared crates, compiled once beside the workspace's (cargo keeps both;
# switching recompiles nothing: scripts/test.sh's no-recompile phase).
builds=(
    "workspace-tests:--workspace -e normal,build,dev"
    "dhp-core-tests:-p dhp-core -e normal,build,dev"
    "dhp:-p dhp -e normal,build"
    "dhp-tests:-p dhp -e normal,build,dev"
    "dhp-conform:-p dhp-conform -e normal,build"
    "dhp-adapter:-p dhp-adapter -e normal,build"
    "dhp-chaos:-p dhp-chaos -e normal,build"
    "dhp-chaos-mutants:-p dhp-chaos-mutants -e normal,build"
    "demo:-p demo -e normal,build"
    "benches:-p dhp-benches -e normal,build"
)
for b in "${builds[@]}"; do
    name="${b%%:*}"
    # shellcheck disable=SC2086  # the arguments are meant to split
    cargo tree ${b#*:} --locked --prefix none --no-dedupe -f '{p} {f}' \
        | sed -E 's/ \(\*\)//; s| \(/[^)]*\)||' | sort -u > "$OUT/$name"
done
# dhp-core itself is skipped: its `failpoints` feature is deliberately on in
# the test and harness builds (dhp-chaos, dhp-conform, demo turn it on) and
# off in `cargo build -p dhp-core` / `cargo install` and the benches, so an
# installed `dhp` cannot be made to kill itself from its environment. That
# costs one rebuild of dhp-core (not of its dependencies) when switching.
awk '
    $1 == "dhp-core" { next }
    { file = FILENAME; sub(".*/", "", file); key = $1 " " $2; $1 = ""; $2 = "";
      feats[key, file] = $0; seen[key] = 1; files[file] = 1 }
    END {
        bad = 0
        for (k in seen) {
            first = ""; differ = 0
            for (f in files) if ((k, f) in feats) {
                if (first == "") first = feats[k, f]; else if (feats[k, f] != first) differ = 1
            }
            if (differ) {
                bad = 1; print k ":"
                for (f in files) if ((k, f) in feats) printf "    %-16s%s\n", f, feats[k, f]
            }
        }
        if (!bad) print "check_features: every dependency has one feature set across the builds"
        exit bad
    }' "$OUT"/*
