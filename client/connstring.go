package client

import (
	"crypto/tls"
	"log/slog"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ignoredKeys are StackExchange.Redis options that respire accepts and ignores, because its own
// defaults and discovery replace them. Keys are lower case.
var ignoredKeys = map[string]bool{
	"configchannel": true, "tiebreaker": true, "resolvedns": true, "version": true, "setlib": true,
	"highprioritythreads": true, "preserveasyncorder": true, "writebuffer": true, "defaults": true,
	"highintegrity": true, "sharedsubscriptionconnection": true, "tcpkeepalive": true,
	"maintmovingendpointtype": true, "maintposteventrelaxed": true,
}

// connState accumulates a comma-delimited string's settings that depend on each other.
type connState struct {
	o                  Options
	ssl, sslSet        bool
	sslHost            bool
	sentinelTLS        bool
	sentinelTLSSet     bool
	sentinelSSLHost    bool
	asyncTimeoutSet    bool
	abortConnectIgnore bool
	seen               map[string]bool // lower-case ignored keys already recorded
}

// connOption applies one key's value.
type connOption func(st *connState, value string) error

// connOptions maps lower-case keys (aliases included) to their canonical name and setter.
var connOptions = map[string]struct {
	name  string
	apply connOption
}{
	"user":     {"user", func(st *connState, v string) error { st.o.Username = v; return nil }},
	"username": {"username", func(st *connState, v string) error { st.o.Username = v; return nil }},
	"password": {"password", func(st *connState, v string) error { st.o.Password = v; return nil }},
	"ssl": {"ssl", func(st *connState, v string) error {
		b, err := parseBool("ssl", v)
		st.ssl, st.sslSet = b, err == nil
		return err
	}},
	"sslhost": {"sslHost", func(st *connState, v string) error {
		st.o.TLSServerName, st.sslHost = v, v != ""
		return nil
	}},
	"sslprotocols": {"sslProtocols", func(st *connState, v string) error {
		lo, hi, err := parseSSLProtocols(v)
		st.o.TLSMinVersion, st.o.TLSMaxVersion = lo, hi
		return err
	}},
	"checkcertificaterevocation": {"checkCertificateRevocation", func(st *connState, v string) error {
		b, err := parseBool("checkCertificateRevocation", v)
		st.o.CheckCertificateRevocation = b
		return err
	}},
	"clientname":      {"clientName", func(st *connState, v string) error { st.o.ClientName = v; return nil }},
	"name":            {"name", func(st *connState, v string) error { st.o.ClientName = v; return nil }},
	"defaultdatabase": {"defaultDatabase", databaseOption("defaultDatabase")},
	"db":              {"db", databaseOption("db")},
	"connecttimeout": {"connectTimeout", func(st *connState, v string) error {
		d, err := positiveMillis("connectTimeout", v)
		st.o.ConnectTimeout = d
		return err
	}},
	"asynctimeout": {"asyncTimeout", func(st *connState, v string) error {
		d, err := positiveMillis("asyncTimeout", v)
		st.o.CommandTimeout, st.asyncTimeoutSet = d, true
		return err
	}},
	"synctimeout": {"syncTimeout", func(st *connState, v string) error {
		d, err := positiveMillis("syncTimeout", v)
		if !st.asyncTimeoutSet {
			st.o.CommandTimeout = d
		}
		return err
	}},
	"abortconnect": {"abortConnect", func(st *connState, v string) error {
		b, err := parseBool("abortConnect", v)
		st.abortConnectIgnore = b
		return err
	}},
	"channelprefix": {"channelPrefix", func(st *connState, v string) error { st.o.PubSubPrefix = v; return nil }},
	"keepalive": {"keepAlive", func(st *connState, v string) error {
		n, err := parseInt32("keepAlive", v)
		switch {
		case err != nil:
			return err
		case n == 0 || n == -1:
			st.o.TCPKeepAlive = 0
		case n < 0:
			return configErr("keepAlive", "must be a positive number of seconds, or 0 or -1 for the default")
		default:
			st.o.TCPKeepAlive = seconds(n)
		}
		return nil
	}},
	"connectretry": {"connectRetry", func(st *connState, v string) error {
		n, err := parseInt32("connectRetry", v)
		if err != nil {
			return err
		}
		if n < 1 {
			return configErr("connectRetry", "must be positive; omit it for unlimited recovery")
		}
		p := ReconnectPolicy{}
		if st.o.ReconnectPolicy != nil {
			p = *st.o.ReconnectPolicy
		}
		p.MaxAttempts = int(n)
		st.o.ReconnectPolicy = &p
		return nil
	}},
	"responsetimeout": {"responseTimeout", func(st *connState, v string) error {
		d, err := positiveMillis("responseTimeout", v)
		st.o.ConnectionIdleReadTimeout = d
		return err
	}},
	"configcheckseconds":     {"configCheckSeconds", refreshOption("configCheckSeconds")},
	"topologyrefreshseconds": {"topologyRefreshSeconds", refreshOption("topologyRefreshSeconds")},
	"maintnotifications": {"maintNotifications", func(st *connState, v string) error {
		switch strings.ToLower(v) {
		case "disabled":
			st.o.MaintenanceNotifications = MaintenanceDisabled
		case "auto":
			st.o.MaintenanceNotifications = MaintenanceAuto
		case "enabled":
			st.o.MaintenanceNotifications = MaintenanceEnabled
		default:
			return configErr("maintNotifications", "must be Disabled, Auto or Enabled")
		}
		return nil
	}},
	"maintrelaxedtimeout": {"maintRelaxedTimeout", maintOption("maintRelaxedTimeout",
		func(o *Options) *time.Duration { return &o.MaintenanceRelaxedTimeout })},
	"maintrelaxedwindowmax": {"maintRelaxedWindowMax", maintOption("maintRelaxedWindowMax",
		func(o *Options) *time.Duration { return &o.MaintenanceWindowTimeout })},
	"protocol": {"protocol", func(st *connState, v string) error {
		p, err := parseProtocol("protocol", v)
		st.o.Protocol = p
		return err
	}},
	"allowadmin": {"allowAdmin", func(st *connState, v string) error {
		b, err := parseBool("allowAdmin", v)
		st.o.AllowAdmin = b
		return err
	}},
	"keyprefix":    {"keyPrefix", decodedInto("keyPrefix", func(o *Options) *string { return &o.KeyPrefix })},
	"pubsubprefix": {"pubSubPrefix", decodedInto("pubSubPrefix", func(o *Options) *string { return &o.PubSubPrefix })},
	"cluster":      {"cluster", clusterOption("cluster")},
	"usecluster":   {"useCluster", clusterOption("useCluster")},
	"servicename": {"serviceName", func(st *connState, v string) error {
		return serviceNameInto("serviceName")(&st.o, v)
	}},
	"sentinelprimaryname": {"sentinelPrimaryName", func(st *connState, v string) error {
		return serviceNameInto("sentinelPrimaryName")(&st.o, v)
	}},
	"sentineluser": {"sentinelUser", func(st *connState, v string) error { st.o.SentinelUsername = v; return nil }},
	"sentinelpassword": {"sentinelPassword", func(st *connState, v string) error {
		setSentinelPassword(&st.o, v)
		return nil
	}},
	"sentineltls": {"sentinelTls", func(st *connState, v string) error {
		b, err := parseBool("sentinelTls", v)
		st.sentinelTLS, st.sentinelTLSSet = b, err == nil
		return err
	}},
	"sentinelsslhost": {"sentinelSslHost", func(st *connState, v string) error {
		st.o.SentinelTLSServerName, st.sentinelSSLHost = v, v != ""
		return nil
	}},
	"proxy": {"proxy", func(st *connState, v string) error {
		if !strings.EqualFold(v, "none") {
			return configErr("proxy", "only proxy=None is supported: proxy modes would change routing and commands")
		}
		return nil
	}},
	"tunnel": {"tunnel", func(st *connState, v string) error {
		if v != "" {
			return configErr("tunnel", "tunnels are not supported: open the tunnel in Options.Dialer instead")
		}
		return nil
	}},
}

func databaseOption(option string) connOption {
	return func(st *connState, v string) error {
		n, err := parseInt32(option, v)
		st.o.Database = int(n)
		return err
	}
}

func clusterOption(option string) connOption {
	return func(st *connState, v string) error {
		b, err := parseBool(option, v)
		st.o.UseCluster = b
		return err
	}
}

// refreshOption sets ClusterTopologyRefreshInterval from seconds; zero disables the timer.
func refreshOption(option string) connOption {
	return func(st *connState, v string) error {
		n, err := parseInt32(option, v)
		switch {
		case err != nil:
			return err
		case n < 0:
			return configErr(option, "must be a number of seconds, 0 to disable the periodic refresh")
		case n == 0:
			st.o.ClusterTopologyRefreshInterval = NoTimeout
		default:
			st.o.ClusterTopologyRefreshInterval = seconds(n)
		}
		return nil
	}
}

// maintOption sets a maintenance duration from 1 to 86400 seconds.
func maintOption(option string, field func(*Options) *time.Duration) connOption {
	return func(st *connState, v string) error {
		n, err := parseInt32(option, v)
		if err != nil {
			return err
		}
		if n < 1 || n > 86400 {
			return configErr(option, "must be from 1 to 86400 seconds")
		}
		*field(&st.o) = seconds(n)
		return nil
	}
}

// decodedInto sets a string field from a percent-encoded value, decoded once.
func decodedInto(option string, field func(*Options) *string) connOption {
	return func(st *connState, v string) error {
		d, err := url.PathUnescape(v)
		if err != nil {
			return configErr(option, "malformed percent-encoding")
		}
		*field(&st.o) = d
		return nil
	}
}

// ParseConnectionString parses a StackExchange.Redis-style comma-delimited string, such as
// "cache-a:6380,password=secret,ssl=true,defaultDatabase=2", into Options.
//
// Items without '=' are endpoints: host, host:port, [ipv6]:port, a bare IPv6 address, or
// !/path for a Unix socket. Without a port an endpoint uses 26379 with serviceName, else 6380
// when TLS is enabled (ssl=true, or sslHost without ssl=false), else 6379. A standalone string
// names exactly one endpoint; cluster=true takes several seeds and serviceName several
// Sentinels, but not both.
//
// Items with '=' are options; keys are case-insensitive, values are trimmed, and the last of a
// repeated key wins. The mapping is documented in docs/options.md. Booleans are true or false
// (case-insensitive). Unknown keys and the StackExchange.Redis options respire ignores
// (configChannel, tiebreaker, resolveDns, version, setlib, highPriorityThreads,
// preserveAsyncOrder, writeBuffer, defaults, highIntegrity, sharedSubscriptionConnection,
// tcpKeepAlive, maintMovingEndpointType, maintPostEventRelaxed, and abortConnect=true) are
// accepted: the client created from the Options logs one warning per key, without its value.
// Rejected: proxy other than None, a non-empty tunnel, $COMMAND=... command remapping and
// Linux abstract Unix sockets (!@name).
//
// Errors are *ConfigError values naming the option; they never contain credentials or any
// other option value. ParseConnectionString checks syntax only: Validate (called by Connect and
// Create) checks the ranges.
func ParseConnectionString(s string) (Options, error) {
	st := connState{seen: map[string]bool{}}
	type rawEndpoint struct {
		ep       Endpoint
		portless bool
	}
	var eps []rawEndpoint
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, isOption := strings.Cut(item, "=")
		if !isOption {
			ep, portless, err := parseConnEndpoint(item, len(eps)+1)
			if err != nil {
				return Options{}, err
			}
			eps = append(eps, rawEndpoint{ep, portless})
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case key == "":
			return Options{}, configErr("connection string", "an option has no name before '='")
		case key[0] == '$':
			return Options{}, configErr("$"+printableName(key[1:]), "command remapping ($COMMAND=...) is not supported: respire sends the standard command names")
		}
		lower := strings.ToLower(key)
		opt, known := connOptions[lower]
		if !known {
			st.ignore(key)
			continue
		}
		if err := opt.apply(&st, value); err != nil {
			return Options{}, err
		}
	}
	if st.abortConnectIgnore {
		st.ignore("abortConnect")
	}
	o := st.o
	switch {
	case o.UseCluster && o.SentinelPrimaryName != "":
		return Options{}, configErr("cluster", "one connection string cannot select both Cluster and Sentinel (serviceName)")
	case len(eps) == 0:
		return Options{}, configErr("Endpoints", "the connection string names no endpoint")
	case len(eps) > 1 && !o.UseCluster && o.SentinelPrimaryName == "":
		return Options{}, configErr("Endpoints", "a standalone client takes exactly one endpoint, got "+
			strconv.Itoa(len(eps))+" (set cluster=true for Cluster seeds or serviceName=... for Sentinels)")
	}
	useTLS := st.sslHost
	if st.sslSet {
		useTLS = st.ssl
	}
	if useTLS {
		o.TLS = &tls.Config{}
	}
	switch {
	case st.sentinelTLSSet:
		o.SentinelTLS = sentinelTLSMode(st.sentinelTLS)
	case st.sentinelSSLHost:
		o.SentinelTLS = SentinelTLSEnabled
	}
	o.Endpoints = make([]Endpoint, len(eps))
	for i, e := range eps {
		if e.portless {
			switch {
			case o.SentinelPrimaryName != "":
				e.ep.Port = DefaultSentinelPort
			case useTLS:
				e.ep.Port = DefaultTLSPort
			default:
				e.ep.Port = DefaultPort
			}
		}
		o.Endpoints[i] = e.ep
	}
	return o, nil
}

