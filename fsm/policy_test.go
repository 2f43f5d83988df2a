package fsm

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestPolicyValidate(t *testing.T) {
	cases := []struct {
		name  string
		p     Policy
		field string
	}{
		{"zero value", Policy{}, ""},
		{"spec example", Policy{InitialDelay: 250 * time.Millisecond, BackoffMultiplier: 2, MaxDelay: 5 * time.Second, JitterRatio: 0.2, MaxAttempts: 10}, ""},
		{"max one day", Policy{MaxDelay: 24 * time.Hour}, ""},
		{"max above one day", Policy{MaxDelay: 24*time.Hour + 1}, "MaxDelay"},
		{"max below initial", Policy{InitialDelay: time.Second, MaxDelay: time.Millisecond}, "MaxDelay"},
		{"max equal initial", Policy{InitialDelay: time.Second, MaxDelay: time.Second}, ""},
		{"negative initial", Policy{InitialDelay: -1}, "InitialDelay"},
		{"negative max", Policy{MaxDelay: -1}, "MaxDelay"},
		{"initial above one day", Policy{InitialDelay: 25 * time.Hour}, "InitialDelay"},
		{"multiplier below one", Policy{BackoffMultiplier: 0.5}, "BackoffMultiplier"},
		{"multiplier negative", Policy{BackoffMultiplier: -2}, "BackoffMultiplier"},
		{"multiplier one", Policy{BackoffMultiplier: 1}, ""},
		{"multiplier NaN", Policy{BackoffMultiplier: math.NaN()}, "BackoffMultiplier"},
		{"multiplier Inf", Policy{BackoffMultiplier: math.Inf(1)}, "BackoffMultiplier"},
		{"jitter one", Policy{JitterRatio: 1}, ""},
		{"jitter above one", Policy{JitterRatio: 1.01}, "JitterRatio"},
		{"jitter negative", Policy{JitterRatio: -0.1}, "JitterRatio"},
		{"jitter NaN", Policy{JitterRatio: math.NaN()}, "JitterRatio"},
		{"jitter Inf", Policy{JitterRatio: math.Inf(-1)}, "JitterRatio"},
		{"attempts negative", Policy{MaxAttempts: -1}, "MaxAttempts"},
		{"attempts one", Policy{MaxAttempts: 1}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Field != c.field {
				t.Fatalf("want PolicyError on %s, got %v", c.field, err)
			}
		})
	}
	var nilPolicy *Policy
	if err := nilPolicy.Validate(); err != nil {
		t.Fatalf("nil policy must be valid: %v", err)
	}
}

func TestPolicyDelayExamples(t *testing.T) {
	p := &Policy{InitialDelay: 250 * time.Millisecond, BackoffMultiplier: 2, MaxDelay: 5 * time.Second}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := p.Delay(i+1, 0.5); got != w {
			t.Errorf("attempt %d: got %v want %v", i+1, got, w)
		}
	}
	if got := (&Policy{BackoffMultiplier: 3, JitterRatio: 1}).Delay(9, 0.9); got != 0 {
		t.Errorf("zero initial delay must stay zero, got %v", got)
	}
	huge := &Policy{InitialDelay: time.Second, BackoffMultiplier: 10, MaxDelay: time.Hour, JitterRatio: 0.5}
	if got := huge.Delay(math.MaxInt, 0.999999); got != time.Hour {
		t.Errorf("huge attempt must cap at MaxDelay, got %v", got)
	}
	if got := huge.Delay(math.MaxInt, 0); got != 30*time.Minute {
		t.Errorf("huge attempt with lowest draw: got %v want 30m", got)
	}
	if got := (&Policy{InitialDelay: time.Minute}).Delay(1000, 0); got != DelayCeiling {
		t.Errorf("unset MaxDelay caps at one day, got %v", got)
	}
}

