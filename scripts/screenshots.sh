#!/usr/bin/env bash
# Retakes the README's screenshots from the real program into docs/img/:
# live-page.png, the live page of `hotkeyd demo` as it opens once its
# planted diagnoses are on it, live-tables.png, the same page scrolled to
# its tables, live-heatmap.png, its orders table's heatmap over the six
# hours of history the demo plants; analyze-report.png, the HTML report
# of `hotkeyd analyze --format html` over cmd/hotkeyd/testdata/access.jsonl
# as it opens, analyze-heatmap.png, its orders table's heatmap;
# analyze-forecast.png and live-forecast.png, the forecasts of a key that
# grows towards its partition's ceiling (the forecast line and the 10× /
# 100× view) in the HTML report of two and a half days of writes and on the
# live page of a daemon started on three days of planted history; and
# screenshots.json, the structure of the page each shows, which the page
# tests compare with the page (they fail once the page no longer looks
# like its pictures: run this again then).
# Needs Go and Chromium (scripts/test-deps.sh installs Debian's; or set
# HOTKEYD_CHROMIUM). Takes about a minute.
#
#   scripts/screenshots.sh                 1280 × 800 PNGs in docs/img/
#   scripts/screenshots.sh -width 1440     other flags: go run ./internal/cmd/screenshots -h
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec go run ./internal/cmd/screenshots -out docs/img "$@"
