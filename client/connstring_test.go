package client

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

type connRow struct {
	name    string // the spec row covered
	in      string
	want    Options
	ignored []string // IgnoredOptions, in order
}

func TestParseConnectionString(t *testing.T) {
	cacheA := ep("cache-a", DefaultPort)
	rows := []connRow{
		// Endpoints and port rules.
		{"one endpoint, default port 6379", "cache-a", Options{Endpoints: cacheA}, nil},
		{"explicit port", "cache-a:7000", Options{Endpoints: ep("cache-a", 7000)}, nil},
		{"spec example", "cache-a:6380,password=secret,ssl=true,defaultDatabase=2",
			Options{Endpoints: ep("cache-a", 6380), Password: "secret", TLS: tlsOn, Database: 2}, nil},
		{"ssl=true: omitted port is 6380", "cache-a,ssl=true", Options{Endpoints: ep("cache-a", DefaultTLSPort), TLS: tlsOn}, nil},
		{"ssl=true: explicit port wins", "cache-a:6379,ssl=true", Options{Endpoints: ep("cache-a", 6379), TLS: tlsOn}, nil},
		{"ssl after the endpoint still sets the port", "ssl=True,cache-a", Options{Endpoints: ep("cache-a", DefaultTLSPort), TLS: tlsOn}, nil},
		{"ssl=false", "cache-a,ssl=false", Options{Endpoints: cacheA}, nil},
		{"cluster seeds", "cache-a,cache-b:7001,cluster=true",
			Options{Endpoints: []Endpoint{{Host: "cache-a", Port: 6379}, {Host: "cache-b", Port: 7001}}, UseCluster: true}, nil},
		{"useCluster (alias) with TLS seeds", "cache-a,cache-b,useCluster=true,ssl=true",
			Options{Endpoints: []Endpoint{{Host: "cache-a", Port: 6380}, {Host: "cache-b", Port: 6380}}, UseCluster: true, TLS: tlsOn}, nil},
		{"sentinels use 26379", "sentinel-a,sentinel-b,serviceName=mymaster",
			Options{Endpoints: []Endpoint{{Host: "sentinel-a", Port: 26379}, {Host: "sentinel-b", Port: 26379}}, SentinelPrimaryName: "mymaster"}, nil},
		{"sentinels use 26379 even with TLS", "sentinel-a,ssl=true,sentinelPrimaryName=m",
			Options{Endpoints: ep("sentinel-a", 26379), SentinelPrimaryName: "m", TLS: tlsOn}, nil},
		{"bracketed IPv6 with port", "[::1]:6380", Options{Endpoints: ep("::1", 6380)}, nil},
		{"bracketed IPv6 without port", "[::1]", Options{Endpoints: ep("::1", DefaultPort)}, nil},
		{"bare IPv6", "2001:db8::7,ssl=true", Options{Endpoints: ep("2001:db8::7", DefaultTLSPort), TLS: tlsOn}, nil},
		{"Unix socket", "!/var/run/redis.sock", Options{Endpoints: ep("/var/run/redis.sock", 0)}, nil},
		{"whitespace and empty items", " cache-a , , password = pw ,", Options{Endpoints: cacheA, Password: "pw"}, nil},

		// One row per option of the spec's table.
		{"user", "cache-a,user=alice", Options{Endpoints: cacheA, Username: "alice"}, nil},
		{"username (alias)", "cache-a,username=alice", Options{Endpoints: cacheA, Username: "alice"}, nil},
		{"password with '=' and ':'", "cache-a,password=a=b:c", Options{Endpoints: cacheA, Password: "a=b:c"}, nil},
		{"ssl", "cache-a:1,ssl=TRUE", Options{Endpoints: ep("cache-a", 1), TLS: tlsOn}, nil},
		{"sslHost enables TLS", "cache-a,sslHost=redis.example.com",
			Options{Endpoints: ep("cache-a", DefaultTLSPort), TLS: tlsOn, TLSServerName: "redis.example.com"}, nil},
		{"sslHost with ssl=false does not", "cache-a,ssl=false,sslHost=redis.example.com",
			Options{Endpoints: cacheA, TLSServerName: "redis.example.com"}, nil},
		{"sslProtocols names", "cache-a,ssl=true,sslProtocols=Tls12|Tls13",
			Options{Endpoints: ep("cache-a", 6380), TLS: tlsOn, TLSMinVersion: tls.VersionTLS12, TLSMaxVersion: tls.VersionTLS13}, nil},
		{"sslProtocols mask", "cache-a,sslProtocols=15360",
			Options{Endpoints: cacheA, TLSMinVersion: tls.VersionTLS12, TLSMaxVersion: tls.VersionTLS13}, nil},
		{"sslProtocols one version", "cache-a,sslProtocols=tls12",
			Options{Endpoints: cacheA, TLSMinVersion: tls.VersionTLS12, TLSMaxVersion: tls.VersionTLS12}, nil},
		{"sslProtocols None", "cache-a,sslProtocols=None", Options{Endpoints: cacheA}, nil},
		{"checkCertificateRevocation", "cache-a,checkCertificateRevocation=true", Options{Endpoints: cacheA, CheckCertificateRevocation: true}, nil},
		{"clientName", "cache-a,clientName=checkout", Options{Endpoints: cacheA, ClientName: "checkout"}, nil},
		{"name (alias)", "cache-a,name=checkout", Options{Endpoints: cacheA, ClientName: "checkout"}, nil},
		{"defaultDatabase", "cache-a,defaultDatabase=4", Options{Endpoints: cacheA, Database: 4}, nil},
		{"db (alias)", "cache-a,db=4", Options{Endpoints: cacheA, Database: 4}, nil},
		{"connectTimeout", "cache-a,connectTimeout=5000", Options{Endpoints: cacheA, ConnectTimeout: 5 * time.Second}, nil},
		{"asyncTimeout", "cache-a,asyncTimeout=750", Options{Endpoints: cacheA, CommandTimeout: 750 * time.Millisecond}, nil},
		{"syncTimeout", "cache-a,syncTimeout=900", Options{Endpoints: cacheA, CommandTimeout: 900 * time.Millisecond}, nil},
		{"asyncTimeout wins (before)", "cache-a,asyncTimeout=750,syncTimeout=900", Options{Endpoints: cacheA, CommandTimeout: 750 * time.Millisecond}, nil},
		{"asyncTimeout wins (after)", "cache-a,syncTimeout=900,asyncTimeout=750", Options{Endpoints: cacheA, CommandTimeout: 750 * time.Millisecond}, nil},
		{"abortConnect=false accepted silently", "cache-a,abortConnect=False", Options{Endpoints: cacheA}, nil},
		{"abortConnect=true ignored with a warning", "cache-a,abortConnect=true", Options{Endpoints: cacheA}, []string{"abortConnect"}},
		{"abortConnect last wins", "cache-a,abortConnect=true,abortConnect=false", Options{Endpoints: cacheA}, nil},
		{"channelPrefix is literal", "cache-a,channelPrefix=app%41:", Options{Endpoints: cacheA, PubSubPrefix: "app%41:"}, nil},
		{"last prefix option wins (pubSubPrefix)", "cache-a,channelPrefix=a,pubSubPrefix=b%41", Options{Endpoints: cacheA, PubSubPrefix: "bA"}, nil},
		{"last prefix option wins (channelPrefix)", "cache-a,pubSubPrefix=b,channelPrefix=c", Options{Endpoints: cacheA, PubSubPrefix: "c"}, nil},
		{"keepAlive seconds", "cache-a,keepAlive=30", Options{Endpoints: cacheA, TCPKeepAlive: 30 * time.Second}, nil},
		{"keepAlive 0 is the default", "cache-a,keepAlive=0", Options{Endpoints: cacheA}, nil},
		{"keepAlive -1 is the default", "cache-a,keepAlive=60,keepAlive=-1", Options{Endpoints: cacheA}, nil},
		{"connectRetry", "cache-a,connectRetry=3", Options{Endpoints: cacheA, ReconnectPolicy: &ReconnectPolicy{MaxAttempts: 3}}, nil},
		{"responseTimeout", "cache-a,responseTimeout=2500", Options{Endpoints: cacheA, ConnectionIdleReadTimeout: 2500 * time.Millisecond}, nil},
		{"configCheckSeconds", "cache-a,configCheckSeconds=30", Options{Endpoints: cacheA, ClusterTopologyRefreshInterval: 30 * time.Second}, nil},
		{"topologyRefreshSeconds 0 disables", "cache-a,topologyRefreshSeconds=0", Options{Endpoints: cacheA, ClusterTopologyRefreshInterval: NoTimeout}, nil},
		{"refresh: last entry wins", "cache-a,topologyRefreshSeconds=0,configCheckSeconds=15", Options{Endpoints: cacheA, ClusterTopologyRefreshInterval: 15 * time.Second}, nil},
		{"maintNotifications Disabled", "cache-a,maintNotifications=Disabled", Options{Endpoints: cacheA}, nil},
		{"maintNotifications auto", "cache-a,maintNotifications=auto", Options{Endpoints: cacheA, MaintenanceNotifications: MaintenanceAuto}, nil},
		{"maintNotifications ENABLED", "cache-a,maintNotifications=ENABLED,protocol=3",
			Options{Endpoints: cacheA, MaintenanceNotifications: MaintenanceEnabled, Protocol: ProtocolRESP3}, nil},
		{"maintRelaxedTimeout", "cache-a,maintRelaxedTimeout=45", Options{Endpoints: cacheA, MaintenanceRelaxedTimeout: 45 * time.Second}, nil},
		{"maintRelaxedWindowMax bounds", "cache-a,maintRelaxedWindowMax=86400,maintRelaxedTimeout=1",
			Options{Endpoints: cacheA, MaintenanceWindowTimeout: 24 * time.Hour, MaintenanceRelaxedTimeout: time.Second}, nil},
		{"protocol resp2", "cache-a,protocol=resp2", Options{Endpoints: cacheA, Protocol: ProtocolRESP2}, nil},
		{"protocol 3", "cache-a,protocol=3", Options{Endpoints: cacheA, Protocol: ProtocolRESP3}, nil},
		{"protocol auto", "cache-a,protocol=Auto", Options{Endpoints: cacheA}, nil},
		{"allowAdmin", "cache-a,allowAdmin=true", Options{Endpoints: cacheA, AllowAdmin: true}, nil},
		{"keyPrefix percent-decoded", "cache-a,keyPrefix=t%2C1:", Options{Endpoints: cacheA, KeyPrefix: "t,1:"}, nil},
		{"pubSubPrefix percent-decoded", "cache-a,pubSubPrefix=ev%3A", Options{Endpoints: cacheA, PubSubPrefix: "ev:"}, nil},
		{"cluster", "cache-a,cluster=true", Options{Endpoints: cacheA, UseCluster: true}, nil},
		{"serviceName", "s1,serviceName=mymaster", Options{Endpoints: ep("s1", 26379), SentinelPrimaryName: "mymaster"}, nil},
		{"sentinelUser and sentinelPassword", "s1,serviceName=m,sentinelUser=w,sentinelPassword=spw",
			Options{Endpoints: ep("s1", 26379), SentinelPrimaryName: "m", SentinelUsername: "w", SentinelPassword: "spw"}, nil},
		{"empty sentinelPassword disables inherited auth", "s1,serviceName=m,password=pw,sentinelPassword=",
			Options{Endpoints: ep("s1", 26379), SentinelPrimaryName: "m", Password: "pw", SentinelDisableAuth: true}, nil},
		{"sentinelTls", "cache-a,sentinelTls=true", Options{Endpoints: cacheA, SentinelTLS: SentinelTLSEnabled}, nil},
		{"sentinelTls=false with ssl", "cache-a,ssl=true,sentinelTls=false", Options{Endpoints: ep("cache-a", 6380), TLS: tlsOn, SentinelTLS: SentinelTLSDisabled}, nil},
		{"sentinelSslHost enables Sentinel TLS", "cache-a,sentinelSslHost=s.example",
			Options{Endpoints: cacheA, SentinelTLS: SentinelTLSEnabled, SentinelTLSServerName: "s.example"}, nil},
		{"sentinelSslHost with sentinelTls=false", "cache-a,sentinelTls=false,sentinelSslHost=s.example",
			Options{Endpoints: cacheA, SentinelTLS: SentinelTLSDisabled, SentinelTLSServerName: "s.example"}, nil},
		{"proxy=None accepted", "cache-a,proxy=None", Options{Endpoints: cacheA}, nil},
		{"empty tunnel accepted", "cache-a,tunnel=", Options{Endpoints: cacheA}, nil},

		// Keys are case-insensitive; the last repeat wins.
		{"keys are case-insensitive", "cache-a,PASSWORD=x,DefaultDatabase=1", Options{Endpoints: cacheA, Password: "x", Database: 1}, nil},
		{"duplicate keys: last wins", "cache-a,password=one,Password=two", Options{Endpoints: cacheA, Password: "two"}, nil},

		// Azure portal strings work unchanged.
		{"Azure portal string", "example.redis.cache.windows.net:6380,password=secret,ssl=True,abortConnect=False",
			Options{Endpoints: ep("example.redis.cache.windows.net", 6380), Password: "secret", TLS: tlsOn}, nil},
	}
	// Every ignored StackExchange.Redis key is accepted and reported once.
	for _, key := range []string{"configChannel", "tiebreaker", "resolveDns", "version", "setlib", "highPriorityThreads",
		"preserveAsyncOrder", "writeBuffer", "defaults", "highIntegrity", "sharedSubscriptionConnection", "tcpKeepAlive",
		"maintMovingEndpointType", "maintPostEventRelaxed"} {
		rows = append(rows, connRow{"ignored key " + key, "cache-a," + key + "=whatever", Options{Endpoints: cacheA}, []string{key}})
	}
	rows = append(rows,
		connRow{"unknown key accepted with a warning", "cache-a,frobnicate=1", Options{Endpoints: cacheA}, []string{"frobnicate"}},
		connRow{"ignored keys deduplicated case-insensitively", "cache-a,tiebreaker=a,TieBreaker=b,foo=1,FOO=2,tieBreaker=",
			Options{Endpoints: cacheA}, []string{"tiebreaker", "foo"}},
		connRow{"URI-only parameters are unknown here", "cache-a,connections=4", Options{Endpoints: cacheA}, []string{"connections"}},
	)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got, err := ParseConnectionString(r.in)
			if err != nil {
				t.Fatalf("ParseConnectionString(%q): %v", r.in, err)
			}
			if ig := got.IgnoredOptions(); !reflect.DeepEqual(ig, r.ignored) && !(len(ig) == 0 && len(r.ignored) == 0) {
				t.Fatalf("ignored keys: got %q, want %q", ig, r.ignored)
			}
			got.ignored = nil
			if g := normalized(got); !reflect.DeepEqual(g, r.want) {
				t.Fatalf("ParseConnectionString(%q)\n got %+v\nwant %+v", r.in, g, r.want)
			}
			via, err := Parse(r.in)
			via.ignored = nil
			if err != nil || !reflect.DeepEqual(normalized(via), r.want) {
				t.Fatalf("Parse(%q) differs: %+v %v", r.in, via, err)
			}
		})
	}
}

