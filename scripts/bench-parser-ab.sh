#!/usr/bin/env bash
# Compares the JSON-lines parser of the working tree with that of a git
# revision BASE on a loaded machine (docs/bench/jsonl.md, "Unknown
# fields"): it builds both test binaries of ingest/jsonl, with the working
# tree's benchmarks in both, runs them alternately pinned to one CPU, and
# prints for each benchmark the CPU time (user + system, from the child's
# rusage) per iteration of a fixed number of iterations: medians, the
# median of the per-round ratios, and the fastest of each. CPU time moves
# much less with the machine's load than wall time does.
#
#   BASE=main scripts/bench-parser-ab.sh [ROUNDS]    (default 16; CPU=1)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-16}
cpu=${CPU:-1}
base=${BASE:?set BASE to a git revision}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/base-src"
git archive "$base" | tar -x -C "$tmp/base-src"
cp ingest/jsonl/bench_test.go "$tmp/base-src/ingest/jsonl/"
(cd "$tmp/base-src" && go test -c -o "$tmp/base.test" ./ingest/jsonl)
go test -c -o "$tmp/new.test" ./ingest/jsonl
echo "base: $(git log -1 --format='%h %s' "$base" | cut -c1-100)"

cd ingest/jsonl
for _ in $(seq "$rounds"); do
	for v in base new; do
		for b in 'ParseLine/hotkeyd$:1000000' 'ParseLine/hotkeyd_extra_members$:1000000' 'ReadAll$:20'; do
			name=${b%%:*} n=${b##*:}
			t=$( { /usr/bin/time -f "%U %S" taskset -c "$cpu" "$tmp/$v.test" -test.run XXX -test.bench "$name" -test.benchtime "${n}x" >/dev/null; } 2>&1 | tail -1)
			echo "$v $name $n $t"
		done
	done
done | python3 -c '
import statistics as st, sys
d = {}
for line in sys.stdin:
    v, b, n, u, s = line.split()
    d.setdefault(b, {}).setdefault(v, []).append((float(u) + float(s)) / int(n))
for b, r in d.items():
    o, n = r["base"], r["new"]
    scale, unit = (1e9, "ns/line") if b.startswith("Parse") else (1e3, "ms per run")
    pr = st.median(y / x for x, y in zip(o, n))
    print(f"{b}: base {st.median(o)*scale:.0f}, new {st.median(n)*scale:.0f} {unit} (medians; new/base {st.median(n)/st.median(o):.2f}, "
          f"median of per-round ratios {pr:.2f}); fastest base {min(o)*scale:.0f}, new {min(n)*scale:.0f}; {len(o)} rounds")
'
