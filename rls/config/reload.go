package config

import (
	"crypto/sha256"
	"fmt"
	"sync"
)

// Loader loads a configuration directory again when its files change: a
// file edited, added or removed, or the directory (or a parent) swapped
// for another by a symbolic link, as Kubernetes swaps a ConfigMap's. It
// compares the names and contents of the files, not their times, so a
// swap back to older files is a change too. It is safe for concurrent
// use; its loads run one at a time.
type Loader struct {
	// Dir is the configuration directory.
	Dir string
	// IgnoreDotFiles skips files and directories whose name starts with
	// '.' (RUNTIME_IGNOREDOTFILES).
	IgnoreDotFiles bool
	// Parse configures the parse of the files.
	Parse ParseOptions

	mu          sync.Mutex
	fingerprint string // of the files last read; "" after a failed read
}

// Loaded is what one Load read.
type Loaded struct {
	// Config is the configuration parsed; nil when the files did not
	// change since the last Load (and force was not set) or on error.
	Config *Config
	// Files is how many files the directory holds.
	Files int
}

// Load reads the directory and parses its files when they changed since
// the last Load, or when force is set. A set of files that fails to parse
// is not parsed again until it changes: Load then returns nothing.
func (l *Loader) Load(force bool) (Loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	files, err := ReadDir(l.Dir, l.IgnoreDotFiles)
	if err != nil {
		l.fingerprint = ""
		return Loaded{}, err
	}
	fp := fingerprint(files)
	if fp == l.fingerprint && !force {
		return Loaded{Files: len(files)}, nil
	}
	l.fingerprint = fp
	c, err := Parse(files, l.Parse)
	if err != nil {
		return Loaded{Files: len(files)}, err
	}
	return Loaded{Config: c, Files: len(files)}, nil
}

// fingerprint identifies a set of files by their names and contents.
func fingerprint(files []File) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%d:%s%d:", len(f.Name), f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return string(h.Sum(nil))
}
