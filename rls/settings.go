package rls

import "github.com/ratelua/ratelua/rls/settings"

// Setting is one environment variable of ratelua-rls: see
// [settings.Setting].
type Setting = settings.Setting

// Own is the status of ratelua-rls's own settings: see [settings.Own].
const Own = settings.Own

// ReferenceSettings returns every setting ratelua-rls reads, in the
// reference's order, then its own: see [settings.Table].
func ReferenceSettings() []Setting { return settings.Table() }
