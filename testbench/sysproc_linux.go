//go:build linux

package testbench

import "syscall"

// sysProcAttr makes the kernel kill a server when the test process dies, so
// no server outlives a crashed or killed test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
