# hotkeyd build and test entry points. `make test` is what CI runs.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2

.PHONY: all build ldflags demo test test-deps check lint bench fuzz clean

# The version, revision and branch hotkeyd version prints (and
# hotkeyd_build_info carries), stamped at link time as Prometheus projects
# do, from git when the tree is a checkout; empty otherwise, when hotkeyd
# falls back to what Go recorded (the module version of go install, the
# VCS revision of a build in a checkout) or says unknown. Set them to
# override: make build VERSION=1.2.3.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
BRANCH   ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) -X $(VERSION_PKG).Branch=$(BRANCH)

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o hotkeyd ./cmd/hotkeyd

# ldflags prints the flags build links with (TestMakefileStampsVersion).
ldflags:
	@echo '$(LDFLAGS)'

demo:
	$(GO) run ./cmd/hotkeyd demo

# test installs what the tests need (Prometheus, DynamoDB Local), checks
# formatting and vet, and runs every test with the race detector, then the
# memory bounds, which the race detector's instrumentation would skew, and
# analyze's incidents on every scenario and its reports on every worker
# count, seed and format, which it slows ten- to fifteenfold (under it they
# run on one scenario, and one seed, format and worker count).
# The timeout only ends a hung test binary: alone on two cores the suite
# takes about 11 minutes, and twice that beside a second run.
test: test-deps check
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -run '^TestFootprint' ./sketch/
	$(GO) test -count=1 -run '^(TestIncidents|TestNoIncidents|TestReportSameOnEveryWorkerCount)$$' ./internal/app/analyze/

test-deps:
	./scripts/test-deps.sh

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

lint: check
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

bench:
	./scripts/bench.sh

clean:
	rm -f hotkeyd
