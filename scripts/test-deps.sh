#!/usr/bin/env bash
# Installs what the tests need and nothing else, idempotently:
#   - a C compiler for the race detector (cgo), when missing (Debian "gcc", "libc6-dev")
#   - Prometheus and promtool (Debian package "prometheus")
#   - Java 17 for DynamoDB Local, when missing (Debian "openjdk-17-jre-headless")
#   - Node.js and npm for the npm packages below, when missing (Debian "nodejs", "npm")
#   - DynamoDB Local, AWS's emulator with Streams, from the npm package
#     "amplify-dynamodb-simulator", under .tools/ in this repository
#   - kinesalite (a Kinesis Data Streams emulator) and s3rver (an S3
#     emulator), npm packages that run on Node, under .tools/ too
#   - Chromium (Debian package "chromium"), the headless browser the page's
#     tests drive with chromedp
# Run as root or with sudo available. Safe to run again: it skips what is there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/.tools"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

apt_updated=""
apt_install() {
	if [ -z "$apt_updated" ]; then
		echo "test-deps: apt-get update" >&2
		$sudo apt-get update -q >/dev/null
		apt_updated=1
	fi
	echo "test-deps: apt-get install $*" >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# go test -race needs cgo, which Go turns off when it finds no C compiler.
if ! command -v gcc >/dev/null 2>&1; then
	apt_install gcc libc6-dev
fi
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
	apt_install prometheus
fi
if ! command -v java >/dev/null 2>&1; then
	apt_install openjdk-17-jre-headless
fi
if ! command -v npm >/dev/null 2>&1; then
	apt_install nodejs npm
fi
if ! command -v chromium >/dev/null 2>&1; then
	apt_install chromium
fi

jar="$tools/node_modules/amplify-dynamodb-simulator/emulator/DynamoDBLocal.jar"
if [ ! -f "$jar" ]; then
	echo "test-deps: npm install amplify-dynamodb-simulator into $tools" >&2
	mkdir -p "$tools"
	npm install --prefix "$tools" --no-audit --no-fund --ignore-scripts --loglevel=error amplify-dynamodb-simulator >/dev/null
fi
if [ ! -f "$jar" ]; then
	echo "test-deps: $jar is missing after npm install" >&2
	exit 1
fi
# npm_tool PACKAGE@VERSION FILE: installs the package under .tools/ unless
# FILE, one of its files, is there already. Versions are pinned so that
# every machine tests against the same emulator.
npm_tool() {
	local pkg=$1 file=$2
	if [ ! -f "$file" ]; then
		echo "test-deps: npm install $pkg into $tools" >&2
		mkdir -p "$tools"
		npm install --prefix "$tools" --no-audit --no-fund --ignore-scripts --loglevel=error "$pkg" >/dev/null
	fi
	if [ ! -f "$file" ]; then
		echo "test-deps: $file is missing after npm install" >&2
		exit 1
	fi
}
npm_tool kinesalite@3.3.3 "$tools/node_modules/kinesalite/cli.js"
npm_tool s3rver@3.7.1 "$tools/node_modules/s3rver/bin/s3rver.js"
echo "test-deps: prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}'), $(chromium --version 2>/dev/null | head -1), DynamoDB Local at ${jar%/*}, kinesalite and s3rver under $tools/node_modules" >&2