func TestParseConnectionStringErrors(t *testing.T) {
	rows := []struct {
		name, in, option string
	}{
		{"no endpoint", "password=x", "Endpoints"},
		{"empty string", "", "Endpoints"},
		{"standalone takes one endpoint", "cache-a,cache-b", "Endpoints"},
		{"cluster and Sentinel", "a,b,cluster=true,serviceName=m", "cluster"},
		{"bad port", "cache-a:http", "Endpoints"},
		{"port out of range", "cache-a:70000", "Endpoints"},
		{"bad bare IPv6", "fe80::zz", "Endpoints"},
		{"bad bracketed IPv6", "[nope]:1", "Endpoints"},
		{"abstract Unix socket", "!@redis", "Endpoints"},
		{"empty Unix path", "!", "Endpoints"},
		{"invalid host", "cache a", "Endpoints"},
		{"empty key", "cache-a,=x", "connection string"},
		{"command remapping", "cache-a,$GET=FETCH", "$GET"},
		{"command removal", "cache-a,$INFO=", "$INFO"},
		{"proxy", "cache-a,proxy=Twemproxy", "proxy"},
		{"tunnel", "cache-a,tunnel=http:proxy:8080", "tunnel"},
		{"bad boolean", "cache-a,ssl=yes", "ssl"},
		{"bad boolean (allowAdmin)", "cache-a,allowAdmin=1", "allowAdmin"},
		{"bad boolean (abortConnect)", "cache-a,abortConnect=no", "abortConnect"},
		{"bad sslProtocols name", "cache-a,sslProtocols=Tls14", "sslProtocols"},
		{"sslProtocols SSL 3.0", "cache-a,sslProtocols=Ssl3|Tls12", "sslProtocols"},
		{"sslProtocols legacy range", "cache-a,sslProtocols=Tls | Tls11 | Tls12", "sslProtocols"},
		{"sslProtocols TLS 1.1", "cache-a,sslProtocols=Tls11|Tls12", "sslProtocols"},
		{"sslProtocols TLS 1.0 mask", "cache-a,sslProtocols=3264", "sslProtocols"},
		{"sslProtocols Default includes SSL 3.0", "cache-a,sslProtocols=Default", "sslProtocols"},
		{"sslProtocols undefined bits", "cache-a,sslProtocols=1", "sslProtocols"},
		{"sslProtocols negative", "cache-a,sslProtocols=-3072", "sslProtocols"},
		{"sslProtocols not contiguous", "cache-a,sslProtocols=Tls|Tls13", "sslProtocols"},
		{"sslProtocols not contiguous mask", "cache-a,sslProtocols=12480", "sslProtocols"},
		{"bad database", "cache-a,defaultDatabase=x", "defaultDatabase"},
		{"database overflow", "cache-a,db=2147483648", "db"},
		{"zero connectTimeout", "cache-a,connectTimeout=0", "connectTimeout"},
		{"overflowing asyncTimeout", "cache-a,asyncTimeout=99999999999999999999", "asyncTimeout"},
		{"bad syncTimeout", "cache-a,syncTimeout=1s", "syncTimeout"},
		{"keepAlive below -1", "cache-a,keepAlive=-2", "keepAlive"},
		{"connectRetry zero", "cache-a,connectRetry=0", "connectRetry"},
		{"connectRetry negative", "cache-a,connectRetry=-1", "connectRetry"},
		{"responseTimeout zero", "cache-a,responseTimeout=0", "responseTimeout"},
		{"negative refresh", "cache-a,configCheckSeconds=-1", "configCheckSeconds"},
		{"bad maintNotifications", "cache-a,maintNotifications=on", "maintNotifications"},
		{"maintRelaxedTimeout zero", "cache-a,maintRelaxedTimeout=0", "maintRelaxedTimeout"},
		{"maintRelaxedWindowMax too large", "cache-a,maintRelaxedWindowMax=86401", "maintRelaxedWindowMax"},
		{"bad protocol", "cache-a,protocol=resp4", "protocol"},
		{"empty serviceName", "cache-a,serviceName=", "serviceName"},
		{"bad sentinelTls", "cache-a,sentinelTls=maybe", "sentinelTls"},
		{"bad keyPrefix escape", "cache-a,keyPrefix=%g0", "keyPrefix"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, err := ParseConnectionString(r.in)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Option != r.option {
				t.Fatalf("ParseConnectionString(%q): want a *ConfigError on %q, got %v", r.in, r.option, err)
			}
			if r.name == "abstract Unix socket" && !strings.Contains(err.Error(), "!/path") {
				t.Fatalf("the message must suggest a filesystem socket: %v", err)
			}
		})
	}
}