// ignore records key for a warning, once per key regardless of case.
func (st *connState) ignore(key string) {
	lower := strings.ToLower(key)
	if st.seen[lower] {
		return
	}
	st.seen[lower] = true
	st.o.ignored = append(st.o.ignored, key)
}

// parseConnEndpoint parses the n-th endpoint of a comma-delimited string. portless reports a
// TCP endpoint without a port.
func parseConnEndpoint(s string, n int) (ep Endpoint, portless bool, err error) {
	what := "endpoint " + strconv.Itoa(n)
	if path, ok := strings.CutPrefix(s, "!"); ok {
		switch {
		case strings.HasPrefix(path, "@"):
			return ep, false, configErr("Endpoints", what+" is a Linux abstract Unix socket (!@name), which is not "+
				"supported: listen on a filesystem socket and write !/path/to/socket")
		case path == "":
			return ep, false, configErr("Endpoints", what+" has an empty Unix socket path (write !/path/to/socket)")
		}
		return Endpoint{Host: path}, false, nil
	}
	if s[0] != '[' && strings.Count(s, ":") > 1 {
		// A bare IPv6 address: it cannot carry a port.
		addr, perr := netipParse(s)
		if perr != nil {
			return ep, false, configErr("Endpoints", what+" is neither host:port nor an IPv6 address (bracket IPv6 to add a port: [::1]:6380)")
		}
		return Endpoint{Host: addr}, true, nil
	}
	host, port, err := splitHostPort(s, what)
	if err != nil {
		return ep, false, err
	}
	return Endpoint{Host: host, Port: port}, port == 0, nil
}

