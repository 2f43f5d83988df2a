package fsm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// testRules returns attempt rules of a candidate-based path (a discovery round) with their own
// allocator.
func testRules(p *Policy) *attemptRules {
	g := newIDs(IDBase(MachinePool), 1000)
	return &attemptRules{policy: p, source: SourceClusterDiscovery, scope: ScopeClusterDiscovery,
		episodes: true, ids: &g}
}

// roundResult is what a candidate round did, read back from its effects.
type roundResult struct {
	tried     []string
	attempts  []int           // the Attempt of each Dial
	delays    []time.Duration // each scheduled fallback's delay
	end       attemptPhase
	exhausted int // exhausted measurements
	episode   uint64
}

// runRound drives one attempt over candidates the way a Cluster discovery round or a Sentinel
// resolution uses it: the first candidate is immediate; after a failure, the next candidate
// consumes an attempt and waits its delay; no candidate left is depletion, a budget spent is
// exhaustion. The candidates in ok succeed. It is the whole candidate rule in a dozen lines.
func runRound(p *Policy, candidates []string, ok ...string) roundResult {
	a := newAttempt(testRules(p), -1, 0)
	var out Outbox
	var res roundResult
	a.becomeDialing(&out)
	for next := 0; ; {
		c := candidates[next]
		next++
		res.tried = append(res.tried, c)
		if slices.Contains(ok, c) {
			a.becomeReady()
			break
		}
		a.fail(errors.New(c + " refused"))
		switch a.decide(next < len(candidates)) {
		case rulingDepleted:
			a.becomeDepleted()
		case rulingExhausted:
			a.becomeExhausted(&out)
		case rulingUngoverned:
			a.becomeDialing(&out) // without a policy, the fallback is immediate
			continue
		case rulingRetry:
			if d := a.plan(0.5, &out); d > 0 {
				a.becomeScheduled(d, &out)
			}
			a.becomeDialing(&out) // the delay's timer fired (or there was none)
			continue
		}
		break
	}
	res.end, res.episode = a.phase, a.episode
	for _, f := range out.Effects {
		switch {
		case f.Kind == Dial:
			res.attempts = append(res.attempts, f.Attempt)
		case f.Kind == ArmTimer:
			res.delays = append(res.delays, f.After)
		case f.Kind == Record && f.Metric.Instrument == InstrumentExhausted:
			res.exhausted++
		}
	}
	return res
}

