#!/usr/bin/env bash
# Runs `make test` (what CI runs) ROUNDS times with a second `make test`
# beside it, each in a clean clone of this checkout's HEAD, so that every
# test runs on a loaded machine: a test that fails only under load is a
# flaky test (docs/benchmarks.md, "Tests under load"). Prints each round's
# outcome, its time and the failed tests, and fails if any run failed. The
# clones use this checkout's .tools when it has one (nothing downloaded).
#
#   scripts/flaky.sh [ROUNDS]   (default 5)
#   KEEP=1 scripts/flaky.sh     keeps the clones and their logs (kept anyway
#                               when a run failed)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-5}
rev=$(git -C "$root" rev-parse HEAD)
work=$(mktemp -d "${TMPDIR:-/tmp}/hotkeyd-flaky.XXXXXX")
failed=0
# The clones and logs are kept when a run failed, or with KEEP set.
trap 'if [ "$failed" = 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$work"; fi' EXIT
for c in a b; do
	git clone -q "$root" "$work/$c"
	git -C "$work/$c" checkout -q --detach "$rev"
	if [ -d "$root/.tools" ]; then
		ln -s "$(readlink -f "$root/.tools")" "$work/$c/.tools"
	fi
done
echo "flaky: $rounds rounds of two make test at once on $(nproc) cores, revision ${rev:0:12}, in $work"
for r in $(seq 1 "$rounds"); do
	start=$(date +%s)
	pids=()
	for c in a b; do
		(cd "$work/$c" && make test >"$work/round$r-$c.log" 2>&1) &
		pids+=($!)
	done
	status=()
	for p in "${pids[@]}"; do
		if wait "$p"; then status+=(pass); else status+=(FAIL); fi
	done
	secs=$(($(date +%s) - start))
	echo "round $r: ${status[0]} ${status[1]} in $((secs / 60))m$((secs % 60))s"
	for i in 0 1; do
		c=$([ "$i" = 0 ] && echo a || echo b)
		if [ "${status[$i]}" = FAIL ]; then
			failed=1
			echo "  run $c failed ($work/round$r-$c.log):"
			grep -E '^(--- FAIL|FAIL|panic:|make: \*\*\*)' "$work/round$r-$c.log" | head -20 | sed 's/^/    /'
		fi
	done
done
exit "$failed"
