#!/usr/bin/env bash
# Runs every benchmark harness of the project, one after the other, and
# prints their tables. Each area's harness can also be run on its own:
#   scripts/bench-sketch.sh   counting core (sketch/)
#   scripts/bench-jsonl.sh    JSON-lines ingest and analyze path (internal/cmd/benchcmd)
#   scripts/bench-analyze.sh  hotkeyd analyze on a shuffled file, with and without
#                             incidents, against the exact counter as a lean program
#   scripts/bench-live.sh     the daemon: ingest speed (HTTP, a followed file, the
#                             stream decoder) and what it costs idle (BASE=REV to compare)
# and `go test -run '^$' -bench . ./ingest/streams ./ingest/cloudtrail` for the readers;
#   scripts/bench-decoders.sh REV   the JSON decoders against revision REV
#                                   (for a change to ingest/jsonscan or a decoder)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for s in scripts/bench-sketch.sh scripts/bench-jsonl.sh scripts/bench-analyze.sh scripts/bench-live.sh; do
	if [ -x "$s" ]; then
		echo "== $s"
		"$s"
	fi
done
echo "== readers"
go test -run '^$' -bench . -benchmem -count 3 ./ingest/streams/... ./ingest/cloudtrail/...
