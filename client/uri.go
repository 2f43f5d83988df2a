package client

import (
	"crypto/tls"
	"math"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Parse parses a connection URI (see ParseURI) when s starts with a scheme such as "redis://",
// and a StackExchange.Redis-style comma-delimited string (see ParseConnectionString) otherwise.
// Errors are *ConfigError values that never contain credentials.
func Parse(s string) (Options, error) {
	if hasScheme(s) {
		return ParseURI(s)
	}
	return ParseConnectionString(s)
}

// hasScheme reports whether s starts with "scheme://", the scheme being a letter followed by
// letters, digits, '+', '-' or '.'.
func hasScheme(s string) bool {
	i := strings.Index(s, "://")
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case isLetter(c):
		case j > 0 && (isDigit(c) || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// ParseURI parses a connection URI into Options:
//
//	redis://[[username]:password@]host[:port][/database][?parameters]
//	rediss://...                                   (TLS; Options.TLS is an empty *tls.Config)
//	unix://[[username]:password@]/path/to/socket[?parameters]   (also redis+unix://)
//
// Credentials are percent-decoded; a user information part without ':' is a password. IPv6
// hosts are bracketed. Without a port, 6379 is used (26379 with serviceName). The parameters,
// whose names are case-insensitive and whose values are percent-decoded once (a '+' stays a
// '+'), are:
//
//	clientName                                    ClientName
//	connections                                   Connections (at least 1)
//	connectTimeoutMs, commandTimeoutMs            ConnectTimeout, CommandTimeout (positive ms)
//	connectionIdleReadTimeoutMs, responseTimeoutMs ConnectionIdleReadTimeout (positive ms)
//	gatheredWriteStallTimeoutMs                   GatheredWriteStallTimeout (positive ms; -1: NoTimeout)
//	protocol                                      Protocol: auto, 2 or resp2, 3 or resp3
//	db                                            Database (overrides the path)
//	allowAdmin                                    AllowAdmin (true or false)
//	cluster, useCluster                           UseCluster (true or false)
//	serviceName, sentinelPrimaryName              SentinelPrimaryName
//	sentinelUser, sentinelPassword                SentinelUsername, SentinelPassword (empty: SentinelDisableAuth)
//	sentinelTls                                   SentinelTLS (true or false)
//	keyPrefix, pubSubPrefix                       KeyPrefix, PubSubPrefix (empty disables)
//
// Parsing is strict: an unknown parameter, a bad value, or a malformed or overflowing integer
// fails with a *ConfigError naming the option. When a parameter repeats, the last one wins.
// ParseURI checks syntax only: Validate (called by Connect and Create) checks the ranges.
func ParseURI(s string) (Options, error) {
	var o Options
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !hasScheme(s) {
		return o, configErr("URI", "missing scheme: use redis://, rediss://, unix:// or redis+unix://")
	}
	unix := false
	switch strings.ToLower(scheme) {
	case "redis":
	case "rediss":
		o.TLS = &tls.Config{}
	case "unix", "redis+unix":
		unix = true
	default:
		return o, configErr("URI", "unsupported scheme: use redis://, rediss://, unix:// or redis+unix://")
	}
	if strings.ContainsRune(rest, '#') {
		return o, configErr("URI", "a URI fragment ('#') is not allowed; percent-encode '#' in credentials as %23")
	}
	rest, query, _ := strings.Cut(rest, "?")
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	hostport := authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		if err := parseUserinfo(&o, authority[:i]); err != nil {
			return o, err
		}
		hostport = authority[i+1:]
	}
	var ep Endpoint
	explicitPort := false
	if unix {
		if hostport != "" {
			return o, configErr("Endpoints", "a unix URI names no host: write unix:///absolute/path/to/socket")
		}
		p, err := url.PathUnescape(path)
		if err != nil {
			return o, configErr("Endpoints", "malformed percent-encoding in the socket path")
		}
		if p == "" || p == "/" {
			return o, configErr("Endpoints", "a unix URI needs a socket path: unix:///path/to/socket")
		}
		ep = Endpoint{Host: p}
	} else {
		host, port, err := splitHostPort(hostport, "the URI's endpoint")
		if err != nil {
			return o, err
		}
		ep = Endpoint{Host: host, Port: port}
		explicitPort = port != 0
		switch {
		case path == "" || path == "/":
		default:
			db, err := parseInt32("Database", path[1:])
			if err != nil {
				return o, configErr("Database", "the path must be /<database number>")
			}
			o.Database = int(db)
		}
	}
	if err := applyURIQuery(&o, query); err != nil {
		return o, err
	}
	if o.UseCluster && o.SentinelPrimaryName != "" {
		return o, configErr("cluster", "one URI cannot select both Cluster and Sentinel (serviceName)")
	}
	if !unix && !explicitPort {
		ep.Port = DefaultPort
		if o.SentinelPrimaryName != "" {
			ep.Port = DefaultSentinelPort
		}
	}
	o.Endpoints = []Endpoint{ep}
	return o, nil
}

// parseUserinfo sets the credentials from "user:password", ":password" or "password".
func parseUserinfo(o *Options, userinfo string) error {
	user, pass, hasColon := strings.Cut(userinfo, ":")
	if !hasColon {
		user, pass = "", userinfo
	}
	u, err := url.PathUnescape(user)
	if err != nil {
		return configErr("Username", "malformed percent-encoding in the URI's user name")
	}
	p, err := url.PathUnescape(pass)
	if err != nil {
		return configErr("Password", "malformed percent-encoding in the URI's password")
	}
	o.Username, o.Password = u, p
	return nil
}

// splitHostPort parses "host", "host:port", "[ipv6]" or "[ipv6]:port". A zero port means none
// was given. what describes the endpoint in messages, which never repeat its text.
func splitHostPort(s, what string) (host string, port int, err error) {
	if s == "" {
		return "", 0, configErr("Endpoints", what+" has no host")
	}
	portText, hasPort := "", false
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, configErr("Endpoints", what+" has an unclosed '[' around its IPv6 address")
		}
		inner, err := url.PathUnescape(s[1:end]) // a zone is written %25zone
		if err != nil {
			return "", 0, configErr("Endpoints", what+" has malformed percent-encoding")
		}
		addr, perr := netip.ParseAddr(inner)
		if perr != nil || !addr.Is6() {
			return "", 0, configErr("Endpoints", what+" has an invalid IPv6 address between brackets")
		}
		host = inner
		switch after := s[end+1:]; {
		case after == "":
		case after[0] == ':':
			portText, hasPort = after[1:], true
		default:
			return "", 0, configErr("Endpoints", what+" has unexpected text after ']'")
		}
	} else {
		switch strings.Count(s, ":") {
		case 0:
			host = s
		case 1:
			host, portText, _ = strings.Cut(s, ":")
			hasPort = true
		default:
			return "", 0, configErr("Endpoints", what+" looks like an IPv6 address: bracket it, as in [::1]:6379")
		}
		if !validHostname(host) {
			return "", 0, configErr("Endpoints", what+" has an invalid host name (letters, digits, '.', '-' and '_' only)")
		}
	}
	if hasPort {
		p, ok := parsePort(portText)
		if !ok {
			return "", 0, configErr("Endpoints", what+" has an invalid port (a number from 1 to 65535)")
		}
		port = p
	}
	return host, port, nil
}

