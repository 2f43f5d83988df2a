package client

import (
	"crypto/tls"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tlsOn stands for "some TLS configuration" when comparing parsed options.
var tlsOn = &tls.Config{ServerName: "<tls on>"}

// normalized replaces a parsed TLS configuration by tlsOn, so that options compare with
// reflect.DeepEqual.
func normalized(o Options) Options {
	if o.TLS != nil {
		if !reflect.DeepEqual(o.TLS, &tls.Config{}) {
			panic("the parsers must produce an empty TLS configuration")
		}
		o.TLS = tlsOn
	}
	return o
}

func ep(host string, port int) []Endpoint { return []Endpoint{{Host: host, Port: port}} }

// local is the endpoint of most rows.
var local = ep("localhost", DefaultPort)

type parseRow struct {
	name string // the spec row covered
	in   string
	want Options
}

func TestParseURI(t *testing.T) {
	rows := []parseRow{
		// Schemes, endpoints, credentials, database path.
		{"redis scheme, default port", "redis://localhost", Options{Endpoints: local}},
		{"explicit port", "redis://cache.internal:6390", Options{Endpoints: ep("cache.internal", 6390)}},
		{"scheme is case-insensitive", "REDIS://localhost", Options{Endpoints: local}},
		{"rediss enables TLS, default port 6379", "rediss://localhost", Options{Endpoints: local, TLS: tlsOn}},
		{"IPv6 bracketed with port", "redis://[::1]:6380", Options{Endpoints: ep("::1", 6380)}},
		{"IPv6 bracketed without port", "redis://[2001:db8::1]", Options{Endpoints: ep("2001:db8::1", DefaultPort)}},
		{"IPv4 literal", "redis://127.0.0.1:7000/", Options{Endpoints: ep("127.0.0.1", 7000)}},
		{"database path", "redis://localhost/3", Options{Endpoints: local, Database: 3}},
		{"user and password", "redis://alice:s3cret@localhost", Options{Endpoints: local, Username: "alice", Password: "s3cret"}},
		{"password only with colon", "redis://:s3cret@localhost", Options{Endpoints: local, Password: "s3cret"}},
		{"userinfo without colon is a password", "redis://s3cret@localhost", Options{Endpoints: local, Password: "s3cret"}},
		{"credentials percent-decoded", "redis://al%40ice:p%3Aw%2Fd%25%23@localhost", Options{Endpoints: local, Username: "al@ice", Password: "p:w/d%#"}},
		{"password keeps '+' and ':'", "redis://u:a+b:c@localhost", Options{Endpoints: local, Username: "u", Password: "a+b:c"}},
		{"unescaped '@' in password: last '@' ends userinfo", "redis://u:p@ss@localhost", Options{Endpoints: local, Username: "u", Password: "p@ss"}},
		{"unix socket", "unix:///var/run/redis.sock", Options{Endpoints: ep("/var/run/redis.sock", 0)}},
		{"redis+unix socket with db", "redis+unix:///tmp/r.sock?db=5", Options{Endpoints: ep("/tmp/r.sock", 0), Database: 5}},
		{"unix socket with credentials", "unix://:pw@/tmp/r.sock", Options{Endpoints: ep("/tmp/r.sock", 0), Password: "pw"}},
		{"spec example", "redis://localhost:6379/0?clientName=checkout-api&connections=4&allowAdmin=false",
			Options{Endpoints: local, ClientName: "checkout-api", Connections: 4}},

		// One row per query parameter of the spec's table.
		{"clientName", "redis://localhost?clientName=api%20one", Options{Endpoints: local, ClientName: "api one"}},
		{"connections", "redis://localhost?connections=8", Options{Endpoints: local, Connections: 8}},
		{"connectTimeoutMs", "redis://localhost?connectTimeoutMs=1500", Options{Endpoints: local, ConnectTimeout: 1500 * time.Millisecond}},
		{"commandTimeoutMs", "redis://localhost?commandTimeoutMs=250", Options{Endpoints: local, CommandTimeout: 250 * time.Millisecond}},
		{"connectionIdleReadTimeoutMs", "redis://localhost?connectionIdleReadTimeoutMs=30000", Options{Endpoints: local, ConnectionIdleReadTimeout: 30 * time.Second}},
		{"responseTimeoutMs (alias)", "redis://localhost?responseTimeoutMs=20", Options{Endpoints: local, ConnectionIdleReadTimeout: 20 * time.Millisecond}},
		{"gatheredWriteStallTimeoutMs", "redis://localhost?gatheredWriteStallTimeoutMs=5000", Options{Endpoints: local, GatheredWriteStallTimeout: 5 * time.Second}},
		{"gatheredWriteStallTimeoutMs -1 disables", "redis://localhost?gatheredWriteStallTimeoutMs=-1", Options{Endpoints: local, GatheredWriteStallTimeout: NoTimeout}},
		{"protocol auto", "redis://localhost?protocol=auto", Options{Endpoints: local, Protocol: ProtocolAuto}},
		{"protocol 2", "redis://localhost?protocol=2", Options{Endpoints: local, Protocol: ProtocolRESP2}},
		{"protocol resp2", "redis://localhost?protocol=resp2", Options{Endpoints: local, Protocol: ProtocolRESP2}},
		{"protocol 3", "redis://localhost?protocol=3", Options{Endpoints: local, Protocol: ProtocolRESP3}},
		{"protocol RESP3 case-insensitive", "redis://localhost?protocol=RESP3", Options{Endpoints: local, Protocol: ProtocolRESP3}},
		{"protocol Auto case-insensitive", "redis://localhost?protocol=AUTO", Options{Endpoints: local}},
		{"db", "redis://localhost?db=7", Options{Endpoints: local, Database: 7}},
		{"db overrides the path", "redis://localhost/2?db=9", Options{Endpoints: local, Database: 9}},
		{"allowAdmin", "redis://localhost?allowAdmin=true", Options{Endpoints: local, AllowAdmin: true}},
		{"allowAdmin case-insensitive", "redis://localhost?allowAdmin=TRUE", Options{Endpoints: local, AllowAdmin: true}},
		{"cluster", "redis://localhost?cluster=true", Options{Endpoints: local, UseCluster: true}},
		{"useCluster (alias)", "redis://localhost?useCluster=true", Options{Endpoints: local, UseCluster: true}},
		{"serviceName: Sentinel default port 26379", "redis://sentinel-1?serviceName=mymaster",
			Options{Endpoints: ep("sentinel-1", DefaultSentinelPort), SentinelPrimaryName: "mymaster"}},
		{"sentinelPrimaryName (alias)", "rediss://sentinel-1?sentinelPrimaryName=mymaster",
			Options{Endpoints: ep("sentinel-1", DefaultSentinelPort), SentinelPrimaryName: "mymaster", TLS: tlsOn}},
		{"serviceName with explicit port", "redis://sentinel-1:5000?serviceName=m", Options{Endpoints: ep("sentinel-1", 5000), SentinelPrimaryName: "m"}},
		{"spec Sentinel example", "redis://:redis-password@sentinel-1?serviceName=mymaster&sentinelPassword=sentinel-password",
			Options{Endpoints: ep("sentinel-1", DefaultSentinelPort), Password: "redis-password", SentinelPrimaryName: "mymaster", SentinelPassword: "sentinel-password"}},
		{"sentinelUser", "redis://localhost?sentinelUser=watcher", Options{Endpoints: local, SentinelUsername: "watcher"}},
		{"sentinelPassword", "redis://localhost?sentinelPassword=p%26w", Options{Endpoints: local, SentinelPassword: "p&w"}},
		{"empty sentinelPassword disables inherited auth", "redis://:pw@localhost?sentinelPassword=",
			Options{Endpoints: local, Password: "pw", SentinelDisableAuth: true}},
		{"sentinelPassword without '=' disables inherited auth", "redis://localhost?sentinelPassword",
			Options{Endpoints: local, SentinelDisableAuth: true}},
		{"sentinelTls true", "redis://localhost?sentinelTls=true", Options{Endpoints: local, SentinelTLS: SentinelTLSEnabled}},
		{"sentinelTls=false with rediss", "rediss://localhost?sentinelTls=false", Options{Endpoints: local, TLS: tlsOn, SentinelTLS: SentinelTLSDisabled}},
		{"keyPrefix percent-decoded once", "redis://localhost?keyPrefix=app%3A%2541", Options{Endpoints: local, KeyPrefix: "app:%41"}},
		{"keyPrefix keeps '+'", "redis://localhost?keyPrefix=a+b", Options{Endpoints: local, KeyPrefix: "a+b"}},
		{"keyPrefix UTF-8", "redis://localhost?keyPrefix=%C3%A9t%C3%A9:", Options{Endpoints: local, KeyPrefix: "été:"}},
		{"keyPrefix empty disables", "redis://localhost?keyPrefix=a&keyPrefix=", Options{Endpoints: local}},
		{"pubSubPrefix last repeat wins", "redis://localhost?pubSubPrefix=one&pubSubPrefix=two%2F", Options{Endpoints: local, PubSubPrefix: "two/"}},
		{"parameter names are case-insensitive", "redis://localhost?CLIENTNAME=x&ConnectTimeoutMS=5", Options{Endpoints: local, ClientName: "x", ConnectTimeout: 5 * time.Millisecond}},
		{"last repeat wins", "redis://localhost?connections=2&connections=3", Options{Endpoints: local, Connections: 3}},
		{"empty segments skipped", "redis://localhost?&clientName=a&&", Options{Endpoints: local, ClientName: "a"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got, err := ParseURI(r.in)
			if err != nil {
				t.Fatalf("ParseURI(%q): %v", r.in, err)
			}
			if g := normalized(got); !reflect.DeepEqual(g, r.want) {
				t.Fatalf("ParseURI(%q)\n got %+v\nwant %+v", r.in, g, r.want)
			}
			// Parse dispatches URIs to ParseURI.
			via, err := Parse(r.in)
			if err != nil || !reflect.DeepEqual(normalized(via), r.want) {
				t.Fatalf("Parse(%q) differs from ParseURI: %+v %v", r.in, via, err)
			}
		})
	}
}

func TestParseURIErrors(t *testing.T) {
	rows := []struct {
		name, in, option string
	}{
		{"no scheme", "localhost:6379", "URI"},
		{"unsupported scheme", "http://localhost", "URI"},
		{"fragment", "redis://u:pa#ss@localhost", "URI"},
		{"no host", "redis://", "Endpoints"},
		{"no host after userinfo", "redis://:pw@", "Endpoints"},
		{"port not a number", "redis://localhost:http", "Endpoints"},
		{"port zero", "redis://localhost:0", "Endpoints"},
		{"port too large", "redis://localhost:65536", "Endpoints"},
		{"empty port", "redis://localhost:", "Endpoints"},
		{"unbracketed IPv6", "redis://::1:6379", "Endpoints"},
		{"unclosed bracket", "redis://[::1:6379", "Endpoints"},
		{"IPv4 between brackets", "redis://[127.0.0.1]:6379", "Endpoints"},
		{"text after bracket", "redis://[::1]x", "Endpoints"},
		{"invalid host characters", "redis://local%20host", "Endpoints"},
		{"database path not a number", "redis://localhost/abc", "Database"},
		{"database path with segments", "redis://localhost/1/2", "Database"},
		{"unix with a host", "unix://tmp/redis.sock", "Endpoints"},
		{"unix without a path", "unix://", "Endpoints"},
		{"malformed password escape", "redis://u:%zz@localhost", "Password"},
		{"malformed user escape", "redis://%zz:p@localhost", "Username"},
		{"unknown parameter", "redis://localhost?retries=3", "retries"},
		{"unknown parameter with odd name", "redis://localhost?p%20w=3", "(unrecognised option)"},
		{"malformed name escape", "redis://localhost?%zz=1", "URI"},
		{"malformed value escape", "redis://localhost?keyPrefix=%zz", "keyPrefix"},
		{"bad protocol", "redis://localhost?protocol=4", "protocol"},
		{"bad boolean", "redis://localhost?allowAdmin=yes", "allowAdmin"},
		{"boolean without value", "redis://localhost?cluster", "cluster"},
		{"malformed integer", "redis://localhost?connections=four", "connections"},
		{"overflowing integer", "redis://localhost?connections=99999999999", "connections"},
		{"connections zero", "redis://localhost?connections=0", "connections"},
		{"overflowing milliseconds", "redis://localhost?connectTimeoutMs=2147483648", "connectTimeoutMs"},
		{"zero milliseconds", "redis://localhost?commandTimeoutMs=0", "commandTimeoutMs"},
		{"negative milliseconds", "redis://localhost?responseTimeoutMs=-5", "responseTimeoutMs"},
		{"write stall zero", "redis://localhost?gatheredWriteStallTimeoutMs=0", "gatheredWriteStallTimeoutMs"},
		{"write stall -2", "redis://localhost?gatheredWriteStallTimeoutMs=-2", "gatheredWriteStallTimeoutMs"},
		{"db not a number", "redis://localhost?db=x", "db"},
		{"db overflow", "redis://localhost?db=4294967296", "db"},
		{"empty serviceName", "redis://localhost?serviceName=", "serviceName"},
		{"bad sentinelTls", "redis://localhost?sentinelTls=1", "sentinelTls"},
		{"cluster and Sentinel", "redis://localhost?cluster=true&serviceName=m", "cluster"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, err := ParseURI(r.in)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Option != r.option {
				t.Fatalf("ParseURI(%q): want a *ConfigError on %q, got %v", r.in, r.option, err)
			}
			if !strings.HasPrefix(err.Error(), "respire: ") {
				t.Fatalf("message without prefix: %v", err)
			}
		})
	}
}

func TestParseDispatch(t *testing.T) {
	for in, uri := range map[string]bool{
		"redis://h":                true,
		"unix:///tmp/s":            true,
		"h:6379":                   false,
		"h,password=a://b":         false,
		"h:6379,ssl=true":          false,
		"[::1]:6380":               false,
		"redis+unix:///tmp/s?db=1": true,
	} {
		if got := hasScheme(in); got != uri {
			t.Errorf("hasScheme(%q) = %v", in, got)
		}
		if _, err := Parse(in); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}
}
