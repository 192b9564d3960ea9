# Keenauth config plans. `make help` lists the targets.
.DEFAULT_GOAL := help
GO ?= go

.PHONY: help run dev services test test-race lint bench build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

services: ## start the local PostgreSQL and Redis if they are down
	@bash .ci/services

build: ## build keenauthd and keenauth into bin/
	$(GO) build -o bin/ ./cmd/...

run: services ## run keenauthd serve against the local PostgreSQL and Redis
	KEENAUTHD_IDEMPOTENCY_SECRET=$${KEENAUTHD_IDEMPOTENCY_SECRET:-dev-only-secret} $(GO) run ./cmd/keenauthd serve

test: services ## the test suite (race detector on), against the real PostgreSQL and Redis
	$(GO) test -race -count=1 -timeout 20m ./...

test-race: test ## same as test: the suite always runs with -race

lint: ## gofmt, go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
