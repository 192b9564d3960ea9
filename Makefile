# Keenauth config plans. `make help` lists the targets.
.DEFAULT_GOAL := help
GO ?= go

.PHONY: help run dev services pgbouncer browser-deps test test-race lint bench build faults

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

services: ## start the local PostgreSQL and Redis if they are down
	@bash .ci/services

pgbouncer: ## install PgBouncer (Debian package pgbouncer) when it is missing: the tests run one in front of PostgreSQL
	@bash .ci/packages pgbouncer

browser-deps: ## install Debian's chromium when it is missing, and the browser tests' npm packages from test/browser/package-lock.json
	@bash .ci/packages chromium
	cd test/browser && npm ci --no-audit --no-fund

build: ## build keenauthd and keenauth into bin/
	$(GO) build -o bin/ ./cmd/...

run: services ## run keenauthd serve against the local PostgreSQL and Redis
	$(GO) build -o bin/keenauthd ./cmd/keenauthd && KEENAUTHD_IDEMPOTENCY_SECRET=$${KEENAUTHD_IDEMPOTENCY_SECRET:-dev-only-secret} exec bin/keenauthd serve

dev: ## run keenauthd dev: the whole product in one process on embedded storage (no PostgreSQL, Redis or federation service)
	$(GO) build -o bin/keenauthd ./cmd/keenauthd && exec bin/keenauthd dev $(if $(DATA),--data $(DATA))

test: services pgbouncer browser-deps ## the test suite (race detector on) against the real PostgreSQL and Redis, the support console in Chromium (test/console), then the API tests again on the embedded backend of keenauthd dev, and the apply tests through PgBouncer
	$(GO) test -race -count=1 -timeout 20m ./...
	KEENAUTH_TEST_BACKEND=embedded $(GO) test -race -count=1 -timeout 20m ./test/api/...
	KEENAUTH_TEST_PGBOUNCER=1 $(GO) test -race -count=1 -timeout 20m -run 'TestApply' ./test/api/...

test-race: test ## same as test: the suite always runs with -race

faults: services ## the fault suite against two keenauthd replicas, N faults (default 1000; SEED=… replays a run); prints the table
	$(GO) test -count=1 -timeout 0 -v -run TestFaults ./test/faults/ -faults $(or $(N),1000) $(if $(SEED),-seed $(SEED))

bench: services ## the benchmarks of docs/benchmarks.md against a keenauthd it starts (QUICK=1 for a smoke run, PGLOG=1 for PostgreSQL's time per statement); figures in bench.json
	$(GO) run ./test/bench -out bench.json $(if $(QUICK),-quick) $(if $(PGLOG),-pg-log)

lint: ## gofmt, go vet, go mod tidy -diff, staticcheck and govulncheck (pinned; .ci/tools installs them)
	@bash .ci/lint
