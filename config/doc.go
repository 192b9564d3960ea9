// Package config is the configuration model, a leaf that every other
// package of the domain imports: the resource kinds and their permissions
// (kinds.go), the typed specs (specs.go), the document of a plan request and
// its versions member, decoded strictly (document.go, versions.go), the
// validation of specs (validate.go) and the JSON Schema built from the same
// rules (schema.go), the canonical form every spec is stored and compared in
// (canonical.go), the diff between two specs and its inverse (diff.go,
// patch.go), the environment policies' rules (policies.go), what is read of
// a connection spec (connection.go), the ids (ids.go), and the codes and
// problems of the contract (codes.go, problems.go, text.go). It imports neither the storage
// (configdb) nor GORM; display names are folded by config/displayname.
//
// A comment's "§N" is a section, and "row N" a row of the apply's error table
// (§6), of the contract as docs/contract.md states it.
package config
