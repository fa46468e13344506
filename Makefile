# The commands the README names.
GO ?= go

.PHONY: test test-docker deps servers callers vet generate check-generated fuzz demo bench-clients

# The nested modules whose tests make test runs after the root module's:
# the test bench, each adapter and front (each requiring its client or
# framework at the oldest version it supports), and integration/, every
# real-server suite (the core package's, the command's, the middleware's)
# through every adapter at the newest versions. bench/ is a module too, run
# by make bench.
MODULES := testbench goredis valkeygo ratemini rategrpc rateotel ratehttp/internal/sfvtest integration

## test: install the servers and the other languages' callers if missing,
## download every module's dependencies, vet, check the generated scripts,
## then every test: the root module (hermetic: luatest, models, fuzz seeds,
## properties, examples on the embedded engine; the command and the
## middleware without servers), each nested module in MODULES on real
## redis-server and valkey-server (a missing server skips them, except
## under CI=true), then test-docker. Prints how many real-server cases ran
## per family and topology, per adapter, and on Docker.
test: servers callers deps vet check-generated
	@rm -f .cases
	$(GO) test -count=1 ./...
	@for m in $(MODULES); do \
		echo "cd $$m && $(GO) test -count=1 ./..."; \
		(cd $$m && RATELUA_CASES=$(CURDIR)/.cases $(GO) test -count=1 -timeout 20m ./...) || exit 1; \
	done
	@cd integration && $(GO) run ./internal/cmd/casereport $(CURDIR)/.cases
	@rm -f .cases
	@$(MAKE) --no-print-directory test-docker

## deps: download the dependencies of ratelua and of every nested module
## (from the module proxy; nothing but Go is needed)
deps:
	$(GO) mod download
	@for m in $(MODULES) bench rls; do (cd $$m && $(GO) mod download) || exit 1; done
	cd rls/reference && GOWORK=off $(GO) mod download
	cd rls/statsref && GOWORK=off $(GO) mod download

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
CLUSTER_SUITE_PKG ?= ./core
CLUSTER_SUITE_RUN ?= ^TestCluster
test-docker: servers
	@if bash .ci/install-docker status; then stop=:; else stop='bash .ci/install-docker stop'; fi; \
	trap "$$stop" EXIT; \
	if ! RATELUA_LOCAL_IMAGE='$(DOCKER_IMAGE)' bash .ci/install-docker; then \
		[ "$$CI" != true ] || { echo "docker: no engine or image, and CI=true: failed"; exit 1; }; \
		echo "docker: skipped (no engine or image; .ci/install-docker said why)"; exit 0; \
	fi; \
	rm -f .cases-docker; \
	export RATELUA_TESTBENCH=docker RATELUA_DOCKER_IMAGE='$(DOCKER_IMAGE)'; \
	echo "cd testbench && $(GO) test -count=1 ./...  # on docker $(DOCKER_IMAGE)"; \
	(cd testbench && $(GO) test -count=1 ./...) || exit 1; \
	echo "cd integration && $(GO) test -count=1 -run '$(CLUSTER_SUITE_RUN)' $(CLUSTER_SUITE_PKG)  # on docker $(DOCKER_IMAGE)"; \
	(cd integration && RATELUA_CASES=$(CURDIR)/.cases-docker $(GO) test -count=1 -run '$(CLUSTER_SUITE_RUN)' $(CLUSTER_SUITE_PKG)) || exit 1; \
	awk -F '\t' '$$3 ~ / cluster \(/ { split($$3, w, " "); p = $$3; sub(/^[^(]*\(/, "", p); sub(/\)$$/, "", p); \
		if (p !~ /^docker / || $$4 == "fail") bad = 1; \
		if ($$4 == "pass") { n[w[1]]++; v[w[1]] = w[2] } } \
		END { if (bad || !n["redis"] || !n["valkey"]) { print "docker: the cluster suite did not run on Docker:"; exit 1 } \
			print "docker: redis " v["redis"] " cluster " n["redis"] " / valkey " v["valkey"] " cluster " n["valkey"] }' \
		.cases-docker || { cat .cases-docker 2>/dev/null; exit 1; }; \
	rm -f .cases-docker

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
	cd integration && $(GO) test -run '^$$' -bench '^BenchmarkAllowCanned$$' -benchtime $(BENCHTIME) ./core
	cd goredis && $(GO) test -run '^$$' -bench '^BenchmarkAllowCanned$$' -benchtime $(BENCHTIME) .
	cd valkeygo && $(GO) test -run '^$$' -bench '^BenchmarkAllowCanned$$' -benchtime $(BENCHTIME) .

