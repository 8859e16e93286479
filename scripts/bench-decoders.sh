#!/usr/bin/env bash
# Compares the JSON decoders' benchmarks (JSON lines, CloudTrail, GetRecords)
# of a base revision with the working tree: both are built once as test
# binaries, then run one after the other, round after round, so that both
# see the same machine load; benchstat prints the medians.
#
#   scripts/bench-decoders.sh BASE_REV [ROUNDS]      # ROUNDS defaults to 10
#
# With perf (software events are enough), it also prints the CPU time per
# operation, which a busy shared machine disturbs less than wall time. See
# docs/bench/jsonscan.md for what the figures of the shared scanner were.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base=${1:?usage: $0 BASE_REV [ROUNDS]}
rounds=${2:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$PWD

echo "bench-decoders: building $base and the working tree" >&2
mkdir -p "$work/src-before" "$work/before" "$work/after" "$work/out"
git archive "$base" | tar -x -C "$work/src-before"
for p in jsonl cloudtrail streams; do
	(cd "$work/src-before" && go test -c -o "$work/before/$p.test" "./ingest/$p/")
	go test -c -o "$work/after/$p.test" "./ingest/$p/"
done

# bench VERSION PKG ARGS...: one run, appended to out/VERSION-PKG.txt
bench() {
	local v=$1 p=$2
	shift 2
	(cd "$root/ingest/$p" && "$work/$v/$p.test" -test.run '^$' -test.benchmem "$@") |
		grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$work/out/$v-$p.txt"
}
for r in $(seq "$rounds"); do
	for v in before after; do
		bench "$v" jsonl -test.bench 'BenchmarkParseLine/hotkeyd$|BenchmarkReadAll$'
		bench "$v" cloudtrail -test.bench 'BenchmarkDecode$' -test.benchtime 5x -test.cpu 1
		bench "$v" streams -test.bench 'BenchmarkGetRecords/.*/(fast-decode|fast-decode-body-only|end-to-end-fast)$'
	done
	echo "bench-decoders: round $r of $rounds, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
benchstat() { go run golang.org/x/perf/cmd/benchstat@latest "$@"; }
for p in jsonl cloudtrail streams; do
	echo "== $p (wall time)"
	benchstat -filter '.unit:(sec/op)' "before=$work/out/before-$p.txt" "after=$work/out/after-$p.txt"
done

command -v perf >/dev/null 2>&1 || exit 0
# cpu VERSION PKG BENCH N1 N2 ARGS...: CPU nanoseconds per operation, the
# task-clock of N2 operations minus that of N1 (setup cancels).
cpu() {
	local v=$1 p=$2 b=$3 n1=$4 n2=$5
	shift 5
	t() {
		(cd "$root/ingest/$p" && perf stat -x, -e task-clock "$work/$v/$p.test" -test.run '^$' -test.bench "$b" -test.benchtime "${1}x" "${@:2}" 2>&1 >/dev/null) |
			awk -F, '/task-clock/{printf "%d\n", $1*1e6}'
	}
	local a z
	a=$(t "$n1" "$@")
	z=$(t "$n2" "$@")
	local name=${b#Benchmark}
	name=${name%\$}
	echo "Benchmark${name//[^A-Za-z0-9-]/_} 1 $(((z - a) / (n2 - n1))) ns/op" >>"$work/out/cpu-$v.txt"
}
for r in $(seq "$rounds"); do
	for v in before after; do
		cpu "$v" jsonl 'BenchmarkParseLine/hotkeyd$' 1000000 5000000
		cpu "$v" jsonl 'BenchmarkReadAll$' 4 24
		cpu "$v" cloudtrail 'BenchmarkDecode/plain$' 2 12 -test.cpu 1
		cpu "$v" cloudtrail 'BenchmarkDecode/gzip$' 2 12 -test.cpu 1
		for rec in getrecords-1000.json getrecords-1000-keys-only.json; do
			for s in fast-decode-body-only fast-decode end-to-end-fast; do
				cpu "$v" streams "BenchmarkGetRecords/$rec/$s\$" 100 700
			done
		done
	done
	echo "bench-decoders: CPU round $r of $rounds" >&2
done
echo "== CPU time per operation (perf task-clock)"
benchstat "before=$work/out/cpu-before.txt" "after=$work/out/cpu-after.txt"
