# The commands the README names.
GO ?= go

.PHONY: test vet generate check-generated fuzz

## test: vet, then every test (no server needed for the script suite)
test: vet check-generated
	$(GO) test -count=1 ./...

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
