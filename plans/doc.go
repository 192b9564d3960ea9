// Package plans is the life of a config plan over the configuration model
// (package config) and its storage (package configdb): planning (planner.go,
// planchecks.go), rebase, applying (apply.go, applytx.go, applychecks.go,
// material.go), revisions and their restore, events, logs and the sweep,
// and the environments, API keys and policies the API serves. A plan's JSON
// is written and read by hand (encode.go, decode.go).
//
// A comment's "§N" is a section, and "row N" a row of the apply's error table
// (§6), of the contract as docs/contract.md states it.
package plans
