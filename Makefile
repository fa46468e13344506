# The commands the README names.
GO ?= go

.PHONY: test test-docker deps servers callers vet generate check-generated fuzz demo bench-clients

# The nested modules whose tests make test runs: the client adapters, each
# requiring its client library, and the integration suite that runs every
# adapter on real servers. (bench/ is a module too, run by make bench; the
# HTTP and gRPC fronts' modules run in test-services.)
MODULES := goredis valkeygo miniredis integration

## test: install the servers and the other languages' callers if missing,
## download every module's dependencies, vet, then every test: the script
## suite in luatest, the real-server tests and examples on redis-server and
## valkey-server (a missing server skips them, except under CI=true), each
## adapter module's tests, and the integration suite through every adapter;
## then test-services and test-docker. Prints how many real-server cases ran
## per family and topology, per adapter, and on Docker.
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
	@$(MAKE) --no-print-directory test-docker

## deps: download the dependencies of ratelua and of every nested module
## (from the module proxy; nothing but Go is needed)
deps:
	$(GO) mod download
	@for m in $(MODULES) bench rategrpc rateotel ratehttp/internal/sfvtest; do (cd $$m && $(GO) mod download) || exit 1; done

## test-docker: the testbench suite and the six-node cluster suite once more
## with every server in a Docker container of DOCKER_IMAGE (testbench's
## Docker provider: RATELUA_TESTBENCH=docker, RATELUA_DOCKER_IMAGE), for both
## server families, and the line "docker: redis <version> cluster <cases> /
## valkey <version> cluster <cases>". .ci/install-docker makes the engine
## (dockerd, started here is stopped here) and the image, from the installed
## servers. When that fails the run is skipped, except under CI=true, where
## it fails, as does a report that is not from Docker.
DOCKER_IMAGE ?= ratelua/servers:local
## The cluster suite: its package and its tests (go test -run).
CLUSTER_SUITE_PKG ?= .
CLUSTER_SUITE_RUN ?= ^TestCluster
test-docker: servers
	@if bash .ci/install-docker status; then stop=:; else stop='bash .ci/install-docker stop'; fi; \
	trap "$$stop" EXIT; \
	if ! RATELUA_LOCAL_IMAGE='$(DOCKER_IMAGE)' bash .ci/install-docker; then \
		[ "$$CI" != true ] || { echo "docker: no engine or image, and CI=true: failed"; exit 1; }; \
		echo "docker: skipped (no engine or image; .ci/install-docker said why)"; exit 0; \
	fi; \
	rm -f .server-cases-docker; \
	export RATELUA_TESTBENCH=docker RATELUA_DOCKER_IMAGE='$(DOCKER_IMAGE)'; \
	echo "$(GO) test -count=1 ./testbench/  # on docker $(DOCKER_IMAGE)"; \
	$(GO) test -count=1 ./testbench/ || exit 1; \
	echo "$(GO) test -count=1 -run '$(CLUSTER_SUITE_RUN)' $(CLUSTER_SUITE_PKG)  # on docker $(DOCKER_IMAGE)"; \
	RATELUA_SERVER_CASES=$(CURDIR)/.server-cases-docker $(GO) test -count=1 -run '$(CLUSTER_SUITE_RUN)' $(CLUSTER_SUITE_PKG) || exit 1; \
	awk -F ', cluster: ' 'NF == 2 { split($$1, w, " "); p = $$1; sub(/^[^(]*\(/, "", p); sub(/\)$$/, "", p); \
		if (p !~ /^docker / || $$2 + 0 == 0) bad = 1; \
		line = line sep w[4] " " w[5] " cluster " $$2; sep = " / "; n++ } \
		END { if (n != 2 || bad) { print "docker: the cluster suite did not run on Docker:"; exit 1 } print "docker: " line }' \
		.server-cases-docker || { cat .server-cases-docker 2>/dev/null; exit 1; }; \
	rm -f .server-cases-docker

## servers: install redis-server (7.0) and valkey-server (8.x) when either is
## missing, with .ci/install-servers (a no-op once both are on PATH; installing
## needs root and apt). The real-server tests and examples need both.
servers:
	@bash .ci/install-servers

## callers: install what the Python and Node callers in examples/ need
## (python3-redis from Debian, ioredis pinned in examples/node; Debian's
## nodejs and npm when missing) with .ci/install-callers (a no-op once
## installed). TestConformance runs them.
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

## bench-versions: the server cost of v5 against v4, script by script, in
## paired rounds on both servers (bench/ab-versions.sh; A, B and the servers
## can be changed: bench/ab-versions.sh valkey-server 2 4 token_bucket)
.PHONY: bench-versions
bench-versions: servers
	bash bench/ab-versions.sh redis-server 4 5
	bash bench/ab-versions.sh valkey-server 4 5

## generate: rebuild lua/*.lua and lua/manifest.json from lua/src, then
## the copies of the newest scripts in python/ratelua/lua and node/lua and
## the key vectors testdata/keyvectors.json the packages check
generate:
	$(GO) generate ./...
	RATELUA_WRITE_GENERATED=1 $(GO) test -count=1 -run '^TestGenerated(Packages|KeyVectors)$$' .

## check-generated: fail if lua/ is not what lua/src generates, or the
## packages' scripts or testdata/keyvectors.json are stale
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

## test-services: the nested modules of the HTTP and gRPC fronts, on real
## servers: rategrpc (interceptors over a loopback gRPC server) and
## ratehttp/internal/sfvtest (every header field parsed as RFC 9651). Part
## of make test.
.PHONY: test-services
test: test-services
test-services: servers
	cd rategrpc && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd ratehttp/internal/sfvtest && $(GO) vet ./... && $(GO) test -count=1 ./...

## example-http: the example service of examples/http (a login and an API
## behind ratehttp) on http://127.0.0.1:8080, its limiters on the embedded
## engine; ADDR=host:port runs them on a server or cluster
.PHONY: example-http
example-http:
	$(GO) run ./examples/http $(if $(ADDR),--addr $(ADDR))

## test-rateotel: vet and test the OpenTelemetry adapter (the nested module
## rateotel/, so its SDK stays out of ratelua's go.mod) on real servers;
## make test runs it.
.PHONY: test-rateotel
test: test-rateotel
test-rateotel: servers
	cd rateotel && $(GO) vet ./... && $(GO) test -count=1 ./...

## test-lang: the Python (python/) and Node (node/) packages on real servers:
## their pytest and node --test suites on single nodes and six-node clusters
## of redis-server and valkey-server, Go, Python and Node instances sharing
## one limit, the three HTTP middlewares compared on the login case, and the
## wheel and npm tarball installed outside the repository running the login
## case (the integration module's TestLang* tests; make test runs them with
## the rest of the integration module). callers installs Debian's python3-*
## packages and node/'s dev dependencies.
.PHONY: test-lang
test-lang: servers callers
	cd integration && $(GO) test -count=1 -run '^TestLang' .
