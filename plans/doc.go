// Package plans is the life of a config plan over the configuration model
// (package config) and its storage (package configdb): planning (planner.go,
// planchecks.go), rebase, applying (apply.go, applytx.go, applychecks.go,
// material.go), revisions and their restore, events, logs and the sweep,
// and the environments, API keys and policies the API serves. A plan's JSON
// is written and read by hand (encode.go, decode.go).
package plans
