package fsm

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"
)

// sentinelWorld is a small deterministic world for a Resolution: what each Sentinel answers and
// what each primary says its ROLE is. An endpoint it does not list refuses connections.
type sentinelWorld struct {
	sentinels map[Endpoint]worldSentinel
	roles     map[Endpoint]Role
}

type worldSentinel struct {
	primary Endpoint
	epoch   uint64
	// denied: SENTINEL MASTER is refused with NOPERM (GET-MASTER-ADDR-BY-NAME answers).
	denied bool
	peers  []Endpoint
}

// worldRun is what a run of the world made of a Resolution's effects.
type worldRun struct {
	tried     []Endpoint      // the Sentinels dialed, in order
	attempts  []int           // the Attempt of each Sentinel dial
	delays    []time.Duration // every armed timer's delay
	exhausted int             // exhausted measurements
	warnings  []Warning
	outcomes  map[WaiterID]Outcome
	granted   Endpoint
	published []SentinelData
	retired   []uint64
	effects   []Effect
	now       time.Duration
}

var errRefused = errors.New("refused")

// drive steps ev into r, then plays the world against the effects until nothing is pending or
// limit timers have fired. Timers fire in order of their deadlines, at them.
func (w *sentinelWorld) drive(r *Resolution, run *worldRun, limit int, evs ...Event) {
	if run.outcomes == nil {
		run.outcomes = map[WaiterID]Outcome{}
	}
	queue := append([]Event(nil), evs...)
	type armed struct {
		id  TimerID
		due time.Duration
	}
	var timers []armed
	conns := map[ConnID]Endpoint{}
	var out Outbox
	for fired := 0; ; {
		if len(queue) == 0 {
			if len(timers) == 0 || fired >= limit {
				return
			}
			slices.SortStableFunc(timers, func(a, b armed) int { return int(a.due - b.due) })
			t := timers[0]
			timers = timers[1:]
			run.now = max(run.now, t.due)
			queue = append(queue, Event{Kind: TimerFired, Timer: t.id})
			fired++
		}
		ev := queue[0]
		queue = queue[1:]
		ev.At, ev.Draw = run.now, 0.5
		out.Reset()
		r.Step(&ev, &out)
		for _, f := range out.Effects {
			run.effects = append(run.effects, f)
			switch f.Kind {
			case Dial:
				conns[f.Conn] = f.Endpoint
				if _, ok := w.sentinels[f.Endpoint]; ok || slices.Contains(r.cfg.Sentinels, f.Endpoint) || slices.Contains(r.learned, f.Endpoint) {
					if _, known := w.roles[f.Endpoint]; !known {
						run.tried = append(run.tried, f.Endpoint)
						run.attempts = append(run.attempts, f.Attempt)
					}
				}
				_, isSentinel := w.sentinels[f.Endpoint]
				_, isPrimary := w.roles[f.Endpoint]
				if isSentinel || isPrimary {
					queue = append(queue, Event{Kind: HandshakeDone, Conn: f.Conn})
				} else {
					queue = append(queue, Event{Kind: DialFailed, Conn: f.Conn, Err: errRefused})
				}
			case Query:
				queue = append(queue, w.answer(f.Conn, conns[f.Conn], f.Sentinel.Query))
			case ArmTimer:
				run.delays = append(run.delays, f.After)
				timers = append(timers, armed{f.Timer, run.now + f.After})
			case CancelTimer:
				timers = slices.DeleteFunc(timers, func(a armed) bool { return a.id == f.Timer })
			case Record:
				if f.Metric.Instrument == InstrumentExhausted {
					run.exhausted++
				}
			case Warn:
				run.warnings = append(run.warnings, f.Sentinel.Warning)
			case Complete:
				run.outcomes[f.Waiter] = f.Outcome
				if f.Outcome == OutcomeGranted {
					run.granted = f.Endpoint
				}
			case Publish:
				run.published = append(run.published, *f.Sentinel)
			case Retire:
				run.retired = append(run.retired, f.Sentinel.Generation)
			}
		}
	}
}

