package client

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine/config"
	"github.com/respire-go/respire/sim"
)

// The simulator's scenarios and Options share one resolver (engine/config). These tests hold the
// two front ends to it: for every shared option, the same bad value gives the same error through
// Options and through a scenario's client section, and the same good values resolve to the same
// engine configuration, handshake and liveness bounds.

var parityEndpoint = []Endpoint{{Host: "cache", Port: 6379}}

// scenarioWith parses a minimal scenario whose client section is section.
func scenarioWith(section string) (*sim.Scenario, error) {
	return sim.ParseScenario([]byte("name: parity\nduration: 1m\nclient: {" + section + "}\n"))
}

// parityBadValues has a bad value of every shared option that has one, as Go and as YAML.
var parityBadValues = []struct {
	option string // the Options field (dotted when nested)
	path   string // its YAML path in a scenario
	set    func(*Options)
	yaml   string
}{
	{"Connections", "client.connections", func(o *Options) { o.Connections = -1 }, "connections: -1"},
	{"Connections", "client.connections", func(o *Options) { o.Connections = 1025 }, "connections: 1025"},
	{"ConnectTimeout", "client.connect_timeout", func(o *Options) { o.ConnectTimeout = -time.Second }, "connect_timeout: -1s"},
	{"CommandTimeout", "client.command_timeout", func(o *Options) { o.CommandTimeout = -2 * time.Second }, "command_timeout: -2s"},
	{"Protocol", "client.protocol", func(o *Options) { o.Protocol = 4 }, "protocol: resp4"},
	{"Database", "client.database", func(o *Options) { o.Database = -1 }, "database: -1"},
	{"LibraryName", "client.library_name", func(o *Options) { o.LibraryName = "my lib" }, "library_name: my lib"},
	{"LibraryName", "client.library_name", func(o *Options) { o.LibraryName = "bibliothèque" }, "library_name: bibliothèque"},
	{"ReconnectPolicy.InitialDelay", "client.reconnect_policy.initial_delay",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{InitialDelay: -time.Second} }, "reconnect_policy: {initial_delay: -1s}"},
	{"ReconnectPolicy.InitialDelay", "client.reconnect_policy.initial_delay",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{InitialDelay: 25 * time.Hour} }, "reconnect_policy: {initial_delay: 25h}"},
	{"ReconnectPolicy.BackoffMultiplier", "client.reconnect_policy.backoff_multiplier",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{BackoffMultiplier: 0.5} }, "reconnect_policy: {backoff_multiplier: 0.5}"},
	{"ReconnectPolicy.BackoffMultiplier", "client.reconnect_policy.backoff_multiplier",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{BackoffMultiplier: math.Inf(1)} }, "reconnect_policy: {backoff_multiplier: .inf}"},
	{"ReconnectPolicy.MaxDelay", "client.reconnect_policy.max_delay",
		func(o *Options) {
			o.ReconnectPolicy = &ReconnectPolicy{InitialDelay: time.Second, MaxDelay: time.Millisecond}
		}, "reconnect_policy: {initial_delay: 1s, max_delay: 1ms}"},
	{"ReconnectPolicy.MaxDelay", "client.reconnect_policy.max_delay",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{MaxDelay: 48 * time.Hour} }, "reconnect_policy: {max_delay: 48h}"},
	{"ReconnectPolicy.JitterRatio", "client.reconnect_policy.jitter_ratio",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{JitterRatio: 1.5} }, "reconnect_policy: {jitter_ratio: 1.5}"},
	{"ReconnectPolicy.JitterRatio", "client.reconnect_policy.jitter_ratio",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{JitterRatio: -0.1} }, "reconnect_policy: {jitter_ratio: -0.1}"},
	{"ReconnectPolicy.MaxAttempts", "client.reconnect_policy.max_attempts",
		func(o *Options) { o.ReconnectPolicy = &ReconnectPolicy{MaxAttempts: -1} }, "reconnect_policy: {max_attempts: -1}"},
	{"ConnectionIdleReadTimeout", "client.connection_idle_read_timeout",
		func(o *Options) { o.ConnectionIdleReadTimeout = 999 * time.Microsecond }, "connection_idle_read_timeout: 999us"},
	{"ConnectionIdleReadTimeout", "client.connection_idle_read_timeout",
		func(o *Options) { o.ConnectionIdleReadTimeout = -2 * time.Second }, "connection_idle_read_timeout: -2s"},
	{"GatheredWriteStallTimeout", "client.gathered_write_stall_timeout",
		func(o *Options) { o.GatheredWriteStallTimeout = time.Microsecond }, "gathered_write_stall_timeout: 1us"},
	{"GatheredWriteStallTimeout", "client.gathered_write_stall_timeout",
		func(o *Options) { o.GatheredWriteStallTimeout = -time.Second }, "gathered_write_stall_timeout: -1s"},
	{"ConnectionMaxLifetime", "client.connection_max_lifetime",
		func(o *Options) { o.ConnectionMaxLifetime = 500 * time.Microsecond }, "connection_max_lifetime: 500us"},
	{"ConnectionMaxLifetime", "client.connection_max_lifetime",
		func(o *Options) { o.ConnectionMaxLifetime = -time.Minute }, "connection_max_lifetime: -1m"},
	{"ConnectionMaxLifetimeJitter", "client.connection_max_lifetime_jitter",
		func(o *Options) { o.ConnectionMaxLifetimeJitter = time.Second }, "connection_max_lifetime_jitter: 1s"},
	{"ConnectionMaxLifetimeJitter", "client.connection_max_lifetime_jitter",
		func(o *Options) { o.ConnectionMaxLifetime, o.ConnectionMaxLifetimeJitter = time.Minute, -time.Second },
		"connection_max_lifetime: 1m, connection_max_lifetime_jitter: -1s"},
	{"DedicatedPool.MinimumSize", "client.dedicated_pool.minimum_size",
		func(o *Options) { o.DedicatedPool.MinimumSize = -1 }, "dedicated_pool: {minimum_size: -1}"},
	{"DedicatedPool.MinimumSize", "client.dedicated_pool.minimum_size",
		func(o *Options) { o.DedicatedPool.MinimumSize = 5 }, "dedicated_pool: {minimum_size: 5}"},
	{"DedicatedPool.MinimumSize", "client.dedicated_pool.minimum_size",
		func(o *Options) { o.DedicatedPool.MinimumSize, o.DedicatedPool.MaximumSize = 3, 2 }, "dedicated_pool: {minimum_size: 3, maximum_size: 2}"},
	{"DedicatedPool.MinimumSize", "client.dedicated_pool.minimum_size",
		func(o *Options) { o.DedicatedPool.MinimumSize, o.DedicatedPool.MaximumIdle = 1, NoIdleReuse }, "dedicated_pool: {minimum_size: 1, maximum_idle: -1}"},
	{"DedicatedPool.MaximumSize", "client.dedicated_pool.maximum_size",
		func(o *Options) { o.DedicatedPool.MaximumSize = -1 }, "dedicated_pool: {maximum_size: -1}"},
	{"DedicatedPool.MaximumIdle", "client.dedicated_pool.maximum_idle",
		func(o *Options) { o.DedicatedPool.MaximumIdle = -2 }, "dedicated_pool: {maximum_idle: -2}"},
	{"DedicatedPool.IdleTimeout", "client.dedicated_pool.idle_timeout",
		func(o *Options) { o.DedicatedPool.IdleTimeout = -time.Second }, "dedicated_pool: {idle_timeout: -1s}"},
	{"DedicatedPool.IdleTimeout", "client.dedicated_pool.idle_timeout",
		func(o *Options) { o.DedicatedPool.IdleTimeout = time.Microsecond }, "dedicated_pool: {idle_timeout: 1us}"},
	{"DedicatedPool.IdleTimeout", "client.dedicated_pool.idle_timeout",
		func(o *Options) { o.DedicatedPool.IdleTimeout = 25 * time.Hour }, "dedicated_pool: {idle_timeout: 25h}"},
	{"ClusterTopologyRefreshInterval", "client.cluster_topology_refresh_interval",
		func(o *Options) { o.ClusterTopologyRefreshInterval = 500 * time.Microsecond }, "cluster_topology_refresh_interval: 500us"},
	{"ClusterTopologyRefreshInterval", "client.cluster_topology_refresh_interval",
		func(o *Options) { o.ClusterTopologyRefreshInterval = -time.Second }, "cluster_topology_refresh_interval: -1s"},
	{"MaintenanceNotifications", "client.maintenance_notifications",
		func(o *Options) { o.MaintenanceNotifications = 7 }, "maintenance_notifications: sometimes"},
	{"MaintenanceNotifications", "client.maintenance_notifications",
		func(o *Options) { o.MaintenanceNotifications, o.Protocol = MaintenanceEnabled, ProtocolRESP2 },
		"maintenance_notifications: enabled, protocol: resp2"},
	{"MaintenanceRelaxedTimeout", "client.maintenance_relaxed_timeout",
		func(o *Options) { o.MaintenanceRelaxedTimeout = time.Microsecond }, "maintenance_relaxed_timeout: 1us"},
	{"MaintenanceRelaxedTimeout", "client.maintenance_relaxed_timeout",
		func(o *Options) { o.MaintenanceRelaxedTimeout = 25 * time.Hour }, "maintenance_relaxed_timeout: 25h"},
	{"MaintenanceWindowTimeout", "client.maintenance_window_timeout",
		func(o *Options) { o.MaintenanceWindowTimeout = -time.Second }, "maintenance_window_timeout: -1s"},
}