// logIgnored logs one warning per connection-string key that parsing accepted without applying
// it, never with its value. Create calls it once for each client it creates; a nil logger
// discards the warnings.
func (o *Options) logIgnored(l *slog.Logger) {
	if l == nil {
		return
	}
	for _, key := range o.ignored {
		lower := strings.ToLower(key)
		switch {
		case lower == "abortconnect":
			l.Warn("respire: connection string option ignored: abortConnect=true has no effect; use Connect to fail "+
				"when the server is unreachable", "event", "IgnoredConnectionStringOption", "option", key)
		case ignoredKeys[lower]:
			l.Warn("respire: connection string option ignored: respire uses its own behaviour for it",
				"event", "IgnoredConnectionStringOption", "option", key)
		default:
			l.Warn("respire: unknown connection string option ignored",
				"event", "IgnoredConnectionStringOption", "option", key)
		}
	}
}

// IgnoredOptions returns the connection-string keys that ParseConnectionString accepted without
// applying them (unknown keys and the ignored StackExchange.Redis options), deduplicated
// case-insensitively, in their first spelling and order. A client created from o logs one
// warning for each.
func (o *Options) IgnoredOptions() []string {
	return append([]string(nil), o.ignored...)
}

// netipParse returns the canonical text of an IPv6 address.
func netipParse(s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", configErr("Endpoints", "invalid IPv6 address")
	}
	return s, nil
}

