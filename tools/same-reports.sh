#!/usr/bin/env bash
# Writes every report a refactoring must leave unchanged into DIR: each
# built-in scenario under each policy as JSON (1 s, seed 1; and once more on
# an 8-CPU SMT machine where the scenario is flat), an rt-app file, a
# replayed trace, and docs/validation.md re-judged from the digest of its
# real runs (validation-runs.json; nothing is booted). Run it before and after
# a change and diff the two directories:
#
#     tools/same-reports.sh /tmp/before   # on the old commit
#     tools/same-reports.sh /tmp/after    # on the new one
#     diff -r /tmp/before /tmp/after && echo identical
set -euo pipefail
out=${1:?usage: tools/same-reports.sh DIR}
bin=${SCHEDLAB:-target/release/schedlab}
mkdir -p "$out"
policies=$("$bin" list | awk '/^[a-z]+  +[^ ]/ {print $1}')
scenarios=$(ls scenarios | sed 's/\.toml$//')
for s in $scenarios; do
  for p in $policies; do
    "$bin" run "$s" --sched "$p" --duration 1s --seed 1 --json > "$out/$s.$p.json" 2>&1 || true
  done
done
for p in $policies; do
  "$bin" run smp-fairness --sched "$p" --duration 1s --seed 1 --cpus 3 --json > "$out/smp3.$p.json" 2>&1 || true
  for f in examples/rt-app/*.json; do
    "$bin" run "$f" --sched "$p" --duration 1s --cpus 4 --json > "$out/rtapp.$(basename "$f" .json).$p.json" 2>&1 || true
  done
done
for f in crates/schedlab-policies/tests/fixtures/*; do
  "$bin" replay "$f" --duration 1s --json > "$out/replay.$(basename "$f").json" 2>&1 || true
done
"$bin" compare thread-test --duration 1s > "$out/compare.thread-test.txt" 2>&1 || true
# docs/validation.md re-judged from the digest of its real runs (and their
# reports where docs/validation/ keeps them): nothing is booted.
if [ -f docs/validation-runs.json ]; then
  mkdir -p "$out/validate"
  cp docs/validation-runs.json docs/validation.md "$out/validate/"
  if [ -d docs/validation ]; then cp -r docs/validation "$out/validate/validation"; fi
  "$bin" validate --out "$out/validate" --accel tcg --reuse-real 2>&1 | grep -v " wrote " > "$out/validate.txt" || true
  rm -rf "$out/validate/validation"
fi
ls "$out" | wc -l
