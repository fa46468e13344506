//go:build !linux

package testserver

import "syscall"

// sysProcAttr has no parent-death signal off Linux; Stop still ends the
// server when the test ends normally.
func sysProcAttr() *syscall.SysProcAttr { return nil }