// validHostname accepts DNS names and IPv4 literals: letters, digits, '.', '-' and '_'.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !isLetter(c) && !isDigit(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// parsePort parses a decimal port from 1 to 65535.
func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n >= 1 && n <= 65535
}

// uriParam applies one URI parameter's value.
type uriParam func(o *Options, value string) error

// uriParams maps lower-case parameter names (aliases included) to their canonical name and
// setter.
var uriParams = map[string]struct {
	name  string
	apply uriParam
}{
	"clientname": {"clientName", func(o *Options, v string) error { o.ClientName = v; return nil }},
	"connections": {"connections", func(o *Options, v string) error {
		n, err := parseInt32("connections", v)
		if err != nil {
			return err
		}
		if n < 1 {
			return configErr("connections", "must be at least 1")
		}
		o.Connections = int(n)
		return nil
	}},
	"connecttimeoutms":            {"connectTimeoutMs", millisInto("connectTimeoutMs", func(o *Options) *time.Duration { return &o.ConnectTimeout })},
	"commandtimeoutms":            {"commandTimeoutMs", millisInto("commandTimeoutMs", func(o *Options) *time.Duration { return &o.CommandTimeout })},
	"connectionidlereadtimeoutms": {"connectionIdleReadTimeoutMs", millisInto("connectionIdleReadTimeoutMs", idleRead)},
	"responsetimeoutms":           {"responseTimeoutMs", millisInto("responseTimeoutMs", idleRead)},
	"gatheredwritestalltimeoutms": {"gatheredWriteStallTimeoutMs", func(o *Options, v string) error {
		if v == "-1" {
			o.GatheredWriteStallTimeout = NoTimeout
			return nil
		}
		d, err := positiveMillis("gatheredWriteStallTimeoutMs", v)
		if err != nil {
			return configErr("gatheredWriteStallTimeoutMs", "must be a positive number of milliseconds, or -1 to disable it")
		}
		o.GatheredWriteStallTimeout = d
		return nil
	}},
	"protocol": {"protocol", func(o *Options, v string) error {
		p, err := parseProtocol("protocol", v)
		o.Protocol = p
		return err
	}},
	"db": {"db", func(o *Options, v string) error {
		n, err := parseInt32("db", v)
		o.Database = int(n)
		return err
	}},
	"allowadmin":          {"allowAdmin", boolInto("allowAdmin", func(o *Options) *bool { return &o.AllowAdmin })},
	"cluster":             {"cluster", boolInto("cluster", func(o *Options) *bool { return &o.UseCluster })},
	"usecluster":          {"useCluster", boolInto("useCluster", func(o *Options) *bool { return &o.UseCluster })},
	"servicename":         {"serviceName", serviceNameInto("serviceName")},
	"sentinelprimaryname": {"sentinelPrimaryName", serviceNameInto("sentinelPrimaryName")},
	"sentineluser":        {"sentinelUser", func(o *Options, v string) error { o.SentinelUsername = v; return nil }},
	"sentinelpassword":    {"sentinelPassword", func(o *Options, v string) error { setSentinelPassword(o, v); return nil }},
	"sentineltls": {"sentinelTls", func(o *Options, v string) error {
		b, err := parseBool("sentinelTls", v)
		o.SentinelTLS = sentinelTLSMode(b)
		return err
	}},
	"keyprefix":    {"keyPrefix", func(o *Options, v string) error { o.KeyPrefix = v; return nil }},
	"pubsubprefix": {"pubSubPrefix", func(o *Options, v string) error { o.PubSubPrefix = v; return nil }},
}

