package testdb

import "syscall"

// nobody is the user a program that refuses root runs as.
const nobody = 65534

// dieWithParent makes the kernel kill a started process when the test
// binary dies, so that a crashed or killed test leaves no server behind;
// asNobody runs it as the unprivileged user. The process gets a process
// group of its own: a Ctrl-C, which the terminal sends to its whole
// foreground group, reaches the test alone, which can then end its run in
// order (the fault suite prints the table of the faults done) while its
// servers still answer.
func dieWithParent(asNobody bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if asNobody {
		a.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	return a
}
