package simtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/internal/simbind"
	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// DefaultWatchdog is Config.Watchdog's default.
const DefaultWatchdog = 10 * time.Second

// DefaultDuration is the virtual duration of DefaultScenario.
const DefaultDuration = time.Minute

// Config is one simulated run of an application's code.
type Config struct {
	// Scenario gives the topology (standalone, Cluster or Sentinel), the network, the client
	// section (the client's options, in the scenario's form) and the fault timeline; its
	// workload section must be empty, since the application's code is the workload. Its duration bounds the run in
	// virtual time: tasks still waiting then fail the run. Nil means DefaultScenario().
	Scenario *scenario.Scenario
	// Seed seeds every random draw of the run: the scenario's ranges, the network's jitter, the
	// client's jitter draws and the order in which ready tasks run.
	Seed uint64
	// Options, when set, adjusts the client's options after they were filled in from the
	// scenario's client section: KeyPrefix, Hooks, Logger and the other options that do not
	// change how connections are made. Options that do (timeouts, the policy, credentials) must
	// be set in the scenario, or the run fails with an error saying so.
	Options func(*client.Options)
	// Watchdog bounds, in real time, how long a task may run without reaching a yield point
	// (zero: DefaultWatchdog). A task that blocks on anything else (a channel, a mutex,
	// time.Sleep, a client feature the simulator does not offer) fails the run after it.
	Watchdog time.Duration
	// KeepTrace keeps the trace's lines in Result.Trace; without it only its hash is kept.
	KeepTrace bool
}

// DefaultScenario returns a standalone node "r1", one connection, a 1 s command timeout, a
// 1 s connect timeout, no reconnect policy, no faults, and DefaultDuration.
func DefaultScenario() *scenario.Scenario {
	return &scenario.Scenario{
		Name:     "simtest",
		Duration: DefaultDuration,
		Client:   scenario.Client{Connections: 1, ConnectTimeout: time.Second, CommandTimeout: time.Second},
	}
}

// Result is what a run did.
type Result struct {
	// Seed is the run's seed.
	Seed uint64
	// Scenario is the scenario resolved for the seed: written with WriteScenario, it replays
	// the run's faults exactly.
	Scenario *scenario.Scenario
	// Failures are the messages of Env.Errorf and Env.Fatalf, and of panics in tasks.
	Failures []string
	// Logs are the messages of Env.Logf.
	Logs []string
	// Err is set when the run could not complete: the client could not be built or connect,
	// the tasks deadlocked, outlived the scenario's duration or blocked outside a yield point.
	Err error
	// End is the virtual time the run ended at.
	End time.Duration
	// Trace is the run's trace (with Config.KeepTrace): every engine step, connection event,
	// apply, fault and scheduling decision, in order.
	Trace []string
	// TraceHash is the SHA-256 of the trace: a seed gives the same hash on every run.
	TraceHash string
	// Sim is the simulator's record of the run: sends, applies, replies, faults.
	Sim *record.Result
}

// Failed reports whether the run failed: a failure of the application's code, or Err.
func (r *Result) Failed() bool { return r.Err != nil || len(r.Failures) > 0 }

// Summary describes the outcome in a few lines: the error and the failures.
func (r *Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d fault(s), ended at %v", r.Seed, len(r.Scenario.Faults), r.End)
	if r.Err != nil {
		fmt.Fprintf(&b, "\n%v", r.Err)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "\n%s", f)
	}
	return b.String()
}

// Env is what the application's code sees during a run: the client, and the yield points that
// replace the goroutines, sleeps and timers of production code. Its methods must be called from
// the run's tasks (the body, Go and AfterFunc functions), never from other goroutines.
type Env struct {
	s      *sched
	client *client.Client
	rng    *rand.Rand

	mu       sync.Mutex
	failures []string
	logs     []string
}

// Client returns the client bound to the simulated world.
func (e *Env) Client() *client.Client { return e.client }

