// Command perftable turns the outputs of one benchmark run (bench/run.sh) into the performance
// table: client throughput, latency and allocations per workload and client with their ratios to
// respire and to redis-benchmark's pipelined ceiling, the simulator's figures, the state
// machines' step costs, and every target of the performance issue with MET or NOT MET.
//
// Each figure is the median over the run's rounds. Inputs are the text outputs of `go test
// -bench` (several rounds appended to one file) and redis-benchmark's --csv output.
//
//	perftable -clients clients.txt -cluster cluster.txt -ceiling ceiling.csv -sim sim.txt -fsm fsm.txt -machine machine.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// samples maps a benchmark name (without its -GOMAXPROCS suffix) and a unit to every value seen.
type samples map[string]map[string][]float64

func (s samples) add(name, unit string, v float64) {
	if s[name] == nil {
		s[name] = map[string][]float64{}
	}
	s[name][unit] = append(s[name][unit], v)
}

// median returns the median of name's values in unit, and false when there are none.
func (s samples) median(name, unit string) (float64, bool) {
	vs := s[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2], true
	}
	return (vs[n/2-1] + vs[n/2]) / 2, true
}

// rounds returns how many values name has in unit.
func (s samples) rounds(name, unit string) int { return len(s[name][unit]) }

// parseBench reads `go test -bench` output. It returns the samples and the names in the order
// they first appear.
func parseBench(path string) (samples, []string, error) {
	s := samples{}
	var order []string
	if path == "" {
		return s, nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := strings.TrimPrefix(fields[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if _, seen := s[name]; !seen {
			order = append(order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			s.add(name, fields[i+1], v)
		}
	}
	return s, order, sc.Err()
}

// parseCeiling reads redis-benchmark --csv outputs appended together: a header line, then one
// line per test ("SET","503778.34",...). It returns the requests per second of each test.
func parseCeiling(path string) (map[string][]float64, error) {
	out := map[string][]float64{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Split(line, ",")
		if len(fields) < 2 {
			continue
		}
		test := strings.Trim(fields[0], `"`)
		rps, err := strconv.ParseFloat(strings.Trim(fields[1], `"`), 64)
		if err != nil {
			continue
		}
		out[test] = append(out[test], rps)
	}
	return out, nil
}

func medianOf(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	n := len(vs)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// target is one row of the targets table.
type target struct {
	what, measured, goal string
	met                  bool
	known                bool
}

func verdict(t target) string {
	switch {
	case !t.known:
		return "NOT MEASURED"
	case t.met:
		return "MET"
	}
	return "NOT MET"
}

// human formats a number with thousands separators and the given decimals.
func human(v float64, decimals int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

var clientNames = []struct{ key, label string }{
	{"respire", "respire"}, {"rueidis", "rueidis"}, {"goredis", "go-redis"},
}

func main() {
	clientsPath := flag.String("clients", "", "client benchmark output")
	clusterPath := flag.String("cluster", "", "Cluster client benchmark output")
	ceilingPath := flag.String("ceiling", "", "redis-benchmark --csv output")
	simPath := flag.String("sim", "", "simulator benchmark output")
	fsmPath := flag.String("fsm", "", "state machine benchmark output")
	machinePath := flag.String("machine", "", "machine description (markdown lines)")
	flag.Parse()

	clients, clientOrder, err := parseBench(*clientsPath)
	check(err)
	cluster, clusterOrder, err := parseBench(*clusterPath)
	check(err)
	ceiling, err := parseCeiling(*ceilingPath)
	check(err)
	sim, simOrder, err := parseBench(*simPath)
	check(err)
	fsm, fsmOrder, err := parseBench(*fsmPath)
	check(err)
	w := os.Stdout
	var targets []target

	if *machinePath != "" {
		data, err := os.ReadFile(*machinePath)
		check(err)
		fmt.Fprintln(w, "### Machine")
		fmt.Fprintln(w)
		w.Write(data)
		fmt.Fprintln(w)
	}

	// Ceiling.
	ceil := map[string]float64{}
	if len(ceiling) > 0 {
		fmt.Fprintln(w, "### Ceiling: redis-benchmark -P 16 -c 64 on the same server")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| test | requests/s (median) | rounds |")
		fmt.Fprintln(w, "|---|--:|--:|")
		for _, test := range []string{"GET", "SET"} {
			if vs := ceiling[test]; len(vs) > 0 {
				ceil[test] = medianOf(vs)
				fmt.Fprintf(w, "| %s | %s | %d |\n", test, human(ceil[test], 0), len(vs))
			}
		}
		fmt.Fprintln(w)
	}

	// Clients.
	if len(clientOrder) > 0 {
		fmt.Fprintln(w, "### Clients (median of the rounds; each round runs the three clients side by side)")
		fmt.Fprintln(w)
		fmt.Fprint(w, "| workload | callers |")
		for _, c := range clientNames {
			fmt.Fprintf(w, " %s ops/s | ns/op | allocs/op |", c.label)
		}
		fmt.Fprintln(w, " rueidis ÷ respire | go-redis ÷ respire | respire % of ceiling |")
		fmt.Fprint(w, "|---|--:|")
		for range clientNames {
			fmt.Fprint(w, "--:|--:|--:|")
		}
		fmt.Fprintln(w, "--:|--:|--:|")
		seen := map[string]bool{}
		for _, name := range clientOrder {
			// Clients/GET/callers=64/client=respire
			parts := strings.Split(name, "/")
			if len(parts) != 4 || parts[0] != "Clients" {
				continue
			}
			group := strings.Join(parts[:3], "/")
			if seen[group] {
				continue
			}
			seen[group] = true
			op, callers := parts[1], strings.TrimPrefix(parts[2], "callers=")
			get := func(client, unit string) float64 {
				v, ok := clients.median(group+"/client="+client, unit)
				if !ok {
					return math.NaN()
				}
				return v
			}
			fmt.Fprintf(w, "| %s | %s |", op, callers)
			for _, c := range clientNames {
				fmt.Fprintf(w, " %s | %s | %s |", human(get(c.key, "ops/s"), 0), human(get(c.key, "ns/op"), 0),
					human(get(c.key, "allocs/op"), 0))
			}
			base := get("respire", "ops/s")
			pct := "n/a"
			if c, ok := ceil[op]; ok {
				pct = human(100*base/c, 1) + "%"
			}
			fmt.Fprintf(w, " %s× | %s× | %s |\n", human(get("rueidis", "ops/s")/base, 2),
				human(get("goredis", "ops/s")/base, 2), pct)

			respire, rueidis := get("respire", "ops/s"), get("rueidis", "ops/s")
			known := !math.IsNaN(respire) && !math.IsNaN(rueidis)
			if (op == "GET" || op == "SET") && (callers == "64" || callers == "256") {
				ratio := respire / rueidis
				targets = append(targets, target{
					what:     fmt.Sprintf("%s at %s callers: respire ÷ rueidis throughput", op, callers),
					measured: human(ratio, 2) + "×", goal: "≥ 1.10×", met: ratio >= 1.1, known: known,
				})
				if c, ok := ceil[op]; ok {
					share := respire / c
					targets = append(targets, target{
						what:     fmt.Sprintf("%s at %s callers: respire share of the pipelined ceiling", op, callers),
						measured: human(100*share, 1) + "%", goal: "≥ 20%", met: share >= 0.2, known: known,
					})
				}
			}
			if (op == "GET" || op == "SET") && callers == "1" {
				ratio := get("respire", "ns/op") / get("rueidis", "ns/op")
				targets = append(targets, target{
					what:     fmt.Sprintf("%s at 1 caller: respire ÷ rueidis latency", op),
					measured: human(ratio, 2) + "×", goal: "≤ 1.05×", met: ratio <= 1.05, known: known,
				})
			}
			// Issue 14: batches against the better peer (rueidis DoMulti, go-redis Pipelined),
			// and the sorted-set and hash commands at 64 callers.
			peerGoal := map[string]float64{"BATCHGET100": 1.2, "BATCHSET100": 1.2}
			if callers == "64" {
				for _, o := range []string{"ZADD", "ZRANGE", "HSET", "HGETALL"} {
					peerGoal[o] = 1.1
				}
			}
			if goal, ok := peerGoal[op]; ok {
				better, name := get("rueidis", "ops/s"), "rueidis"
				if g := get("goredis", "ops/s"); !math.IsNaN(g) && (math.IsNaN(better) || g > better) {
					better, name = g, "go-redis"
				}
				ratio := respire / better
				targets = append(targets, target{
					what: fmt.Sprintf("%s at %s caller(s): respire ÷ the better peer (%s) throughput, respire %s allocs/op",
						op, callers, name, human(get("respire", "allocs/op"), 0)),
					measured: human(ratio, 2) + "×", goal: "≥ " + human(goal, 2) + "×", met: ratio >= goal,
					known: !math.IsNaN(ratio),
				})
			}
			if op == "GET" || op == "SET" {
				allocs := get("respire", "allocs/op")
				limit := 1.0
				if op == "SET" {
					limit = 0
				}
				targets = append(targets, target{
					what:     fmt.Sprintf("%s, %s caller(s): respire allocations per command", op, callers),
					measured: human(allocs, 0), goal: "≤ " + human(limit, 0), met: allocs <= limit,
					known: !math.IsNaN(allocs),
				})
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Rounds: %d. Ratios are throughput ratios (ops/s of the client ÷ ops/s of respire).\n\n",
			clients.rounds(clientOrder[0], "ns/op"))
	}

	// Cluster clients.
	if len(clusterOrder) > 0 {
		targets = append(targets, clusterTable(w, cluster, clusterOrder, clients)...)
	}

	// Simulator.
	if len(simOrder) > 0 {
		fmt.Fprintln(w, "### Simulator (median of the rounds)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| benchmark | virtual s per wall s | virtual s per CPU s | events/s | events/run | seeds/min | target | verdict |")
		fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|---|---|")
		goals := map[string]float64{"RunWorkload": 2000, "RunRecovery": 50000, "RunIncident19h": 50000}
		for _, name := range simOrder {
			get := func(unit string) float64 {
				v, ok := sim.median(name, unit)
				if !ok {
					return math.NaN()
				}
				return v
			}
			vps, seeds := get("virtual-s/s"), get("seeds/min")
			goal, verdictText := "", ""
			if g, ok := goals[name]; ok {
				t := target{what: "simulator " + name + ": virtual seconds per wall second",
					measured: human(vps, 0) + "×", goal: "≥ " + human(g, 0) + "×", met: vps >= g, known: !math.IsNaN(vps)}
				targets = append(targets, t)
				goal, verdictText = t.goal, verdict(t)
			}
			if name == "ScenarioSetWithChecking" {
				t := target{what: "simulator: seeds per minute, scenario set with checking, all cores",
					measured: human(seeds, 0), goal: "≥ 2,000", met: seeds >= 2000, known: !math.IsNaN(seeds)}
				targets = append(targets, t)
				goal, verdictText = t.goal, verdict(t)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, human(vps, 0), human(get("virtual-s/cpu-s"), 0),
				human(get("events/s"), 0), human(get("events/run"), 0), human(seeds, 0), goal, verdictText)
		}
		fmt.Fprintln(w)
	}

	// State machines.
	if len(fsmOrder) > 0 {
		fmt.Fprintln(w, "### State machines (median of the rounds)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Per-kind benchmarks (ns/step, allocs/step) time one step of one kind on a warm machine; the")
		fmt.Fprintln(w, "others report ns/op and allocs/op as their doc comments define an op.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| benchmark | ns | allocs | unit | target | verdict |")
		fmt.Fprintln(w, "|---|--:|--:|---|---|---|")
		worst, worstName, worstAllocs := 0.0, "", 0.0
		for _, name := range fsmOrder {
			nsUnit, allocUnit := "ns/op", "allocs/op"
			if _, ok := fsm.median(name, "ns/step"); ok {
				nsUnit, allocUnit = "ns/step", "allocs/step"
			}
			ns, _ := fsm.median(name, nsUnit)
			allocs, ok := fsm.median(name, allocUnit)
			if !ok {
				allocs = math.NaN()
			}
			goal, v := "", ""
			if nsUnit == "ns/step" {
				t := target{met: ns <= 300 && allocs < 0.5, known: true}
				goal, v = "≤ 300 ns, 0 allocs", verdict(t)
				if ns > worst {
					worst, worstName = ns, name
				}
				worstAllocs = max(worstAllocs, allocs)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, human(ns, 1), human(allocs, 2), nsUnit, goal, v)
		}
		if worstName != "" {
			targets = append(targets, target{what: "fsm: every kind of step (slowest: " + worstName + ")",
				measured: human(worst, 0) + " ns, " + human(worstAllocs, 2) + " allocs", goal: "≤ 300 ns, 0 allocs",
				met: worst <= 300 && worstAllocs < 0.5, known: true})
		}
		fmt.Fprintln(w)
	}

	// Targets.
	if len(targets) > 0 {
		fmt.Fprintln(w, "### Targets")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| target | measured | goal | verdict |")
		fmt.Fprintln(w, "|---|--:|---|---|")
		met := 0
		for _, t := range targets {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.what, t.measured, t.goal, verdict(t))
			if t.met && t.known {
				met++
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%d of %d targets met.\n", met, len(targets))
	}
}

// clusterTable prints the Cluster clients' figures: each client's throughput on three shards,
// respire's ratio to the better of its peers, and respire's scaling against its own single-node
// figure for the same workload and callers (from the standalone benchmark of the same run). It
// returns the targets: respire at least 1.10 times the better peer's throughput, and at one
// caller at most 1.05 times its latency.
func clusterTable(w *os.File, cluster samples, order []string, single samples) []target {
	var targets []target
	fmt.Fprintln(w, "### Cluster clients: three primaries on the same machine (median of the rounds)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | callers | respire ops/s | allocs/op | rueidis ops/s | go-redis ops/s | respire ÷ better peer | respire Cluster ÷ respire single node |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
	seen := map[string]bool{}
	for _, name := range order {
		// ClusterClients/GET/callers=64/client=respire
		parts := strings.Split(name, "/")
		if len(parts) != 4 || parts[0] != "ClusterClients" {
			continue
		}
		group := strings.Join(parts[:3], "/")
		if seen[group] {
			continue
		}
		seen[group] = true
		op, callers := parts[1], strings.TrimPrefix(parts[2], "callers=")
		get := func(s samples, name, unit string) float64 {
			v, ok := s.median(name, unit)
			if !ok {
				return math.NaN()
			}
			return v
		}
		respire := get(cluster, group+"/client=respire", "ops/s")
		rueidis := get(cluster, group+"/client=rueidis", "ops/s")
		goredis := get(cluster, group+"/client=goredis", "ops/s")
		better := math.Max(rueidis, goredis)
		alone := get(single, "Clients/"+op+"/callers="+callers+"/client=respire", "ops/s")
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s× | %s× |\n", op, callers, human(respire, 0),
			human(get(cluster, group+"/client=respire", "allocs/op"), 0), human(rueidis, 0), human(goredis, 0),
			human(respire/better, 2), human(respire/alone, 2))
		ratio := respire / better
		known := !math.IsNaN(respire) && !math.IsNaN(better)
		if callers == "1" {
			// One caller: latency, with the goal of the single node's one-caller rows.
			targets = append(targets, target{
				what:     fmt.Sprintf("Cluster %s at 1 caller: respire ÷ the better peer's latency", op),
				measured: human(1/ratio, 2) + "×", goal: "≤ 1.05×", met: 1/ratio <= 1.05, known: known,
			})
			continue
		}
		targets = append(targets, target{
			what:     fmt.Sprintf("Cluster %s at %s callers: respire ÷ the better peer's throughput", op, callers),
			measured: human(ratio, 2) + "×", goal: "≥ 1.10×", met: ratio >= 1.1, known: known,
		})
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "On two cores the three servers, the client and the benchmark's callers share the CPU: the")
	fmt.Fprintln(w, "Cluster figure is bounded by the machine, not by the shards, and is compared with the single")
	fmt.Fprintln(w, "node's figure from the same run.")
	fmt.Fprintln(w)
	return targets
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "perftable:", err)
		os.Exit(1)
	}
}
