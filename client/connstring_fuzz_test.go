package client

import (
	"strings"
	"testing"
)

func FuzzParseConnectionString(f *testing.F) {
	f.Add("cache-a:6380,password=secret,ssl=true,defaultDatabase=2")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseConnectionString(s)
		checkParse(t, s, o, err)
		if p, perr := Parse(s); (perr == nil) != (err == nil) && !hasScheme(s) {
			t.Fatalf("Parse(%q) and ParseConnectionString disagree: %v / %v (%+v)", s, perr, err, p)
		}
		if strings.Contains(s, fuzzSecret) {
			return
		}
		for _, in := range []string{
			s + ",password=" + fuzzSecret,
			"password=" + fuzzSecret + "," + s,
			s + ",sentinelPassword=" + fuzzSecret,
			"user=u,password=" + fuzzSecret + "," + s + ",sentinelPassword=" + fuzzSecret,
		} {
			o, err := ParseConnectionString(in)
			checkParse(t, in, o, err)
			checkNoSecret(t, in, err)
			if err == nil && strings.HasSuffix(in, ",password="+fuzzSecret) && o.Password != fuzzSecret {
				t.Fatalf("parsing %q: the last password must win, got a different one", in)
			}
		}
	})
}