// optionsWithoutBadValues are the shared options that accept every value of their type.
var optionsWithoutBadValues = map[string]bool{
	"Username": true, "Password": true, "ClientName": true, "DisableLibraryInfo": true, "EnableFences": true,
	// MaxWaiters is not an Options field: the client leaves it at the engine's default.
	"MaxWaiters": true,
	// UseCluster accepts both values (a scenario's topology must agree with it).
	"UseCluster": true,
}

// TestScenarioRejectsWhatOptionsReject: the same bad value gives the same error, naming the same
// field with the same reason, through Options.Validate and through a scenario's client section.
func TestScenarioRejectsWhatOptionsReject(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range parityBadValues {
		t.Run(tc.yaml, func(t *testing.T) {
			o := Options{Endpoints: parityEndpoint}
			tc.set(&o)
			var ce *ConfigError
			if err := o.Validate(); !errors.As(err, &ce) || ce.Option != tc.option {
				t.Fatalf("Options.Validate = %v, want a *ConfigError for %s", err, tc.option)
			}
			_, err := scenarioWith(tc.yaml)
			var se *sim.ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("the scenario accepts %s (err %v); Options rejects it: %v", tc.yaml, err, ce)
			}
			if se.Field != tc.path || se.Msg != ce.Reason {
				t.Fatalf("scenario: %s: %s\noptions:  %s: %s", se.Field, se.Msg, ce.Option, ce.Reason)
			}
		})
		top, _, _ := strings.Cut(tc.option, ".")
		covered[top] = true
	}
	shared := reflect.TypeOf(config.Options{})
	for i := 0; i < shared.NumField(); i++ {
		name := shared.Field(i).Name
		if !covered[name] && !optionsWithoutBadValues[name] {
			t.Errorf("no bad value of %s in the parity table", name)
		}
	}
}

