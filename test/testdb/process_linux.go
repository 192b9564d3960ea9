package testdb

import "syscall"

// nobody is the user a program that refuses root runs as.
const nobody = 65534

// dieWithParent makes the kernel kill a started process when the test
// binary dies, so that a crashed or killed test leaves no server behind;
// asNobody runs it as the unprivileged user.
func dieWithParent(asNobody bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if asNobody {
		a.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	return a
}
