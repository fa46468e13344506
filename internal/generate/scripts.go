package generate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ratelua/ratelua/internal/luagen"
)

// Scripts returns the first stage, everything in lua/ that lua/src makes:
// each script version (lua/<name>.v<N>.lua), each release's Functions
// library (lua/ratelua_v<N>.library.lua) and lua/manifest.json.
func Scripts(root string) (Output, error) {
	var out Output
	lua := os.DirFS(filepath.Join(root, "lua"))
	scripts, err := luagen.AssembleAll(lua, "src")
	if err != nil {
		return out, err
	}
	var versions []int
	for file, text := range scripts {
		if err := out.add("lua/"+file, text); err != nil {
			return out, err
		}
		if _, v, ok := luagen.ParseFileName(file); ok && !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	slices.Sort(versions)
	for _, v := range versions {
		library, err := luagen.SharedLibrary(lua, "src", v)
		if err != nil {
			return out, err
		}
		if err := out.add("lua/"+luagen.LibraryFile(v), library); err != nil {
			return out, err
		}
	}
	manifest, err := luagen.Build(scripts)
	if err != nil {
		return out, fmt.Errorf("generate: %w", err)
	}
	return out, out.add("lua/manifest.json", manifest)
}
