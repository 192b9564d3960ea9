// Package e2e holds the tests that build and run the real keenauthd binary:
// several serve processes over one PostgreSQL database and a redis-server
// of the test's own, driven over HTTP.
package e2e