## bench-versions: the server cost of script version B against A, script
## by script, in paired rounds on both servers (bench/ab-versions.sh; the
## servers and scripts can be changed: bench/ab-versions.sh valkey-server 5
## 6 token_bucket). A = B measures the noise of the method; v6 (in
## development) is measured against v5 (released in 0.1.0) with A=5 B=6.
A ?= 5
B ?= 5
.PHONY: bench-versions
bench-versions: servers
	bash bench/ab-versions.sh redis-server $(A) $(B)
	bash bench/ab-versions.sh valkey-server $(A) $(B)

## release: check that the tree is ready to release the version of
## CHANGELOG.md's newest entry ("## 0.2.0 (2026-11-26)"), then create the
## annotated tags of every released module at HEAD (v0.2.0,
## goredis/v0.2.0, ...; a tag already at HEAD is kept, one elsewhere is an
## error). The modules are found from the tree (every go.mod; released
## unless the go.mod says "// ratelua: not released"). Checks: generated
## files current; every nested module requires the tree's modules at that
## version with a replace to their folder (in its go.mod, or in a go.work
## beside it for a module holding a command, since go install refuses a
## go.mod with a replace); gofmt; every module tidy (go mod tidy -diff)
## and vetted; nothing left uncommitted; and a user outside the repository
## can install the release from a module proxy written from the tree and
## go install every command (integration/cmd/release). Flags for the
## command go in RELEASEFLAGS (-uncommitted, -v); make release-check runs
## the checks alone.
.PHONY: release
release: check-generated
	cd integration && $(GO) run ./cmd/release -root .. -tag $(RELEASEFLAGS)

## release-check: the checks of make release, creating no tag
.PHONY: release-check release-sums
release-check: check-generated
	cd integration && $(GO) run ./cmd/release -root .. $(RELEASEFLAGS)

## release-sums: before make release, with every change committed: write
## the go.sum of each module developed through a go.work (rls: its go.mod
## has no replace) for the tree's modules at the release version, as a
## proxy makes them from HEAD; commit it, then make release (the tidy
## check needs it)
release-sums:
	cd integration && $(GO) run ./cmd/release -root .. -sums

## generate: write every generated file from lua/src and the code that
## answers for them (go run ./internal/luagen/cmd/luagen -write, which go
## generate runs too): lua/*.lua, the Functions libraries and
## lua/manifest.json; the copies of every script version in
## python/ratelua/lua and node/lua, and of LICENSE in python/ and node/; the
## key vectors testdata/keyvectors.json the packages check (from the Go
## API); the client-address cases testdata/clientaddr.json (Go's clientaddr
## answers them; the Python and Node resolvers must agree); the scripts
## table of lua/README.md; README.md's generated blocks (costs from
## BENCHMARKS.md: instructions, and memory from its main tables; raw
## calls). Only files that differ are written.
generate:
	$(GO) run ./internal/luagen/cmd/luagen -write

## check-generated: fail naming every generated file (the ones make
## generate writes) that is stale, missing or left over, with an excerpt of
## where it differs; writes nothing. The only check of generated files.
check-generated:
	$(GO) run ./internal/luagen/cmd/luagen -check

## mutants: the planted bugs of mutants/, a test of the tests: each patch
## applied to a temporary copy of the tree, its test command run (it must
## fail); every bug must be caught (mutants/README.md). The whole set is
## a manual target (about 15 minutes on two cores). mutants-ci, which
## .ci/run runs after make test, is the subset in which every file that
## some planted bug edits is edited by one of them; mutants-cheap runs the
## checks whose command takes under 30 s.
.PHONY: mutants mutants-cheap mutants-ci
mutants: servers
	bash mutants/run
mutants-cheap: servers
	bash mutants/run --cheap
MUTANTS_CI_FLAGS ?=
mutants-ci: servers
	bash mutants/run --ci $(MUTANTS_CI_FLAGS)

