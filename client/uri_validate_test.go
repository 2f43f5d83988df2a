package client_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// TestValidateConnectionSurface covers the validation of the options added for URIs and
// connection strings: each row names the option its *ConfigError must name.
func TestValidateConnectionSurface(t *testing.T) {
	ep := []client.Endpoint{{Host: "localhost", Port: 6379}}
	bad := []struct {
		name   string
		opts   client.Options
		option string
	}{
		{"Cluster seed repeated", client.Options{Endpoints: append(ep, ep...), UseCluster: true}, "Endpoints"},
		{"Cluster seed on a Unix socket", client.Options{Endpoints: []client.Endpoint{{Host: "/tmp/redis.sock"}}, UseCluster: true}, "Endpoints"},
		{"Cluster without seeds", client.Options{UseCluster: true}, "Endpoints"},
		{"Cluster with too many seeds", client.Options{Endpoints: manySeeds(client.MaxClusterSeeds + 1), UseCluster: true}, "Endpoints"},
		{"splitting without Cluster", client.Options{Endpoints: ep, SplitCrossSlotCommands: true}, "SplitCrossSlotCommands"},
		{"Sentinel name with a space", client.Options{Endpoints: ep, SentinelPrimaryName: "my master"}, "SentinelPrimaryName"},
		{"Sentinel name too long", client.Options{Endpoints: ep, SentinelPrimaryName: strings.Repeat("m", client.MaxSentinelPrimaryNameLen+1)}, "SentinelPrimaryName"},
		{"Sentinel repeated", client.Options{Endpoints: append(ep, ep...), SentinelPrimaryName: "m"}, "Endpoints"},
		{"Sentinel on a Unix socket", client.Options{Endpoints: []client.Endpoint{{Host: "/tmp/sentinel.sock"}}, SentinelPrimaryName: "m"}, "Endpoints"},
		{"Sentinel without endpoints", client.Options{SentinelPrimaryName: "m"}, "Endpoints"},
		{"too many Sentinels", client.Options{Endpoints: manySeeds(client.MaxSentinels + 1), SentinelPrimaryName: "m"}, "Endpoints"},
		{"key prefix too long", client.Options{Endpoints: ep, KeyPrefix: strings.Repeat("k", client.MaxKeyPrefixLen+1)}, "KeyPrefix"},
		{"pub/sub prefix too long", client.Options{Endpoints: ep, PubSubPrefix: strings.Repeat("c", client.MaxKeyPrefixLen+1)}, "PubSubPrefix"},
		{"Cluster and Sentinel", client.Options{Endpoints: ep, UseCluster: true, SentinelPrimaryName: "m"}, "UseCluster"},
		{"idle read negative", client.Options{Endpoints: ep, ConnectionIdleReadTimeout: -2}, "ConnectionIdleReadTimeout"},
		{"idle read sub-millisecond", client.Options{Endpoints: ep, ConnectionIdleReadTimeout: time.Microsecond}, "ConnectionIdleReadTimeout"},
		{"write stall negative", client.Options{Endpoints: ep, GatheredWriteStallTimeout: -time.Second}, "GatheredWriteStallTimeout"},
		{"write stall sub-millisecond", client.Options{Endpoints: ep, GatheredWriteStallTimeout: 999 * time.Microsecond}, "GatheredWriteStallTimeout"},
		{"lifetime negative", client.Options{Endpoints: ep, ConnectionMaxLifetime: -1}, "ConnectionMaxLifetime"},
		{"lifetime sub-millisecond", client.Options{Endpoints: ep, ConnectionMaxLifetime: time.Nanosecond}, "ConnectionMaxLifetime"},
		{"jitter negative", client.Options{Endpoints: ep, ConnectionMaxLifetime: time.Minute, ConnectionMaxLifetimeJitter: -1}, "ConnectionMaxLifetimeJitter"},
		{"jitter without lifetime", client.Options{Endpoints: ep, ConnectionMaxLifetimeJitter: time.Minute}, "ConnectionMaxLifetimeJitter"},
		{"keepalive below a second", client.Options{Endpoints: ep, TCPKeepAlive: 500 * time.Millisecond}, "TCPKeepAlive"},
		{"refresh negative", client.Options{Endpoints: ep, ClusterTopologyRefreshInterval: -5}, "ClusterTopologyRefreshInterval"},
		{"refresh sub-millisecond", client.Options{Endpoints: ep, ClusterTopologyRefreshInterval: 10}, "ClusterTopologyRefreshInterval"},
		{"maintenance mode out of range", client.Options{Endpoints: ep, MaintenanceNotifications: 9}, "MaintenanceNotifications"},
		{"maintenance Enabled with RESP2", client.Options{Endpoints: ep, MaintenanceNotifications: client.MaintenanceEnabled, Protocol: client.ProtocolRESP2}, "MaintenanceNotifications"},
		{"relaxed timeout too small", client.Options{Endpoints: ep, MaintenanceRelaxedTimeout: time.Microsecond}, "MaintenanceRelaxedTimeout"},
		{"relaxed timeout too large", client.Options{Endpoints: ep, MaintenanceRelaxedTimeout: 25 * time.Hour}, "MaintenanceRelaxedTimeout"},
		{"window negative", client.Options{Endpoints: ep, MaintenanceWindowTimeout: -time.Second}, "MaintenanceWindowTimeout"},
		{"window too large", client.Options{Endpoints: ep, MaintenanceWindowTimeout: 24*time.Hour + 1}, "MaintenanceWindowTimeout"},
		{"TLS version unknown", client.Options{Endpoints: ep, TLSMinVersion: 0x0300}, "TLSMinVersion"},
		{"TLS max version unknown", client.Options{Endpoints: ep, TLSMaxVersion: 0x0305}, "TLSMaxVersion"},
		{"TLS 1.0 minimum", client.Options{Endpoints: ep, TLSMinVersion: tls.VersionTLS10}, "TLSMinVersion"},
		{"TLS 1.1 minimum", client.Options{Endpoints: ep, TLS: &tls.Config{}, TLSMinVersion: tls.VersionTLS11}, "TLSMinVersion"},
		{"TLS 1.1 maximum", client.Options{Endpoints: ep, TLS: &tls.Config{}, TLSMaxVersion: tls.VersionTLS11}, "TLSMaxVersion"},
		{"TLS config's 1.0 minimum", client.Options{Endpoints: ep, TLS: &tls.Config{MinVersion: tls.VersionTLS10}}, "TLS.MinVersion"},
		{"TLS config's 1.1 maximum", client.Options{Endpoints: ep, TLS: &tls.Config{MaxVersion: tls.VersionTLS11}}, "TLS.MaxVersion"},
		{"TLS min above max", client.Options{Endpoints: ep, TLSMinVersion: tls.VersionTLS13, TLSMaxVersion: tls.VersionTLS12}, "TLSMinVersion"},
		{"TLS min above the config's max", client.Options{Endpoints: ep, TLS: &tls.Config{MaxVersion: tls.VersionTLS12}, TLSMinVersion: tls.VersionTLS13}, "TLSMinVersion"},
		{"revocation without verification", client.Options{Endpoints: ep, TLS: &tls.Config{InsecureSkipVerify: true}, CheckCertificateRevocation: true}, "CheckCertificateRevocation"},
		{"Sentinel TLS mode out of range", client.Options{Endpoints: ep, SentinelTLS: 7}, "SentinelTLS"},
		{"Sentinel auth disabled with a password", client.Options{Endpoints: ep, SentinelDisableAuth: true, SentinelPassword: "x"}, "SentinelDisableAuth"},
		{"Sentinel auth disabled with a user", client.Options{Endpoints: ep, SentinelDisableAuth: true, SentinelUsername: "u"}, "SentinelDisableAuth"},
	}
	for _, r := range bad {
		t.Run(r.name, func(t *testing.T) {
			err := r.opts.Validate()
			var ce *client.ConfigError
			if !errors.As(err, &ce) || ce.Option != r.option {
				t.Fatalf("want a *ConfigError on %s, got %v", r.option, err)
			}
			if r.option == "UseCluster" || r.option == "SentinelPrimaryName" {
				if !strings.Contains(ce.Reason, "spaces or control characters") && !strings.Contains(ce.Reason, "MaxSentinelPrimaryNameLen") &&
					!strings.Contains(ce.Reason, "cannot be combined") {
					t.Fatalf("unclear reason: %v", err)
				}
			}
		})
	}
	good := []struct {
		name string
		opts client.Options
	}{
		{"Cluster with one seed", client.Options{Endpoints: ep, UseCluster: true}},
		{"Sentinel", client.Options{Endpoints: ep, SentinelPrimaryName: "mymaster"}},
		{"the most Sentinels", client.Options{Endpoints: manySeeds(client.MaxSentinels), SentinelPrimaryName: "mymaster", SentinelPassword: "s"}},
		{"Cluster with the most seeds", client.Options{Endpoints: manySeeds(client.MaxClusterSeeds), UseCluster: true, SplitCrossSlotCommands: true}},
		{"NoTimeout disables idle read", client.Options{Endpoints: ep, ConnectionIdleReadTimeout: client.NoTimeout}},
		{"NoTimeout disables only the write bound", client.Options{Endpoints: ep, ConnectionIdleReadTimeout: time.Second, GatheredWriteStallTimeout: client.NoTimeout}},
		{"bounds of 1 ms", client.Options{Endpoints: ep, ConnectionIdleReadTimeout: time.Millisecond, GatheredWriteStallTimeout: time.Millisecond,
			ConnectionMaxLifetime: time.Millisecond, ClusterTopologyRefreshInterval: time.Millisecond,
			MaintenanceRelaxedTimeout: time.Millisecond, MaintenanceWindowTimeout: 24 * time.Hour}},
		{"lifetime with jitter", client.Options{Endpoints: ep, ConnectionMaxLifetime: 30 * time.Minute, ConnectionMaxLifetimeJitter: 5 * time.Minute}},
		{"keepalive disabled", client.Options{Endpoints: ep, TCPKeepAlive: -1}},
		{"refresh disabled", client.Options{Endpoints: ep, ClusterTopologyRefreshInterval: client.NoTimeout}},
		{"maintenance Enabled with Auto protocol", client.Options{Endpoints: ep, MaintenanceNotifications: client.MaintenanceEnabled}},
		{"TLS config's 1.0 minimum overridden", client.Options{Endpoints: ep, TLS: &tls.Config{MinVersion: tls.VersionTLS10},
			TLSMinVersion: tls.VersionTLS12}},
		{"TLS 1.3 only", client.Options{Endpoints: ep, TLS: &tls.Config{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13}}},
		{"TLS knobs without TLS", client.Options{Endpoints: ep, TLSServerName: "x", TLSMinVersion: tls.VersionTLS12, CheckCertificateRevocation: true}},
		{"Sentinel auth disabled", client.Options{Endpoints: ep, Password: "p", SentinelDisableAuth: true}},
		{"prefixes at their bound", client.Options{Endpoints: ep, KeyPrefix: strings.Repeat("k", client.MaxKeyPrefixLen),
			PubSubPrefix: strings.Repeat("c", client.MaxKeyPrefixLen)}},
	}
	for _, r := range good {
		if err := r.opts.Validate(); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
}

// TestIgnoredOptionsAreLoggedOncePerClient checks that a client created from a parsed string
// warns once per ignored or unknown key, without its value.
func TestIgnoredOptionsAreLoggedOncePerClient(t *testing.T) {
	o, err := client.ParseConnectionString("127.0.0.1:1,tiebreaker=SECRETVALUE1,TieBreaker=SECRETVALUE2," +
		"unknownThing=SECRETVALUE3,abortConnect=true,writeBuffer=SECRETVALUE4,abortConnect=false,abortConnect=TRUE")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := client.Create(o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	out := buf.String()
	if strings.Contains(out, "SECRETVALUE") {
		t.Fatalf("a value was logged:\n%s", out)
	}
	for _, key := range []string{"option=tiebreaker", "option=unknownThing", "option=abortConnect", "option=writeBuffer"} {
		if n := strings.Count(out, key+"\n"); n != 1 {
			t.Errorf("%s logged %d times (Create must call opts.logIgnored; see connstring.go):\n%s", key, n, out)
		}
	}
	if n := strings.Count(out, "IgnoredConnectionStringOption"); n != 4 {
		t.Errorf("want 4 warnings, got %d:\n%s", n, out)
	}
}

// manySeeds returns n distinct Cluster seeds.
func manySeeds(n int) []client.Endpoint {
	out := make([]client.Endpoint, n)
	for i := range out {
		out[i] = client.Endpoint{Host: "10.0.0.1", Port: 7000 + i}
	}
	return out
}
