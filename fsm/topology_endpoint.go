package fsm

import (
	"strconv"
	"strings"
)

// MaxHostLength bounds the host of an Endpoint: 255 bytes, the longest DNS name. ParseEndpoint
// rejects longer hosts before copying them.
const MaxHostLength = 255

// Endpoint is where a Cluster node can be reached: a host and a TCP port. Build one with
// MakeEndpoint or ParseEndpoint, which put the host in canonical form (see CanonicalHost), so
// that two spellings of one address give equal Endpoints and Endpoints compare with ==.
//
// The zero Endpoint means "no endpoint". An Endpoint with an empty Host and a non-zero Port is a
// node whose port is known but whose host is not (see Endpoint.Dialable).
type Endpoint struct {
	// Host is a canonical IP literal (without brackets) or a lower-case host name.
	Host string
	// Port is the TCP port, 0 to 65535; 0 means unknown.
	Port int
}

// MakeEndpoint returns the Endpoint of host and port with the host in canonical form. It does
// not validate: port should be within 0 to 65535 and host a host name or an IP literal, with or
// without brackets. Use ParseEndpoint for untrusted text.
func MakeEndpoint(host string, port int) Endpoint {
	return Endpoint{Host: CanonicalHost(host), Port: port}
}

// EndpointError reports text that is not an endpoint. It never includes the text itself.
type EndpointError struct {
	// Reason says what is wrong, in words.
	Reason string
}

// Error implements error.
func (e *EndpointError) Error() string { return "respire: invalid endpoint: " + e.Reason }

// ParseEndpoint parses "host:port", "[ipv6]:port" or an unbracketed IPv6 address followed by
// ":port" (the form Redis writes in redirects and CLUSTER NODES): the port is what follows the
// last colon. The host may be empty, and the port must be a decimal number from 1 to 65535.
func ParseEndpoint(s string) (Endpoint, error) {
	colon := strings.LastIndexByte(s, ':')
	if colon < 0 {
		return Endpoint{}, &EndpointError{"no port"}
	}
	port, ok := parsePort(s[colon+1:])
	if !ok {
		return Endpoint{}, &EndpointError{"port is not a number from 1 to 65535"}
	}
	host, err := ParseHost(s[:colon])
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Host: host, Port: port}, nil
}

// ParseHost checks a host as ParseEndpoint does and returns its canonical form: an IP literal
// (an IPv6 one with or without brackets) or a host name of letters, digits, dots, hyphens and
// underscores, at most MaxHostLength bytes. The empty host is valid and stays empty.
func ParseHost(host string) (string, error) {
	if strings.HasPrefix(host, "[") != strings.HasSuffix(host, "]") {
		return "", &EndpointError{"unbalanced brackets"}
	}
	if strings.HasPrefix(host, "[") {
		host = host[1 : len(host)-1]
		if _, ok := parseIPv6(host); !ok {
			return "", &EndpointError{"brackets around something other than an IPv6 address"}
		}
	}
	if err := checkHost(host); err != nil {
		return "", err
	}
	return CanonicalHost(host), nil
}

// checkHost rejects hosts that no Redis node announces: overlong ones, and ones that are neither
// an IPv6 literal nor made of letters, digits, dots, hyphens and underscores.
func checkHost(host string) error {
	if len(host) > MaxHostLength {
		return &EndpointError{"host longer than 255 bytes"}
	}
	if _, ok := parseIPv6(host); ok {
		return nil
	}
	for i := 0; i < len(host); i++ {
		if !nameByte(host[i]) {
			return &EndpointError{"host is neither an IP address nor a host name"}
		}
	}
	return nil
}

// nameByte reports whether c may appear in a host name or an IPv4 address.
func nameByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '-' || c == '.' || c == '_'
}

// parsePort parses a decimal port from 1 to 65535.
func parsePort(s string) (int, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n >= 1 && n <= 65535
}

// IsZero reports whether e is the zero Endpoint ("no endpoint").
func (e Endpoint) IsZero() bool { return e.Host == "" && e.Port == 0 }

// Dialable reports whether e names both a host and a port.
func (e Endpoint) Dialable() bool { return e.Host != "" && e.Port > 0 }

// String returns "host:port", with an IPv6 host in brackets ("[::1]:7000"). A missing host is
// written "?" and the zero Endpoint "none".
func (e Endpoint) String() string {
	return string(e.AppendTo(nil))
}

// AppendTo appends the String form of e to dst.
func (e Endpoint) AppendTo(dst []byte) []byte {
	switch {
	case e.IsZero():
		return append(dst, "none"...)
	case e.Host == "":
		dst = append(dst, '?')
	case strings.IndexByte(e.Host, ':') >= 0:
		dst = append(dst, '[')
		dst = append(dst, e.Host...)
		dst = append(dst, ']')
	default:
		dst = append(dst, e.Host...)
	}
	dst = append(dst, ':')
	return strconv.AppendInt(dst, int64(e.Port), 10)
}

// CompareEndpoints orders endpoints by host, then port (a comparison function for
// slices.SortFunc and slices.BinarySearchFunc).
func CompareEndpoints(a, b Endpoint) int {
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	return a.Port - b.Port
}

// CanonicalHost returns the canonical form of a host, the form Endpoint holds:
//
//   - an IPv4 address in dotted decimal ("10.0.0.1");
//   - an IPv6 address in the form of RFC 5952: lower-case hexadecimal without leading zeros, the
//     longest run of two or more zero groups written "::" ("2001:db8::1" for
//     "2001:0DB8:0:0:0:0:0:1"), without brackets, with any zone kept as written;
//   - an IPv4-mapped IPv6 address ("::ffff:10.0.0.1") as its IPv4 address, since both reach the
//     same host;
//   - anything else as a host name: ASCII letters in lower case (host names are
//     case-insensitive) and trailing dots removed ("Node-A.Example." is "node-a.example").
//
// The empty host stays empty.
func CanonicalHost(host string) string {
	if c, ok := canonicalIP(host); ok {
		return c
	}
	name := host
	for len(name) > 1 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	if name != host {
		if c, ok := canonicalIP(name); ok {
			return c
		}
	}
	return canonicalName(name)
}

