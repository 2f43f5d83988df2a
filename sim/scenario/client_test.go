package scenario

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/fsm"
)

// simOnlyClientFields are the client section's fields that are not resolver options.
var simOnlyClientFields = map[string]bool{"Connect": true}

// replicaClientFields are the client section's replica-read fields (client.Options names), with
// the config.Replicas field each resolves into (replica.go).
var replicaClientFields = map[string]string{"ReadFrom": "ReadFrom", "ReplicaLatencyTolerance": "LatencyTolerance",
	"ReplicaRefreshInterval": "RefreshInterval", "ClientAvailabilityZone": "ClientAvailabilityZone", "HedgedReads": "HedgedReads"}

// TestReplicaFieldsMapOntoReplicas: the replica-read fields resolve into config.Replicas fields,
// and hedged_reads is config.HedgedReads field for field.
func TestReplicaFieldsMapOntoReplicas(t *testing.T) {
	for section, field := range replicaClientFields {
		if _, ok := reflect.TypeOf(Client{}).FieldByName(section); !ok {
			t.Errorf("Client has no field %s", section)
		}
		if _, ok := reflect.TypeOf(config.Replicas{}).FieldByName(field); !ok {
			t.Errorf("config.Replicas has no field %s (for Client.%s)", field, section)
		}
	}
	h, c := reflect.TypeOf(HedgedReadsSpec{}), reflect.TypeOf(config.HedgedReads{})
	if h.NumField() != c.NumField() {
		t.Errorf("HedgedReadsSpec has %d fields, config.HedgedReads %d", h.NumField(), c.NumField())
	}
	for i := 0; i < h.NumField(); i++ {
		f := h.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if _, ok := c.FieldByName(f.Name); !ok || tag != snakeCase(f.Name) {
			t.Errorf("HedgedReadsSpec.%s (%q) does not match config.HedgedReads", f.Name, tag)
		}
	}
}

// TestClientSectionMapsOntoOptions: the client section is the resolver's options field for field,
// each under its Go name in snake_case; so are the policy and the pool. (The client package checks
// the other half: every resolver option is a client.Options field.)
func TestClientSectionMapsOntoOptions(t *testing.T) {
	pairs := []struct{ section, options reflect.Type }{
		{reflect.TypeOf(Client{}), reflect.TypeOf(config.Options{})},
		{reflect.TypeOf(PolicySpec{}), reflect.TypeOf(fsm.Policy{})},
		{reflect.TypeOf(DedicatedPoolSpec{}), reflect.TypeOf(config.DedicatedPool{})},
	}
	for _, p := range pairs {
		for i := 0; i < p.section.NumField(); i++ {
			f := p.section.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag != snakeCase(f.Name) {
				t.Errorf("%s.%s is %q in YAML, want %q", p.section.Name(), f.Name, tag, snakeCase(f.Name))
			}
			if _, ok := p.options.FieldByName(f.Name); !ok && !simOnlyClientFields[f.Name] && replicaClientFields[f.Name] == "" {
				t.Errorf("%s.%s has no %s field of that name", p.section.Name(), f.Name, p.options)
			}
		}
		for i := 0; i < p.options.NumField(); i++ {
			if name := p.options.Field(i).Name; func() bool { _, ok := p.section.FieldByName(name); return !ok }() {
				t.Errorf("%s.%s is missing from %s", p.options, name, p.section.Name())
			}
		}
	}
}

// TestSnakeCase: Go field names in the scenario's spelling.
func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"Connections": "connections", "ConnectionMaxLifetime": "connection_max_lifetime",
		"GatheredWriteStallTimeout": "gathered_write_stall_timeout", "TLSServerName": "tls_server_name",
		"MaxWaiters": "max_waiters", "IdleTimeout": "idle_timeout", "Resp3Mode": "resp3_mode",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	if got := yamlPath(reflect.TypeOf(Client{}), "ReconnectPolicy.JitterRatio"); got != "reconnect_policy.jitter_ratio" {
		t.Errorf("policy path %q", got)
	}
	if got := yamlPath(reflect.TypeOf(Client{}), "DedicatedPool.MaximumIdle"); got != "dedicated_pool.maximum_idle" {
		t.Errorf("pool path %q", got)
	}
}

// TestClientDefaultsAreTheClients: a scenario that sets nothing gets the client's defaults, from
// the resolver. Regression: the simulator's default library name was "Respire", the client's
// "respire".
func TestClientDefaultsAreTheClients(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Client
	if c.LibraryName != "respire" || config.DefaultLibraryName != "respire" {
		t.Fatalf("library name %q (default %q), want the client's \"respire\"", c.LibraryName, config.DefaultLibraryName)
	}
	r, err := sc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if r.Handshake.LibraryName != "respire" || r.Handshake.LibraryVersion != config.Version {
		t.Fatalf("handshake %v", r.Handshake)
	}
	want, err := config.Resolve(config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("a default scenario resolves to\n%v\nthe zero options to\n%v", r, want)
	}
	if c.Connections != 1 || c.ConnectTimeout != 10*time.Second || c.CommandTimeout != 10*time.Second ||
		c.Protocol != ProtocolAuto || c.MaxWaiters != fsm.DefaultMaxWaiters || c.ReconnectPolicy != nil ||
		c.DedicatedPool == nil || *c.DedicatedPool != (DedicatedPoolSpec{MaximumIdle: 4}) {
		t.Fatalf("client section after defaults: %+v", c)
	}
}