// TestAttemptCandidateBudget checks the spec's candidate-budget examples (Sentinel discovery
// fallback, Cluster discovery fallback) against the attempt sub-machine directly.
func TestAttemptCandidateBudget(t *testing.T) {
	ms := time.Millisecond
	one := &Policy{InitialDelay: 100 * ms, MaxAttempts: 1}
	three := &Policy{InitialDelay: 100 * ms, MaxDelay: time.Second, MaxAttempts: 3}
	unlimited := &Policy{InitialDelay: 100 * ms, MaxDelay: 250 * ms}
	cases := []struct {
		name       string
		policy     *Policy
		candidates []string
		ok         []string
		tried      []string
		attempts   []int
		delays     []time.Duration
		end        attemptPhase
		exhausted  int
	}{
		{
			name:   "sentinel: MaxAttempts 1 allows A then B; C and D stay untried; exhaustion counts",
			policy: one, candidates: []string{"A", "B", "C", "D"},
			tried: []string{"A", "B"}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			end: attemptExhausted, exhausted: 1,
		},
		{
			name:   "sentinel: only A and B, both fail: depletion, no exhaustion",
			policy: one, candidates: []string{"A", "B"},
			tried: []string{"A", "B"}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			end: attemptDepleted,
		},
		{
			name:   "the last candidate coincides with the limit: depletion, not exhaustion",
			policy: three, candidates: []string{"A", "B", "C", "D"},
			tried: []string{"A", "B", "C", "D"}, attempts: []int{0, 1, 2, 3},
			delays: []time.Duration{100 * ms, 200 * ms, 400 * ms}, end: attemptDepleted,
		},
		{
			name:   "MaxAttempts 3 with candidates to spare: exhaustion after the third fallback",
			policy: three, candidates: []string{"A", "B", "C", "D", "E"},
			tried: []string{"A", "B", "C", "D"}, attempts: []int{0, 1, 2, 3},
			delays: []time.Duration{100 * ms, 200 * ms, 400 * ms}, end: attemptExhausted, exhausted: 1,
		},
		{
			name:   "successful fallback at the limit is not exhaustion",
			policy: one, candidates: []string{"A", "B", "C"}, ok: []string{"B"},
			tried: []string{"A", "B"}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			end: attemptReady,
		},
		{
			name:   "cluster: a failed cached owner may try one known master; seeds cannot start a new budget",
			policy: one, candidates: []string{"owner", "master", "topology", "seed-1", "seed-2"},
			tried: []string{"owner", "master"}, attempts: []int{0, 1}, delays: []time.Duration{100 * ms},
			end: attemptExhausted, exhausted: 1,
		},
		{
			name:   "null policy: immediate fallback across every candidate, then depletion",
			policy: nil, candidates: []string{"A", "B", "C", "D"},
			tried: []string{"A", "B", "C", "D"}, attempts: []int{0, 0, 0, 0}, end: attemptDepleted,
		},
		{
			name:   "unlimited policy: every candidate, capped delays, then depletion (never cycled)",
			policy: unlimited, candidates: []string{"A", "B", "C", "D"},
			tried: []string{"A", "B", "C", "D"}, attempts: []int{0, 1, 2, 3},
			delays: []time.Duration{100 * ms, 200 * ms, 250 * ms}, end: attemptDepleted,
		},
		{
			name:   "the first candidate succeeds: no fallback, no measurement",
			policy: one, candidates: []string{"A", "B"}, ok: []string{"A"},
			tried: []string{"A"}, attempts: []int{0}, end: attemptReady,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runRound(c.policy, c.candidates, c.ok...)
			if !slices.Equal(got.tried, c.tried) || !slices.Equal(got.attempts, c.attempts) ||
				!slices.Equal(got.delays, c.delays) || got.end != c.end || got.exhausted != c.exhausted {
				t.Fatalf("got tried %v attempts %v delays %v end %v exhausted %d\n"+
					"want tried %v attempts %v delays %v end %v exhausted %d",
					got.tried, got.attempts, got.delays, got.end, got.exhausted,
					c.tried, c.attempts, c.delays, c.end, c.exhausted)
			}
			// An episode begins only when a fallback is scheduled.
			if fallback := len(c.delays) > 0; (got.episode != 0) != fallback {
				t.Fatalf("episode %d with fallback %v", got.episode, fallback)
			}
		})
	}
}

// TestAttemptMonitorRenewal checks the Sentinel monitor rules on the sub-machine: MaxAttempts
// counts replacement attempts, so a failed initial subscription still gets a retry; a
// validated primary publication renews an exhausted budget at once, and one that lands while
// retries are being spent renews it as soon as it exhausts.
func TestAttemptMonitorRenewal(t *testing.T) {
	p := &Policy{InitialDelay: time.Second, MaxAttempts: 1}
	rules := testRules(p)
	rules.scope, rules.episodes = ScopeSentinelMonitor, false
	a := newAttempt(rules, -1, 0)
	var out Outbox
	spend := func() {
		t.Helper()
		a.becomeDialing(&out) // the (re)subscription, attempt 0
		a.fail(errors.New("refused"))
		if r := a.decide(true); r != rulingRetry {
			t.Fatalf("a failed initial subscription must get a retry, got %v", r)
		}
		a.becomeScheduled(a.plan(0.5, &out), &out)
		a.becomeDialing(&out)
		if a.n != 1 {
			t.Fatalf("replacement attempt %d, want 1", a.n)
		}
		a.fail(errors.New("refused"))
		if r := a.decide(true); r != rulingExhausted {
			t.Fatalf("MaxAttempts 1 after one replacement: got %v", r)
		}
		a.becomeExhausted(&out)
	}
	spend()
	if a.maybeRenew() {
		t.Fatal("renewed without a publication")
	}
	if !a.renew() || a.phase != attemptIdle || a.n != 0 || a.failures != 0 {
		t.Fatalf("a publication must renew an exhausted monitor at once: %v n=%d", a.phase, a.n)
	}
	// A publication while the retry is scheduled: the monitor resumes as soon as it exhausts.
	a.becomeDialing(&out)
	a.fail(errors.New("refused"))
	a.becomeScheduled(a.plan(0.5, &out), &out)
	if a.renew() {
		t.Fatal("renew must not interrupt a budget being spent")
	}
	a.becomeDialing(&out)
	a.fail(errors.New("refused"))
	a.becomeExhausted(&out)
	if !a.maybeRenew() || a.phase != attemptIdle {
		t.Fatalf("a publication during the retries must renew at exhaustion: %v", a.phase)
	}
	// A publication while ready is no renewal for a later budget.
	a.becomeDialing(&out)
	a.becomeReady()
	if a.renew() || a.renewed {
		t.Fatal("a ready monitor has nothing to renew")
	}
	out.Reset()
	a.lose(errors.New("reset"))
	a.becomeScheduled(a.plan(0.5, &out), &out)
	a.becomeDialing(&out)
	a.fail(errors.New("refused"))
	a.becomeExhausted(&out)
	if a.maybeRenew() {
		t.Fatal("a publication before the budget started renewed it")
	}
	for _, f := range out.Effects {
		if f.Kind == Record && (f.Metric.Scope != ScopeSentinelMonitor || f.Metric.Source != SourceClusterDiscovery) {
			t.Fatalf("measurement without the rules' labels: %v", f)
		}
	}
}

