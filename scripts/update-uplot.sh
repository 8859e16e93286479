#!/usr/bin/env bash
# Refreshes the vendored uPlot (the charts of the live page and of the HTML
# report) from the npm registry: its released minified script and style
# sheet, its licence and its version, under export/web/vendor/uplot/.
# Nothing else in the build or the tests needs npm.
#
#   scripts/update-uplot.sh           the latest release
#   scripts/update-uplot.sh 1.6.32    that version
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$root/export/web/vendor/uplot"
version=${1:-$(npm view uplot version)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null)
tar -xzf "$tmp"/uplot-*.tgz -C "$tmp"
licence=$(node -p "require('$tmp/package/package.json').license")
if [ "$licence" != MIT ]; then
	echo "update-uplot: uplot@$version is licensed $licence, not MIT: check before vendoring it" >&2
	exit 1
fi
mkdir -p "$dest"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$dest/"
echo "$version" >"$dest/VERSION"
echo "update-uplot: uplot $version in ${dest#"$root"/}; run go test ./export/ and the browser tests (go test -run 'TestLivePage|TestAnalyzeHTMLReport' ./cmd/hotkeyd/)" >&2
