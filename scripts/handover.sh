#!/usr/bin/env bash
# Runs the handover test for three minutes instead of CI's one (docs/streams.md,
# "Handovers"): three replicas share one table's stream through a lease table
# on DynamoDB Local, the one reading it is killed with SIGKILL every 20 s and
# restarted, while about 20 records a second are written; every record must be
# counted at least once, no more records handed twice than a dead owner was
# handed after its last checkpoint, and nothing paged.
#
#   scripts/handover.sh [DURATION]   (default 3m)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HOTKEYD_HANDOVER_DURATION=${1:-3m} exec go test -count=1 -timeout 30m -v -run '^TestHandoversLoseNothing$' ./cmd/hotkeyd