func TestIgnoredOptionsIsACopy(t *testing.T) {
	o, err := ParseConnectionString("h,foo=1")
	if err != nil {
		t.Fatal(err)
	}
	o.IgnoredOptions()[0] = "bar"
	if o.IgnoredOptions()[0] != "foo" {
		t.Fatal("IgnoredOptions exposed the internal slice")
	}
}

// TestLogIgnored checks the warnings themselves: one per key, the key named, no value.
func TestLogIgnored(t *testing.T) {
	o, err := ParseConnectionString("h,tiebreaker=VALUE1,TIEBREAKER=VALUE2,mystery=VALUE3,abortConnect=true")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o.logIgnored(slog.New(slog.NewTextHandler(&buf, nil)))
	o.logIgnored(nil) // a nil logger discards
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Contains(out, "VALUE") {
		t.Fatalf("want three warnings without values:\n%s", out)
	}
	for i, want := range []string{"option=tiebreaker", "option=mystery", "option=abortConnect"} {
		if !strings.Contains(lines[i], "level=WARN") || !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d: want a warning naming %s: %s", i, want, lines[i])
		}
	}
	if !strings.Contains(lines[0], "uses its own behaviour") || !strings.Contains(lines[1], "unknown") || !strings.Contains(lines[2], "use Connect") {
		t.Errorf("messages do not distinguish ignored, unknown and abortConnect keys:\n%s", out)
	}
}

