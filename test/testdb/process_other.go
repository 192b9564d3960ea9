//go:build !linux

package testdb

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; elsewhere
// the processes are stopped by t.Cleanup alone (and the tests do not run as
// root).
func dieWithParent(bool) *syscall.SysProcAttr { return nil }
