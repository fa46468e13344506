//go:build !linux

package testbench

import "syscall"

// sysProcAttr has no parent-death signal off Linux; Close still ends the
// servers when the test ends normally.
func sysProcAttr() *syscall.SysProcAttr { return nil }
