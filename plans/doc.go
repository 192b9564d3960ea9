// Package plans is the configuration domain over the configuration model
// (package config) and its storage (package configdb), built by New as a
// Domain of parts that share the storage, the settings and the observers.
//
// Service is the life of a config plan: planning (planner.go,
// planchecks.go), rebase, restore (restore.go), applying (apply.go,
// applytx.go, applychecks.go, material.go, commitresolve.go), and the reads
// of plans and their events. Beside it stand Environments (with their
// policies and token activity), Keys (API keys and the authentication
// cache), Revisions (their reads), Connections (connection tests), Reads
// (the management log, the export) and Retention (the sweep). A plan's JSON
// is written and read by hand (encode.go, decode.go).
//
// A comment's "§N" is a section, and "row N" a row of the apply's error table
// (§6), of the contract as docs/contract.md states it.
package plans
