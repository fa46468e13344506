package settings

import (
	"slices"
	"testing"
)

// TestPerSecondAndSentinelSettings: REDIS_PERSECOND=true reads the
// per-second deployment from REDIS_PERSECOND_* (not REDIS_*), and a
// SENTINEL URL splits into the master's name and the sentinels, as the
// reference reads them; with REDIS_PERSECOND false, a REDIS_PERSECOND_*
// setting given is listed as not used, and a bad one is not refused (the
// reference does not read them); a per-second pool behaviour of CREATE is
// refused only with REDIS_PERSECOND.
func TestPerSecondAndSentinelSettings(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(n string) string { return kv[n] } }
	s, err := FromEnv(env(map[string]string{
		"REDIS_TYPE": "SENTINEL", "REDIS_URL": "main,10.0.0.1:26379,10.0.0.2:26379", "REDIS_SENTINEL_AUTH": "u:sp", "REDIS_AUTH": "mp",
		"REDIS_PERSECOND": "true", "REDIS_PERSECOND_TYPE": "cluster", "REDIS_PERSECOND_SOCKET_TYPE": "TCP",
		"REDIS_PERSECOND_URL": "a:1,b:2", "REDIS_PERSECOND_AUTH": "pp", "REDIS_PERSECOND_TLS": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	main := s.Redis()
	if master, sentinels := main.Sentinel(); main.Type != "SENTINEL" || master != "main" || !slices.Equal(sentinels, []string{"10.0.0.1:26379", "10.0.0.2:26379"}) ||
		main.SentinelAuth != "u:sp" || main.Auth != "mp" || main.TLS {
		t.Errorf("main: %+v", main)
	}
	want := RedisTarget{Prefix: "REDIS_PERSECOND", SocketType: "tcp", Type: "CLUSTER", URL: "a:1,b:2", Auth: "pp", TLS: true}
	if s.PerSecond == nil || *s.PerSecond != want {
		t.Errorf("per second: %+v, want %+v", s.PerSecond, want)
	}

	s, err = FromEnv(env(map[string]string{"REDIS_PERSECOND_URL": "x:1", "REDIS_PERSECOND_TYPE": "bogus", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR": "CREATE"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.PerSecond != nil {
		t.Errorf("per second without REDIS_PERSECOND: %+v", s.PerSecond)
	}
	var names []string
	for _, u := range s.Unused {
		names = append(names, u.Name)
	}
	for _, n := range []string{"REDIS_PERSECOND_URL", "REDIS_PERSECOND_TYPE", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR"} {
		if !slices.Contains(names, n) {
			t.Errorf("%s given without REDIS_PERSECOND is not listed as not used: %v", n, names)
		}
	}
	if _, err := FromEnv(env(map[string]string{"REDIS_PERSECOND": "true", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR": "CREATE"})); err == nil {
		t.Error("REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR=CREATE with REDIS_PERSECOND accepted")
	}
}
