#!/usr/bin/env bash
# The size check alone (scripts/test.sh runs it with every test): no non-test
# .rs file over 700 lines, no function over 120, except the entries of
# scripts/sizes-allowlist.txt, which may only shrink.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo nextest run --locked -p dhp-testkit -E 'test(no_file_or_function_grows_past_the_limits)' "$@"
