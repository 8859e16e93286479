#!/usr/bin/env bash
# Runs the soak (internal/cmd/soak): the real daemon for 30 minutes under
# HTTP ingest of about 100 000 events a second with keys that churn, a
# DynamoDB Local stream with a key that turns hot and cools down again, a
# reload every five minutes and a scrape every second. It prints the
# daemon's memory, goroutines, open files and counts every minute, then
# checks that nothing was lost, that the hot key was raised in each of
# its hot phases and that the figures stayed flat after the warm-up;
# it exits 1 when a check fails. Its figures are in docs/limits.md (Soak).
#
#   scripts/soak.sh                                    # 30 minutes
#   DURATION=6m WARMUP=2m RELOAD_EVERY=1m scripts/soak.sh -hot-on 40s -hot-off 70s
#
# Needs DynamoDB Local and Java (make test-deps), like the tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); go: $(go version | cut -d' ' -f3-)"
go run ./internal/cmd/soak -duration "${DURATION:-30m}" -warmup "${WARMUP:-5m}" -reload-every "${RELOAD_EVERY:-5m}" "$@"
