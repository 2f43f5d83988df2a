package client

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// redacted replaces a secret wherever respire prints a value that holds one.
const redacted = "[redacted]"

// Every type that holds a secret prints it redacted, whichever way it is printed.
var (
	_ fmt.Formatter  = Options{}
	_ fmt.Formatter  = (*Client)(nil)
	_ fmt.Formatter  = Credentials{}
	_ fmt.Formatter  = (*CredentialSource)(nil)
	_ slog.LogValuer = Options{}
	_ slog.LogValuer = (*Client)(nil)
	_ slog.LogValuer = (*CredentialSource)(nil)
	_ json.Marshaler = Options{}
	_ json.Marshaler = (*Client)(nil)
	_ json.Marshaler = Credentials{}
	_ json.Marshaler = (*CredentialSource)(nil)
)

// String describes the options without their secrets: the fields that are set, with Password and
// SentinelPassword as [redacted], Credentials as its type, TLS as a summary without key material,
// and functions as "set". It is also what fmt's verbs, slog and MarshalJSON print.
func (o Options) String() string { return "client.Options" + renderText(describeOptions(&o)) }

// GoString makes %#v print the redacted description too.
func (o Options) GoString() string { return o.String() }

// Format makes every fmt verb, flag and width print the redacted description.
func (o Options) Format(f fmt.State, verb rune) { formatRedacted(f, verb, o.String()) }

// LogValue makes slog log the redacted description as a group.
func (o Options) LogValue() slog.Value { return logValue(describeOptions(&o)) }

// MarshalJSON encodes the redacted description as a JSON object.
func (o Options) MarshalJSON() ([]byte, error) { return marshalFields(describeOptions(&o)) }

// describe lists what a client prints: its endpoint, whether it was closed, its options.
func (c *Client) describe() []field {
	return []field{{"Endpoint", c.ep.String()}, {"Closed", c.closed.Load()}, {"Options", describeOptions(&c.opts)}}
}

// String describes the client (endpoint, closed, options) without secrets.
func (c *Client) String() string {
	if c == nil {
		return "client.Client(nil)"
	}
	return "client.Client" + renderText(c.describe())
}

// GoString makes %#v print the redacted description too.
func (c *Client) GoString() string { return c.String() }

// Format makes every fmt verb, flag and width print the redacted description.
func (c *Client) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// LogValue makes slog log the redacted description as a group.
func (c *Client) LogValue() slog.Value {
	if c == nil {
		return slog.StringValue(c.String())
	}
	return logValue(c.describe())
}

// MarshalJSON encodes the redacted description as a JSON object.
func (c *Client) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	return marshalFields(c.describe())
}

// field is one line of a redacted description. Its value is a string, a bool, an int64, a
// uint64, a float64, a []string or a nested []field: never a value that fmt or encoding/json
// could expand into a secret.
type field struct {
	name  string
	value any
}

// plainStrings are the string options printed as they are. Every other string option (the
// passwords, and any added later until it is listed here) prints as [redacted].
var plainStrings = map[string]bool{
	"Username": true, "ClientName": true, "LibraryName": true, "TLSServerName": true,
	"SentinelPrimaryName": true, "SentinelUsername": true, "SentinelTLSServerName": true,
	"KeyPrefix": true, "PubSubPrefix": true, "Host": true,
}

// describeOptions lists the options that are set.
func describeOptions(o *Options) []field { return describeStruct(reflect.ValueOf(o).Elem()) }

// describeStruct lists the exported fields of v that are not zero.
func describeStruct(v reflect.Value) []field {
	t := v.Type()
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if value, ok := describeValue(sf.Name, v.Field(i)); ok {
			out = append(out, field{sf.Name, value})
		}
	}
	return out
}

var (
	stringerType  = reflect.TypeFor[fmt.Stringer]()
	tlsConfigType = reflect.TypeFor[*tls.Config]()
	durationType  = reflect.TypeFor[time.Duration]()
)

// describeValue returns the printable form of one option, or false when it is not set.
func describeValue(name string, v reflect.Value) (any, bool) {
	if !v.IsValid() || v.IsZero() {
		return nil, false
	}
	t := v.Type()
	switch {
	case t == tlsConfigType:
		return describeTLS(v.Interface().(*tls.Config)), true
	case (name == "TLSMinVersion" || name == "TLSMaxVersion") && t.Kind() == reflect.Uint16:
		return tls.VersionName(uint16(v.Uint())), true
	case t == durationType || (ownType(t) && t.Implements(stringerType)) ||
		(t.Kind() == reflect.Pointer && ownType(t.Elem()) && t.Implements(stringerType)):
		// Durations and respire's own types (enumerations, endpoints, policies) describe
		// themselves without secrets.
		return v.Interface().(fmt.Stringer).String(), true
	}
	switch t.Kind() {
	case reflect.String:
		if plainStrings[name] {
			return v.String(), true
		}
		return redacted, true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint(), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	case reflect.Interface:
		// A provider, a logger, a meter provider: its type only, never what it holds.
		return "<" + v.Elem().Type().String() + ">", true
	case reflect.Struct:
		return describeStruct(v), true
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct && ownType(t.Elem()) {
			return describeStruct(v.Elem()), true
		}
		return "set", true
	case reflect.Slice:
		if ownType(t.Elem()) && t.Elem().Implements(stringerType) {
			out := make([]string, v.Len())
			for i := range out {
				out[i] = v.Index(i).Interface().(fmt.Stringer).String()
			}
			return out, true
		}
		return strconv.Itoa(v.Len()) + " items", true
	}
	return "set", true
}