// Now returns the virtual time since the run started.
func (e *Env) Now() time.Duration { return e.s.host.Now() }

// Rand returns the run's generator for the application's own draws, seeded from the run's
// seed.
func (e *Env) Rand() *rand.Rand { return e.rng }

// Task is a goroutine of the application's code started with Env.Go.
type Task struct {
	e *Env
	t *task
}

// Go starts fn as a new task, which runs once the caller reaches a yield point.
func (e *Env) Go(fn func()) *Task { return &Task{e: e, t: e.s.spawn(fn)} }

// Wait waits until the task ended: a yield point.
func (t *Task) Wait() {
	tk := t.t
	t.e.s.park("task wait", nil, func() bool { return tk.state == taskDone }, 0)
}

// Sleep waits for d of virtual time: a yield point. Sleep(0) only yields.
func (e *Env) Sleep(d time.Duration) {
	if d <= 0 {
		e.s.park("yield", nil, func() bool { return true }, 0)
		return
	}
	e.s.park("sleep", nil, nil, d)
}

// Yield lets the other ready tasks run first: a yield point.
func (e *Env) Yield() { e.Sleep(0) }

// AfterFunc runs fn as a new task after d of virtual time, like time.AfterFunc.
func (e *Env) AfterFunc(d time.Duration, fn func()) {
	e.s.host.After(d, func() { e.s.spawn(fn) })
}

// WithTimeout returns a copy of parent cancelled after d of virtual time, like
// context.WithTimeout on the simulator's clock. parent should be context.Background(), or a
// context from WithTimeout or context.WithCancel: a deadline in real time would make the run
// depend on the machine's speed.
func (e *Env) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	e.s.host.After(d, cancel)
	return ctx, cancel
}

// Errorf records a failure of the run and goes on, like testing.T.Errorf.
func (e *Env) Errorf(format string, args ...any) { e.fail(fmt.Sprintf(format, args...)) }

// Fatalf records a failure and ends the calling task, like testing.T.Fatalf; the other tasks go
// on.
func (e *Env) Fatalf(format string, args ...any) {
	e.fail(fmt.Sprintf(format, args...))
	e.s.host.Note("task", "fatal")
	exitTask()
}

// Logf records a message in Result.Logs.
func (e *Env) Logf(format string, args ...any) {
	e.mu.Lock()
	e.logs = append(e.logs, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// Failed reports whether the run recorded a failure so far.
func (e *Env) Failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.failures) > 0
}

func (e *Env) fail(msg string) {
	e.mu.Lock()
	e.failures = append(e.failures, msg)
	e.mu.Unlock()
}

// ErrScenario reports a scenario that a run cannot use.
var ErrScenario = errors.New("simtest: invalid scenario")

// Run runs body as the first task of a simulated world built from cfg.Scenario and cfg.Seed,
// with a client bound to it (Env.Client), connected before body starts when the scenario's
// client section says connect: eager (the default), created unconnected when lazy. The run ends
// when every task ended; the client is then closed. Run never calls a testing.T: see Test.
func Run(cfg Config, body func(env *Env)) *Result {
	sc := cfg.Scenario
	if sc == nil {
		sc = DefaultScenario()
	}
	res := &Result{Seed: cfg.Seed, Scenario: sc}
	host, err := sim.NewHost(sc, cfg.Seed, sim.RunOptions{KeepTrace: cfg.KeepTrace})
	if err != nil {
		res.Err = errors.Join(ErrScenario, err)
		return res
	}
	rs := host.Scenario()
	res.Scenario = rs
	watchdog := cfg.Watchdog
	if watchdog <= 0 {
		watchdog = DefaultWatchdog
	}
	s := newSched(host, cfg.Seed, watchdog, rs.Duration)
	env := &Env{s: s, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6170706c))} // "appl"

	s.env = env
	opts, err := optionsOf(rs)
	if err != nil {
		res.Err = errors.Join(ErrScenario, err)
		return res
	}
	for _, ep := range host.Endpoints() {
		opts.Endpoints = append(opts.Endpoints, client.Endpoint{Host: ep.Host, Port: ep.Port})
	}
	if cfg.Options != nil {
		cfg.Options(&opts)
	}
	eager := rs.Client.Connect != scenario.ConnectLazy
	var setupErr error
	s.spawn(func() {
		c, err := simbind.Create(context.Background(), opts, s, eager)
		if err != nil {
			setupErr = err
			return
		}
		env.client = c.(*client.Client)
		body(env)
	})
	stuck, loopErr := s.loop()
	if stuck != nil {
		// The stuck task may still wake up and use the world, the client and the other tasks:
		// leave them all to it (their goroutines stay parked) and report only the error.
		res.Err = loopErr
		return res
	}
	if loopErr != nil {
		s.abort()
	}
	if env.client != nil {
		_ = env.client.Close()
	}
	res.Err = errors.Join(setupErr, loopErr)
	sr := host.Finish()
	res.Sim, res.End, res.Trace, res.TraceHash = sr, sr.End, sr.Trace, sr.TraceHash
	env.mu.Lock()
	res.Failures, res.Logs = env.failures, env.logs
	env.mu.Unlock()
	return res
}

