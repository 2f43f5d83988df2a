package fsm

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCanonicalHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// The incident's review: an expanded cluster-announce-ip must equal its compressed form.
		{"2001:0db8:0:0:0:0:0:1", "2001:db8::1"},
		{"2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
		{"0:0:0:0:0:0:0:1", "::1"},
		{"[0:0:0:0:0:0:0:1]", "::1"},
		{"::", "::"},
		{"0:0:0:0:0:0:0:0", "::"},
		{"1:0:0:1:0:0:0:1", "1:0:0:1::1"},                // the longest zero run
		{"1:0:0:0:1:0:0:0", "1::1:0:0:0"},                // the first of two equal runs
		{"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"}, // one zero group is not shortened
		{"1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"},
		{"::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"},
		{"::ffff:10.0.0.1", "10.0.0.1"}, // IPv4-mapped is the IPv4 address
		{"::FFFF:0a00:0001", "10.0.0.1"},
		{"64:ff9b::192.0.2.33", "64:ff9b::c000:221"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"FE80:0::1%Eth0", "fe80::1%Eth0"},
		{"10.0.0.1", "10.0.0.1"},
		{"Node-A.Example.Internal", "node-a.example.internal"},
		{"node-a.example.internal.", "node-a.example.internal"},
		{"localhost", "localhost"},
		{"010.0.0.1", "010.0.0.1"}, // leading zeros: not an IPv4 address, so a name
		{"1.2.3", "1.2.3"},
		{"1:2", "1:2"},
		{"", ""},
		{".", "."},
	} {
		if got := CanonicalHost(c.in); got != c.want {
			t.Errorf("CanonicalHost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCanonicalNameDoesNotAllocate(t *testing.T) {
	host := strings.Repeat("node-a.example.", 4) + "internal"
	if n := testing.AllocsPerRun(100, func() { _ = CanonicalHost(host) }); n != 0 {
		t.Fatalf("canonical host name: %v allocations", n)
	}
}

func TestIsIPLiteral(t *testing.T) {
	for in, want := range map[string]bool{
		"10.0.0.1": true, "::1": true, "[::1]": true, "fe80::1%eth0": true, "2001:db8::": true,
		"node-a": false, "": false, "1.2.3.4.5": false, "[node]": false, "::1::": false,
	} {
		if got := IsIPLiteral(in); got != want {
			t.Errorf("IsIPLiteral(%q) = %v", in, got)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Endpoint
	}{
		{"127.0.0.1:7000", Endpoint{"127.0.0.1", 7000}},
		{"[::1]:7000", Endpoint{"::1", 7000}},
		{"::1:7000", Endpoint{"::1", 7000}}, // Redis writes IPv6 without brackets
		{"0:0:0:0:0:0:0:1:7000", Endpoint{"::1", 7000}},
		{"[2001:0DB8::0001]:6379", Endpoint{"2001:db8::1", 6379}},
		{"Node-1.Example.internal:30001", Endpoint{"node-1.example.internal", 30001}},
		{":6381", Endpoint{"", 6381}},
	} {
		got, err := ParseEndpoint(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseEndpoint(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{
		"", "7000", "host:", "host:0", "host:65536", "host:-1", "host:+80", "host:80x", "[::1:7000",
		"::1]:7000", "[node]:7000", "[]:7000", "a b:7000", "a,b:7000", "a/b:7000", "a:b:7000", "a%b:7000",
		strings.Repeat("a", 256) + ":7000", "?:7000",
	} {
		_, err := ParseEndpoint(in)
		var ee *EndpointError
		if !errors.As(err, &ee) {
			t.Errorf("ParseEndpoint(%q): err = %v, want *EndpointError", in, err)
		} else if in != "" && strings.Contains(err.Error(), in) {
			t.Errorf("ParseEndpoint(%q): the error quotes the input: %v", in, err)
		}
	}
}

func TestEndpointString(t *testing.T) {
	for _, c := range []struct {
		ep   Endpoint
		want string
	}{
		{MakeEndpoint("::1", 7000), "[::1]:7000"},
		{MakeEndpoint("[::1]", 7000), "[::1]:7000"},
		{MakeEndpoint("10.0.0.1", 7000), "10.0.0.1:7000"},
		{MakeEndpoint("Node-A", 7000), "node-a:7000"},
		{Endpoint{Port: 7000}, "?:7000"},
		{Endpoint{}, "none"},
	} {
		if got := c.ep.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.ep, got, c.want)
		}
	}
}

// ipv6Text draws a textual form of the 16 bytes b: groups with or without leading zeros, in
// either case, with or without one run of zero groups shortened to "::", and with or without
// the last 32 bits written as dotted IPv4.
func ipv6Text(t *rapid.T, b [16]byte) string {
	var groups [8]string
	for i := range groups {
		v := uint64(b[2*i])<<8 | uint64(b[2*i+1])
		s := strconv.FormatUint(v, 16)
		if rapid.Bool().Draw(t, "pad") {
			s = strings.Repeat("0", 4-len(s)) + s
		}
		if rapid.Bool().Draw(t, "upper") {
			s = strings.ToUpper(s)
		}
		groups[i] = s
	}
	parts := groups[:]
	dotted := rapid.Bool().Draw(t, "dotted")
	if dotted {
		parts = append(groups[:6:6], strconv.Itoa(int(b[12]))+"."+strconv.Itoa(int(b[13]))+"."+strconv.Itoa(int(b[14]))+"."+strconv.Itoa(int(b[15])))
	}
	// Shorten one run of zero groups (never the dotted tail).
	var zeroRuns [][2]int
	limit := len(parts)
	if dotted {
		limit = 6
	}
	for i := 0; i < limit; i++ {
		if v, _ := strconv.ParseUint(parts[i], 16, 16); v == 0 {
			for j := i + 1; j <= limit; j++ {
				zeroRuns = append(zeroRuns, [2]int{i, j})
				if j == limit {
					break
				}
				if v, _ := strconv.ParseUint(parts[j], 16, 16); v != 0 {
					break
				}
			}
		}
	}
	if len(zeroRuns) > 0 && rapid.Bool().Draw(t, "shorten") {
		r := rapid.SampledFrom(zeroRuns).Draw(t, "run")
		return strings.Join(parts[:r[0]], ":") + "::" + strings.Join(parts[r[1]:], ":")
	}
	return strings.Join(parts, ":")
}

// TestCanonicalIPv6MatchesNetip checks the canonical form against the standard library's
// (net/netip, allowed in tests only) on every spelling of random addresses.
func TestCanonicalIPv6MatchesNetip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b [16]byte
		switch rapid.IntRange(0, 3).Draw(t, "shape") {
		case 0: // random bytes
			copy(b[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "bytes"))
		case 1: // sparse: mostly zero groups
			for i := 0; i < 8; i++ {
				if rapid.IntRange(0, 3).Draw(t, "nonzero") == 0 {
					b[2*i] = rapid.Byte().Draw(t, "hi")
					b[2*i+1] = rapid.Byte().Draw(t, "lo")
				}
			}
		case 2: // IPv4-mapped
			b[10], b[11] = 0xff, 0xff
			copy(b[12:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "v4"))
		case 3: // loopback and unspecified
			b[15] = byte(rapid.IntRange(0, 1).Draw(t, "lo"))
		}
		text := ipv6Text(t, b)
		want := netip.AddrFrom16(b).Unmap().String()
		if _, err := netip.ParseAddr(text); err != nil {
			t.Fatalf("generator made %q, which netip rejects: %v", text, err)
		}
		if got := CanonicalHost(text); got != want {
			t.Fatalf("CanonicalHost(%q) = %q, want %q", text, got, want)
		}
		if got := CanonicalHost("[" + text + "]"); got != want {
			t.Fatalf("CanonicalHost([%q]) = %q, want %q", text, got, want)
		}
		ep, err := ParseEndpoint(text + ":6379")
		if err != nil || ep.Host != want || ep.Port != 6379 {
			t.Fatalf("ParseEndpoint(%q:6379) = %v, %v", text, ep, err)
		}
	})
}

// TestIPLiteralAgreesWithNetip: on arbitrary strings over the alphabet of IP literals, an input is
// an IP literal exactly when netip parses it, and then both give the same canonical text.
func TestIPLiteralAgreesWithNetip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("0123456789abcdefABCDEF:.%")), 0, 45, -1).Draw(t, "s")
		checkAgainstNetip(t, s)
	})
}

