//go:build !unix

package testbench

import "os"

// lockFile does not lock off Unix: benches in parallel test packages rely
// on probing and on retrying a start that found its port taken.
func lockFile(path string) (*os.File, error) { return nil, nil }

func unlockFile(f *os.File) {}