// TestAttemptTransitions steps every edge from every phase: a legal edge lands in its phase, and
// an illegal one panics. The legal sources are written out here, independently of attempt.go.
func TestAttemptTransitions(t *testing.T) {
	all := []attemptPhase{attemptIdle, attemptScheduled, attemptDialing, attemptHandshaking,
		attemptReady, attemptFailed, attemptExhausted, attemptStopped, attemptResting, attemptDepleted}
	I, S, D, H, R, F, X, T, Z, P := all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7], all[8], all[9]
	edges := []struct {
		name  string
		from  []attemptPhase
		to    attemptPhase
		apply func(a *attempt, out *Outbox)
	}{
		{"becomeDialing", []attemptPhase{I, F, S}, D, func(a *attempt, out *Outbox) { a.becomeDialing(out) }},
		{"becomeHandshaking", []attemptPhase{D}, H, func(a *attempt, _ *Outbox) { a.becomeHandshaking() }},
		{"becomeReady", []attemptPhase{D, H}, R, func(a *attempt, _ *Outbox) { a.becomeReady() }},
		{"fail", []attemptPhase{D, H}, F, func(a *attempt, _ *Outbox) { a.fail(errors.New("x")) }},
		{"lose", []attemptPhase{R}, F, func(a *attempt, _ *Outbox) { a.lose(errors.New("x")) }},
		{"endRest", []attemptPhase{Z}, F, func(a *attempt, _ *Outbox) { a.endRest() }},
		{"adopt", []attemptPhase{R}, R, func(a *attempt, _ *Outbox) { a.adopt(99) }},
		{"becomeScheduled", []attemptPhase{F}, S, func(a *attempt, out *Outbox) { a.becomeScheduled(time.Second, out) }},
		{"becomeResting", []attemptPhase{F}, Z, func(a *attempt, out *Outbox) { a.becomeResting(time.Second, out) }},
		{"becomeExhausted", []attemptPhase{F}, X, func(a *attempt, out *Outbox) { a.becomeExhausted(out) }},
		{"becomeDepleted", []attemptPhase{F}, P, func(a *attempt, _ *Outbox) { a.becomeDepleted() }},
		{"becomeIdle", []attemptPhase{D, H, F, X, P}, I, func(a *attempt, _ *Outbox) { a.becomeIdle() }},
		{"becomeStopped", []attemptPhase{I, S, D, H, R, F, X, Z, P}, T, func(a *attempt, _ *Outbox) { a.becomeStopped() }},
		{"plan", []attemptPhase{F}, F, func(a *attempt, out *Outbox) { a.plan(0, out) }},
		{"decide", []attemptPhase{F}, F, func(a *attempt, _ *Outbox) { a.decide(true) }},
	}
	for _, e := range edges {
		for _, from := range all {
			legal := slices.Contains(e.from, from)
			a := newAttempt(testRules(&Policy{InitialDelay: time.Second}), -1, 0)
			a.phase = from
			var out Outbox
			msg := panicMessage(func() { e.apply(&a, &out) })
			switch {
			case legal && msg != "":
				t.Errorf("%s from %v panicked: %s", e.name, from, msg)
			case legal && a.phase != e.to:
				t.Errorf("%s from %v landed in %v, want %v", e.name, from, a.phase, e.to)
			case !legal && msg == "":
				t.Errorf("%s from %v is illegal but did not panic (now %v)", e.name, from, a.phase)
			case !legal && !strings.HasPrefix(msg, "fsm: illegal attempt transition "+from.String()+" -> "):
				t.Errorf("%s from %v panicked with %q", e.name, from, msg)
			}
		}
	}
}

