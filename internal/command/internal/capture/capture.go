// Package capture asks a running redis-server to describe its commands (COMMAND INFO and
// COMMAND DOCS, over RESP3) and renders the answer as the JSON document that
// internal/command's generator reads (testdata/commands.json).
//
// The document keeps what Redis says, field for field: COMMAND INFO's positional reply becomes
// an object with named fields, and each command's COMMAND DOCS map is attached to it as "docs".
// Commands and subcommands are sorted by name, and JSON objects are written with sorted keys,
// so that the same server always yields the same bytes.
package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/respire-go/respire/netio/resp"
)

// Document is the captured description of a server's commands.
type Document struct {
	// RedisVersion is the server's redis_version.
	RedisVersion string `json:"redis_version"`
	// Source says how the document was produced.
	Source string `json:"source"`
	// Commands are the top-level commands, sorted by name.
	Commands []*Command `json:"commands"`
}

// Command is one command or subcommand: COMMAND INFO's fields by name, plus its COMMAND DOCS.
type Command struct {
	Name          string         `json:"name"`
	Arity         int64          `json:"arity"`
	Flags         []string       `json:"flags"`
	FirstKey      int64          `json:"first_key"`
	LastKey       int64          `json:"last_key"`
	Step          int64          `json:"step"`
	ACLCategories []string       `json:"acl_categories"`
	Tips          []string       `json:"tips"`
	KeySpecs      []any          `json:"key_specs"`
	Docs          map[string]any `json:"docs"`
	Subcommands   []*Command     `json:"subcommands,omitempty"`
}

// Timeout bounds each exchange with the server.
const Timeout = 10 * time.Second

// Capture connects to addr (host:port, no authentication), switches to RESP3 and returns the
// rendered document of every command of the server.
func Capture(addr string) ([]byte, error) {
	return capture(addr, "COMMAND INFO and COMMAND DOCS over RESP3")
}

// SentinelCommands are the commands a redis-sentinel has and a redis-server does not: the
// SENTINEL container and its subcommands. (A sentinel's other commands, PING, INFO, ROLE,
// CLIENT, ACL, AUTH, HELLO, the subscribe family and a few more, are the server's.)
var SentinelCommands = []string{"sentinel"}

// CaptureSentinel connects to the redis-sentinel at addr and returns the rendered document of
// its SentinelCommands (testdata/sentinel.json), in the same format as Capture's.
func CaptureSentinel(addr string) ([]byte, error) {
	return capture(addr, "COMMAND INFO SENTINEL and COMMAND DOCS SENTINEL of redis-sentinel over RESP3", SentinelCommands...)
}

func capture(addr, source string, names ...string) ([]byte, error) {
	conn, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	s := &session{conn: conn, rd: resp.NewReader(bufio.NewReader(conn), nil)}
	doc, err := s.document(source, names)
	if err != nil {
		return nil, err
	}
	return Render(doc)
}

// Render encodes a document as indented JSON ending with a newline.
func Render(doc *Document) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type session struct {
	conn net.Conn
	rd   *resp.Reader
}

// do sends one command and reads its reply, which it converts to plain Go values.
func (s *session) do(args ...string) (resp.Value, error) {
	if err := s.conn.SetDeadline(time.Now().Add(Timeout)); err != nil {
		return resp.Value{}, err
	}
	if _, err := s.conn.Write(resp.AppendCommand(nil, args...)); err != nil {
		return resp.Value{}, err
	}
	var v resp.Value
	if err := s.rd.Read(&v); err != nil {
		return resp.Value{}, err
	}
	if v.IsError() {
		return resp.Value{}, fmt.Errorf("%s: %s", strings.Join(args, " "), v.ErrorMessage())
	}
	return v.Clone(), nil
}

// document describes the commands named (every command when none is).
func (s *session) document(source string, names []string) (*Document, error) {
	hello, err := s.do("HELLO", "3")
	if err != nil {
		return nil, err
	}
	info, ok := plain(hello).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("HELLO 3: unexpected reply %s", hello.String())
	}
	version, _ := info["version"].(string)
	infoReply, err := s.do(append([]string{"COMMAND", "INFO"}, names...)...)
	if err != nil {
		return nil, err
	}
	docsReply, err := s.do(append([]string{"COMMAND", "DOCS"}, names...)...)
	if err != nil {
		return nil, err
	}
	docs, ok := plain(docsReply).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("COMMAND DOCS: unexpected %s reply", docsReply.Kind)
	}
	doc := &Document{RedisVersion: version, Source: source}
	infos := elems(&infoReply)
	for i := range infos {
		c, err := command(&infos[i], docs)
		if err != nil {
			return nil, err
		}
		doc.Commands = append(doc.Commands, c)
	}
	sortCommands(doc.Commands)
	return doc, nil
}

// command converts one COMMAND INFO entry (ten positional fields) and attaches its docs, taken
// from docs (the map of its level: top-level commands, or a container's "subcommands").
func command(v *resp.Value, docs map[string]any) (*Command, error) {
	if v.Kind != resp.KindArray || v.Len() < 10 {
		return nil, fmt.Errorf("COMMAND INFO: unexpected entry %s", v.String())
	}
	f := elems(v)
	c := &Command{
		Name:          text(&f[0]),
		Arity:         f[1].Int,
		Flags:         texts(&f[2]),
		FirstKey:      f[3].Int,
		LastKey:       f[4].Int,
		Step:          f[5].Int,
		ACLCategories: texts(&f[6]),
		Tips:          texts(&f[7]),
		KeySpecs:      []any{},
	}
	if specs, ok := plain(f[8]).([]any); ok {
		c.KeySpecs = specs
	}
	d, _ := docs[c.Name].(map[string]any)
	if d == nil {
		return nil, fmt.Errorf("COMMAND DOCS has no entry for %q", c.Name)
	}
	subDocs, _ := d["subcommands"].(map[string]any)
	c.Docs = make(map[string]any, len(d))
	for k, x := range d {
		if k != "subcommands" {
			c.Docs[k] = x
		}
	}
	subs := elems(&f[9])
	for i := range subs {
		sub, err := command(&subs[i], subDocs)
		if err != nil {
			return nil, err
		}
		c.Subcommands = append(c.Subcommands, sub)
	}
	sortCommands(c.Subcommands)
	return c, nil
}

func sortCommands(cs []*Command) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
}

func text(v *resp.Value) string { return string(v.Str) }

func texts(v *resp.Value) []string {
	es := elems(v)
	out := make([]string, 0, len(es))
	for i := range es {
		out = append(out, text(&es[i]))
	}
	return out
}

// plain converts a reply to JSON-friendly values: maps with string keys, slices, strings,
// int64, float64, bool and nil.
func plain(v resp.Value) any {
	switch v.Kind {
	case resp.KindMap:
		es := elems(&v)
		m := make(map[string]any, len(es)/2)
		for i := 0; i+1 < len(es); i += 2 {
			m[string(es[i].Str)] = plain(es[i+1])
		}
		return m
	case resp.KindArray, resp.KindSet:
		es := elems(&v)
		out := make([]any, 0, len(es))
		for _, e := range es {
			out = append(out, plain(e))
		}
		return out
	case resp.KindInteger:
		return v.Int
	case resp.KindDouble:
		return v.Float
	case resp.KindBoolean:
		return v.Bool
	case resp.KindNull:
		return nil
	}
	return string(v.Str)
}

// elems returns the elements of an aggregate value as a slice (nil for other kinds).
func elems(v *resp.Value) []resp.Value {
	var out []resp.Value
	for _, e := range v.All() {
		out = append(out, e)
	}
	return out
}
