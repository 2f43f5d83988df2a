package simtest

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"time"

	"pgregory.net/rapid"

	"github.com/respire-go/respire/sim/scenario"
)

// FaultKind is a kind of fault that Faults draws: the YAML name of the scenario's fault.
type FaultKind string

// The fault kinds Faults draws.
const (
	// LoseReply makes the node apply its next application command and lose the reply; the
	// connection is then reset.
	LoseReply FaultKind = "lose_reply"
	// Kill kills the node (every connection reset, connects refused) and restarts it with its
	// dataset after a drawn downtime.
	Kill FaultKind = "kill"
	// Drop resets every connection to the node; bytes in flight are lost.
	Drop FaultKind = "drop"
	// Pause stops the node from processing for a drawn downtime; bytes queue up and are
	// processed when it resumes.
	Pause FaultKind = "pause"
	// Partition black-holes the path of one client connection (FaultSpace.Slot's) for a drawn
	// downtime: what it sends waits in the network and arrives when the partition heals,
	// unless the server has closed that connection by then. The client's other connections,
	// and the connections a fence opens, take other paths.
	Partition FaultKind = "partition"
	// MalformedReply makes the node answer FaultSpace.Commands with a frame no RESP parser
	// accepts, for a drawn window, after running them: the client loses the connection with a
	// protocol error, and the commands in flight end with an unknown outcome.
	MalformedReply FaultKind = "malformed_reply"
	// WrongKindReply makes the node answer FaultSpace.Commands with a well-formed reply of
	// another kind, for a drawn window, after running them (an integer, or an empty array
	// where the command answers an integer): the parser accepts it and the command's reply
	// shape does not, so the command ends with an unknown outcome and its connection is lost.
	WrongKindReply FaultKind = "wrong_kind_reply"
)

// Defaults of FaultSpace.
const (
	DefaultMaxFaults   = 3
	DefaultHorizon     = time.Second
	DefaultMaxDowntime = time.Second
)

// Bounds of FaultSpace, checked before anything is drawn.
const (
	// MaxFaultsBound bounds FaultSpace.MaxFaults.
	MaxFaultsBound = 64
	// MinStep is the smallest FaultSpace.Step.
	MinStep = time.Microsecond
)

// ErrFaultSpace reports an invalid FaultSpace.
var ErrFaultSpace = errors.New("simtest: invalid fault space")

// FaultSpace describes the fault timelines Faults draws: up to MaxFaults faults of the given
// kinds on one node (or, for partitions, one client slot), each starting in [0, Horizon],
// kills, pauses, partitions and the windows of reply faults lasting at most MaxDowntime. Every
// time is a multiple of Step, so that shrinking moves faults earlier in whole steps. The zero
// value draws up to DefaultMaxFaults lost replies, kills, drops, pauses and partitions on node
// "r1" and slot 0 in the first DefaultHorizon, with downtimes up to DefaultMaxDowntime, in 1 ms
// steps; setting Commands adds malformed and wrong-kind replies to those commands.
type FaultSpace struct {
	// Node is the target node (default "r1", DefaultScenario's).
	Node string
	// Slot is the client connection slot a Partition cuts off (default 0). It must be below
	// the scenario's client.connections.
	Slot int
	// Kinds are the kinds drawn (default: LoseReply, Kill, Drop, Pause, Partition, and
	// MalformedReply and WrongKindReply when Commands is set). Shrinking prefers the kinds
	// listed first.
	Kinds []FaultKind
	// Commands are the commands whose replies MalformedReply and WrongKindReply replace: a
	// name (INCR) or a name and its subcommand ("CLIENT INFO"), in any case, as in the
	// scenario's malformed_reply fault. It is required when Kinds lists either kind.
	Commands []string
	// MaxFaults is the most faults in a timeline (default DefaultMaxFaults, at most
	// MaxFaultsBound).
	MaxFaults int
	// Horizon is the latest start of a fault (default DefaultHorizon).
	Horizon time.Duration
	// MaxDowntime is the longest kill, pause or partition, and the longest window of a
	// reply fault (default DefaultMaxDowntime).
	MaxDowntime time.Duration
	// Step is the granularity of the drawn times (default 1 ms, at least MinStep).
	Step time.Duration
}

