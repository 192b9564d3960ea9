package testdb

import "syscall"

// dieWithParent makes the kernel kill a started process when the test
// binary dies, so that a crashed or killed test leaves no server behind.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
