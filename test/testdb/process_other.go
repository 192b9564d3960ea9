//go:build !linux

package testdb

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; elsewhere
// the processes are stopped by t.Cleanup alone.
func dieWithParent() *syscall.SysProcAttr { return nil }
