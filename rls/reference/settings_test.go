package reference

import (
	"reflect"
	"testing"
	"time"

	refsettings "github.com/envoyproxy/ratelimit/src/settings"

	"github.com/ratelua/ratelua/rls/settings"
)

// TestEveryReferenceSettingIsInTheTable reads the envconfig tags of the
// pinned reference's settings.Settings: every variable it reads is in
// settings.Table with the reference's default and a parser of its
// type, so a setting the reference gains is implemented, refused or
// declared unused before ratelua-rls follows it.
func TestEveryReferenceSettingIsInTheTable(t *testing.T) {
	ours := map[string]settings.Setting{}
	for _, s := range settings.Table() {
		ours[s.Name] = s
	}
	typ := reflect.TypeOf(refsettings.Settings{})
	n := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := f.Tag.Get("envconfig")
		if name == "" {
			continue
		}
		n++
		s, ok := ours[name]
		if !ok {
			t.Errorf("%s (settings.Settings.%s) is not in settings.Table", name, f.Name)
			continue
		}
		if s.Status == settings.Own {
			t.Errorf("%s is the reference's, listed as ratelua-rls's own", name)
		}
		def := f.Tag.Get("default")
		if s.Default != def && !(name == "LOG_LEVEL" && def == "WARN" && s.Default == "info") {
			t.Errorf("%s: default %q, the reference's %q", name, s.Default, def)
		}
		want := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "int", reflect.Int64: "int", reflect.Bool: "bool",
			reflect.Float32: "float", reflect.Float64: "float", reflect.Slice: "list", reflect.Map: "map"}[f.Type.Kind()]
		if f.Type == reflect.TypeOf(time.Duration(0)) {
			want = "duration"
		}
		if string(s.Parser) != want {
			t.Errorf("%s: parser %s, the reference's type %s", name, s.Parser, f.Type)
		}
	}
	for name, s := range ours {
		if _, ok := typ.FieldByNameFunc(func(field string) bool {
			f, _ := typ.FieldByName(field)
			return f.Tag.Get("envconfig") == name
		}); !ok && s.Status != settings.Own {
			t.Errorf("%s is listed as the reference's (%s) but the reference does not read it", name, s.Status)
		}
	}
	t.Logf("the reference reads %d variables, every one in the table", n)
	if n < 100 {
		t.Errorf("the reference reads %d variables, want over 100 (the tags moved?)", n)
	}
}
