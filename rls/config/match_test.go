package config

import "testing"

// TestWildcardMatching: a '*' anywhere in a value matches any run of
// bytes (prefix, suffix and the parts between in order), and a level
// takes the exact value first, then the first wildcard in file order,
// then the bare key.
func TestWildcardMatching(t *testing.T) {
	y := `domain: w
descriptors:
  - {key: path, value: /api/v1, rate_limit: {unit: second, requests_per_unit: 1}}
  - {key: path, value: "/api/*/items", rate_limit: {unit: second, requests_per_unit: 2}}
  - {key: path, value: "/api/*", rate_limit: {unit: second, requests_per_unit: 3}}
  - {key: path, value: "*.png", rate_limit: {unit: second, requests_per_unit: 4}}
  - {key: path, value: "a*b*c", rate_limit: {unit: second, requests_per_unit: 5}}
  - {key: path, rate_limit: {unit: second, requests_per_unit: 6}}
`
	c, err := Parse([]File{{Name: "w.yaml", Data: []byte(y)}}, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]uint32{
		"/api/v1":         1,
		"/api/x/items":    2,
		"/api/x/items/z":  3,
		"/api/":           3,
		"/img/a.png":      4,
		"/img/a.pngx":     6,
		"abc":             5,
		"a-b-c":           5,
		"acb":             6,
		"a-c-b":           6,
		"ab":              6,
		"/apix":           6,
		"/api/items":      3,
		"/api/x/itemsy.p": 3,
	} {
		m := c.Lookup("w", desc("path", value).Entries)
		if m.Rule == nil || m.Rule.Limits[0].RequestsPerUnit != want {
			var got any
			if m.Rule != nil {
				got = m.Rule.Limits[0].RequestsPerUnit
			}
			t.Errorf("path %q matched the rule of %v, want %d", value, got, want)
		}
	}
}

// TestAliasesThatShareLoad: aliases used as YAML means them (a shared
// rate_limit, a shared list of descriptors under two parents) load, and
// the shared rules match under each parent.
func TestAliasesThatShareLoad(t *testing.T) {
	y := `domain: a
descriptors:
  - key: web
    descriptors: &common
      - key: user
        rate_limit: &std {unit: minute, requests_per_unit: 5}
      - key: ip
        rate_limit: *std
  - key: api
    descriptors: *common
`
	c, err := Parse([]File{{Name: "x.yaml", Data: []byte(y)}}, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 4 {
		t.Fatalf("%d rules, want 4 (two under each parent)", len(c.Rules))
	}
	for _, parent := range []string{"web", "api"} {
		m := c.Lookup("a", desc(parent, "", "ip", "1").Entries)
		if m.Rule == nil || m.Rule.Limits[0].RequestsPerUnit != 5 || m.Rule.Key != "a."+parent+".ip" {
			t.Errorf("%s.ip matched %+v, want the shared 5 a minute", parent, m.Rule)
		}
	}
}
