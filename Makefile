# The commands the README names.
GO ?= go

.PHONY: test deps servers callers vet generate check-generated fuzz demo bench-clients

# The nested modules whose tests make test runs: the client adapters, each
# requiring its client library, and the integration suite that runs every
# adapter on real servers. (bench/ is a module too, run by make bench.)
MODULES := goredis valkeygo miniredis integration

## test: install the servers and the other languages' callers if missing,
## download every module's dependencies, vet, then every test: the script
## suite in luatest, the real-server tests and examples on redis-server and
## valkey-server (a missing server skips them, except under CI=true), each
## adapter module's tests, and the integration suite through every adapter.
## Prints how many real-server cases ran per family and topology, and per
## adapter.
test: servers callers deps vet check-generated
	@rm -f .server-cases .adapter-cases
	RATELUA_SERVER_CASES=$(CURDIR)/.server-cases $(GO) test -count=1 ./...
	@for m in $(MODULES); do \
		echo "cd $$m && $(GO) test -count=1 ./..."; \
		(cd $$m && RATELUA_ADAPTER_CASES=$(CURDIR)/.adapter-cases $(GO) test -count=1 ./...) || exit 1; \
	done
	@cat .server-cases 2>/dev/null || echo "server cases: no report (the root package did not run)"
	@cat .adapter-cases 2>/dev/null || echo "adapter cases: no report (the integration suite did not run)"
	@rm -f .server-cases .adapter-cases

## deps: download the dependencies of ratelua and of every nested module
## (from the module proxy; nothing but Go is needed)
deps:
	$(GO) mod download
	@for m in $(MODULES) bench; do (cd $$m && $(GO) mod download) || exit 1; done

## servers: install redis-server (7.0) and valkey-server (8.x) when either is
## missing, with .ci/install-servers (a no-op once both are on PATH; installing
## needs root and apt). The real-server tests and examples need both.
servers:
	@bash .ci/install-servers

## callers: install the Python and Node callers' clients for the conformance
## test (python3-redis, ioredis), with .ci/install-callers (a no-op once
## installed).
callers:
	@bash .ci/install-callers

vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	@for m in $(MODULES) bench; do (cd $$m && $(GO) vet ./...) || exit 1; done

## bench-clients: the client side of one Allow (a canned reply, no network)
## on each client: rueidis (native), go-redis, valkey-go
BENCHTIME ?= 2s
bench-clients:
	$(GO) test -run '^$$' -bench '^BenchmarkAllowCanned$$' -benchtime $(BENCHTIME) .
	cd goredis && $(GO) test -run '^$$' -bench '^BenchmarkAllowCanned$$' -benchtime $(BENCHTIME) .
	cd valkeygo && $(GO) test -run '^$$' -bench '^BenchmarkAllowCanned$$' -benchtime $(BENCHTIME) .

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

## demo: the seed's login case (1 per 5 s and 5 per hour) as a timeline, on
## the embedded engine; ADDR=host:port runs it against a server or cluster
demo:
	$(GO) run ./cmd/ratelua demo $(if $(ADDR),--addr $(ADDR))

## bench: server cost per decision and bytes per key of every ratelua script,
## the floor, the peers and the seeds' designs (baselines); scaling sweeps of
## sliding_window (buckets, limits) and zset_log (max); client ns/op and
## allocs/op on a canned reply; decisions/s on one node and a six-node
## cluster; on redis-server then valkey-server (pinned with taskset). Writes
## BENCHMARKS.md and bench/charts/*.png. A separate Go module (bench/), so the
## peers' dependencies stay out of ratelua's go.mod. About 17 minutes.
## BENCHFLAGS runs a subset, e.g.
##   make bench BENCHFLAGS='-sections main,client -only "token_bucket|GCRA" -rounds 1 -dur 1s'
## (sections: main,sweep,client,cluster; -only: a regexp on contender names)
.PHONY: bench
bench:
	cd bench && $(GO) run . -out .. $(BENCHFLAGS)
