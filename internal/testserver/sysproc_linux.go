//go:build linux

package testserver

import "syscall"

// sysProcAttr makes the kernel kill the server when the test process dies,
// so no server outlives a crashed or killed test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
