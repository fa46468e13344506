package xds

import (
	"fmt"
	"strconv"

	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
)

// File is one RateLimitConfig resource as a configuration document: the
// resource's name (which errors carry, as a file's path) and the YAML.
type File struct {
	Name string
	Data []byte
}

// units names RateLimitUnit's values as the configuration files do. The
// values are the wire's, so WEEK, MONTH and YEAR are read from servers
// whose protos have them (the module's v0.1.0 does not name them).
var units = map[confv3.RateLimitUnit]string{
	0: "UNKNOWN", 1: "SECOND", 2: "MINUTE", 3: "HOUR", 4: "DAY", 5: "MONTH", 6: "YEAR", 7: "WEEK",
}

// unitName is the unit's name, or its number for one no proto names (the
// loader refuses both UNKNOWN and a number, naming the value).
func unitName(u confv3.RateLimitUnit) string {
	if n, ok := units[u]; ok {
		return n
	}
	return strconv.Itoa(int(u))
}

// yamlRoot, yamlDescriptor, yamlRateLimit and yamlReplace are the fields
// of a configuration file the reference reads from a RateLimitConfig: the
// proto's fields, no more.
type yamlRoot struct {
	Domain      string           `yaml:"domain"`
	Descriptors []yamlDescriptor `yaml:"descriptors,omitempty"`
}

type yamlDescriptor struct {
	Key            string           `yaml:"key"`
	Value          string           `yaml:"value,omitempty"`
	RateLimit      *yamlRateLimit   `yaml:"rate_limit,omitempty"`
	Descriptors    []yamlDescriptor `yaml:"descriptors,omitempty"`
	ShadowMode     bool             `yaml:"shadow_mode,omitempty"`
	DetailedMetric bool             `yaml:"detailed_metric,omitempty"`
}

type yamlRateLimit struct {
	Unit            string        `yaml:"unit"`
	RequestsPerUnit uint32        `yaml:"requests_per_unit"`
	Unlimited       bool          `yaml:"unlimited,omitempty"`
	Name            string        `yaml:"name,omitempty"`
	Replaces        []yamlReplace `yaml:"replaces,omitempty"`
}

type yamlReplace struct {
	Name string `yaml:"name"`
}

// YAML returns the configuration document of one RateLimitConfig: its
// domain and descriptors, every field as the reference reads it
// (config.ConfigXdsProtoToYaml); the resource's name is not part of it.
func YAML(c *confv3.RateLimitConfig) ([]byte, error) {
	root := yamlRoot{Domain: c.GetDomain(), Descriptors: descriptors(c.GetDescriptors())}
	b, err := yaml.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("xds: RateLimitConfig %q as YAML: %w", c.GetName(), err)
	}
	return b, nil
}

func descriptors(ds []*confv3.RateLimitDescriptor) []yamlDescriptor {
	if len(ds) == 0 {
		return nil
	}
	out := make([]yamlDescriptor, len(ds))
	for i, d := range ds {
		out[i] = yamlDescriptor{
			Key:            d.GetKey(),
			Value:          d.GetValue(),
			RateLimit:      rateLimit(d.GetRateLimit()),
			Descriptors:    descriptors(d.GetDescriptors()),
			ShadowMode:     d.GetShadowMode(),
			DetailedMetric: d.GetDetailedMetric(),
		}
	}
	return out
}

func rateLimit(p *confv3.RateLimitPolicy) *yamlRateLimit {
	if p == nil {
		return nil
	}
	r := &yamlRateLimit{
		Unit:            unitName(p.GetUnit()),
		RequestsPerUnit: p.GetRequestsPerUnit(),
		Unlimited:       p.GetUnlimited(),
		Name:            p.GetName(),
	}
	for _, rp := range p.GetReplaces() {
		r.Replaces = append(r.Replaces, yamlReplace{Name: rp.GetName()})
	}
	return r
}