func idleRead(o *Options) *time.Duration { return &o.ConnectionIdleReadTimeout }

// applyURIQuery applies the query parameters in order, so that the last repeat wins.
func applyURIQuery(o *Options, query string) error {
	if query == "" {
		return nil
	}
	for _, seg := range strings.Split(query, "&") {
		if seg == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(seg, "=")
		name, err := url.PathUnescape(rawName)
		if err != nil {
			return configErr("URI", "malformed percent-encoding in a parameter name")
		}
		p, ok := uriParams[strings.ToLower(name)]
		if !ok {
			return configErr(printableName(name), "unknown URI parameter (parameter names are listed in ParseURI's documentation)")
		}
		value, err := url.PathUnescape(rawValue)
		if err != nil {
			return configErr(p.name, "malformed percent-encoding in the value")
		}
		if err := p.apply(o, value); err != nil {
			return err
		}
	}
	return nil
}

// printableName returns name for an error message when it looks like an option name, and a
// placeholder otherwise, so that a misplaced secret is not echoed.
func printableName(name string) string {
	if name == "" || len(name) > 64 {
		return "(unnamed option)"
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isLetter(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' {
			return "(unrecognised option)"
		}
	}
	return name
}

// parseBool accepts true and false, case-insensitively.
func parseBool(option, v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, configErr(option, "must be true or false")
}

// parseInt32 parses a decimal 32-bit signed integer.
func parseInt32(option, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		var ne *strconv.NumError
		if asNumError(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, configErr(option, "is out of range (a 32-bit integer)")
		}
		return 0, configErr(option, "must be an integer")
	}
	return n, nil
}

func asNumError(err error, target **strconv.NumError) bool {
	ne, ok := err.(*strconv.NumError)
	if ok {
		*target = ne
	}
	return ok
}

// positiveMillis parses a positive 32-bit number of milliseconds.
func positiveMillis(option, v string) (time.Duration, error) {
	n, err := parseInt32(option, v)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, configErr(option, "must be a positive number of milliseconds")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// millisInto sets a duration field from positive milliseconds.
func millisInto(option string, field func(*Options) *time.Duration) uriParam {
	return func(o *Options, v string) error {
		d, err := positiveMillis(option, v)
		if err != nil {
			return err
		}
		*field(o) = d
		return nil
	}
}

// boolInto sets a boolean field.
func boolInto(option string, field func(*Options) *bool) uriParam {
	return func(o *Options, v string) error {
		b, err := parseBool(option, v)
		if err != nil {
			return err
		}
		*field(o) = b
		return nil
	}
}

// serviceNameInto sets SentinelPrimaryName, which must not be empty.
func serviceNameInto(option string) uriParam {
	return func(o *Options, v string) error {
		if v == "" {
			return configErr(option, "must name the primary")
		}
		o.SentinelPrimaryName = v
		return nil
	}
}

// setSentinelPassword applies sentinelPassword: empty disables the inherited credentials.
func setSentinelPassword(o *Options, v string) {
	o.SentinelPassword = v
	o.SentinelDisableAuth = v == ""
}

func sentinelTLSMode(on bool) SentinelTLSMode {
	if on {
		return SentinelTLSEnabled
	}
	return SentinelTLSDisabled
}

// parseProtocol accepts auto, 2, resp2, 3 and resp3, case-insensitively.
func parseProtocol(option, v string) (Protocol, error) {
	switch strings.ToLower(v) {
	case "auto":
		return ProtocolAuto, nil
	case "2", "resp2":
		return ProtocolRESP2, nil
	case "3", "resp3":
		return ProtocolRESP3, nil
	}
	return ProtocolAuto, configErr(option, "must be auto, 2, resp2, 3 or resp3")
}

// seconds converts a non-negative count of seconds (at most math.MaxInt32) to a duration.
func seconds(n int64) time.Duration {
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return time.Duration(n) * time.Second
}