// TestScenarioResolvesLikeOptions: the defaults are equal, and the same good values resolve to
// the same engine configuration, handshake and liveness bounds.
func TestScenarioResolvesLikeOptions(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		yaml string
	}{
		{"defaults", Options{}, ""},
		{"everything set", Options{
			Connections: 3, ConnectTimeout: time.Second, CommandTimeout: 2 * time.Second, Protocol: ProtocolRESP3,
			Username: "app", Password: "s3cret", Database: 2, ClientName: "checkout", LibraryName: "lib",
			ReconnectPolicy: &ReconnectPolicy{InitialDelay: 50 * time.Millisecond, BackoffMultiplier: 1.5,
				MaxDelay: time.Second, JitterRatio: 0.2, MaxAttempts: 4},
			ConnectionIdleReadTimeout: 3 * time.Second, GatheredWriteStallTimeout: time.Second,
			ConnectionMaxLifetime: time.Minute, ConnectionMaxLifetimeJitter: 10 * time.Second,
			DedicatedPool:            DedicatedPoolOptions{MinimumSize: 1, MaximumSize: 8, MaximumIdle: 2, IdleTimeout: 30 * time.Second},
			MaintenanceNotifications: MaintenanceEnabled, MaintenanceRelaxedTimeout: 5 * time.Second, MaintenanceWindowTimeout: 9 * time.Second,
		}, "maintenance_notifications: enabled, maintenance_relaxed_timeout: 5s, maintenance_window_timeout: 9s, " +
			"connections: 3, connect_timeout: 1s, command_timeout: 2s, protocol: resp3, username: app, password: s3cret, " +
			"database: 2, client_name: checkout, library_name: lib, reconnect_policy: {initial_delay: 50ms, " +
			"backoff_multiplier: 1.5, max_delay: 1s, jitter_ratio: 0.2, max_attempts: 4}, connection_idle_read_timeout: 3s, " +
			"gathered_write_stall_timeout: 1s, connection_max_lifetime: 1m, connection_max_lifetime_jitter: 10s, " +
			"dedicated_pool: {minimum_size: 1, maximum_size: 8, maximum_idle: 2, idle_timeout: 30s}"},
		{"zero-valued policy and disabled library info", Options{ReconnectPolicy: &ReconnectPolicy{}, DisableLibraryInfo: true, Protocol: ProtocolRESP2},
			"reconnect_policy: {}, disable_library_info: true, protocol: resp2"},
		{"NoTimeout and NoIdleReuse", Options{ConnectionIdleReadTimeout: time.Second, GatheredWriteStallTimeout: NoTimeout,
			DedicatedPool: DedicatedPoolOptions{MaximumIdle: NoIdleReuse}},
			"connection_idle_read_timeout: 1s, gathered_write_stall_timeout: -1ns, dedicated_pool: {maximum_idle: -1}"},
		{"inherited write bound", Options{ConnectionIdleReadTimeout: 250 * time.Millisecond}, "connection_idle_read_timeout: 250ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Endpoints = parityEndpoint
			_, want := resolveForTest(t, o)
			sc, err := scenarioWith(tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sc.ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("scenario resolves to\n%v\n%+v\noptions to\n%v\n%+v", got, got.Engine, want, want.Engine)
			}
			cfg := sc.EngineConfig()
			cfg.Endpoint, cfg.JournalSize = want.Engine.Endpoint, want.Engine.JournalSize
			if !reflect.DeepEqual(cfg, want.Engine) {
				t.Fatalf("the run's engine configuration %+v differs from the client's %+v", cfg, want.Engine)
			}
		})
	}
}

// TestSharedOptionsAreOptionsFields: every option of the resolver is an Options field of the same
// name (nested for the pool), apart from MaxWaiters, the engine's knob that Options leaves alone.
// The simulator checks the other side: its client section has each of them in snake_case.
func TestSharedOptionsAreOptionsFields(t *testing.T) {
	opts := reflect.TypeOf(Options{})
	shared := reflect.TypeOf(config.Options{})
	for i := 0; i < shared.NumField(); i++ {
		name := shared.Field(i).Name
		if name == "MaxWaiters" {
			continue
		}
		if _, ok := opts.FieldByName(name); !ok {
			t.Errorf("config.Options.%s is not a client.Options field", name)
		}
	}
	pool, sharedPool := reflect.TypeOf(DedicatedPoolOptions{}), reflect.TypeOf(config.DedicatedPool{})
	for i := 0; i < sharedPool.NumField(); i++ {
		if _, ok := pool.FieldByName(sharedPool.Field(i).Name); !ok {
			t.Errorf("config.DedicatedPool.%s is not a DedicatedPoolOptions field", sharedPool.Field(i).Name)
		}
	}
}
