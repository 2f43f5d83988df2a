// Package report writes the HTML report of a failing simulated run: one self-contained page
// that a person reads without the trace. It shows the scenario, the seed and every violation
// with its virtual time; the operations the violations name (ids, callers, call and return
// times, outcomes); a timeline of the run (fault windows as bands, each command slot's state
// over virtual time with its dials as ticks, the other machines' dials, the outcomes of the
// operations, the violations as marks); and, for a linearizability failure, porcupine's view
// of each failing key alone, opened at its first error.
package report

import (
	"fmt"
	"html"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/check"
	"github.com/respire-go/respire/sim/record"
)

// Timeline geometry, in pixels: the page stays this wide whatever the length of the run.
const (
	width     = 1200
	labelW    = 170
	rightPad  = 20
	rowH      = 16
	rowGap    = 4
	maxSlots  = 64
	maxFaults = 16
	maxKeys   = 2
)

// Write writes the report of res, judged as v, to w.
func Write(w io.Writer, res *record.Result, v *check.Verdict) error {
	p := &page{res: res, v: v}
	p.collect()
	var b strings.Builder
	p.head(&b)
	p.summary(&b)
	p.violationTable(&b)
	p.timeline(&b)
	p.opTable(&b)
	p.linearizability(&b)
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// page is what the report shows, gathered from the records.
type page struct {
	res *record.Result
	v   *check.Verdict
	// named are the operations the violations name, by id.
	named map[uint64]bool
	// slots are the command slots' state segments and dials.
	slots map[int]*slotRow
	// machines are the other machines' dials, by machine.
	machines map[fsm.Machine][]time.Duration
	// sources are the state segments of the dedicated rents and pub/sub episodes, from their
	// lifecycle observations, by row label; sourceOrder keeps the rows' first-seen order.
	sources     map[string]*sourceRow
	sourceOrder []string
}

// sourceRow is the state over time of a recovery source other than the command slots: the
// dedicated rents of the pool or the pub/sub episodes (the latest observation of any of them),
// with the instants one exhausted.
type sourceRow struct {
	segs      []sourceSeg
	exhausted []time.Duration
}

type sourceSeg struct {
	from, to time.Duration
	state    fsm.SourceState
}

// segment is a slot in one state from From to To.
type segment struct {
	from, to time.Duration
	state    fsm.SlotState
}

type slotRow struct {
	segs  []segment
	dials []time.Duration
}

var reID = regexp.MustCompile(`\b(?:op|command|operation) (\d+)\b`)

func (p *page) collect() {
	p.named = map[uint64]bool{}
	for _, x := range p.v.Violations {
		for _, m := range reID.FindAllStringSubmatch(x.Message, -1) {
			if id, err := strconv.ParseUint(m[1], 10, 64); err == nil {
				p.named[id] = true
			}
		}
	}
	p.slots = map[int]*slotRow{}
	p.machines = map[fsm.Machine][]time.Duration{}
	row := func(slot int) *slotRow {
		if p.slots[slot] == nil {
			p.slots[slot] = &slotRow{}
		}
		return p.slots[slot]
	}
	for _, st := range p.res.Steps {
		at := st.Event.At
		mux := st.Event.Machine == fsm.MachineMux
		for i := range st.Effects {
			f := &st.Effects[i]
			// A connection's id names its machine; a step's event may not (a connection event
			// of a pub/sub or dedicated connection).
			dialer := fsm.MachineOf(uint64(f.Conn))
			switch {
			case f.Kind == fsm.Dial && dialer == fsm.MachineMux && f.Slot >= 0:
				row(f.Slot).dials = append(row(f.Slot).dials, at)
			case f.Kind == fsm.Dial:
				p.machines[dialer] = append(p.machines[dialer], at)
			case f.Kind == fsm.Emit && f.Lifecycle.Source != fsm.SourceCommand && f.Lifecycle.Source != fsm.SourceUnspecified:
				p.observe(&f.Lifecycle, at)
			case f.Kind == fsm.Route && mux:
				r := row(f.Slot)
				if n := len(r.segs); n > 0 {
					if r.segs[n-1].state == f.State {
						continue
					}
					r.segs[n-1].to = at
				}
				r.segs = append(r.segs, segment{from: at, to: p.res.End, state: f.State})
			}
		}
	}
}

// observe adds a lifecycle observation of a rent or an episode to its row.
func (p *page) observe(l *fsm.Lifecycle, at time.Duration) {
	label := l.Source.String()
	switch l.Source {
	case fsm.SourceDedicated:
		label = "dedicated rents"
	case fsm.SourcePubSub:
		label = "pub/sub episodes"
	}
	if p.sources == nil {
		p.sources = map[string]*sourceRow{}
	}
	r := p.sources[label]
	if r == nil {
		r = &sourceRow{}
		p.sources[label] = r
		p.sourceOrder = append(p.sourceOrder, label)
	}
	if l.Exhausted {
		r.exhausted = append(r.exhausted, at)
	}
	if l.SourceState == fsm.SourceStateUnknown {
		return
	}
	if n := len(r.segs); n > 0 {
		if r.segs[n-1].state == l.SourceState {
			return
		}
		r.segs[n-1].to = at
	}
	r.segs = append(r.segs, sourceSeg{from: at, to: p.res.End, state: l.SourceState})
}

// sourceColor is the fill of a rent's or episode's state.
func sourceColor(s fsm.SourceState) string {
	switch s {
	case fsm.SourceConnected:
		return "#4caf50"
	case fsm.SourceConnecting:
		return "#ffd54f"
	case fsm.SourceDisconnected:
		return "#e57373"
	}
	return "#cfcfcf"
}

func (p *page) x(t time.Duration) float64 {
	end := p.res.End
	if end <= 0 {
		end = 1
	}
	return labelW + float64(t)/float64(end)*float64(width-labelW-rightPad)
}

func esc(s string) string { return html.EscapeString(s) }

func (p *page) head(b *strings.Builder) {
	sc := p.res.Scenario
	fmt.Fprintf(b, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>respire-sim: %s seed %d: %s</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: %dpx; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.verdict-FAIL { color: #b00020; } .verdict-PASS { color: #0a7a2f; }
table { border-collapse: collapse; margin: 4px 0; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font: 12px ui-monospace, monospace; }
.violation { background: #fdecee; } .muted { color: #777; }
svg text { font: 11px system-ui, sans-serif; }
iframe { width: 100%%; height: 420px; border: 1px solid #ccc; }
.legend span { display: inline-block; margin-right: 12px; } .legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px; vertical-align: middle; }
</style>
</head>
<body>
`, esc(sc.Name), p.res.Seed, verdictWord(p.v), width)
}

func verdictWord(v *check.Verdict) string {
	if v.Pass() {
		return "PASS"
	}
	return "FAIL"
}

func (p *page) summary(b *strings.Builder) {
	sc := p.res.Scenario
	word := verdictWord(p.v)
	fmt.Fprintf(b, "<h1>%s <span class=\"verdict-%s\">%s</span></h1>\n", esc(sc.Name), word, word)
	fmt.Fprintf(b, "<p>seed <b>%d</b> &middot; virtual time %s &middot; %d operations &middot; %d scheduler events &middot; trace <code>%s</code></p>\n",
		p.res.Seed, p.res.End, p.v.Ops, p.res.Events, esc(short(p.res.TraceHash)))
	if sc.Description != "" {
		fmt.Fprintf(b, "<p class=\"muted\">%s</p>\n", esc(strings.TrimSpace(sc.Description)))
	}
	fmt.Fprintf(b, "<p class=\"muted\">checkers: %s</p>\n", esc(strings.Join(p.v.Checked, ", ")))
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

func (p *page) violationTable(b *strings.Builder) {
	b.WriteString("<h2 id=\"violations\">Violations</h2>\n")
	if len(p.v.Violations) == 0 && len(p.v.Missing) == 0 {
		b.WriteString("<p>None.</p>\n")
		return
	}
	vs := append([]check.Violation(nil), p.v.Violations...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].At < vs[j].At })
	expected := map[string]bool{}
	for _, n := range p.res.Scenario.Expect.Fail {
		expected[n] = true
	}
	b.WriteString("<table><tr><th>#</th><th>checker</th><th>virtual time</th><th>violation</th></tr>\n")
	for i, x := range vs {
		class, note := "violation", ""
		if expected[x.Checker] {
			class, note = "", " <span class=\"muted\">(expected: a positive control)</span>"
		}
		fmt.Fprintf(b, "<tr class=\"%s\"><td class=\"num\">%d</td><td><b>%s</b></td><td class=\"num\">%s</td><td>%s%s</td></tr>\n",
			class, i+1, esc(x.Checker), x.At, esc(x.Message), note)
	}
	for _, m := range p.v.Missing {
		fmt.Fprintf(b, "<tr class=\"violation\"><td></td><td><b>%s</b></td><td></td><td>expected to fail (a planted bug), but it found nothing</td></tr>\n", esc(m))
	}
	b.WriteString("</table>\n")
}

// stateColor is the fill of a slot state.
func stateColor(s fsm.SlotState) string {
	switch s {
	case fsm.SlotReady:
		return "#4caf50"
	case fsm.SlotConnecting, fsm.SlotHandshaking:
		return "#ffd54f"
	case fsm.SlotScheduled, fsm.SlotResting:
		return "#ffb74d"
	case fsm.SlotFailed:
		return "#e57373"
	case fsm.SlotExhausted:
		return "#8e0000"
	}
	return "#cfcfcf"
}

func (p *page) timeline(b *strings.Builder) {
	res := p.res
	var rows strings.Builder
	y := 24
	label := func(text string) {
		fmt.Fprintf(&rows, "<text x=\"4\" y=\"%d\">%s</text>\n", y+12, esc(text))
	}
	// Fault bands.
	faults := res.Faults
	for i, win := range faults {
		if i == maxFaults {
			label(fmt.Sprintf("(%d more faults)", len(faults)-maxFaults))
			y += rowH + rowGap
			break
		}
		kind := "fault"
		if i < len(res.Scenario.Faults) {
			kind = res.Scenario.Faults[i].Kind()
		}
		label(fmt.Sprintf("fault %d: %s", i, kind))
		x0, x1 := p.x(win.From), p.x(win.To)
		if x1-x0 < 3 {
			x1 = x0 + 3 // an instant fault (a drop) stays visible
		}
		fmt.Fprintf(&rows, "<rect class=\"fault\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#9575cd\" fill-opacity=\"0.55\"><title>fault %d %s from %s to %s</title></rect>\n",
			x0, y, x1-x0, rowH, i, esc(kind), win.From, win.To)
		y += rowH + rowGap
	}
	// Command slots.
	slots := make([]int, 0, len(p.slots))
	for s := range p.slots {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	hidden, hiddenDials := 0, 0
	for _, s := range slots {
		r := p.slots[s]
		if s >= maxSlots {
			hidden++
			hiddenDials += len(r.dials)
			continue
		}
		label(fmt.Sprintf("slot %d (%d dials)", s, len(r.dials)))
		for _, seg := range r.segs {
			x0, x1 := p.x(seg.from), p.x(seg.to)
			if x1-x0 < 0.5 {
				x1 = x0 + 0.5
			}
			fmt.Fprintf(&rows, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>slot %d %s from %s to %s</title></rect>\n",
				x0, y, x1-x0, rowH, stateColor(seg.state), s, seg.state, seg.from, seg.to)
		}
		p.ticks(&rows, r.dials, y)
		y += rowH + rowGap
	}
	if hidden > 0 {
		label(fmt.Sprintf("(%d more slots, %d dials)", hidden, hiddenDials))
		y += rowH + rowGap
	}
	// Dedicated rents and pub/sub episodes.
	for _, name := range p.sourceOrder {
		r := p.sources[name]
		label(name)
		for _, seg := range r.segs {
			x0, x1 := p.x(seg.from), p.x(seg.to)
			if x1-x0 < 0.5 {
				x1 = x0 + 0.5
			}
			fmt.Fprintf(&rows, "<rect class=\"source\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s %s from %s to %s</title></rect>\n",
				x0, y, x1-x0, rowH, sourceColor(seg.state), esc(name), seg.state, seg.from, seg.to)
		}
		for _, at := range r.exhausted {
			fmt.Fprintf(&rows, "<rect x=\"%.1f\" y=\"%d\" width=\"3\" height=\"%d\" fill=\"#8e0000\"><title>%s exhausted at %s</title></rect>\n",
				p.x(at), y, rowH, esc(name), at)
		}
		y += rowH + rowGap
	}
	// Other machines' dials.
	machines := make([]int, 0, len(p.machines))
	for m := range p.machines {
		machines = append(machines, int(m))
	}
	sort.Ints(machines)
	for _, m := range machines {
		d := p.machines[fsm.Machine(m)]
		label(fmt.Sprintf("%s (%d dials)", fsm.Machine(m), len(d)))
		p.ticks(&rows, d, y)
		y += rowH + rowGap
	}
	// Operation outcomes: one column per pixel, its height the share of each outcome.
	y = p.outcomes(&rows, y)
	// Violations as marks across the whole timeline.
	top := 20
	for i, x := range p.v.Unexpected {
		if i == 50 {
			break
		}
		xx := p.x(x.At)
		fmt.Fprintf(&rows, "<line class=\"violation-mark\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d50000\" stroke-width=\"2\" stroke-dasharray=\"4 2\"><title>%s at %s: %s</title></line>\n",
			xx, top, xx, y, esc(x.Checker), x.At, esc(x.Message))
		fmt.Fprintf(&rows, "<text x=\"%.1f\" y=\"%d\" fill=\"#d50000\" text-anchor=\"middle\">%d</text>\n", xx, top-6, i+1)
	}
	// Axis.
	axis := p.axis(y + 4)
	height := y + 30
	b.WriteString("<h2 id=\"timeline\">Timeline</h2>\n")
	b.WriteString(`<p class="legend"><span><i style="background:#9575cd;opacity:.55"></i>fault window</span><span><i style="background:#4caf50"></i>ready</span><span><i style="background:#ffd54f"></i>connecting, handshaking</span><span><i style="background:#ffb74d"></i>waiting a delay</span><span><i style="background:#e57373"></i>failed</span><span><i style="background:#8e0000"></i>exhausted</span><span><i style="background:#111;width:2px"></i>dial</span><span><i style="background:#d50000;width:3px"></i>violation (numbered as in the table)</span><span><i style="background:#fb8c00"></i>unknown, <i style="background:#c62828"></i>failed, <i style="background:#81c784"></i>ok operations</span></p>` + "\n")
	fmt.Fprintf(b, "<svg id=\"timeline-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, height, width, height)
	b.WriteString(rows.String())
	b.WriteString(axis)
	b.WriteString("</svg>\n")
}

// ticks draws a dial tick at each time.
func (p *page) ticks(b *strings.Builder, at []time.Duration, y int) {
	last := -1.0
	for _, t := range at {
		x := p.x(t)
		if x-last < 0.5 {
			continue // one tick per half pixel is all the eye can see
		}
		last = x
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#111\" stroke-width=\"1\"/>\n", x, y-2, x, y+rowH+2)
	}
}

// outcomes draws the operations row (by outcome, per pixel column, at their call) and the
// operations the violations name, and returns the next row's y.
func (p *page) outcomes(b *strings.Builder, y int) int {
	ops := p.res.Ops
	if len(ops) == 0 {
		return y
	}
	cols := width - labelW - rightPad
	type bin struct{ ok, failed, unknown int }
	bins := make([]bin, cols+1)
	for i := range ops {
		c := int(p.x(ops[i].Call)) - labelW
		c = max(0, min(c, cols))
		switch ops[i].Outcome {
		case record.OpOK:
			bins[c].ok++
		case record.OpFailed:
			bins[c].failed++
		default:
			bins[c].unknown++
		}
	}
	h := 2 * rowH
	fmt.Fprintf(b, "<text x=\"4\" y=\"%d\">operations (%d)</text>\n", y+12, len(ops))
	for c, bn := range bins {
		n := bn.ok + bn.failed + bn.unknown
		if n == 0 {
			continue
		}
		top := float64(y)
		for _, part := range []struct {
			n     int
			color string
		}{{bn.failed, "#c62828"}, {bn.unknown, "#fb8c00"}, {bn.ok, "#81c784"}} {
			if part.n == 0 {
				continue
			}
			hh := float64(h) * float64(part.n) / float64(n)
			fmt.Fprintf(b, "<rect x=\"%d\" y=\"%.1f\" width=\"1\" height=\"%.1f\" fill=\"%s\"/>\n", labelW+c, top, hh, part.color)
			top += hh
		}
	}
	y += h + rowGap
	if len(p.named) > 0 {
		fmt.Fprintf(b, "<text x=\"4\" y=\"%d\">named operations</text>\n", y+12)
		for i := range ops {
			op := &ops[i]
			if !p.named[op.ID] {
				continue
			}
			x0, x1 := p.x(op.Call), p.x(op.Return)
			fmt.Fprintf(b, "<rect class=\"named-op\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#d50000\"><title>op %d %s, caller %d, %s to %s, %s</title></rect>\n",
				x0, y, max(x1-x0, 3), rowH, op.ID, esc(op.Name), op.Caller, op.Call, op.Return, op.Outcome)
			lx, anchor := max(x1, x0+3)+3, "start"
			if lx > width-rightPad-60 {
				lx, anchor = x0-3, "end" // near the right edge: label on the left
			}
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" fill=\"#d50000\" text-anchor=\"%s\">op %d</text>\n", lx, y+12, anchor, op.ID)
		}
		y += rowH + rowGap
	}
	return y
}

// axis draws the virtual-time axis at y.
func (p *page) axis(y int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", labelW, y, width-rightPad, y)
	step := niceStep(p.res.End / 10)
	for t := time.Duration(0); t <= p.res.End; t += step {
		x := p.x(t)
		fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			x, y, x, y+4, x, y+16, t)
	}
	return b.String()
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten of a unit.
func niceStep(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	for base := time.Microsecond; ; base *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*base >= d {
				return m * base
			}
		}
	}
}

// opTable lists the operations the violations name.
func (p *page) opTable(b *strings.Builder) {
	if len(p.named) == 0 {
		return
	}
	b.WriteString("<h2 id=\"operations\">Operations named by the violations</h2>\n")
	b.WriteString("<table><tr><th>op</th><th>caller</th><th>command</th><th>keys</th><th>call</th><th>return</th><th>outcome</th><th>reply or error</th></tr>\n")
	shown := 0
	for i := range p.res.Ops {
		op := &p.res.Ops[i]
		if !p.named[op.ID] {
			continue
		}
		if shown++; shown > 200 {
			b.WriteString("<tr><td colspan=\"8\">(more operations not listed)</td></tr>\n")
			break
		}
		detail := op.ServerError
		if detail == "" {
			detail = op.Err
		}
		if detail == "" && op.Outcome == record.OpOK {
			var parts []string
			for _, d := range op.Reply {
				switch {
				case d.Null:
					parts = append(parts, "nil")
				case d.IsInt:
					parts = append(parts, strconv.FormatInt(d.Int, 10))
				default:
					parts = append(parts, strconv.Quote(d.Str))
				}
			}
			detail = strings.Join(parts, " ")
		}
		fmt.Fprintf(b, "<tr><td class=\"num\">%d</td><td class=\"num\">%d</td><td>%s</td><td><code>%s</code></td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td><code>%s</code></td></tr>\n",
			op.ID, op.Caller, esc(op.Name), esc(strings.Join(op.Keys, " ")), op.Call, op.Return, op.Outcome, esc(detail))
	}
	b.WriteString("</table>\n")
}

// linearizability embeds porcupine's view of each failing key (at most maxKeys), opened at its
// first error.
func (p *page) linearizability(b *strings.Builder) {
	failed := false
	for _, x := range p.v.Violations {
		if x.Checker == check.CheckLinearizable {
			failed = true
		}
	}
	if !failed {
		return
	}
	keys := check.IllegalKeys(p.res)
	b.WriteString("<h2 id=\"linearizability\">Linearizability</h2>\n")
	if len(keys) == 0 {
		b.WriteString("<p>No single key's history fails on its own (porcupine timed out?).</p>\n")
		return
	}
	fmt.Fprintf(b, "<p>Keys whose history is not linearizable: <code>%s</code>. Porcupine's view of each, alone, opened at its first error (red: the operation no order explains).</p>\n",
		esc(strings.Join(keys, ", ")))
	for i, k := range keys {
		if i == maxKeys {
			fmt.Fprintf(b, "<p>(%d more keys)</p>\n", len(keys)-maxKeys)
			break
		}
		var page strings.Builder
		if err := check.WriteLinearizabilityKey(p.res, k, &page); err != nil {
			fmt.Fprintf(b, "<p>key %s: %s</p>\n", esc(k), esc(err.Error()))
			continue
		}
		fmt.Fprintf(b, "<h3>key <code>%s</code></h3>\n<iframe title=\"history of key %s\" srcdoc=\"%s\"></iframe>\n", esc(k), esc(k), esc(page.String()))
	}
}
