// Command luagen writes the released scripts in lua/ from their sources in
// lua/src, and lua/manifest.json. Run it with go generate from the module
// root.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratelua/ratelua/internal/luagen"
)

func main() {
	if err := run("lua"); err != nil {
		fmt.Fprintln(os.Stderr, "luagen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	scripts, err := luagen.AssembleAll(os.DirFS(dir), "src")
	if err != nil {
		return err
	}
	for file, text := range scripts {
		if err := os.WriteFile(filepath.Join(dir, file), text, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
	}
	versions := map[int]bool{}
	for file := range scripts {
		if _, v, ok := luagen.ParseFileName(file); ok {
			versions[v] = true
		}
	}
	for v := range versions {
		library, err := luagen.SharedLibrary(os.DirFS(dir), "src", v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, luagen.LibraryFile(v)), library, 0o644); err != nil {
			return fmt.Errorf("write library: %w", err)
		}
	}
	manifest, err := luagen.Build(scripts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}
