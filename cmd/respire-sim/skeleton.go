package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

const skeletonUsage = `usage: respire-sim scenario [-o FILE] capture.jsonl

Turns a journal capture (client.DumpJournal, docs/capture.md) into a scenario skeleton: the
endpoint as a simulated node, the client's connections and reconnect policy, and the fault
timeline the capture shows (connection losses, refused dials, kill and restart windows), with
the observed failures as comments. The skeleton loads and runs as it is; edit its workload
and expectations to make it the incident's regression scenario. A Cluster client's capture
gives a Cluster of the nodes it names, one shard each; a Sentinel client's gives its Sentinels
and the primaries it validated, each change of primary a failover.

flags:
  -o FILE   write the scenario to FILE instead of standard output`

// skeletonLead is the virtual time before the first captured event: the eager connect.
const skeletonLead = 2 * time.Second

// maxObserved bounds the observed failures listed as comments.
const maxObserved = 40

// runSkeleton is `respire-sim scenario`.
func runSkeleton(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scenario", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "output file")
	path, f, code := captureArg(fs, args, "scenario", skeletonUsage, stdout, stderr)
	if f == nil {
		return code
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	text, err := skeleton(f, name)
	if err != nil {
		fmt.Fprintln(stderr, "respire-sim scenario:", err)
		return 2
	}
	if *out == "" {
		_, _ = io.WriteString(stdout, text)
		return 0
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		fmt.Fprintln(stderr, "respire-sim scenario:", err)
		return 2
	}
	return 0
}

// outage is one window of the capture during which connections failed: from the first failure
// to the next successful handshake (or the end of the capture).
type outage struct {
	from, to time.Duration
	// lost are the command slots whose ready connection was lost; lostOther counts the other
	// machines' losses.
	lost      []int
	lostOther int
	refused   int
	open      bool
}

// skeleton returns the scenario YAML for capture f.
func skeleton(f *engine.CaptureFile, name string) (string, error) {
	cfg := f.Header.Config
	if len(f.Steps) == 0 {
		return "", errors.New("the capture holds no events")
	}
	switch {
	case cfg.Cluster != nil:
		return skeletonCluster(f, name) // skeleton_topo.go
	case cfg.Sentinel != nil:
		return skeletonSentinel(f, name)
	}
	slots := map[fsm.ConnID]int{}
	var observed []string
	var outages []*outage
	var cur *outage
	origin := f.Steps[0].Event.At
	end := f.Steps[len(f.Steps)-1].Event.At - origin
	d, err := f.Replay(func(i int, ev *fsm.Event, effects []fsm.Effect) {
		at := ev.At - origin
		for j := range effects {
			if e := &effects[j]; e.Kind == fsm.Dial && e.Machine == fsm.MachineMux && e.Slot >= 0 {
				slots[e.Conn] = e.Slot
			}
		}
		switch ev.Kind {
		case fsm.ConnLost, fsm.DialFailed:
			if len(observed) < maxObserved {
				observed = append(observed, fmt.Sprintf("%s %s", skeletonTime(skeletonLead+at), f.Steps[i].Text))
			}
			if cur == nil {
				cur = &outage{from: at, open: true}
				outages = append(outages, cur)
			}
			if ev.Kind == fsm.DialFailed {
				cur.refused++
			} else if s, ok := slots[ev.Conn]; ok {
				cur.lost = append(cur.lost, s)
			} else {
				cur.lostOther++
			}
		case fsm.HandshakeDone:
			if cur != nil {
				cur.to, cur.open = at, false
				cur = nil
			}
		}
	})
	if err != nil {
		return "", err
	}
	if d != nil {
		return "", fmt.Errorf("the capture does not replay (%v): check it with respire-sim replay", d)
	}
	for _, o := range outages {
		if o.open {
			o.to = end + time.Second
		}
	}
	var b strings.Builder
	skeletonHead(&b, f, name, end)
	b.WriteString("topology: {kind: standalone, nodes: [{id: r1}]}\n")
	fmt.Fprintf(&b, "# captured endpoint: %s\n", cfg.Endpoint)
	skeletonClient(&b, &cfg)
	var faults strings.Builder
	for _, o := range outages {
		faults.WriteString(faultLines(o))
	}
	skeletonTail(&b, observed, faults.String())
	return b.String(), nil
}

// skeletonHead writes a skeleton's name, description, seed and duration (the capture's span
// after the lead, plus 10 s).
func skeletonHead(b *strings.Builder, f *engine.CaptureFile, name string, end time.Duration) {
	fmt.Fprintf(b, "name: %s\n", yamlName(name))
	fmt.Fprintf(b, "description: >\n  Skeleton from the journal capture %s (%d events, dumped on %s), from the\n", name, len(f.Steps), f.Header.Reason)
	b.WriteString("  observed fault timeline. Times are offsets from the first captured event plus 2 s. Edit the\n")
	b.WriteString("  workload and the expectations to make it the incident's regression scenario.\n")
	b.WriteString("seed: 1\n")
	fmt.Fprintf(b, "duration: %ds\n", int((skeletonLead+end+10*time.Second)/time.Second)+1)
}

// skeletonClient writes the network and the client section of the captured configuration.
func skeletonClient(b *strings.Builder, cfg *engine.Config) {
	b.WriteString("network: {latency: 500us, jitter: 100us}\n")
	b.WriteString("client:\n")
	fmt.Fprintf(b, "  connections: %d\n", cfg.Slots)
	b.WriteString("  connect: eager\n  connect_timeout: 1s   # not in the capture: set the client's\n  command_timeout: 1s   # not in the capture: set the client's\n")
	if p := cfg.Policy; p != nil {
		fmt.Fprintf(b, "  reconnect_policy: {initial_delay: %s, backoff_multiplier: %s, max_delay: %s, jitter_ratio: %s, max_attempts: %d}\n",
			p.InitialDelay, strconv.FormatFloat(p.BackoffMultiplier, 'g', -1, 64), p.MaxDelay,
			strconv.FormatFloat(p.JitterRatio, 'g', -1, 64), p.MaxAttempts)
	}
	if cfg.Lifetime > 0 {
		fmt.Fprintf(b, "  connection_max_lifetime: %s\n", cfg.Lifetime)
		if cfg.LifetimeJitter > 0 {
			fmt.Fprintf(b, "  connection_max_lifetime_jitter: %s\n", cfg.LifetimeJitter)
		}
	}
}

// skeletonTail writes the observed failures as comments, the faults, a workload and the
// expectations.
func skeletonTail(b *strings.Builder, observed []string, faults string) {
	if len(observed) > 0 {
		b.WriteString("# observed failures (the first ones):\n")
		for _, o := range observed {
			fmt.Fprintf(b, "#   %s\n", o)
		}
	}
	if faults != "" {
		b.WriteString("faults:\n")
		b.WriteString(faults)
	}
	b.WriteString("workload: {callers: 4, rate: 100/s, keys: 16, counters: 4, mix: {get: 50, set: 30, incr: 20}}\n")
	b.WriteString("expect:\n  invariants: all\n  linearizable: true\n")
}

// faultLines returns the faults that reproduce outage o: refused dials make it a kill and
// restart (when it began with losses) or a refusal window; losses alone are drops.
func faultLines(o *outage) string {
	at := skeletonTime(skeletonLead + o.from)
	length := max(o.to-o.from, time.Millisecond)
	var b strings.Builder
	switch {
	case o.refused > 0 && (len(o.lost) > 0 || o.lostOther > 0):
		fmt.Fprintf(&b, "  - {at: %s, kill: {node: r1, restart_after: %s}}   # %d connections lost, %d dials failed\n",
			at, skeletonTime(length), len(o.lost)+o.lostOther, o.refused)
	case o.refused > 0:
		fmt.Fprintf(&b, "  - {at: %s, refuse: {node: r1, for: %s}}   # %d dials failed\n", at, skeletonTime(length), o.refused)
	default:
		seen := map[int]bool{}
		for _, s := range o.lost {
			if !seen[s] {
				seen[s] = true
				fmt.Fprintf(&b, "  - {at: %s, drop: {client_slot: %d}}\n", at, s)
			}
		}
		if o.lostOther > 0 {
			fmt.Fprintf(&b, "  # %d other connections (dedicated, pub/sub) were lost at %s\n", o.lostOther, at)
		}
	}
	return b.String()
}

// skeletonTime writes d in milliseconds, as the scenario format reads it.
func skeletonTime(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// yamlName returns name with the characters a scenario name cannot hold replaced.
func yamlName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
}
