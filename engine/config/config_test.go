package config

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// TestValidateErrors: every bad value is rejected with a *FieldError naming the field.
func TestValidateErrors(t *testing.T) {
	cases := []struct {
		name   string
		o      Options
		field  string
		reason string
	}{
		{"negative database", Options{Database: -1}, "Database", "must not be negative"},
		{"negative connect timeout", Options{ConnectTimeout: -time.Second}, "ConnectTimeout", "must not be negative"},
		{"negative command timeout", Options{CommandTimeout: -2}, "CommandTimeout", "must not be negative (use NoTimeout to disable it)"},
		{"negative connections", Options{Connections: -1}, "Connections", "must be at least 1"},
		{"too many connections", Options{Connections: MaxConnections + 1}, "Connections", "must be at most 1024"},
		{"unknown protocol", Options{Protocol: 4}, "Protocol", "must be ProtocolAuto (auto), ProtocolRESP2 (resp2) or ProtocolRESP3 (resp3)"},
		{"negative max waiters", Options{MaxWaiters: -1}, "MaxWaiters", "must not be negative"},
		{"library name with a space", Options{LibraryName: "my lib"}, "LibraryName", "must contain only ASCII characters from '!' through '~'"},
		{"library name not ASCII", Options{LibraryName: "résumé"}, "LibraryName", "must contain only ASCII characters from '!' through '~'"},
		{"idle read negative", Options{ConnectionIdleReadTimeout: -2}, "ConnectionIdleReadTimeout", "must not be negative (use NoTimeout to disable it)"},
		{"idle read sub-millisecond", Options{ConnectionIdleReadTimeout: time.Microsecond}, "ConnectionIdleReadTimeout", "must be at least 1ms"},
		{"write stall negative", Options{GatheredWriteStallTimeout: -time.Second}, "GatheredWriteStallTimeout", "must not be negative (use NoTimeout to disable it)"},
		{"write stall sub-millisecond", Options{GatheredWriteStallTimeout: 999 * time.Microsecond}, "GatheredWriteStallTimeout", "must be at least 1ms"},
		{"lifetime negative", Options{ConnectionMaxLifetime: -1}, "ConnectionMaxLifetime", "must not be negative"},
		{"lifetime sub-millisecond", Options{ConnectionMaxLifetime: 500 * time.Microsecond}, "ConnectionMaxLifetime", "must be at least 1ms"},
		{"lifetime jitter negative", Options{ConnectionMaxLifetime: time.Minute, ConnectionMaxLifetimeJitter: -1}, "ConnectionMaxLifetimeJitter", "must not be negative"},
		{"lifetime jitter alone", Options{ConnectionMaxLifetimeJitter: time.Second}, "ConnectionMaxLifetimeJitter", "requires ConnectionMaxLifetime"},
		{"pool minimum negative", Options{DedicatedPool: DedicatedPool{MinimumSize: -1}}, "DedicatedPool.MinimumSize", "must not be negative"},
		{"pool maximum negative", Options{DedicatedPool: DedicatedPool{MaximumSize: -1}}, "DedicatedPool.MaximumSize", "must not be negative (zero means no limit)"},
		{"pool idle below NoIdleReuse", Options{DedicatedPool: DedicatedPool{MaximumIdle: -2}}, "DedicatedPool.MaximumIdle", "must not be negative (use NoIdleReuse to disable idle reuse)"},
		{"pool minimum above default idle", Options{DedicatedPool: DedicatedPool{MinimumSize: 5}}, "DedicatedPool.MinimumSize", "must not exceed MaximumIdle (4)"},
		{"pool minimum with no idle reuse", Options{DedicatedPool: DedicatedPool{MinimumSize: 1, MaximumIdle: NoIdleReuse}}, "DedicatedPool.MinimumSize", "must not exceed MaximumIdle (0)"},
		{"pool minimum above maximum", Options{DedicatedPool: DedicatedPool{MinimumSize: 3, MaximumSize: 2}}, "DedicatedPool.MinimumSize", "must not exceed MaximumSize (2)"},
		{"pool idle timeout negative", Options{DedicatedPool: DedicatedPool{IdleTimeout: -1}}, "DedicatedPool.IdleTimeout", "must not be negative (zero disables timed retirement)"},
		{"pool idle timeout sub-millisecond", Options{DedicatedPool: DedicatedPool{IdleTimeout: time.Microsecond}}, "DedicatedPool.IdleTimeout", "must be between 1ms and 24h"},
		{"pool idle timeout over a day", Options{DedicatedPool: DedicatedPool{IdleTimeout: 25 * time.Hour}}, "DedicatedPool.IdleTimeout", "must be between 1ms and 24h"},
		{"policy jitter", Options{ReconnectPolicy: &fsm.Policy{JitterRatio: 2}}, "ReconnectPolicy.JitterRatio", "must be between 0 and 1"},
		{"policy max below initial", Options{ReconnectPolicy: &fsm.Policy{InitialDelay: time.Second, MaxDelay: time.Millisecond}}, "ReconnectPolicy.MaxDelay", "must not be below InitialDelay"},
		{"policy multiplier", Options{ReconnectPolicy: &fsm.Policy{BackoffMultiplier: 0.5}}, "ReconnectPolicy.BackoffMultiplier", "must be at least 1"},
		{"policy attempts", Options{ReconnectPolicy: &fsm.Policy{MaxAttempts: -1}}, "ReconnectPolicy.MaxAttempts", "must be at least 1 when set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(&tc.o)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field || fe.Reason != tc.reason {
				t.Fatalf("got %s: %s, want %s: %s", fe.Field, fe.Reason, tc.field, tc.reason)
			}
			if want := "respire: invalid option " + tc.field + ": " + tc.reason; err.Error() != want {
				t.Fatalf("Error() = %q, want %q", err, want)
			}
			if _, rerr := Resolve(tc.o); !reflect.DeepEqual(rerr, err) {
				t.Fatalf("Resolve's error %v differs from Validate's %v", rerr, err)
			}
		})
	}
}