// withDefaults validates s and fills in its defaults.
func (s FaultSpace) withDefaults() (FaultSpace, error) {
	switch {
	case s.MaxFaults < 0 || s.MaxFaults > MaxFaultsBound:
		return s, errors.Join(ErrFaultSpace, errors.New("simtest: FaultSpace.MaxFaults must be between 0 and "+strconv.Itoa(MaxFaultsBound)))
	case s.Horizon < 0 || s.MaxDowntime < 0:
		return s, errors.Join(ErrFaultSpace, errors.New("simtest: FaultSpace.Horizon and MaxDowntime must not be negative"))
	case s.Slot < 0:
		return s, errors.Join(ErrFaultSpace, errors.New("simtest: FaultSpace.Slot must not be negative"))
	case s.Step != 0 && s.Step < MinStep:
		return s, errors.Join(ErrFaultSpace, errors.New("simtest: FaultSpace.Step must be at least 1us"))
	}
	replies := false
	for _, k := range s.Kinds {
		switch k {
		case LoseReply, Kill, Drop, Pause, Partition:
		case MalformedReply, WrongKindReply:
			replies = true
		default:
			return s, errors.Join(ErrFaultSpace, errors.New("simtest: FaultSpace.Kinds: unknown kind "+strconv.Quote(string(k))))
		}
	}
	switch {
	case replies && len(s.Commands) == 0:
		return s, errors.Join(ErrFaultSpace, errors.New("simtest: FaultSpace.Commands must name the commands whose replies MalformedReply and WrongKindReply replace"))
	case len(s.Commands) > 0:
		if err := scenario.ValidateCommandMatch("FaultSpace.Commands", s.Commands, ""); err != nil {
			return s, errors.Join(ErrFaultSpace, err)
		}
	}
	if s.Node == "" {
		s.Node = "r1"
	}
	if len(s.Kinds) == 0 {
		s.Kinds = []FaultKind{LoseReply, Kill, Drop, Pause, Partition}
		if len(s.Commands) > 0 {
			s.Kinds = append(s.Kinds, MalformedReply, WrongKindReply)
		}
	}
	if s.MaxFaults == 0 {
		s.MaxFaults = DefaultMaxFaults
	}
	if s.Horizon == 0 {
		s.Horizon = DefaultHorizon
	}
	if s.MaxDowntime == 0 {
		s.MaxDowntime = DefaultMaxDowntime
	}
	if s.Step == 0 {
		s.Step = time.Millisecond
	}
	return s, nil
}

// Faults returns a rapid generator of fault timelines in space. It panics on an invalid space
// (see FaultSpace's bounds); Check and Sweep report it as an error instead.
func Faults(space FaultSpace) *rapid.Generator[[]scenario.Fault] {
	s, err := space.withDefaults()
	if err != nil {
		panic(err)
	}
	return faults(s)
}

func faults(s FaultSpace) *rapid.Generator[[]scenario.Fault] {
	steps := func(d time.Duration) int64 { return int64(d / s.Step) }
	one := rapid.Custom(func(t *rapid.T) scenario.Fault {
		kind := rapid.SampledFrom(s.Kinds).Draw(t, "kind")
		at := time.Duration(rapid.Int64Range(0, steps(s.Horizon)).Draw(t, "at")) * s.Step
		f := scenario.Fault{At: scenario.At(at)}
		downtime := func() *scenario.TimeRange {
			d := time.Duration(rapid.Int64Range(1, max(1, steps(s.MaxDowntime))).Draw(t, "downtime")) * s.Step
			r := scenario.At(d)
			return &r
		}
		switch kind {
		case LoseReply:
			f.LoseReply = &scenario.Target{Node: s.Node}
		case Kill:
			f.Kill = &scenario.KillFault{Node: s.Node, RestartAfter: downtime()}
		case Drop:
			f.Drop = &scenario.Target{Node: s.Node}
		case Pause:
			f.Pause = &scenario.PauseFault{Node: s.Node, For: downtime()}
		case Partition:
			slot := s.Slot
			f.Blackhole = &scenario.BlackholeFault{Target: scenario.Target{ClientSlot: &slot}, For: downtime()}
		case MalformedReply, WrongKindReply:
			f.MalformedReply = &scenario.MalformedReplyFault{Node: s.Node, Commands: slices.Clone(s.Commands),
				For: downtime(), WrongKind: kind == WrongKindReply}
		}
		return f
	})
	return rapid.SliceOfN(one, 0, s.MaxFaults)
}

