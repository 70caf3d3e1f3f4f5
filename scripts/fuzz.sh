#!/usr/bin/env bash
# Bounded coverage-guided fuzzing (cargo-fuzz / libFuzzer) of every dhp
# parser that takes outside bytes. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Defaults: 60 s for each of all targets. Needs a nightly toolchain and
# cargo-fuzz (`cargo install cargo-fuzz`); fails loudly without them.
# Each target runs on a scratch copy of fuzz/corpus/<target> plus
# fuzz/regressions/<target>, so the committed corpus only changes when you
# copy inputs back on purpose. A crash is saved under
# fuzz/artifacts/<target>/ and makes the script exit 1.
#
# Env: FUZZ_SANITIZER (none|address, default none: the code under test is
# safe Rust; address also instruments the bundled SQLite), FUZZ_JOBS
# (libFuzzer workers per target, default 1), CARGO_TARGET_DIR (builds go
# to $CARGO_TARGET_DIR/fuzz), FUZZ_CODEGEN_UNITS (default 16).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
all=(transport_log tcp_frames bundle envelope_dispatch env_config json_text adapter)
if [ "$#" -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi
case "$secs" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, got '$secs'" >&2; exit 2 ;; esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: no nightly toolchain (rustup toolchain install nightly)" >&2; exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed (cargo install cargo-fuzz)" >&2; exit 2
fi

san=${FUZZ_SANITIZER:-none}
# 16 codegen units: builds fit a small shared machine; runs are a bit slower.
cgu=${FUZZ_CODEGEN_UNITS:-16}
jobs=${FUZZ_JOBS:-1}
case "$jobs" in ''|*[!0-9]*|0) echo "fuzz.sh: FUZZ_JOBS must be a positive whole number, got '$jobs'" >&2; exit 2 ;; esac
tdir=${CARGO_TARGET_DIR:-$repo/target}/fuzz
cd "$repo"
echo "fuzz.sh: building ${#targets[@]} target(s), sanitizer $san"
cargo +nightly fuzz build -s "$san" --codegen-units "$cgu" --target-dir "$tdir" >/dev/null

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
summary=()
for t in "${targets[@]}"; do
    work="$scratch/$t"
    mkdir -p "$work" "fuzz/artifacts/$t"
    cp -r "fuzz/corpus/$t/." "$work/" 2>/dev/null || true
    cp -r "fuzz/regressions/$t/." "$work/" 2>/dev/null || true
    log="$scratch/$t.log"
    echo "fuzz.sh: $t for ${secs}s ($(find "$work" -mindepth 1 -maxdepth 1 | wc -l) seed inputs)"
    set +e
    par=()
    # With -jobs, libFuzzer writes each worker's output to ./fuzz-N.log.
    if [ "$jobs" -gt 1 ]; then par=(-jobs="$jobs" -workers="$jobs"); fi
    cargo +nightly fuzz run -s "$san" --codegen-units "$cgu" --target-dir "$tdir" "$t" "$work" -- \
        -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 "${par[@]}" \
        -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    for f in fuzz-*.log; do [ -e "$f" ] && cat "$f" >>"$log" && rm -f "$f"; done
    execs=$(grep -h -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
    cov=$(grep -h -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    if [ "$rc" -ne 0 ]; then
        status=1
        summary+=("$t: CRASH (exit $rc) after $execs runs; see fuzz/artifacts/$t/ and the log below")
        grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -20 >&2 || true
    else
        summary+=("$t: ok, $execs runs, coverage ${cov:-?} edges, corpus $(find "$work" -mindepth 1 -maxdepth 1 | wc -l)")
    fi
done
echo "fuzz.sh: summary (${secs}s per target)"
printf '  %s\n' "${summary[@]}"
exit "$status"
