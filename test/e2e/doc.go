// Package e2e holds the tests that build and run the real keenauthd binary:
// several serve processes over one PostgreSQL database and one Redis
// database number, driven over HTTP.
package e2e
