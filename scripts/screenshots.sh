#!/usr/bin/env bash
# Retakes the README's screenshots from the real program into docs/img/:
# live-page.png, the live page of `hotkeyd demo` as it opens once its
# planted diagnoses are on it, live-tables.png, the same page scrolled to
# its tables, and analyze-report.png, the HTML report of
# `hotkeyd analyze --format html` over cmd/hotkeyd/testdata/access.jsonl as
# it opens; and screenshots.json, the structure of the page each shows,
# which the page tests compare with the page (they fail once the page no
# longer looks like its pictures: run this again then).
# Needs Go and Chromium (scripts/test-deps.sh installs Debian's; or set
# HOTKEYD_CHROMIUM). Takes about half a minute.
#
#   scripts/screenshots.sh                 1280 × 800 PNGs in docs/img/
#   scripts/screenshots.sh -width 1440     other flags: go run ./internal/cmd/screenshots -h
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec go run ./internal/cmd/screenshots -out docs/img "$@"
