package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one configuration file: the name its errors carry and its text.
type File struct {
	Name string
	Data []byte
}

// ReadDir reads every regular file under dir, recursively, ordered by path,
// as the reference's runtime loader does: names are paths relative to dir.
// With ignoreDotFiles, files and directories whose name starts with '.'
// are skipped (RUNTIME_IGNOREDOTFILES).
func ReadDir(dir string, ignoreDotFiles bool) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ignoreDotFiles && path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(path) // follows symbolic links
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		data, err := readAtMost(path, MaxFileBytes+1)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			rel = path
		}
		files = append(files, File{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rls: reading the configuration directory: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// readAtMost reads the first n bytes of the file at path (Parse refuses a
// file longer than MaxFileBytes without the rest).
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// Load reads and parses every file under dir.
func Load(dir string, ignoreDotFiles bool, opts ParseOptions) (*Config, error) {
	files, err := ReadDir(dir, ignoreDotFiles)
	if err != nil {
		return nil, err
	}
	return Parse(files, opts)
}