// TestClientBoundsAreTheClients: values the client rejects are rejected with the client's reason,
// naming the YAML field. Regression: the loader accepted sub-millisecond lifetimes and
// idle-read bounds, which the client rejects.
func TestClientBoundsAreTheClients(t *testing.T) {
	for _, tc := range []struct{ yaml, field, reason string }{
		{"connection_max_lifetime: 500us", "client.connection_max_lifetime", "must be at least 1ms"},
		{"connection_max_lifetime: 1ns", "client.connection_max_lifetime", "must be at least 1ms"},
		{"connection_idle_read_timeout: 999us", "client.connection_idle_read_timeout", "must be at least 1ms"},
		{"gathered_write_stall_timeout: 1us", "client.gathered_write_stall_timeout", "must be at least 1ms"},
		{"library_name: two words", "client.library_name", "must contain only ASCII characters from '!' through '~'"},
		{"connections: 1025", "client.connections", "must be at most 1024"},
		{"database: -1", "client.database", "must not be negative"},
		{"dedicated_pool: {minimum_size: 5}", "client.dedicated_pool.minimum_size", "must not exceed MaximumIdle (4)"},
		{"reconnect_policy: {jitter_ratio: 1.5}", "client.reconnect_policy.jitter_ratio", "must be between 0 and 1"},
		{"protocol: resp4", "client.protocol", "must be ProtocolAuto (auto), ProtocolRESP2 (resp2) or ProtocolRESP3 (resp3)"},
	} {
		_, err := Parse([]byte("name: x\nduration: 1m\nclient: {" + tc.yaml + "}\n"))
		var se *Error
		if !errors.As(err, &se) || se.Field != tc.field || se.Msg != tc.reason {
			t.Errorf("%s: got %v, want %s: %s", tc.yaml, err, tc.field, tc.reason)
		}
	}
	for _, ok := range []string{"connection_max_lifetime: 1ms", "connection_idle_read_timeout: -1ns",
		"connection_idle_read_timeout: 1s, gathered_write_stall_timeout: -1ns", "database: 16",
		"dedicated_pool: {maximum_idle: -1}"} {
		if _, err := Parse([]byte("name: x\nduration: 1m\nclient: {" + ok + "}\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestNoTimeoutIsNotSimulated: a command timeout the client accepts but the simulator cannot
// model is refused with a reason that says so.
func TestNoTimeoutIsNotSimulated(t *testing.T) {
	_, err := Parse([]byte("name: x\nduration: 1m\nclient: {command_timeout: -1ns}\n"))
	var se *Error
	if !errors.As(err, &se) || se.Field != "client.command_timeout" || !strings.Contains(se.Msg, "not simulated") {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse([]byte("name: x\nduration: 1m\nclient: {command_timeout: -2ns}\n")); err == nil ||
		!strings.Contains(err.Error(), "use NoTimeout to disable it") {
		t.Fatalf("a negative timeout other than NoTimeout: %v", err)
	}
}

// TestResolvedScenarioShowsEffectiveValues: the resolved scenario states the values in effect,
// not the zero values that stand for them, and reads back to the same configuration. Regression
// (issue 15): a resolved scenario showed multiplier 0 while 2 was in effect.
func TestResolvedScenarioShowsEffectiveValues(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 1m\nclient: {connection_idle_read_timeout: 2s, " +
		"reconnect_policy: {initial_delay: 100ms, max_attempts: 3}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sc.Resolve(9)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"backoff_multiplier: 2\n", "max_delay: 24h0m0s\n", "maximum_idle: 4\n",
		"gathered_write_stall_timeout: 2s\n", "library_name: respire\n", "max_waiters: 65536\n", "protocol: auto\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("resolved scenario lacks %q:\n%s", strings.TrimSpace(want), text)
		}
	}
	if strings.Contains(text, "backoff_multiplier: 0") || strings.Contains(text, "max_delay: 0s") {
		t.Errorf("resolved scenario shows a zero value for a value in effect:\n%s", text)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rs.EngineConfig(), back.EngineConfig(); !reflect.DeepEqual(a, b) {
		t.Fatalf("the resolved scenario reads back to another configuration:\n%+v\n%+v", a, b)
	}
	if a, b := sc.Client.ReconnectPolicy.Policy(), rs.Client.ReconnectPolicy.Policy(); a.String() != b.String() {
		t.Fatalf("resolution changed the policy: %v -> %v", a, b)
	}
}

// TestRenamedClientFieldsAreErrors: the names before the client section followed client.Options
// are unknown fields, so an old scenario fails loudly instead of silently dropping a setting.
func TestRenamedClientFieldsAreErrors(t *testing.T) {
	for _, old := range []string{"max_lifetime: 1s", "idle_read_timeout: 1s", "write_stall_timeout: 1s",
		"omit_library_info: true", "reconnect_policy: {multiplier: 2}", "reconnect_policy: {jitter: 0.1}"} {
		_, err := Parse([]byte("name: x\nduration: 1m\nclient: {" + old + "}\n"))
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "unknown field") {
			t.Errorf("%s: got %v", old, err)
		}
	}
}

// TestClientSectionDocumented: docs/scenarios.md's client-section table names every key of the
// client section, the policy and the pool.
func TestClientSectionDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### The client section")
	section, _, _ = strings.Cut(section, "\n### ")
	if !ok {
		t.Fatal("docs/scenarios.md has no client-section heading")
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(Client{}), reflect.TypeOf(PolicySpec{}), reflect.TypeOf(DedicatedPoolSpec{})} {
		for i := 0; i < typ.NumField(); i++ {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if !strings.Contains(section, "`"+key+"`") {
				t.Errorf("the client-section table does not mention %s (%s.%s)", key, typ.Name(), typ.Field(i).Name)
			}
		}
	}
}
