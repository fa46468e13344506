// Package manifest is what the runtime needs to read lua/manifest.json and
// to name scripts and Functions libraries: the manifest's types and the
// naming rules. The generator (internal/luagen) writes what this package
// reads; the runtime never imports the generator.
package manifest

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
)

// Entry is one script version in the manifest.
type Entry struct {
	Name    string   `json:"name"`
	Version int      `json:"version"`
	File    string   `json:"file"`
	SHA1    string   `json:"sha1"`
	Keys    []string `json:"keys"`
	Argv    []string `json:"argv"`
	Limit   []string `json:"limit"`
	Reply   []string `json:"reply"`
	Fresh   string   `json:"fresh"`
	State   string   `json:"state"`
	// StateVersion is the version whose state this one reads and writes:
	// its own, or an earlier one whose layout and meaning it keeps exactly,
	// so that both may run on one key (a rolling upgrade keeps its state).
	StateVersion int    `json:"state_version"`
	Cost         string `json:"cost"`
	// Function is the Redis Functions name of the script in Library.
	Function string `json:"function"`
	// Library is the Functions library (and its file in lua/) that
	// registers Function.
	Library string `json:"library"`
}

// Manifest is the checked-in lua/manifest.json: everything a caller in any
// language needs to call the scripts by EVALSHA.
type Manifest struct {
	Comment string  `json:"comment"`
	Scripts []Entry `json:"scripts"`
}

// ParseFileName splits "name.vN.lua" into its name and version: the name
// a lower-case letter and then lower-case letters, digits and '_', the
// version a decimal integer >= 1 without leading zeros.
func ParseFileName(file string) (string, int, bool) {
	rest, ok := strings.CutSuffix(file, ".lua")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndex(rest, ".v")
	if i < 1 {
		return "", 0, false
	}
	name, digits := rest[:i], rest[i+2:]
	if name[0] < 'a' || name[0] > 'z' || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return "", 0, false
	}
	if digits == "" || digits[0] == '0' || len(digits) > 9 || strings.Trim(digits, "0123456789") != "" {
		return "", 0, false
	}
	version, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	return name, version, true
}

// SHA1 returns the hex SHA1 of a script, as SCRIPT LOAD and EVALSHA use it.
func SHA1(source []byte) string {
	sum := sha1.Sum(source)
	return hex.EncodeToString(sum[:])
}

// LibraryName is the Redis Functions library of a release: ratelua_v<N>.
func LibraryName(version int) string { return "ratelua_v" + strconv.Itoa(version) }

// FunctionName is the function a script version registers in its library.
func FunctionName(name string, version int) string {
	return "ratelua_" + name + "_v" + strconv.Itoa(version)
}

// LibraryFile is the file name of a release's Functions library in lua/.
func LibraryFile(version int) string { return LibraryName(version) + ".library.lua" }