// canonicalIP returns the canonical form of an IP literal, with or without brackets around an
// IPv6 one, and whether host is one.
func canonicalIP(host string) (string, bool) {
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		if a, ok := parseIPv6(host[1 : len(host)-1]); ok {
			return a.format(), true
		}
	}
	if _, ok := parseIPv4(host); ok {
		return host, true // parseIPv4 accepts the canonical form only
	}
	if strings.IndexByte(host, ':') >= 0 {
		if a, ok := parseIPv6(host); ok {
			return a.format(), true
		}
	}
	return "", false
}

// IsIPLiteral reports whether host is an IPv4 or IPv6 address (an IPv6 one with or without
// brackets and zone) rather than a host name.
func IsIPLiteral(host string) bool {
	_, ok := canonicalIP(host)
	return ok
}

// canonicalName lower-cases ASCII letters. It returns name itself when nothing changes, so
// canonical names cost no allocation.
func canonicalName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return name
}

// parseIPv4 parses exactly four decimal fields from 0 to 255 separated by dots. Like the Go
// standard library and inet_pton, it rejects leading zeros ("010.0.0.1"), which some systems read
// as octal.
func parseIPv4(s string) ([4]byte, bool) {
	var ip [4]byte
	field, digits, value := 0, 0, 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if digits == 0 || field > 3 {
				return ip, false
			}
			ip[field] = byte(value)
			field++
			digits, value = 0, 0
			continue
		}
		c := s[i]
		if c < '0' || c > '9' || (digits == 1 && value == 0) {
			return ip, false
		}
		value = value*10 + int(c-'0')
		digits++
		if value > 255 {
			return ip, false
		}
	}
	return ip, field == 4
}

// ipv6 is a parsed IPv6 address with its zone ("" without one).
type ipv6 struct {
	bytes [16]byte
	zone  string
}

// parseIPv6 parses an IPv6 address without brackets: eight groups of one to four hexadecimal
// digits, one "::" standing for one or more zero groups, an optional dotted IPv4 address as the
// last 32 bits, and an optional non-empty zone after '%'.
func parseIPv6(s string) (ipv6, bool) {
	var a ipv6
	if z := strings.IndexByte(s, '%'); z >= 0 {
		a.zone = s[z+1:]
		s = s[:z]
		if a.zone == "" {
			return a, false
		}
	}
	ellipsis := -1 // the group index where "::" stands, or -1
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis = 0
		s = s[2:]
		if s == "" {
			return a, true
		}
	}
	i := 0 // groups written so far
	for i < 8 {
		n, c := 0, 0
		for c < len(s) && c <= 4 {
			d := hexDigit(s[c])
			if d < 0 {
				break
			}
			n = n<<4 | d
			c++
		}
		if c == 0 || c > 4 {
			return a, false
		}
		if c < len(s) && s[c] == '.' {
			if i > 6 || (ellipsis < 0 && i != 6) {
				return a, false
			}
			v4, ok := parseIPv4(s)
			if !ok {
				return a, false
			}
			copy(a.bytes[2*i:], v4[:])
			i += 2
			s = ""
			break
		}
		a.bytes[2*i] = byte(n >> 8)
		a.bytes[2*i+1] = byte(n)
		i++
		s = s[c:]
		if s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return a, false
		}
		s = s[1:]
		if s[0] == ':' {
			if ellipsis >= 0 {
				return a, false
			}
			ellipsis = i
			s = s[1:]
			if s == "" {
				break
			}
		}
	}
	if s != "" {
		return a, false
	}
	if i < 8 {
		if ellipsis < 0 {
			return a, false
		}
		n := 8 - i // zero groups the ellipsis stands for
		copy(a.bytes[2*(ellipsis+n):], a.bytes[2*ellipsis:2*i])
		clear(a.bytes[2*ellipsis : 2*(ellipsis+n)])
	} else if ellipsis >= 0 {
		return a, false
	}
	return a, true
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// format writes a in canonical form: an IPv4-mapped address as IPv4 (its zone dropped, as no IPv4
// address has one), anything else as RFC 5952 text with its zone.
func (a ipv6) format() string {
	var mapped = [12]byte{10: 0xff, 11: 0xff}
	if [12]byte(a.bytes[:12]) == mapped {
		return formatIPv4(nil, [4]byte(a.bytes[12:]))
	}
	// The longest run of at least two zero groups, the first one on a tie.
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if a.bytes[2*i] != 0 || a.bytes[2*i+1] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && a.bytes[2*j] == 0 && a.bytes[2*j+1] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	buf := make([]byte, 0, 40+len(a.zone))
	for i := 0; i < 8; i++ {
		if i == best {
			buf = append(buf, ':', ':')
			i += bestLen - 1
			continue
		}
		if i > 0 && i != best+bestLen {
			buf = append(buf, ':')
		}
		buf = strconv.AppendUint(buf, uint64(a.bytes[2*i])<<8|uint64(a.bytes[2*i+1]), 16)
	}
	if a.zone != "" {
		buf = append(buf, '%')
		buf = append(buf, a.zone...)
	}
	return string(buf)
}

func formatIPv4(dst []byte, ip [4]byte) string {
	for i, b := range ip {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = strconv.AppendUint(dst, uint64(b), 10)
	}
	return string(dst)
}