// TestAttemptFieldsPerPhase: each transition resets what only its old phase used.
func TestAttemptFieldsPerPhase(t *testing.T) {
	a := newAttempt(testRules(&Policy{InitialDelay: time.Second, MaxAttempts: 2}), 3, 7)
	var out Outbox
	a.becomeDialing(&out)
	if a.conn == 0 || a.timer != 0 {
		t.Fatalf("dialing: conn %d timer %d", a.conn, a.timer)
	}
	a.fail(errors.New("refused"))
	if a.conn != 0 || a.err == nil || a.failures != 1 {
		t.Fatalf("failed: conn %d err %v failures %d", a.conn, a.err, a.failures)
	}
	a.becomeScheduled(a.plan(0.5, &out), &out)
	if a.timer == 0 || a.conn != 0 || a.n != 1 || a.episode == 0 {
		t.Fatalf("scheduled: timer %d conn %d n %d episode %d", a.timer, a.conn, a.n, a.episode)
	}
	a.becomeDialing(&out)
	if a.timer != 0 || a.conn == 0 {
		t.Fatalf("dialing: timer %d conn %d", a.timer, a.conn)
	}
	episode := a.episode
	a.becomeReady()
	if a.n != 0 || a.failures != 0 || a.err != nil || a.conn == 0 || a.episode != episode {
		t.Fatalf("ready: n %d failures %d err %v conn %d episode %d", a.n, a.failures, a.err, a.conn, a.episode)
	}
	a.lose(errors.New("reset"))
	if a.episode != 0 || a.conn != 0 || a.err == nil {
		t.Fatalf("lost: episode %d conn %d err %v", a.episode, a.conn, a.err)
	}
	for _, f := range out.Effects {
		if f.Kind == Dial && (f.Slot != 3 || f.Waiter != 7) || f.Kind == ArmTimer && f.Waiter != 7 {
			t.Fatalf("effect without the attempt's slot and owner: %v", f)
		}
	}
	a.becomeStopped()
	if a.conn != 0 || a.timer != 0 {
		t.Fatalf("stopped: conn %d timer %d", a.conn, a.timer)
	}
}

// TestAttemptEmitLabels: observations and measurements carry the rules' source and scope and the
// attempt's slot and episode, whatever the host passed; inProgress names the phases with an
// attempt scheduled or running.
func TestAttemptEmitLabels(t *testing.T) {
	a := newAttempt(testRules(&Policy{InitialDelay: time.Second}), 2, 0)
	var out Outbox
	a.becomeDialing(&out)
	a.fail(errors.New("refused"))
	a.becomeScheduled(a.plan(0.5, &out), &out)
	a.emit(Lifecycle{Source: SourceCommand, Slot: 9, Episode: 77, SourceState: SourceConnecting, Attempt: a.n}, &out)
	want := []string{
		"dial slot=2 conn=" + ConnID(IDBase(MachinePool)+1).String() + " attempt=0",
		"record respire.connection.reconnect.attempt source=cluster-discovery scope=cluster-discovery value=1",
		"record respire.connection.reconnect.delay source=cluster-discovery scope=cluster-discovery value=1",
		"arm-timer timer=" + TimerID(IDBase(MachinePool)+2).String() + " after=1s",
		"emit lifecycle source=cluster-discovery scope=cluster-discovery state=connecting endpoint=disconnected slot=2 attempt=1 episode=1001",
	}
	for i, f := range out.Effects {
		if got := f.String(); i >= len(want) || got != want[i] {
			t.Fatalf("effect %d: %s, want %v", i, got, want)
		}
	}
	for _, ph := range []attemptPhase{attemptIdle, attemptScheduled, attemptDialing, attemptHandshaking,
		attemptReady, attemptFailed, attemptExhausted, attemptStopped, attemptResting, attemptDepleted} {
		a.phase = ph
		want := ph == attemptScheduled || ph == attemptDialing || ph == attemptHandshaking
		if a.inProgress() != want {
			t.Errorf("inProgress in %v: %v", ph, !want)
		}
	}
}

