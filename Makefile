# The commands the README names.
GO ?= go

.PHONY: test servers vet generate check-generated fuzz

## test: vet, then every test (no server needed for the script suite; the
## real-server tests, via internal/testserver, skip when redis-server or
## valkey-server is missing, except under CI=true where they fail)
test: servers vet check-generated
	$(GO) test -count=1 ./...

## servers: only when CI=true, install redis-server (7.0) and valkey-server
## (8.x) with .ci/install-servers (needs root and apt; a no-op once both are
## on PATH). Elsewhere it does nothing, since developers may not be root:
## install them yourself, or point RATELUA_REDIS_SERVER and
## RATELUA_VALKEY_SERVER at the binaries.
servers:
	@if [ "$(CI)" = true ]; then bash .ci/install-servers; fi

vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

## generate: rebuild lua/*.lua and lua/manifest.json from lua/src
generate:
	$(GO) generate ./...

## check-generated: fail if lua/ is not what lua/src generates
check-generated:
	$(GO) test -count=1 -run 'TestGenerated' .

## fuzz: run each script's fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	for f in FuzzSlidingWindow FuzzAR1 FuzzZSetLog FuzzTokenBucket; do \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) . || exit 1; \
	done
