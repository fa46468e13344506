// Package release is ratelua's release machinery: it finds the modules of
// the repository from the tree (every go.mod; a module is released unless
// its go.mod carries the line "// ratelua: not released"), checks that
// they require each other at the version of the newest CHANGELOG.md entry,
// names the tags to create, and proves that a user can install what we
// ship: it writes a file-system module proxy from the tree, with each
// released module zipped as the Go command would, and builds a module
// outside the repository that fetches every released module from that
// proxy with an empty module cache.
//
// It lives in the test-only module integration/, so that its dependency
// (golang.org/x/mod) never reaches the root module's go.mod.
package release
