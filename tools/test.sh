#!/usr/bin/env bash
# The workspace's tests (cargo test --workspace --no-fail-fast, extra
# arguments passed on), then one closing line that counts what really ran:
#   tests: N passed, N failed, N skipped
# A test that cannot run here (a busy host, no tracefs, no browser) passes
# after printing "SKIPPED <test>: <why>" to stderr; cargo counts it as
# passed, this line counts it as skipped. Exits with cargo's status.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp "${TMPDIR:-/tmp}/schedlab-test-XXXXXX.log")
trap 'rm -f "$log"' EXIT
cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# "test result: ok. 25 passed; 0 failed; 0 ignored; ..." once per binary.
read -r ran failed < <(awk '/^test result:/ {
    for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i; if ($(i+1) ~ /^failed;/) f += $i }
} END { print p + 0, f + 0 }' "$log")
skipped=$(grep -c '^SKIPPED ' "$log")
echo
grep '^SKIPPED ' "$log" | sed 's/^/  /'
echo "tests: $((ran - skipped)) passed, $failed failed, $skipped skipped"
exit "$status"