// answer is the world's answer to query q sent to ep on conn.
func (w *sentinelWorld) answer(conn ConnID, ep Endpoint, q SentinelQuery) Event {
	ev := Event{Kind: Answered, Conn: conn}
	if q == SentinelQueryRole {
		ev.Sentinel = &SentinelData{Query: q, Role: w.roles[ep]}
		return ev
	}
	s := w.sentinels[ep]
	switch q {
	case SentinelQueryPrimary:
		if s.denied {
			ev.Sentinel, ev.Err = &SentinelData{Query: q, Denied: true}, errors.New("NOPERM")
			return ev
		}
		ev.Sentinel = &SentinelData{Query: q, Primary: s.primary, Epoch: s.epoch, EpochKnown: true}
	case SentinelQueryPrimaryAddr:
		ev.Sentinel = &SentinelData{Query: q, Primary: s.primary}
	case SentinelQueryPeers:
		ev.Sentinel = &SentinelData{Query: q, Peers: s.peers}
	}
	return ev
}

func ep(i int) Endpoint        { return MakeEndpoint("10.0.0."+strconv.Itoa(i), 26379) }
func primaryEP(i int) Endpoint { return MakeEndpoint("10.0.1."+strconv.Itoa(i), 6379) }

// TestResolutionSpecExamples runs the spec's Sentinel discovery examples as table tests against a
// world that answers every query.
func TestResolutionSpecExamples(t *testing.T) {
	ms := time.Millisecond
	A, B, C, D, E := ep(1), ep(2), ep(3), ep(4), ep(5)
	P, Q := primaryEP(1), primaryEP(2)
	one := &Policy{InitialDelay: 100 * ms, MaxAttempts: 1}
	three := &Policy{InitialDelay: 100 * ms, MaxDelay: time.Second, MaxAttempts: 3}
	unlimited := &Policy{InitialDelay: 100 * ms, MaxDelay: 250 * ms}
	unreachable := worldSentinel{primary: P} // reports a primary that refuses connections
	cases := []struct {
		name       string
		policy     *Policy
		configured []Endpoint
		world      sentinelWorld
		tried      []Endpoint
		attempts   []int
		delays     []time.Duration
		outcome    Outcome
		exhausted  int
		granted    Endpoint
	}{
		{
			name:   "configured A and B, peers C and D learned from A, MaxAttempts 1: A then B, C and D untried, exhaustion counted",
			policy: one, configured: []Endpoint{A, B},
			world: sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: {primary: P, peers: []Endpoint{B, C, D}}, C: unreachable, D: unreachable}},
			tried: []Endpoint{A, B}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			outcome: OutcomeExhausted, exhausted: 1,
		},
		{
			name:   "only A and B: both run, depletion, no exhaustion",
			policy: one, configured: []Endpoint{A, B},
			world: sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: unreachable}},
			tried: []Endpoint{A, B}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			outcome: OutcomeFailed,
		},
		{
			name:   "a rejected ROLE consumes the candidate's attempt: B is attempt 1 and is validated",
			policy: one, configured: []Endpoint{A, B, C},
			world: sentinelWorld{
				sentinels: map[Endpoint]worldSentinel{A: {primary: P}, B: {primary: Q, epoch: 1}},
				roles:     map[Endpoint]Role{P: RoleReplica, Q: RolePrimary},
			},
			tried: []Endpoint{A, B}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			outcome: OutcomeGranted, granted: Q,
		},
		{
			name:   "the last candidate coincides with the limit: depletion, not exhaustion",
			policy: three, configured: []Endpoint{A, B, C, D},
			tried: []Endpoint{A, B, C, D}, attempts: []int{0, 1, 2, 3},
			delays: []time.Duration{100 * ms, 200 * ms, 400 * ms}, outcome: OutcomeFailed,
		},
		{
			name:   "MaxAttempts 3 with a candidate to spare: exhaustion after the third fallback",
			policy: three, configured: []Endpoint{A, B, C, D, E},
			tried: []Endpoint{A, B, C, D}, attempts: []int{0, 1, 2, 3},
			delays: []time.Duration{100 * ms, 200 * ms, 400 * ms}, outcome: OutcomeExhausted, exhausted: 1,
		},
		{
			name:   "null policy: immediate fallback across every candidate, learned ones included, then depletion",
			policy: nil, configured: []Endpoint{A, B},
			world: sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: {primary: P, peers: []Endpoint{C, D}}, C: unreachable, D: unreachable}},
			tried: []Endpoint{A, B, C, D}, attempts: []int{0, 0, 0, 0}, outcome: OutcomeFailed,
		},
		{
			name:   "unlimited policy: every candidate once, capped delays, then depletion (never cycled)",
			policy: unlimited, configured: []Endpoint{A, B, C, D},
			tried: []Endpoint{A, B, C, D}, attempts: []int{0, 1, 2, 3},
			delays: []time.Duration{100 * ms, 200 * ms, 250 * ms}, outcome: OutcomeFailed,
		},
		{
			name:   "the first candidate succeeds: no fallback, no measurement",
			policy: one, configured: []Endpoint{A, B},
			world: sentinelWorld{
				sentinels: map[Endpoint]worldSentinel{A: {primary: P}},
				roles:     map[Endpoint]Role{P: RolePrimary},
			},
			tried: []Endpoint{A}, attempts: []int{0}, outcome: OutcomeGranted, granted: P,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewResolution(ResolutionConfig{Sentinels: c.configured, Policy: c.policy})
			var run worldRun
			c.world.drive(r, &run, 100, Event{Kind: Demanded, Waiter: 1})
			if !slices.Equal(run.tried, c.tried) || !slices.Equal(run.attempts, c.attempts) ||
				!slices.Equal(run.delays, c.delays) || run.outcomes[1] != c.outcome ||
				run.exhausted != c.exhausted || run.granted != c.granted {
				t.Fatalf("got tried %v attempts %v delays %v outcome %v exhausted %d granted %v\n"+
					"want tried %v attempts %v delays %v outcome %v exhausted %d granted %v",
					run.tried, run.attempts, run.delays, run.outcomes[1], run.exhausted, run.granted,
					c.tried, c.attempts, c.delays, c.outcome, c.exhausted, c.granted)
			}
			// Measurements carry the candidate's endpoint and the sentinel-discovery scope.
			for _, f := range run.effects {
				if f.Kind == Record && f.Metric.Instrument != InstrumentSentinelFailover &&
					(f.Metric.Scope != ScopeSentinelDiscovery || f.Endpoint.IsZero()) {
					t.Fatalf("measurement without scope or endpoint: %v", f)
				}
			}
		})
	}
}