// TestErrorsNeverContainCredentials plants passwords next to every kind of parse error and in
// misplaced positions (a password typed as an endpoint or an option value).
func TestErrorsNeverContainCredentials(t *testing.T) {
	const secret = "Hunter2-SECRET"
	uris := []string{
		"redis://u:" + secret + "@localhost:http",
		"redis://u:" + secret + "@::1:6379",
		"redis://u:" + secret + "@localhost/abc",
		"redis://u:" + secret + "@localhost?retries=3",
		"redis://u:" + secret + "@localhost?protocol=" + secret,
		"redis://u:" + secret + "@localhost?connections=" + secret,
		"redis://u:" + secret + "@localhost?sentinelPassword=" + secret + "&sentinelTls=" + secret,
		"redis://u:" + secret + "%zz@localhost",
		"redis://u:" + secret + "#@localhost",
		"redis://" + secret + "@[" + secret + "]:1",
		"redis://" + secret + "@" + secret + ":" + secret,
		"ftp://u:" + secret + "@localhost",
	}
	for _, in := range uris {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("%q: want an error", in)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: the secret leaked: %v", in, err)
		}
	}
	strs := []string{
		"cache-a,cache-b,password=" + secret,
		"cache-a," + secret,                         // a password typed without password=
		"cache-a:" + secret + ",password=" + secret, // or after a colon
		secret + ":x:y,password=" + secret,
		"cache-a,password=" + secret + ",ssl=" + secret,
		"cache-a,password=" + secret + ",sslProtocols=" + secret,
		"cache-a,password=" + secret + ",proxy=" + secret,
		"cache-a,password=" + secret + ",tunnel=" + secret,
		"cache-a,password=" + secret + ",$SET=" + secret,
		"cache-a,sentinelPassword=" + secret + ",db=" + secret,
		"!@" + secret + ",password=" + secret,
	}
	for _, in := range strs {
		_, err := ParseConnectionString(in)
		if err == nil {
			t.Errorf("%q: want an error", in)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: the secret leaked: %v", in, err)
		}
	}
}