// TestAttemptStop: stopping cancels exactly what the phase holds.
func TestAttemptStop(t *testing.T) {
	for _, c := range []struct {
		setup func(a *attempt, out *Outbox)
		drain bool
		want  string
	}{
		{func(*attempt, *Outbox) {}, false, ""},
		{func(a *attempt, out *Outbox) { a.becomeDialing(out) }, true, "close conn=1"},
		{func(a *attempt, out *Outbox) { a.becomeDialing(out); a.becomeHandshaking() }, true, "close conn=1"},
		{func(a *attempt, out *Outbox) { a.becomeDialing(out); a.becomeReady() }, true, "close conn=1 drain"},
		{func(a *attempt, out *Outbox) { a.becomeDialing(out); a.becomeReady() }, false, "close conn=1"},
		{func(a *attempt, out *Outbox) {
			a.becomeDialing(out)
			a.fail(nil)
			a.becomeResting(a.wait(), out)
		}, false, "cancel-timer timer=2"},
		{func(a *attempt, out *Outbox) {
			a.becomeDialing(out)
			a.fail(nil)
			a.becomeExhausted(out)
		}, false, ""},
	} {
		g := newIDs(0, 0)
		a := newAttempt(&attemptRules{ids: &g, backoff: noPolicyBackoff()}, 0, 0)
		var out Outbox
		c.setup(&a, &out)
		out.Reset()
		a.stop(c.drain, &out)
		var got []string
		for _, f := range out.Effects {
			got = append(got, f.String())
		}
		if strings.Join(got, "; ") != c.want || a.phase != attemptStopped {
			t.Errorf("stop: got %q in %v, want %q", got, a.phase, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		b    backoff
		want []time.Duration // after 0, 1, 2, ... failures
	}{
		{noPolicyBackoff(), []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, s, 2 * s, 4 * s, 5 * s, 5 * s}},
		{backoff{first: 5 * s, max: 60 * s}, []time.Duration{0, 5 * s, 10 * s, 20 * s, 40 * s, 60 * s, 60 * s}},
		{backoff{first: s, max: 30 * s}, []time.Duration{0, s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s}},
		{backoff{}, []time.Duration{0, 0, 0}},
	} {
		for n, w := range c.want {
			if got := c.b.wait(n); got != w {
				t.Errorf("%+v after %d failures: %v, want %v", c.b, n, got, w)
			}
		}
	}
	huge := backoff{first: 1, max: math.MaxInt64}
	for _, n := range []int{62, 63, 64, 1000, math.MaxInt} {
		if got := huge.wait(n); got <= 0 {
			t.Errorf("huge backoff after %d failures: %v", n, got)
		}
	}
	if got := huge.wait(math.MaxInt); got != math.MaxInt64 {
		t.Errorf("huge backoff does not reach its max: %v", got)
	}
}

func TestIDsStayInTheirMachine(t *testing.T) {
	g := newIDs(IDBase(MachineShardedPubSub), 0)
	if c := g.conn(); MachineOf(uint64(c)) != MachineShardedPubSub || c != ConnID(IDBase(MachineShardedPubSub)+1) {
		t.Fatalf("first id %d", c)
	}
	g.last = idSpace - 2
	if tm := g.timer(); MachineOf(uint64(tm)) != MachineShardedPubSub {
		t.Fatalf("last id %d leaves its machine", tm)
	}
	if msg := panicMessage(func() { g.conn() }); !strings.Contains(msg, "used up its identifiers") {
		t.Fatalf("allocating past the machine's space: %q", msg)
	}
}

func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// TestAttemptProperties drives one attempt through random legal host actions and checks the
// sub-machine's rules on its effects, against an independent model:
//   - attempt numbers rise by one within a budget, from 0 or 1, and restart with a new budget;
//   - a planned attempt never exceeds MaxAttempts;
//   - every delay lies in its attempt's jitter band and is never negative; waits of attempts no
//     policy governs follow the backoff schedule;
//   - exhaustion is sticky: nothing dials or schedules until a renewal;
//   - depletion never records exhaustion, and every exhaustion records it once;
//   - identifiers are unique and belong to the machine.
func TestAttemptProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var p *Policy
		if rapid.Bool().Draw(t, "policy") {
			p = validPolicy(t)
		}
		machine := Machine(rapid.IntRange(0, int(Machines)-1).Draw(t, "machine"))
		g := newIDs(IDBase(machine), 0)
		rules := &attemptRules{policy: p, backoff: backoff{first: NoPolicyFirstWait, max: NoPolicyMaxWait},
			source: SourceClusterDiscovery, episodes: true, ids: &g}
		a := newAttempt(rules, -1, 0)
		var (
			out      Outbox
			seen     = map[uint64]bool{}
			budget   int // the model's attempts consumed in the current budget
			failures int // the model's consecutive failures since the last success
			exhausts int // exhaustions so far
			recorded int // exhausted measurements so far
		)
		dial := func(want int) {
			out.Reset()
			a.becomeDialing(&out)
			if f := out.Effects[0]; f.Kind != Dial || f.Attempt != want {
				t.Fatalf("dial %v, want attempt %d", f, want)
			}
			check(t, seen, machine, uint64(out.Effects[0].Conn))
		}
		for step := 0; step < 60; step++ {
			switch a.phase {
			case attemptIdle:
				budget, failures = 0, 0
				dial(0)
			case attemptDialing, attemptHandshaking:
				switch rapid.IntRange(0, 3).Draw(t, "outcome") {
				case 0:
					a.becomeReady()
					budget, failures = 0, 0
				case 1:
					if a.phase == attemptDialing {
						a.becomeHandshaking()
					}
				default:
					a.fail(errors.New("refused"))
					failures++
				}
			case attemptReady:
				a.lose(errors.New("reset"))
			case attemptScheduled:
				dial(budget)
			case attemptResting:
				a.endRest()
			case attemptFailed:
				more := rapid.IntRange(0, 4).Draw(t, "more") > 0
				out.Reset()
				r := a.decide(more)
				if (r == rulingDepleted) == more {
					t.Fatalf("ruling %v with more candidates: %v", r, more)
				}
				switch r {
				case rulingDepleted:
					a.becomeDepleted()
				case rulingUngoverned:
					if p == nil {
						w := a.wait()
						if want := oracleRest(failures); w != want {
							t.Fatalf("wait after %d failures: %v, want %v", failures, w, want)
						}
						if rapid.Bool().Draw(t, "rest") {
							a.becomeResting(w, &out)
							check(t, seen, machine, uint64(out.Effects[0].Timer))
						} else {
							dial(0)
						}
						break
					}
					t.Fatalf("ungoverned under %v", p)
				case rulingExhausted:
					if p == nil || p.MaxAttempts == 0 || budget != p.MaxAttempts {
						t.Fatalf("exhausted after %d attempts under %v", budget, p)
					}
					a.becomeExhausted(&out)
					exhausts++
				case rulingRetry:
					budget++
					if p == nil || (p.MaxAttempts > 0 && budget > p.MaxAttempts) {
						t.Fatalf("attempt %d allowed under %v", budget, p)
					}
					d := a.plan(rapid.Float64Range(0, 1).Draw(t, "draw"), &out)
					lo, hi := oracleBand(p, budget)
					if d < 0 || d < lo || d > hi {
						t.Fatalf("attempt %d delay %v outside [%v, %v]", budget, d, lo, hi)
					}
					if m := out.Effects[0].Metric; m.Instrument != InstrumentAttempt || m.Value != float64(budget) {
						t.Fatalf("attempt measurement %+v, want %d", m, budget)
					}
					if m := out.Effects[1].Metric; m.Instrument != InstrumentDelay || m.Value != d.Seconds() {
						t.Fatalf("delay measurement %+v, want %v", m, d)
					}
					if a.episode == 0 {
						t.Fatalf("a planned attempt without an episode")
					}
					out.Reset()
					a.becomeScheduled(d, &out)
					check(t, seen, machine, uint64(out.Effects[0].Timer))
				}
			case attemptExhausted:
				// Sticky: neither a dial nor a schedule may leave it.
				if panicMessage(func() { a.becomeDialing(&out) }) == "" ||
					panicMessage(func() { a.becomeScheduled(time.Second, &out) }) == "" {
					t.Fatalf("an exhausted attempt left its phase")
				}
				if !rapid.Bool().Draw(t, "renew") {
					return
				}
				a.renew()
			case attemptDepleted:
				a.becomeIdle()
			}
			for _, f := range out.Effects {
				if f.Kind == Record && f.Metric.Instrument == InstrumentExhausted {
					recorded++
				}
			}
			out.Reset()
			if recorded != exhausts {
				t.Fatalf("%d exhausted measurements for %d exhaustions", recorded, exhausts)
			}
		}
	})
}

// check records id as seen: it must be new and belong to machine.
func check(t *rapid.T, seen map[uint64]bool, machine Machine, id uint64) {
	if seen[id] || MachineOf(id) != machine || id == IDBase(machine) {
		t.Fatalf("identifier %d reused or outside machine %v", id, machine)
	}
	seen[id] = true
}
