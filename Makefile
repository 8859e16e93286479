# hotkeyd build and test entry points. `make test` is what CI runs.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2

.PHONY: all build demo test test-deps check lint bench fuzz clean

all: build

build:
	$(GO) build -o hotkeyd ./cmd/hotkeyd

demo:
	$(GO) run ./cmd/hotkeyd demo

# test installs what the tests need (Prometheus, DynamoDB Local), checks
# formatting and vet, and runs every test with the race detector, then the
# memory bounds, which the race detector's instrumentation would skew.
test: test-deps check
	$(GO) test -race -count=1 -timeout 15m ./...
	$(GO) test -count=1 -run '^TestFootprint' ./sketch/

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