// TestResolutionLearnsAtMost64Peers: peers beyond MaxLearnedSentinels are not learned, and a
// resolution without a policy still ends after the configured and learned candidates.
func TestResolutionLearnsAtMost64Peers(t *testing.T) {
	A := ep(1)
	var peers []Endpoint
	for i := 0; i < 100; i++ {
		peers = append(peers, MakeEndpoint("10.1.0."+strconv.Itoa(i), 26379))
	}
	peers = append(peers, A, peers[0]) // a configured Sentinel and a repeat are not learned
	w := sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: {primary: primaryEP(1), peers: peers}}}
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{A}})
	var run worldRun
	w.drive(r, &run, 10, Event{Kind: Demanded, Waiter: 1})
	if got := len(r.Sentinels()); got != 1+MaxLearnedSentinels {
		t.Fatalf("knows %d Sentinels, want %d", got, 1+MaxLearnedSentinels)
	}
	if !slices.Equal(run.tried, r.Sentinels()) || run.outcomes[1] != OutcomeFailed {
		t.Fatalf("tried %d candidates (%v), want each known one once, then depletion", len(run.tried), run.outcomes[1])
	}
	// The list is full: later candidates no longer ask for peers.
	for _, f := range run.effects[len(run.effects)/2:] {
		if f.Kind == Query && f.Sentinel.Query == SentinelQueryPeers {
			t.Fatal("asked for peers with the list full")
		}
	}
}