// checkAgainstNetip fails when IsIPLiteral or CanonicalHost disagree with net/netip about s.
//
// Brackets are legal around an IPv6 address only: "[::1]" is the literal ::1, "[10.0.0.1]" is
// not a literal.
func checkAgainstNetip(t interface{ Fatalf(string, ...any) }, s string) {
	inner, bracketed := s, len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']'
	if bracketed {
		inner = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(inner)
	if err == nil && bracketed && !a.Is6() {
		err = errors.New("brackets around an IPv4 address")
	}
	if got := IsIPLiteral(s); got != (err == nil) {
		t.Fatalf("IsIPLiteral(%q) = %v, netip.ParseAddr error %v", s, got, err)
	}
	if err != nil {
		return
	}
	want := a.Unmap().String()
	if got := CanonicalHost(s); got != want {
		t.Fatalf("CanonicalHost(%q) = %q, netip says %q", s, got, want)
	}
}

func FuzzCanonicalHost(f *testing.F) {
	for _, s := range []string{"::1", "2001:0db8::1", "::ffff:1.2.3.4", "1:2:3:4:5:6:7::", "fe80::1%eth0", "1.2.3.4", "::1.2.3.4", "1::2::3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstNetip(t, s)
		c := CanonicalHost(s)
		if CanonicalHost(c) != c {
			t.Fatalf("CanonicalHost is not idempotent on %q: %q then %q", s, c, CanonicalHost(c))
		}
		if ep, err := ParseEndpoint(s); err == nil && ep.Host != "" {
			if again, err := ParseEndpoint(ep.String()); err != nil || again != ep {
				t.Fatalf("ParseEndpoint(%q) = %v, but its String form parses as %v, %v", s, ep, again, err)
			}
		}
	})
}