// Test runs body like Run and reports the outcome to t: each failure, and the run's error, with
// the seed to replay it. It returns the result for further checks.
func Test(t testing.TB, cfg Config, body func(env *Env)) *Result {
	t.Helper()
	res := Run(cfg, body)
	for _, l := range res.Logs {
		t.Log(l)
	}
	if res.Failed() {
		t.Errorf("simtest: run failed (%s)", res.Summary())
	}
	return res
}

// optionsOf returns the client options of the resolved scenario's client section.
func optionsOf(sc *scenario.Scenario) (client.Options, error) {
	r, err := sc.ClientConfig()
	if err != nil {
		return client.Options{}, err
	}
	o := &r.Options
	opts := client.Options{
		Connections:                    o.Connections,
		ConnectTimeout:                 o.ConnectTimeout,
		CommandTimeout:                 o.CommandTimeout,
		Protocol:                       client.Protocol(o.Protocol),
		Database:                       o.Database,
		ClientName:                     o.ClientName,
		LibraryName:                    o.LibraryName,
		DisableLibraryInfo:             o.DisableLibraryInfo,
		EnableFences:                   o.EnableFences,
		ConnectionIdleReadTimeout:      o.ConnectionIdleReadTimeout,
		GatheredWriteStallTimeout:      o.GatheredWriteStallTimeout,
		ConnectionMaxLifetime:          o.ConnectionMaxLifetime,
		ConnectionMaxLifetimeJitter:    o.ConnectionMaxLifetimeJitter,
		UseCluster:                     o.UseCluster,
		ClusterTopologyRefreshInterval: o.ClusterTopologyRefreshInterval,
		DedicatedPool: client.DedicatedPoolOptions{MinimumSize: o.DedicatedPool.MinimumSize, MaximumSize: o.DedicatedPool.MaximumSize,
			MaximumIdle: o.DedicatedPool.MaximumIdle, IdleTimeout: o.DedicatedPool.IdleTimeout},
		MaintenanceNotifications:  client.MaintenanceMode(o.MaintenanceNotifications),
		MaintenanceRelaxedTimeout: o.MaintenanceRelaxedTimeout,
		MaintenanceWindowTimeout:  o.MaintenanceWindowTimeout,
	}
	opts.Username, opts.Password = o.Username, o.Password
	if sp := sc.Topology.Sentinel; sc.IsSentinel() && sp != nil {
		opts.SentinelPrimaryName = sp.PrimaryName
		if opts.SentinelPrimaryName == "" {
			opts.SentinelPrimaryName = scenario.DefaultPrimaryName
		}
	}
	if p := o.ReconnectPolicy; p != nil {
		cp := client.ReconnectPolicy(*p)
		opts.ReconnectPolicy = &cp
	}
	return opts, nil
}
