#!/usr/bin/env bash
# Runs the counting-core benchmarks (sketch/) and prints the medians as
# Markdown tables, the form docs/bench/sketch.md quotes.
#
#   scripts/bench-sketch.sh            # 3 runs of everything (~10 min on 2 cores)
#   COUNT=5 scripts/bench-sketch.sh    # more runs
#   BASE=de79b1c scripts/bench-sketch.sh   # also the sketch/ of a git revision, runs alternating,
#                                          # with the ratio of each figure to it
#   ONLY='HeavyHitters|Put$' scripts/bench-sketch.sh   # some groups only
#   RAW=/tmp/sketch-bench.txt scripts/bench-sketch.sh   # keep the raw output
#
# The trace workloads read ../shared/data/traces beside the repository and
# are skipped, with a message, when it is not there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

count=${COUNT:-3}
raw=${RAW:-$(mktemp)}
only=${ONLY:-.}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "go: $(go version | cut -d' ' -f3-)"
echo "raw output: $raw"

# The test binaries: this tree's, and BASE's built from a copy of the
# repository at that revision. Both run from sketch/, where the trace
# workloads' relative path points.
go test -c -o "$bin/current.test" ./sketch/
binaries=(current)
if [ -n "${BASE:-}" ]; then
	mkdir "$bin/base-src"
	git archive "$BASE" | tar -x -C "$bin/base-src"
	(cd "$bin/base-src" && go test -c -o "$bin/base.test" ./sketch/)
	binaries=(base current)
	echo "base: $(git log -1 --format='%h %s' "$BASE")"
fi
echo

# load prints the load average before each group: on a shared machine the
# parallel figures mean little without it.
load() { echo "load: $(cut -d' ' -f1-3 /proc/loadavg) before $1"; }

# group NAME ARGS...: runs one benchmark group of every binary, alternating
# binaries run by run so that both see the same load.
group() {
	local name=$1
	shift
	[[ $name =~ $only ]] || return 0
	for ((i = 0; i < count; i++)); do
		for b in "${binaries[@]}"; do
			load "$name ($b)"
			(cd sketch && "$bin/$b.test" -test.run '^$' "$@") | sed "s/^Benchmark/$b Benchmark/"
		done
	done
}

{
	# One iteration is a whole workload (10M updates for the Zipf ones).
	group HeavyHitters -test.bench 'BenchmarkHeavyHitters' -test.benchtime 1x -test.timeout 60m
	group Put -test.bench 'BenchmarkPut$|BenchmarkSnapshot|BenchmarkMerge' -test.benchtime 2s
	group PutParallel -test.bench 'BenchmarkPutParallel' -test.benchtime 2s -test.cpu 1,2
	group Distinct -test.bench 'BenchmarkDistinct' -test.benchtime 1x
} 2>&1 | tee "$raw" | grep --line-buffered -E '^([a-z]+ Benchmark|--- SKIP|\s+bench_test|load:)' >&2 || true

# medians: for every benchmark line, collect "value unit" pairs and print the
# median of each unit per binary and benchmark name, and with a base, the
# ratio of the current median to the base's.
awk '
/^[a-z]+ Benchmark/ {
	b = $1; name = $2
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	bins[b] = 1
	for (i = 4; i + 1 <= NF; i += 2) {
		unit = $(i + 1); key = b SUBSEP name SUBSEP unit
		if (!((name SUBSEP unit) in hasUnit)) { hasUnit[name, unit] = 1; units[name] = units[name] " " unit }
		vals[key, ++cnt[key]] = $i
	}
}
function median(key,   c, i, j, t, a) {
	c = cnt[key]
	if (c == 0) return ""
	for (i = 1; i <= c; i++) a[i] = vals[key, i] + 0
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (c % 2) return a[(c + 1) / 2]
	return (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	base = ("base" in bins)
	print "| benchmark | runs | medians" (base ? " (base → current, ratio)" : "") " |"
	print "|---|---|---|"
	for (k = 1; k <= n; k++) {
		name = order[k]; line = ""
		m = split(substr(units[name], 2), us, " ")
		for (u = 1; u <= m; u++) {
			if (us[u] == "ns/op") continue
			c = median("current" SUBSEP name SUBSEP us[u])
			if (base) {
				bv = median("base" SUBSEP name SUBSEP us[u])
				r = (bv != "" && c != "" && bv + 0 != 0) ? sprintf(" (%.2f×)", c / bv) : ""
				v = sprintf("%s → %s%s", (bv == "" ? "–" : bv), (c == "" ? "–" : c), r)
			} else v = c
			line = line sprintf("%s %s %s", (line == "" ? "" : ","), v, us[u])
		}
		printf "| %s | %d |%s |\n", name, cnt["current" SUBSEP name SUBSEP "ns/op"], line
	}
	# Scaling of parallel feeding: median updates/s on 2 CPUs over 1 CPU,
	# and CPU per update, which rises when cores contend for cache lines.
	for (k = 1; k <= n; k++) {
		name = order[k]
		if (name !~ /^BenchmarkPutParallel\/[a-z]+$/) continue
		for (b in bins) {
			one = median(b SUBSEP name SUBSEP "Mupdates/s"); two = median(b SUBSEP (name "-2") SUBSEP "Mupdates/s")
			if (one == "" || two == "") continue
			printf "\nscaling %s (%s): %.2fx (%g -> %g Mupdates/s, %g -> %g cpu-ns/update)", substr(name, 22), b, two / one, one, two, median(b SUBSEP name SUBSEP "cpu-ns/update"), median(b SUBSEP (name "-2") SUBSEP "cpu-ns/update")
		}
	}
	print ""
}' "$raw"