// TestValidateAccepts: the documented edges are valid.
func TestValidateAccepts(t *testing.T) {
	for name, o := range map[string]Options{
		"zero value":               {},
		"max connections":          {Connections: MaxConnections},
		"NoTimeout command":        {CommandTimeout: NoTimeout},
		"NoTimeout idle read":      {ConnectionIdleReadTimeout: NoTimeout},
		"NoTimeout write stall":    {ConnectionIdleReadTimeout: time.Second, GatheredWriteStallTimeout: NoTimeout},
		"bounds of 1ms":            {ConnectionIdleReadTimeout: time.Millisecond, GatheredWriteStallTimeout: time.Millisecond, ConnectionMaxLifetime: time.Millisecond},
		"lifetime with jitter":     {ConnectionMaxLifetime: time.Minute, ConnectionMaxLifetimeJitter: time.Hour},
		"database above 15":        {Database: 99},
		"protocols":                {Protocol: ProtocolRESP3},
		"no idle reuse":            {DedicatedPool: DedicatedPool{MaximumIdle: NoIdleReuse}},
		"pool at its bounds":       {DedicatedPool: DedicatedPool{MinimumSize: 4, MaximumSize: 4, IdleTimeout: 24 * time.Hour}},
		"printable library name":   {LibraryName: "!~"},
		"policy with zero values":  {ReconnectPolicy: &fsm.Policy{}},
		"max waiters set":          {MaxWaiters: 10},
		"library info disabled":    {DisableLibraryInfo: true, LibraryName: "x"},
		"initial delay of one day": {ReconnectPolicy: &fsm.Policy{InitialDelay: fsm.DelayCeiling}},
	} {
		if err := Validate(&o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestResolveDefaults: the zero Options resolve to the documented defaults, for the options and
// for the engine.
func TestResolveDefaults(t *testing.T) {
	r, err := Resolve(Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Connections: 1, ConnectTimeout: 10 * time.Second, CommandTimeout: 10 * time.Second,
		LibraryName: "respire", DedicatedPool: DedicatedPool{MaximumIdle: 4}, MaxWaiters: fsm.DefaultMaxWaiters,
		MaintenanceRelaxedTimeout: 30 * time.Second, MaintenanceWindowTimeout: 60 * time.Second}
	if !reflect.DeepEqual(r.Options, want) {
		t.Fatalf("defaults %v\nwant     %v", r.Options, want)
	}
	e := r.Engine
	if e.Slots != 1 || e.Policy != nil || e.MaxWaiters != fsm.DefaultMaxWaiters || e.Pool != (fsm.PoolConfig{MaximumIdle: 4}) ||
		e.Lifetime != 0 || e.LifetimeJitter != 0 || e.Endpoint != (engine.Endpoint{}) || e.JournalSize != 0 {
		t.Fatalf("engine config %+v", e)
	}
	h := r.Handshake
	if h != (Handshake{LibraryName: "respire", LibraryVersion: Version}) {
		t.Fatalf("handshake %v", h)
	}
	if r.IdleReadTimeout != 0 || r.WriteStallTimeout != 0 {
		t.Fatalf("liveness %v %v", r.IdleReadTimeout, r.WriteStallTimeout)
	}
}

// TestResolveSpellsOutThePolicy: the resolved policy states the multiplier and cap in effect,
// leaves the caller's policy alone, and schedules exactly the same delays.
func TestResolveSpellsOutThePolicy(t *testing.T) {
	in := &fsm.Policy{InitialDelay: 100 * time.Millisecond, JitterRatio: 0.5, MaxAttempts: 3}
	orig := *in
	r, err := Resolve(Options{ReconnectPolicy: in})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Options.ReconnectPolicy
	if p == in || *in != orig {
		t.Fatal("Resolve shares or modifies the caller's policy")
	}
	if p.BackoffMultiplier != 2 || p.MaxDelay != fsm.DelayCeiling {
		t.Fatalf("resolved policy %+v: want multiplier 2 and max delay 24h spelled out", *p)
	}
	if r.Engine.Policy != p {
		t.Fatal("the engine does not get the resolved policy")
	}
	for n := 1; n <= 40; n++ {
		for _, draw := range []float64{0, 0.25, 0.5, 0.999} {
			if a, b := in.Delay(n, draw), p.Delay(n, draw); a != b {
				t.Fatalf("attempt %d draw %v: %v before resolution, %v after", n, draw, a, b)
			}
		}
	}
	if in.String() != p.String() {
		t.Fatalf("%v != %v", in, p)
	}
}

// TestResolveIsIdempotent: resolving resolved options gives the same result.
func TestResolveIsIdempotent(t *testing.T) {
	for _, o := range []Options{
		{},
		{Connections: 4, CommandTimeout: NoTimeout, Protocol: ProtocolRESP2, Username: "u", Password: "p",
			Database: 3, ClientName: "n", LibraryName: "lib", DisableLibraryInfo: true,
			ReconnectPolicy:           &fsm.Policy{InitialDelay: time.Second, BackoffMultiplier: 1.5, MaxDelay: time.Minute, JitterRatio: 0.2, MaxAttempts: 7},
			ConnectionIdleReadTimeout: time.Second, ConnectionMaxLifetime: time.Hour, ConnectionMaxLifetimeJitter: time.Minute,
			DedicatedPool: DedicatedPool{MinimumSize: 1, MaximumSize: 9, MaximumIdle: 2, IdleTimeout: time.Minute}, MaxWaiters: 5},
		{GatheredWriteStallTimeout: NoTimeout, ConnectionIdleReadTimeout: NoTimeout, DedicatedPool: DedicatedPool{MaximumIdle: NoIdleReuse}},
	} {
		a, err := Resolve(o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Resolve(a.Options)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not idempotent:\n%v\n%v", a, b)
		}
	}
}

// TestResolveMachineForm: option forms become the machines' forms.
func TestResolveMachineForm(t *testing.T) {
	r, err := Resolve(Options{DedicatedPool: DedicatedPool{MaximumIdle: NoIdleReuse}, Connections: 3, MaxWaiters: 9,
		ConnectionMaxLifetime: time.Minute, ConnectionMaxLifetimeJitter: time.Second, DisableLibraryInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Options.DedicatedPool.MaximumIdle != NoIdleReuse || r.Engine.Pool.MaximumIdle != 0 {
		t.Fatalf("NoIdleReuse: option %d, machine %d", r.Options.DedicatedPool.MaximumIdle, r.Engine.Pool.MaximumIdle)
	}
	e := r.Engine
	if e.Slots != 3 || e.MaxWaiters != 9 || e.Lifetime != time.Minute || e.LifetimeJitter != time.Second {
		t.Fatalf("engine %+v", e)
	}
	if r.Handshake.LibraryName != "" || r.Handshake.LibraryVersion != "" {
		t.Fatalf("library info sent although disabled: %v", r.Handshake)
	}
}

// TestLivenessInheritance: the spec's table for GatheredWriteStallTimeout.
func TestLivenessInheritance(t *testing.T) {
	cases := []struct {
		read, write, idle, stall, writeOption time.Duration
	}{
		{0, 0, 0, 0, 0},
		{time.Second, 0, time.Second, time.Second, time.Second},
		{time.Second, 2 * time.Second, time.Second, 2 * time.Second, 2 * time.Second},
		{0, 2 * time.Second, 0, 2 * time.Second, 2 * time.Second},
		{time.Second, NoTimeout, time.Second, 0, NoTimeout},
		{NoTimeout, 0, 0, 0, 0},
		{NoTimeout, time.Second, 0, time.Second, time.Second},
	}
	for _, c := range cases {
		r, err := Resolve(Options{ConnectionIdleReadTimeout: c.read, GatheredWriteStallTimeout: c.write})
		if err != nil {
			t.Fatal(err)
		}
		if r.IdleReadTimeout != c.idle || r.WriteStallTimeout != c.stall || r.Options.GatheredWriteStallTimeout != c.writeOption {
			t.Errorf("read %v write %v: bounds %v/%v option %v, want %v/%v option %v", c.read, c.write,
				r.IdleReadTimeout, r.WriteStallTimeout, r.Options.GatheredWriteStallTimeout, c.idle, c.stall, c.writeOption)
		}
	}
}

// TestPrintingRedactsThePassword: no verb prints the password.
func TestPrintingRedactsThePassword(t *testing.T) {
	const secret = "hunter2-secret"
	r, err := Resolve(Options{Username: "app", Password: secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{r, r.Options, &r.Options, r.Handshake, &r.Handshake} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			s := fmt.Sprintf(verb, v)
			if strings.Contains(s, secret) {
				t.Fatalf("%s of %T leaks the password: %s", verb, v, s)
			}
			if verb == "%v" && !strings.Contains(s, redacted) {
				t.Fatalf("%s of %T does not show the redaction: %s", verb, v, s)
			}
		}
	}
}

// TestProtocolString: the scenario words.
func TestProtocolString(t *testing.T) {
	for p, want := range map[Protocol]string{ProtocolAuto: "auto", ProtocolRESP2: "resp2", ProtocolRESP3: "resp3", 7: "protocol(7)"} {
		if p.String() != want {
			t.Errorf("%d: %q", int(p), p.String())
		}
	}
}

// TestValidateDoesNotAllocate: validating a valid configuration allocates nothing.
func TestValidateDoesNotAllocate(t *testing.T) {
	o := Options{Connections: 8, ReconnectPolicy: &fsm.Policy{InitialDelay: time.Second}, LibraryName: "lib",
		DedicatedPool: DedicatedPool{MinimumSize: 1}}
	if n := testing.AllocsPerRun(100, func() { _ = Validate(&o) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// allowedImports are what this package may import: the engine, the machines, the sans-I/O
// protocol layer (netio/wire, whose own boundary test keeps it free of sockets and clocks), and
// standard packages that neither do I/O nor read the clock nor start goroutines.
var allowedImports = map[string]bool{
	"github.com/respire-go/respire/engine":     true,
	"github.com/respire-go/respire/fsm":        true,
	"github.com/respire-go/respire/netio/wire": true,
	"fmt": true, "strconv": true, "strings": true, "time": true,
}

// TestPurity: the package imports only engine, fsm, netio/wire and pure standard packages, so
// the simulator can use it without socket code. The control proves the check sees a forbidden
// import.
func TestPurity(t *testing.T) {
	check := func(dir string) []string {
		var bad []string
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !allowedImports[path] {
					bad = append(bad, filepath.Base(f)+": "+path)
				}
			}
		}
		return bad
	}
	if bad := check("."); len(bad) > 0 {
		t.Fatalf("forbidden imports: %v", bad)
	}
	dir := t.TempDir()
	src := "package config\n\nimport \"github.com/respire-go/respire/netio\"\n\nvar _ = netio.ProtocolAuto\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if bad := check(dir); len(bad) != 1 {
		t.Fatalf("the control's import of netio was not caught: %v", bad)
	}
}

// TestCheckMachinesReportsRefusals: the machines' validation runs on what Resolve builds, and a
// configuration they refuse is an error, not a panic.
func TestCheckMachinesReportsRefusals(t *testing.T) {
	var fe *FieldError
	if err := checkMachines(&engine.Config{}); !errors.As(err, &fe) || fe.Field != "engine" {
		t.Fatalf("zero slots: %v", err)
	}
	if err := checkMachines(&engine.Config{Slots: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestResolveCluster: UseCluster gives the engine a Cluster configuration with the refresh
// period (60 s by default, none with NoTimeout) and the candidate budget; ClusterEngine adds the
// seeds to a copy.
func TestResolveCluster(t *testing.T) {
	r, err := Resolve(Options{UseCluster: true, ConnectTimeout: 2 * time.Second, CommandTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Engine.Cluster
	if c == nil || c.RefreshInterval != DefaultClusterTopologyRefreshInterval || c.CandidateTimeout != 5*time.Second || len(c.Seeds) != 0 ||
		r.Options.ClusterTopologyRefreshInterval != DefaultClusterTopologyRefreshInterval {
		t.Fatalf("cluster %+v, options %v", c, r.Options.ClusterTopologyRefreshInterval)
	}
	seeds := []engine.Endpoint{{Host: "a", Port: 7000}}
	cfg := r.ClusterEngine(seeds)
	if len(cfg.Cluster.Seeds) != 1 || cfg.Cluster.Seeds[0] != seeds[0] || len(r.Engine.Cluster.Seeds) != 0 {
		t.Fatalf("seeds %v, resolved %v", cfg.Cluster.Seeds, r.Engine.Cluster.Seeds)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err = Resolve(Options{UseCluster: true, ClusterTopologyRefreshInterval: NoTimeout, CommandTimeout: NoTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Engine.Cluster; c.RefreshInterval != 0 || c.CandidateTimeout != 2*DefaultConnectTimeout {
		t.Fatalf("cluster %+v", c)
	}
	if r, err := Resolve(Options{}); err != nil || r.Engine.Cluster != nil || r.Options.ClusterTopologyRefreshInterval != 0 {
		t.Fatalf("standalone: %+v %v", r.Engine.Cluster, err)
	}
	var fe *FieldError
	if _, err := Resolve(Options{ClusterTopologyRefreshInterval: time.Microsecond}); !errors.As(err, &fe) || fe.Field != "ClusterTopologyRefreshInterval" {
		t.Fatalf("sub-millisecond refresh: %v", err)
	}
}