## fuzz: run each script's fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	for f in FuzzSlidingWindow FuzzAR1 FuzzZSetLog FuzzTokenBucket FuzzFixedWindow FuzzConcurrency FuzzGoRefusesWhatScriptsRefuse FuzzEventKeySlot; do \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) . || exit 1; \
	done
	$(GO) test -run '^$$' -fuzz '^FuzzClientKey$$' -fuzztime $(FUZZTIME) ./clientaddr
	$(MAKE) --no-print-directory fuzz-clientaddr FUZZTIME=$(FUZZTIME)

## fuzz-clientaddr: the differential fuzz of client addresses, Go's
## clientaddr against the Python and Node packages' resolvers (random
## options, peers and field lines through one python3 and one node process,
## every answer compared), for FUZZTIME; make test runs 3000 cases of it
## (go test ./clientaddr). A difference prints the case as a line of
## testdata/clientaddr.json and the seed that repeats the run.
.PHONY: fuzz-clientaddr
fuzz-clientaddr:
	$(GO) test -count=1 -timeout 0 -run '^TestClientAddrDifferential$$' -v ./clientaddr -clientaddr.fuzztime=$(FUZZTIME)

## demo: the seed's login case (1 per 5 s and 5 per hour) as a timeline, on
## the embedded engine; ADDR=host:port runs it against a server or cluster
demo:
	$(GO) run ./cmd/ratelua demo $(if $(ADDR),--addr $(ADDR))

## bench: server cost per decision and bytes per key of every ratelua script,
## on the newest version (the Go API's default) and pinned to v5, beside the
## floor, the peers, the seeds' designs (baselines) and each job's minimum
## (only the commands it cannot avoid); scaling sweeps of sliding_window
## (buckets, limits) and zset_log (max); client ns/op and allocs/op on a
## canned reply; decisions/s on one node and a six-node cluster; on
## redis-server then valkey-server (pinned with taskset). Writes
## BENCHMARKS.md and bench/charts/*.png. A separate Go module (bench/), so the
## peers' dependencies stay out of ratelua's go.mod. About an hour.
## SECTIONS (instructions,main,sweep,client,cluster,hotkeys) and ROUNDS (3; the
## best is quoted) choose what runs; BENCHMARKS.md keeps its part for each
## section left out (e.g. SECTIONS=client rewrites only the client table). The instructions section (first, about
## 4 minutes) counts every main-table row's instructions per decision
## inside the server's call() under callgrind, in four workloads (fresh
## keys, 4 calls per key, denied, long-lived keys): deterministic, the
## figure BENCHMARKS.md leads with; alone it rewrites only its part:
##   make bench SECTIONS=instructions
## The hotkeys section (about a minute a round) measures decisions/s on one
## hot key with and without Options.HotKeys, 1 to 4 processes, both servers;
## alone it rewrites only its part:
##   make bench SECTIONS=hotkeys
## Issue 24's targets need the main section only:
##   make bench SECTIONS=main ROUNDS=2     # both servers, about 17 minutes
## BENCHFLAGS adds flags, e.g. a subset:
##   make bench SECTIONS=main ROUNDS=1 BENCHFLAGS='-only "token_bucket|GCRA" -dur 1s'
## (-only: a regexp on contender names; -servers redis: one server)
SECTIONS ?= instructions,main,sweep,client,cluster,hotkeys
ROUNDS ?= 3
.PHONY: bench
bench:
	cd bench && $(GO) run . -out .. -sections '$(SECTIONS)' -rounds $(ROUNDS) $(BENCHFLAGS)

## example-http: the example service of examples/http (a login and an API
## behind ratehttp) on http://127.0.0.1:8080, its limiters on the embedded
## engine; ADDR=host:port runs them on a server or cluster
.PHONY: example-http
example-http:
	$(GO) run ./examples/http $(if $(ADDR),--addr $(ADDR))

## example-llm: the example LLM API of examples/llm (tokens per minute and
## per day per API key, reserved from max_tokens and settled with the usage
## a fake model reports) on http://127.0.0.1:8080, its limiter on the
## embedded engine; ADDR=host:port runs it on a server or cluster
.PHONY: example-llm
example-llm:
	$(GO) run ./examples/llm $(if $(ADDR),--addr $(ADDR))