// ownType reports whether t is a named type declared in respire.
func ownType(t reflect.Type) bool {
	return strings.HasPrefix(t.PkgPath(), "github.com/respire-go/respire/")
}

// describeTLS summarizes a TLS configuration without key material: the certificates are counted,
// never printed.
func describeTLS(c *tls.Config) []field {
	var out []field
	add := func(name string, value any, set bool) {
		if set {
			out = append(out, field{name, value})
		}
	}
	add("ServerName", c.ServerName, c.ServerName != "")
	add("MinVersion", tls.VersionName(c.MinVersion), c.MinVersion != 0)
	add("MaxVersion", tls.VersionName(c.MaxVersion), c.MaxVersion != 0)
	add("InsecureSkipVerify", true, c.InsecureSkipVerify)
	add("Certificates", int64(len(c.Certificates)), len(c.Certificates) > 0)
	add("GetClientCertificate", "set", c.GetClientCertificate != nil)
	add("RootCAs", "set", c.RootCAs != nil)
	add("VerifyPeerCertificate", "set", c.VerifyPeerCertificate != nil)
	add("VerifyConnection", "set", c.VerifyConnection != nil)
	if out == nil {
		out = []field{}
	}
	return out
}

// renderText writes fields as "{Name:value Name:{...}}", in the style of %+v.
func renderText(fields []field) string {
	var b strings.Builder
	appendText(&b, fields)
	return b.String()
}

func appendText(b *strings.Builder, fields []field) {
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.name)
		b.WriteByte(':')
		switch v := f.value.(type) {
		case []field:
			appendText(b, v)
		case []string:
			b.WriteString("[" + strings.Join(v, " ") + "]")
		case string:
			b.WriteString(v)
		default:
			fmt.Fprint(b, v)
		}
	}
	b.WriteByte('}')
}

// logValue turns fields into a slog group.
func logValue(fields []field) slog.Value {
	attrs := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		switch v := f.value.(type) {
		case []field:
			attrs = append(attrs, slog.Attr{Key: f.name, Value: logValue(v)})
		case []string:
			attrs = append(attrs, slog.String(f.name, strings.Join(v, ",")))
		case string:
			attrs = append(attrs, slog.String(f.name, v))
		case bool:
			attrs = append(attrs, slog.Bool(f.name, v))
		case int64:
			attrs = append(attrs, slog.Int64(f.name, v))
		case uint64:
			attrs = append(attrs, slog.Uint64(f.name, v))
		case float64:
			attrs = append(attrs, slog.Float64(f.name, v))
		}
	}
	return slog.GroupValue(attrs...)
}

// marshalFields encodes fields as a JSON object, in order.
func marshalFields(fields []field) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.name)
		b.Write(name)
		b.WriteByte(':')
		var value []byte
		var err error
		if nested, ok := f.value.([]field); ok {
			value, err = marshalFields(nested)
		} else {
			value, err = json.Marshal(f.value)
		}
		if err != nil {
			return nil, err
		}
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// formatRedacted prints text, a redacted description, for any verb: %v, %+v, %#v and %s print
// it, %q quotes it and %x hex-encodes it, all with the flags, width and precision given; any
// other verb prints it as %s would.
func formatRedacted(f fmt.State, verb rune, text string) {
	switch verb {
	case 'q', 'x', 'X', 's':
	default:
		verb = 's'
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), text)
}

// logPlaintextCredentials warns, once for the client being created, when credentials would
// cross the network unencrypted: a password (or a credential provider) without TLS, to a TCP
// endpoint that is not a loopback address. The warning names the endpoint, never the secret.
// Unix sockets, loopback hosts and connections opened by Options.Dialer (which may secure or
// tunnel them) do not warn. A nil logger discards it.
func (o *Options) logPlaintextCredentials(l *slog.Logger) {
	if l == nil || o.TLS != nil || o.Dialer != nil || (o.Password == "" && o.Credentials == nil) {
		return
	}
	for _, ep := range o.Endpoints {
		if ep.IsUnix() || isLoopbackHost(ep.Host) {
			continue
		}
		l.Warn("respire: credentials are sent unencrypted: the password travels in plaintext over TCP; set Options.TLS "+
			"(rediss:// or ssl=true) or connect over a loopback address or a Unix socket",
			"event", "PlaintextCredentials", "endpoint", ep.String())
		return
	}
}

// isLoopbackHost reports whether host is "localhost" (or a name under .localhost) or a loopback
// IP literal. Names are not resolved.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// String lists the names of the queued commands ("client.Batch{SET INCR}"), never their
// arguments, which hold keys, values and, for AUTH, passwords.
func (b *Batch) String() string {
	if b == nil {
		return "client.Batch(nil)"
	}
	names := make([]string, len(b.ents))
	for i := range b.ents {
		names[i] = b.ents[i].name
	}
	return "client.Batch{" + strings.Join(names, " ") + "}"
}

// GoString makes %#v print the command names only too.
func (b *Batch) GoString() string { return b.String() }

// Format makes every fmt verb, flag and width print the command names only.
func (b *Batch) Format(f fmt.State, verb rune) { formatRedacted(f, verb, b.String()) }

// LogValue makes slog log the command names only.
func (b *Batch) LogValue() slog.Value { return slog.StringValue(b.String()) }
