package generate

import (
	"bytes"
	"fmt"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/addrcases"
	"github.com/ratelua/ratelua/internal/luagen"
)

// Fresh reports whether the root package this program was built with
// embeds the first stage (scripts) exactly: its manifest, every script's
// text and every release's library. The second stage (the key vectors,
// README.md's raw calls) asks the embedded scripts, so a program built
// before lua/ changed must be built again to make it.
func Fresh(scripts Output) bool {
	if !bytes.Equal(ratelua.Manifest(), scripts.Files["lua/manifest.json"]) {
		return false
	}
	embedded := ratelua.Scripts()
	seen := 0
	for path, text := range scripts.Files {
		file, ok := cutLua(path)
		if !ok {
			continue
		}
		if name, v, ok := luagen.ParseFileName(file); ok {
			found := false
			for _, s := range embedded {
				if s.Name == name && s.Version == v {
					found = s.Source == string(text)
				}
			}
			if !found {
				return false
			}
			seen++
			if lib, err := ratelua.ReleaseLibrary(v); err != nil || lib.Source != string(scripts.Files["lua/"+luagen.LibraryFile(v)]) {
				return false
			}
		}
	}
	return seen == len(embedded)
}

func cutLua(path string) (string, bool) {
	if len(path) > 4 && path[:4] == "lua/" {
		return path[4:], true
	}
	return "", false
}

// Derived returns the second stage, every file made from the first
// (scripts), from the Go API, from clientaddr and from the pages written by
// hand: the packages' copies and LICENSE, the key vectors, the
// client-address cases, lua/README.md's scripts table and README.md's
// blocks. It needs Fresh(scripts).
func Derived(root string, scripts Output) (Output, error) {
	var out Output
	if !Fresh(scripts) {
		return out, fmt.Errorf("generate: this program embeds other scripts than lua/src makes: build it again after writing lua/")
	}
	merge := func(part Output, err error) error {
		if err != nil {
			return err
		}
		out.Owned = append(out.Owned, part.Owned...)
		for _, p := range part.Paths() {
			if err := out.add(p, part.Files[p]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := merge(Packages(root, scripts)); err != nil {
		return out, err
	}
	keys, err := KeyVectors()
	if err != nil {
		return out, err
	}
	if err := out.add("testdata/keyvectors.json", keys); err != nil {
		return out, err
	}
	vectors, err := addrcases.Vectors()
	if err != nil {
		return out, err
	}
	table, err := addrcases.Table(vectors)
	if err != nil {
		return out, err
	}
	if err := out.add("testdata/clientaddr.json", table); err != nil {
		return out, err
	}
	if err := merge(LuaReadme(root, scripts)); err != nil {
		return out, err
	}
	if err := merge(Readme(root)); err != nil {
		return out, err
	}
	return out, nil
}