// TestResolutionWarnsOnce: NOPERM on SENTINEL MASTER falls back to GET-MASTER-ADDR-BY-NAME with
// one warning for the life of the machine, and the validated primary carries no epoch.
func TestResolutionWarnsOnce(t *testing.T) {
	A, B, P := ep(1), ep(2), primaryEP(1)
	w := sentinelWorld{
		sentinels: map[Endpoint]worldSentinel{A: {primary: primaryEP(9), denied: true}, B: {primary: P, denied: true}},
		roles:     map[Endpoint]Role{P: RolePrimary, primaryEP(9): RoleReplica},
	}
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{A, B}})
	var run worldRun
	w.drive(r, &run, 10, Event{Kind: Demanded, Waiter: 1})
	w.drive(r, &run, 10, Event{Kind: PrimaryFailed, Sentinel: &SentinelData{Generation: 1}}, Event{Kind: Demanded, Waiter: 2})
	if !slices.Equal(run.warnings, []Warning{WarningNoConfigEpoch}) {
		t.Fatalf("warnings %v, want one no-config-epoch", run.warnings)
	}
	if run.outcomes[1] != OutcomeGranted || run.outcomes[2] != OutcomeGranted || run.granted != P {
		t.Fatalf("outcomes %v granted %v", run.outcomes, run.granted)
	}
	if _, known := r.Epoch(); known || run.published[0].EpochKnown {
		t.Fatal("an epoch is known without SENTINEL MASTER")
	}
}

// TestResolutionRediscoveryBackoff: without a policy, a failed rediscovery the monitor asked for
// is retried 1 s, 2 s, 4 s ... apart, at most 30 s, without limit; with a policy, after its
// delays (at least RediscoveryInterval) and at most MaxAttempts times.
func TestResolutionRediscoveryBackoff(t *testing.T) {
	s := time.Second
	down := sentinelWorld{}
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{ep(1)}})
	var run worldRun
	down.drive(r, &run, 9, Event{Kind: RediscoveryRequested, Sentinel: &SentinelData{Trigger: TriggerSwitchPrimary}})
	want := []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s, 30 * s, 30 * s}
	if !slices.Equal(run.delays, want) || r.Phase() != "waiting" {
		t.Fatalf("delays %v phase %s, want %v and waiting", run.delays, r.Phase(), want)
	}
	// An operation's resolution that succeeds ends the retries.
	up := sentinelWorld{sentinels: map[Endpoint]worldSentinel{ep(1): {primary: primaryEP(1)}}, roles: map[Endpoint]Role{primaryEP(1): RolePrimary}}
	run = worldRun{now: run.now + time.Minute}
	up.drive(r, &run, 5, Event{Kind: Demanded, Waiter: 1})
	if r.Phase() != "idle" || run.outcomes[1] != OutcomeGranted || len(run.delays) != 0 {
		t.Fatalf("phase %s outcome %v delays %v", r.Phase(), run.outcomes[1], run.delays)
	}

	p := &Policy{InitialDelay: 10 * time.Millisecond, MaxDelay: 5 * s, MaxAttempts: 3}
	r = NewResolution(ResolutionConfig{Sentinels: []Endpoint{ep(1)}, Policy: p})
	run = worldRun{}
	down.drive(r, &run, 100, Event{Kind: RediscoveryRequested, Sentinel: &SentinelData{Trigger: TriggerSubjectivelyDown}})
	// Three retries: 10 ms and 20 ms are raised to 100 ms, 40 ms too; then discovery waits.
	want = []time.Duration{RediscoveryInterval, RediscoveryInterval, RediscoveryInterval}
	if !slices.Equal(run.delays, want) || r.Phase() != "idle" {
		t.Fatalf("delays %v phase %s, want %v and idle", run.delays, r.Phase(), want)
	}
}