// TestPolicyDelayFaultyDraw is the regression test of a NaN draw: Delay used to scale the base
// by NaN and convert it to -2562047h. Every draw outside [0, 1) is clamped into it first.
func TestPolicyDelayFaultyDraw(t *testing.T) {
	p := &Policy{InitialDelay: time.Second, MaxDelay: time.Minute, JitterRatio: 0.5}
	cases := []struct {
		draw float64
		want time.Duration
	}{
		{math.NaN(), 500 * time.Millisecond},
		{math.Inf(-1), 500 * time.Millisecond},
		{-1, 500 * time.Millisecond},
		{math.Copysign(0, -1), 500 * time.Millisecond},
		{1, time.Duration(float64(time.Second) * (0.5 + lastDraw))},
		{math.Inf(1), time.Duration(float64(time.Second) * (0.5 + lastDraw))},
		{math.MaxFloat64, time.Duration(float64(time.Second) * (0.5 + lastDraw))},
	}
	for _, c := range cases {
		if got := p.Delay(1, c.draw); got != c.want {
			t.Errorf("Delay(1, %v) = %v, want %v", c.draw, got, c.want)
		}
	}
	if lastDraw != math.Nextafter(1, 0) {
		t.Fatalf("lastDraw %v is not the largest float64 below 1", lastDraw)
	}
}

// TestPolicyDelayNeverNegative: for any valid policy, attempt and draw (NaN and infinities
// included), the delay lies within [0, Cap] and within the jitter band of the clamped draw.
func TestPolicyDelayNeverNegative(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t)
		n := rapid.IntRange(-3, 200).Draw(t, "n")
		draw := rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{math.NaN(), math.Inf(1),
			math.Inf(-1), math.Copysign(0, -1), 1, -1e-300, math.MaxFloat64, -math.MaxFloat64})).Draw(t, "draw")
		d := p.Delay(n, draw)
		if d < 0 || d > p.Cap() {
			t.Fatalf("%v attempt %d draw %v: delay %v outside [0, %v]", p, n, draw, d, p.Cap())
		}
		if c := clampDraw(draw); !(c >= 0 && c < 1) || (draw >= 0 && draw < 1 && c != draw) {
			t.Fatalf("clampDraw(%v) = %v", draw, c)
		}
		if want := p.Delay(n, clampDraw(draw)); d != want {
			t.Fatalf("draw %v gave %v, its clamped draw %v", draw, d, want)
		}
	})
}

func TestNoPolicyWait(t *testing.T) {
	ms := time.Millisecond
	want := []time.Duration{0, 250 * ms, 500 * ms, time.Second, 2 * time.Second, 4 * time.Second,
		5 * time.Second, 5 * time.Second}
	for n, w := range want {
		if got := NoPolicyWait(n); got != w {
			t.Errorf("after %d failures: got %v want %v", n, got, w)
		}
	}
	for _, n := range []int{-1, math.MinInt} {
		if got := NoPolicyWait(n); got != 0 {
			t.Errorf("NoPolicyWait(%d) = %v, want 0", n, got)
		}
	}
	for _, n := range []int{7, 64, 1 << 20, math.MaxInt} {
		if got := NoPolicyWait(n); got != NoPolicyMaxWait {
			t.Errorf("NoPolicyWait(%d) = %v, want the cap", n, got)
		}
	}
}

// validPolicy draws policies from the valid region, including edges.
func validPolicy(t *rapid.T) *Policy {
	initial := time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(t, "initial"))
	p := &Policy{
		InitialDelay:      initial,
		BackoffMultiplier: rapid.SampledFrom([]float64{0, 1, 1.5, 2, 10, 1e9}).Draw(t, "multiplier"),
		JitterRatio:       rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(t, "jitter"),
		MaxAttempts:       rapid.IntRange(0, 5).Draw(t, "attempts"),
	}
	if rapid.Bool().Draw(t, "capped") {
		p.MaxDelay = time.Duration(rapid.Int64Range(int64(initial), int64(DelayCeiling)).Draw(t, "max"))
	}
	return p
}

