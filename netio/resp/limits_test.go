package resp

import "testing"

func TestLimitsResolve(t *testing.T) {
	def := limits{
		bulk: DefaultMaxBulkLen, line: DefaultMaxLineLen, elems: DefaultMaxElements,
		values: DefaultMaxValues, depth: DefaultMaxDepth, reply: DefaultMaxReplyLen,
	}
	var nilLimits *Limits
	if got := nilLimits.resolve(); got != def {
		t.Errorf("nil Limits resolve to %+v", got)
	}
	if got := (&Limits{}).resolve(); got != def {
		t.Errorf("zero Limits resolve to %+v", got)
	}
	neg := Limits{MaxBulkLen: -1, MaxLineLen: -1, MaxElements: -1, MaxValues: -1, MaxDepth: -1, MaxReplyLen: -1}
	if got := neg.resolve(); got != def {
		t.Errorf("negative Limits resolve to %+v", got)
	}
	custom := Limits{MaxBulkLen: 1, MaxLineLen: 2, MaxElements: 3, MaxValues: 4, MaxDepth: 5, MaxReplyLen: 6}
	if got := custom.resolve(); got != (limits{bulk: 1, line: 2, elems: 3, values: 4, depth: 5, reply: 6}) {
		t.Errorf("custom Limits resolve to %+v", got)
	}
	huge := int(^uint(0) >> 1)
	big := Limits{MaxBulkLen: huge, MaxLineLen: huge, MaxElements: huge, MaxValues: huge, MaxDepth: huge, MaxReplyLen: huge}
	got := big.resolve()
	if got.bulk != hardCap || got.line != hardCap || got.reply != MaxReplyLenCeiling || got.depth != MaxDepthCeiling {
		t.Errorf("huge Limits resolve to %+v", got)
	}
	// Arithmetic on clamped limits does not overflow: a maximal line limit
	// still reports an incomplete line rather than misbehaving.
	var v Value
	if _, err := Parse([]byte("+abc"), &v, &big); err != ErrIncomplete {
		t.Errorf("with maximal limits: %v", err)
	}
	if _, err := Parse([]byte("$9223372036854775807\r\n"), &v, &big); err == nil || err == ErrIncomplete {
		t.Errorf("length beyond the clamped limit accepted: %v", err)
	}
}
