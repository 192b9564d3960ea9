// Package faults injects faults into two real keenauthd replicas — lost
// PostgreSQL connections at random moments and around COMMIT, terminated
// backends, a replica killed mid-apply, Redis flushed, killed and started again, or
// cut off — and checks,
// by reading the database after each, that no apply was partial or doubled,
// no plan stays applying past its lease, and no answer left the contract.
//
//	go test ./test/faults/ -faults 1000 -seed N   (make faults N=1000)
package faults