// The bits of .NET's SslProtocols enumeration that sslProtocols accepts.
const (
	sslBitsSSL2  = 12
	sslBitsSSL3  = 48
	sslBitsTLS10 = 192
	sslBitsTLS11 = 768
	sslBitsTLS12 = 3072
	sslBitsTLS13 = 12288
	sslBitsAll   = sslBitsSSL2 | sslBitsSSL3 | sslBitsTLS10 | sslBitsTLS11 | sslBitsTLS12 | sslBitsTLS13
)

// sslProtocolNames maps the enumeration's names (lower case) to their bits.
var sslProtocolNames = map[string]int64{
	"none": 0, "ssl2": sslBitsSSL2, "ssl3": sslBitsSSL3, "tls": sslBitsTLS10, "default": sslBitsSSL3 | sslBitsTLS10,
	"tls11": sslBitsTLS11, "tls12": sslBitsTLS12, "tls13": sslBitsTLS13,
}

// parseSSLProtocols maps sslProtocols (pipe-separated names such as Tls12|Tls13, or a numeric
// mask such as 15360) to a minimum and maximum TLS version; zero and zero mean "no restriction"
// (None). Go supports neither SSL 2.0 nor SSL 3.0, respire refuses TLS 1.0 and 1.1, and Go
// configures a range of versions, so the selected versions must be contiguous.
func parseSSLProtocols(v string) (lo, hi uint16, err error) {
	var mask int64
	if v != "" && (isDigit(v[0]) || v[0] == '-' || v[0] == '+') {
		mask, err = strconv.ParseInt(v, 10, 32)
		if err != nil || mask < 0 || mask&^sslBitsAll != 0 {
			return 0, 0, configErr("sslProtocols", "must be a mask of SslProtocols bits (Tls=192, Tls11=768, Tls12=3072, Tls13=12288)")
		}
	} else {
		for _, name := range strings.Split(v, "|") {
			bits, ok := sslProtocolNames[strings.ToLower(strings.TrimSpace(name))]
			if !ok {
				return 0, 0, configErr("sslProtocols", "must be SslProtocols names separated by '|' (None, Tls, Tls11, Tls12, Tls13)")
			}
			mask |= bits
		}
	}
	if mask&(sslBitsSSL2|sslBitsSSL3) != 0 {
		return 0, 0, configErr("sslProtocols", "SSL 2.0 and SSL 3.0 are not supported (Default includes SSL 3.0): use Tls12|Tls13")
	}
	if mask&(sslBitsTLS10|sslBitsTLS11) != 0 {
		return 0, 0, configErr("sslProtocols", "TLS 1.0 and 1.1 are insecure and not allowed (Tls, Tls11): use Tls12|Tls13")
	}
	versions := []struct {
		bits    int64
		version uint16
	}{{sslBitsTLS10, tls.VersionTLS10}, {sslBitsTLS11, tls.VersionTLS11}, {sslBitsTLS12, tls.VersionTLS12}, {sslBitsTLS13, tls.VersionTLS13}}
	gap := false
	for _, x := range versions {
		if mask&x.bits == 0 {
			gap = lo != 0
			continue
		}
		if gap {
			return 0, 0, configErr("sslProtocols", "the TLS versions must be contiguous (Go configures a minimum and a maximum)")
		}
		if lo == 0 {
			lo = x.version
		}
		hi = x.version
	}
	return lo, hi, nil
}
