package generate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// PackageScriptDirs are the folders the Python and Node packages load
// their scripts from: they hold generated files only.
var PackageScriptDirs = []string{"python/ratelua/lua", "node/lua"}

// packageRoots are the packages' folders, which carry a copy of the
// repository's LICENSE: the wheel and the npm tarball include it, and
// neither build can reach a file outside its folder.
var packageRoots = []string{"python", "node"}

// Packages returns the files the Python and Node packages carry, from the
// first stage (scripts) and LICENSE: every script version of the manifest
// (the newest is the packages' default, the older ones can be pinned with
// their version option, as Go's Options.Version), the Functions libraries
// and the manifest itself, byte for byte as in lua/.
func Packages(root string, scripts Output) (Output, error) {
	out := Output{Owned: PackageScriptDirs}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return out, fmt.Errorf("generate: the packages carry the repository's LICENSE: %w", err)
	}
	for _, dir := range packageRoots {
		if err := out.add(dir+"/LICENSE", license); err != nil {
			return out, err
		}
	}
	raw, ok := scripts.Files["lua/manifest.json"]
	if !ok {
		return out, fmt.Errorf("generate: the packages' copies need lua/manifest.json")
	}
	var manifest struct {
		Scripts []struct {
			File    string `json:"file"`
			Library string `json:"library"`
		} `json:"scripts"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return out, fmt.Errorf("generate: lua/manifest.json: %w", err)
	}
	files := map[string][]byte{"manifest.json": raw}
	for _, e := range manifest.Scripts {
		for _, f := range []string{e.File, e.Library} {
			text, ok := scripts.Files["lua/"+f]
			if !ok {
				return out, fmt.Errorf("generate: the manifest names lua/%s, which lua/src does not make", f)
			}
			files[f] = text
		}
	}
	for _, dir := range PackageScriptDirs {
		for name, text := range files {
			if err := out.add(dir+"/"+name, text); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}
