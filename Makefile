# The commands the README names.
GO ?= go

.PHONY: test servers vet generate check-generated fuzz demo

## test: install the servers if missing, vet, then every test: the script
## suite in luatest, and the real-server tests and examples on redis-server and
## valkey-server (a missing server skips them, except under CI=true)
test: servers vet check-generated
	@rm -f .server-cases
	RATELUA_SERVER_CASES=$(CURDIR)/.server-cases $(GO) test -count=1 ./...
	@cat .server-cases 2>/dev/null || echo "server cases: no report (the root package did not run)"
	@rm -f .server-cases

## servers: install redis-server (7.0) and valkey-server (8.x) when either is
## missing, with .ci/install-servers (a no-op once both are on PATH; installing
## needs root and apt). The real-server tests and examples need both.
servers:
	@bash .ci/install-servers

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
	for f in FuzzSlidingWindow FuzzAR1 FuzzZSetLog FuzzTokenBucket FuzzGoRefusesWhatScriptsRefuse FuzzEventKeySlot; do \
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

## test-rateotel: vet and test the OpenTelemetry adapter (the nested module
## rateotel/, so its SDK stays out of ratelua's go.mod) on real servers;
## make test runs it.
.PHONY: test-rateotel
test: test-rateotel
test-rateotel: servers
	cd rateotel && $(GO) vet ./... && $(GO) test -count=1 ./...