// TestResolutionNoRollback: A -> B -> A, then a delayed A -> B. The stale report is refused
// before any connection to B, even if B still claims the primary role.
func TestResolutionNoRollback(t *testing.T) {
	A, B, P1, P2 := ep(1), ep(2), primaryEP(1), primaryEP(2)
	roles := map[Endpoint]Role{P1: RolePrimary, P2: RolePrimary}
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{A, B}})
	var run worldRun
	for i, rep := range []worldSentinel{{primary: P1}, {primary: P2, epoch: 1}, {primary: P1, epoch: 2}} {
		w := sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: rep}, roles: roles}
		w.drive(r, &run, 5, Event{Kind: PrimaryFailed, Sentinel: &SentinelData{Generation: uint64(i)}}, Event{Kind: Demanded, Waiter: WaiterID(i + 1)})
	}
	if p, g, live := r.Primary(); p != P1 || g != 3 || !live {
		t.Fatalf("primary %v generation %d live %v", p, g, live)
	}
	// The delayed Sentinel answers first; the up-to-date one second.
	stale := sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: {primary: P2, epoch: 1}, B: {primary: P1, epoch: 2}}, roles: roles}
	run = worldRun{}
	stale.drive(r, &run, 5, Event{Kind: PrimaryFailed, Sentinel: &SentinelData{Generation: 3}}, Event{Kind: Demanded, Waiter: 9})
	for _, f := range run.effects {
		if f.Kind == Dial && f.Endpoint == P2 {
			t.Fatal("dialed the stale primary")
		}
	}
	if run.granted != P1 || !slices.Equal(run.tried, []Endpoint{A, B}) {
		t.Fatalf("granted %v after trying %v", run.granted, run.tried)
	}
	if e, _ := r.Epoch(); e != 2 {
		t.Fatalf("epoch %d, want 2", e)
	}
	// With the stale Sentinel alone, the resolution fails with ErrStaleSentinel.
	r2 := NewResolution(ResolutionConfig{Sentinels: []Endpoint{A}})
	for i, rep := range []worldSentinel{{primary: P1, epoch: 2}, {primary: P2, epoch: 1}} {
		w := sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: rep}, roles: roles}
		run = worldRun{}
		w.drive(r2, &run, 5, Event{Kind: PrimaryFailed, Sentinel: &SentinelData{Generation: uint64(i)}}, Event{Kind: Demanded, Waiter: 1})
	}
	var last error
	for _, f := range run.effects {
		if f.Kind == Complete {
			last = f.Err
		}
	}
	if !errors.Is(last, ErrStaleSentinel) {
		t.Fatalf("the stale report failed with %v", last)
	}
	// Another primary under the same epoch is no newer configuration either: Sentinel moves a
	// primary only with a new epoch.
	same := sentinelWorld{sentinels: map[Endpoint]worldSentinel{A: {primary: P2, epoch: 2}}, roles: roles}
	run = worldRun{}
	same.drive(r2, &run, 5, Event{Kind: Demanded, Waiter: 2})
	if run.outcomes[2] != OutcomeFailed || r2.primary != P1 {
		t.Fatalf("another primary under the same epoch: %v, primary %v", run.outcomes[2], r2.primary)
	}
}

// TestResolutionWithdrawal: the last caller's withdrawal stops a resolution nobody else waits
// for; a rediscovery the monitor asked for keeps running.
func TestResolutionWithdrawal(t *testing.T) {
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{ep(1)}})
	var out Outbox
	r.Step(&Event{Kind: Demanded, Waiter: 1}, &out)
	r.Step(&Event{Kind: Demanded, Waiter: 2}, &out)
	out.Reset()
	r.Step(&Event{Kind: Withdrew, Waiter: 1}, &out)
	if r.Phase() != "resolving/sentinel" || len(out.Effects) != 1 {
		t.Fatalf("phase %s after one of two withdrew: %v", r.Phase(), out.Effects)
	}
	out.Reset()
	r.Step(&Event{Kind: Withdrew, Waiter: 2}, &out)
	if r.Phase() != "idle" || len(out.Effects) != 2 || out.Effects[1].Kind != Close {
		t.Fatalf("phase %s after the last withdrew: %v", r.Phase(), out.Effects)
	}
	out.Reset()
	r.Step(&Event{Kind: RediscoveryRequested, Sentinel: &triggerData[TriggerSwitchPrimary]}, &out)
	r.Step(&Event{Kind: Demanded, Waiter: 3}, &out)
	r.Step(&Event{Kind: Withdrew, Waiter: 3}, &out)
	if r.Phase() != "resolving/sentinel" {
		t.Fatalf("a withdrawal stopped the monitor's rediscovery: %s", r.Phase())
	}
}

// TestResolutionBounds: waiters beyond MaxWaiters overflow; the configuration is checked before
// anything is allocated.
func TestResolutionBounds(t *testing.T) {
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{ep(1)}, MaxWaiters: 2})
	var out Outbox
	for w := WaiterID(1); w <= 3; w++ {
		r.Step(&Event{Kind: Demanded, Waiter: w}, &out)
	}
	last := out.Effects[len(out.Effects)-1]
	if last.Kind != Complete || last.Waiter != 3 || last.Outcome != OutcomeOverflow {
		t.Fatalf("third waiter: %v", last)
	}
}