// withFaults returns a copy of cfg whose scenario has the faults added to its own.
func withFaults(cfg Config, faults []scenario.Fault, seed uint64) Config {
	sc := cfg.Scenario
	if sc == nil {
		sc = DefaultScenario()
	}
	sc = sc.Clone()
	sc.Faults = append(sc.Faults, faults...)
	cfg.Scenario, cfg.Seed = sc, seed
	return cfg
}

// Check is a property test of body under fault timelines drawn from space, with rapid: each
// check draws a timeline and a seed, adds the timeline to cfg.Scenario's faults and runs body
// (Run). A failing run fails the check; rapid then shrinks the timeline (fewer faults, earlier
// times, kinds listed first) and the seed to the smallest failing run, and marks t failed with
// its summary (t.Errorf: the test goes on). Check returns that smallest failing run, whose
// Result.Scenario WriteScenario saves as a scenario file that replays it, or nil when every
// check passed.
//
// t is usually the test's *testing.T; a test that expects a failure (the positive control of
// its own property) passes a rapid.TB that records it instead.
func Check(t rapid.TB, cfg Config, space FaultSpace, body func(env *Env)) *Result {
	t.Helper()
	s, err := space.withDefaults()
	if err != nil {
		t.Errorf("%v", err)
		return nil
	}
	gen := faults(s)
	var failing *Result
	rapid.Check(softTB{t}, func(rt *rapid.T) {
		timeline := gen.Draw(rt, "faults")
		seed := rapid.Uint64Range(0, 1<<32).Draw(rt, "seed")
		res := Run(withFaults(cfg, timeline, seed), body)
		if res.Failed() {
			// rapid runs the smallest failing case last: this is it once Check returns.
			failing = res
			rt.Fatalf("simtest: %s", res.Summary())
		}
	})
	return failing
}

// softTB turns rapid's final FailNow and Fatalf into Fail and Errorf, so that Check returns the
// smallest failing run to its caller instead of ending the test first.
type softTB struct{ rapid.TB }

func (s softTB) FailNow()                  { s.TB.Fail() }
func (s softTB) Fatalf(f string, a ...any) { s.TB.Helper(); s.TB.Errorf(f, a...) }
func (s softTB) Fatal(a ...any)            { s.TB.Helper(); s.TB.Error(a...) }

// Sweep runs body under n fault timelines drawn from space, the i-th with rapid's example
// for seed i and with seed i, and returns the first failing run, or nil when all n passed. It
// is the exhaustive companion of Check for a property that must hold on every seed: it never
// shrinks, and each run is reproducible from its index alone.
func Sweep(cfg Config, space FaultSpace, n int, body func(env *Env)) (*Result, error) {
	s, err := space.withDefaults()
	if err != nil {
		return nil, err
	}
	gen := faults(s)
	for i := 0; i < n; i++ {
		res := Run(withFaults(cfg, gen.Example(i), uint64(i)), body)
		if res.Failed() {
			return res, nil
		}
	}
	return nil, nil
}

// WriteScenario writes sc (usually a failing Result.Scenario) to path as YAML, which
// scenario.Load reads back to the same scenario: the run replays with
// Run(Config{Scenario: loaded, Seed: loaded.Seed}, body).
func WriteScenario(path string, sc *scenario.Scenario) error {
	data, err := scenario.Marshal(sc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
