//go:build !unix

package testbench

import "os"

// No SIGSTOP and SIGCONT here: process.Pause and Resume report it.
var sigStop, sigCont os.Signal
