//go:build unix

package testbench

import "syscall"

var (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