// oracleBand computes, with exact big-float arithmetic, the interval the n-th delay must lie in.
func oracleBand(p *Policy, n int) (lo, hi time.Duration) {
	limit := p.MaxDelay
	if limit == 0 {
		limit = DelayCeiling
	}
	mult := p.BackoffMultiplier
	if mult == 0 {
		mult = 2
	}
	base := new(big.Float).SetInt64(int64(p.InitialDelay))
	m := new(big.Float).SetFloat64(mult)
	capF := new(big.Float).SetInt64(int64(limit))
	for i := 1; i < n && base.Cmp(capF) < 0; i++ {
		base.Mul(base, m)
	}
	if base.Cmp(capF) > 0 {
		base = capF
	}
	b, _ := base.Float64()
	l := b * (1 - p.JitterRatio)
	h := b * (1 + p.JitterRatio)
	if h > float64(limit) {
		h = float64(limit)
	}
	if l > float64(limit) {
		l = float64(limit)
	}
	// Allow one nanosecond per bound for float rounding.
	return time.Duration(l) - 1, time.Duration(h) + 1
}

func TestPolicyDelayProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t)
		if err := p.Validate(); err != nil {
			t.Fatalf("generator produced invalid policy %v: %v", p, err)
		}
		n := rapid.IntRange(1, 80).Draw(t, "n")
		draw := rapid.Float64Range(0, 1).Draw(t, "draw")
		if draw >= 1 {
			draw = math.Nextafter(1, 0)
		}
		d := p.Delay(n, draw)
		lo, hi := oracleBand(p, n)
		if d < lo || d > hi {
			t.Fatalf("%v attempt %d draw %v: delay %v outside [%v, %v]", p, n, draw, d, lo, hi)
		}
		if d > p.Cap() {
			t.Fatalf("delay %v above cap %v", d, p.Cap())
		}
		if p.InitialDelay == 0 && d != 0 {
			t.Fatalf("zero initial delay gave %v", d)
		}
		// Bases never decrease with the attempt number, and the delay grows with the draw.
		if p.Base(n+1) < p.Base(n) {
			t.Fatalf("base decreased from attempt %d to %d", n, n+1)
		}
		if draw < 0.5 && p.Delay(n, draw) > p.Delay(n, 0.5) {
			t.Fatalf("delay not monotone in draw")
		}
	})
}

func TestPolicyValidateProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := &Policy{
			InitialDelay:      time.Duration(rapid.Int64Range(-10, int64(30*time.Hour)).Draw(t, "initial")),
			MaxDelay:          time.Duration(rapid.Int64Range(-10, int64(30*time.Hour)).Draw(t, "max")),
			BackoffMultiplier: rapid.Float64Range(-5, 5).Draw(t, "multiplier"),
			JitterRatio:       rapid.Float64Range(-1, 2).Draw(t, "jitter"),
			MaxAttempts:       rapid.IntRange(-3, 3).Draw(t, "attempts"),
		}
		valid := p.InitialDelay >= 0 && p.MaxDelay >= 0 && p.MaxDelay <= DelayCeiling &&
			p.InitialDelay <= DelayCeiling && (p.MaxDelay == 0 || p.MaxDelay >= p.InitialDelay) &&
			(p.BackoffMultiplier == 0 || p.BackoffMultiplier >= 1) &&
			p.JitterRatio >= 0 && p.JitterRatio <= 1 && p.MaxAttempts >= 0
		if got := p.Validate() == nil; got != valid {
			t.Fatalf("%+v: Validate accepted=%v, oracle=%v", *p, got, valid)
		}
	})
}

func TestAppendQuoteMatchesStrconv(t *testing.T) {
	cases := []string{"", "refused", "a b c", `say "hi"`, `back\slash`, "tab\there", "new\nline",
		"ünïcode", "\x7f", "~!@#$%^&*()_+{}|:<>?", string([]byte{0xff, 'a'})}
	for c := 0; c < 128; c++ {
		cases = append(cases, string(rune(c))+"x")
	}
	for _, s := range cases {
		if got, want := string(appendQuote(nil, s)), strconv.Quote(s); got != want {
			t.Fatalf("appendQuote(%q) = %s, want %s", s, got, want)
		}
	}
}