func TestSentinelConfigValidate(t *testing.T) {
	many := make([]Endpoint, MaxSentinels+1)
	for i := range many {
		many[i] = MakeEndpoint("10.2.0."+strconv.Itoa(i), 26379)
	}
	bad := []struct {
		name  string
		cfg   ResolutionConfig
		field string
	}{
		{"no sentinel", ResolutionConfig{}, "Sentinels"},
		{"too many", ResolutionConfig{Sentinels: many}, "Sentinels"},
		{"no port", ResolutionConfig{Sentinels: []Endpoint{{Host: "a"}}}, "Sentinels"},
		{"not canonical", ResolutionConfig{Sentinels: []Endpoint{{Host: "A.example", Port: 1}}}, "Sentinels"},
		{"repeated", ResolutionConfig{Sentinels: []Endpoint{ep(1), ep(2), ep(1)}}, "Sentinels"},
		{"waiters", ResolutionConfig{Sentinels: []Endpoint{ep(1)}, MaxWaiters: -1}, "MaxWaiters"},
		{"id base", ResolutionConfig{Sentinels: []Endpoint{ep(1)}, IDBase: 3}, "IDBase"},
		{"policy", ResolutionConfig{Sentinels: []Endpoint{ep(1)}, Policy: &Policy{JitterRatio: 2}}, "Policy.JitterRatio"},
	}
	for _, c := range bad {
		var ce *ConfigError
		if err := c.cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field || ce.Config != "ResolutionConfig" {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	ok := ResolutionConfig{Sentinels: many[:MaxSentinels], IDBase: IDBase(MachineSentinel)}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	badMonitor := []struct {
		name  string
		cfg   MonitorConfig
		field string
	}{
		{"no sentinel", MonitorConfig{PrimaryName: "m"}, "Sentinels"},
		{"no name", MonitorConfig{Sentinels: []Endpoint{ep(1)}}, "PrimaryName"},
		{"space", MonitorConfig{Sentinels: []Endpoint{ep(1)}, PrimaryName: "my master"}, "PrimaryName"},
		{"control", MonitorConfig{Sentinels: []Endpoint{ep(1)}, PrimaryName: "m\x00"}, "PrimaryName"},
		{"long", MonitorConfig{Sentinels: []Endpoint{ep(1)}, PrimaryName: string(make([]byte, MaxPrimaryNameLength+1))}, "PrimaryName"},
		{"id base", MonitorConfig{Sentinels: []Endpoint{ep(1)}, PrimaryName: "m", IDBase: 1}, "IDBase"},
		{"policy", MonitorConfig{Sentinels: []Endpoint{ep(1)}, PrimaryName: "m", Policy: &Policy{MaxAttempts: -1}}, "Policy.MaxAttempts"},
	}
	for _, c := range badMonitor {
		var ce *ConfigError
		if err := c.cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field || ce.Config != "MonitorConfig" {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	okMonitor := MonitorConfig{Sentinels: []Endpoint{ep(1)}, PrimaryName: "mymaster", IDBase: IDBase(MachineSentinelMonitor)}
	if err := okMonitor.Validate(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewMonitor accepted an invalid configuration")
		}
	}()
	NewMonitor(MonitorConfig{})
}

// TestSentinelIDs: the machines' identifiers carry their machine and print with its name.
func TestSentinelIDs(t *testing.T) {
	r := NewResolution(ResolutionConfig{Sentinels: []Endpoint{ep(1)}, IDBase: IDBase(MachineSentinel)})
	var out Outbox
	r.Step(&Event{Kind: Demanded, Waiter: 1}, &out)
	d := out.Effects[len(out.Effects)-1]
	if MachineOf(uint64(d.Conn)) != MachineSentinel || d.Conn.String() != "sentinel#1" {
		t.Fatalf("conn %v of machine %v", d.Conn, MachineOf(uint64(d.Conn)))
	}
	if MachineSentinelMonitor.String() != "sentinel-monitor" || ConnID(IDBase(MachineSentinelMonitor)+2).String() != "sentinel-monitor#2" {
		t.Fatal("monitor names")
	}
}