## test-rls: ratelua-rls (rls/, built through rls/go.work): vet, its tests on real redis-server and
## valkey-server (the command's graceful stop on SIGTERM, its OTLP metrics),
## and the comparison with envoyproxy/ratelimit (rls/reference/: builds the
## reference's service from its pinned pseudo-version and ratelua-rls, runs
## each on its own server, single node and six-node cluster, redis-server
## and valkey-server, with the configurations of
## rls/reference/testdata/config and the same seeded request streams, and
## compares every answer, /json, and every rule's statistics), the mixed
## fleet (both services on ONE server, requests alternated, exactly each
## limit admitted, only the reference's keys), and the statistics'
## comparison (rls/statsref/: both services exporting to statsd over UDP,
## dogstatsd and Prometheus for the same requests: same names, same
## values). Prints how many requests agreed. About 2 min. A missing server skips, except under
## CI=true.
.PHONY: test-rls bench-rls
test: test-rls
test-rls: servers
	@rm -f .rls-report
	cd rls && $(GO) vet ./... && $(GO) test -count=1 ./...
	@# rls/reference replaces the tree's modules in its go.mod; GOWORK=off keeps
	@# go from taking rls/go.work, which does not list it.
	cd rls/reference && GOWORK=off $(GO) vet . && GOWORK=off RLS_REPORT=$(CURDIR)/.rls-report $(GO) test -count=1 -p 1 .
	@# rls/statsref: the statistics each service exports (statsd, dogstatsd,
	@# Prometheus) for the same requests, the reference running for real.
	cd rls/statsref && GOWORK=off $(GO) vet . && GOWORK=off $(GO) test -count=1 -p 1 .
	@cat .rls-report 2>/dev/null || echo "rls: no comparison report (the comparison did not run)"
	@rm -f .rls-report

## bench-rls: the same gRPC load on envoyproxy/ratelimit and ratelua-rls
## (1, 8 and 32 concurrent clients; 1 and 5 descriptors per request over
## 1,000 keys; RLS_BENCH_SECONDS each, default 5): requests per second and
## p50/p99 latency of each, ratelua-rls's as ratios to the reference's.
## RLS_BENCH_BEFORE=<a ratelua-rls binary> adds it to the same run (e.g. the
## last release's: go install github.com/ratelua/ratelua/rls/cmd/ratelua-rls@v0.2.0);
## RLS_BENCH_STATSD=1 runs every service with statsd on (the reference's default).
bench-rls: servers
	cd rls/reference && GOWORK=off $(GO) test -count=1 -run '^$$' -bench AgainstReference -benchtime=1x .

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

## test-newest: each adapter with the newest release of its client or
## framework (.ci/test-newest), while its go.mod keeps the oldest its tests
## pass with, which make test runs. make test runs it for rategrpc and
## rateotel: integration/ already runs goredis, valkeygo and ratemini on
## the newest go-redis, valkey-go and miniredis (its go.mod requires them).
## NEWEST=goredis valkeygo ratemini rategrpc rateotel runs them all.
NEWEST ?= rategrpc rateotel
.PHONY: test-newest
test: test-newest
test-newest: servers
	bash .ci/test-newest $(NEWEST)

## test-instructions: bench/'s tests, its report writer's and the
## regression guard on the scripts' cost (TestInstruction*): a row per script on its newest version
## (and the multi-limit token_bucket and ar1 rows, zset_log's reserve + settle), on
## redis-server and valkey-server under callgrind, instructions per
## decision inside call() at most 3% above the committed baseline
## bench/testdata/instructions.json, and a copy of token_bucket with one
## redis.call more caught by it. Counts instructions, not time: it holds on
## a busy machine. About 20 s. A missing valgrind or server skips, except
## under CI=true. After a change to a script that is meant to cost more (or
## that costs less): make instructions-baseline, and commit the file.
.PHONY: test-instructions instructions-baseline valgrind
test: test-instructions
test-instructions: servers valgrind
	cd bench && $(GO) test -count=1 .
instructions-baseline: servers valgrind
	cd bench && RATELUA_WRITE_INSTRUCTIONS=1 $(GO) test -count=1 -run '^TestInstructionBaseline$$' .

## valgrind: install valgrind when missing (.ci/install-valgrind, Debian's
## package, needs root); when that fails the guard skips, except under
## CI=true, where this fails
valgrind:
	@bash .ci/install-valgrind || [ "$$CI" != true ]
