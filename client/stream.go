package client

import (
	"time"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/netio/resp"
)

// streamsShape accepts XREAD's replies: a RESP3 map, a RESP2 array, or null when nothing came.
var streamsShape = engine.ShapeOf(resp.KindMap, resp.KindArray, resp.KindNull)

// XEntry is one stream entry: its id and its field/value pairs, in order (field, value, ...).
type XEntry struct {
	ID     string
	Fields []string
}

// Values returns the entry's fields as a map (a field given twice keeps its last value).
func (x XEntry) Values() map[string]string {
	m := make(map[string]string, len(x.Fields)/2)
	for i := 0; i+1 < len(x.Fields); i += 2 {
		m[x.Fields[i]] = x.Fields[i+1]
	}
	return m
}

// XStream is the entries read from one stream.
type XStream struct {
	Key     string
	Entries []XEntry
}

// XStreamOffset is one stream of an XREAD and the id to read after.
type XStreamOffset struct {
	Key, ID string
}

// XReadArgs are the arguments of XRead and XReadBlock.
type XReadArgs struct {
	// Streams are the streams to read and, for each, the id to read after ("$": only entries
	// added from now on; "0": from the beginning).
	Streams []XStreamOffset
	// Count bounds the entries returned per stream; zero means no COUNT.
	Count int64
	// Block is how long XReadBlock waits for an entry (millisecond precision); zero waits
	// indefinitely, bounded only by the context. XRead needs it zero.
	Block time.Duration
}

func (a XReadArgs) writeArgs(e *enc) { a.write(e, false) }

func (a XReadArgs) write(e *enc, block bool) {
	if len(a.Streams) == 0 {
		e.fail("XReadArgs.Streams", "XREAD needs at least one stream")
	}
	if a.Block < 0 || a.Count < 0 {
		e.fail("XReadArgs", "Block and Count must not be negative")
	}
	if a.Count > 0 {
		e.str("COUNT")
		e.int(a.Count)
	}
	blockArg(e, block, a.Block, "XReadArgs.Block")
	writeStreams(e, a.Streams)
}

// blockArg writes BLOCK for the blocking forms, and refuses a block time on the others.
func blockArg(e *enc, block bool, d time.Duration, option string) {
	if !block {
		if d != 0 {
			e.fail(option, "set: use the blocking form (XReadBlock, XReadGroupBlock), which runs on a dedicated connection")
		}
		return
	}
	e.str("BLOCK")
	e.int(d.Milliseconds())
	e.block = true
}

func writeStreams(e *enc, streams []XStreamOffset) {
	e.str("STREAMS")
	for _, s := range streams {
		e.str(s.Key)
	}
	for _, s := range streams {
		e.str(s.ID)
	}
}

// XReadGroupArgs are the arguments of XReadGroup and XReadGroupBlock.
type XReadGroupArgs struct {
	// Group and Consumer name the reader.
	Group, Consumer string
	// Streams are the streams to read and, for each, the id to read after (">": messages
	// never delivered to this group; another id: this consumer's pending messages after it).
	Streams []XStreamOffset
	// Count bounds the entries returned per stream; zero means no COUNT.
	Count int64
	// NoAck delivers without adding the messages to the pending list.
	NoAck bool
	// Block is how long XReadGroupBlock waits (millisecond precision; zero waits
	// indefinitely). XReadGroup needs it zero.
	Block time.Duration
}

func (a XReadGroupArgs) writeArgs(e *enc) { a.write(e, false) }

func (a XReadGroupArgs) write(e *enc, block bool) {
	if a.Group == "" || a.Consumer == "" || len(a.Streams) == 0 {
		e.fail("XReadGroupArgs", "XREADGROUP needs a group, a consumer and at least one stream")
	}
	if a.Block < 0 || a.Count < 0 {
		e.fail("XReadGroupArgs", "Block and Count must not be negative")
	}
	e.str("GROUP")
	e.str(a.Group)
	e.str(a.Consumer)
	if a.Count > 0 {
		e.str("COUNT")
		e.int(a.Count)
	}
	blockArg(e, block, a.Block, "XReadGroupArgs.Block")
	if a.NoAck {
		e.str("NOACK")
	}
	writeStreams(e, a.Streams)
}

// XTrimOptions says how to trim a stream: to MaxLen entries, or to the entries from MinID on
// (exactly one of them).
type XTrimOptions struct {
	// MaxLen keeps the newest MaxLen entries (MAXLEN).
	MaxLen int64
	// MinID keeps the entries with ids from MinID on (MINID).
	MinID string
	// Approx lets Redis trim less, in whole nodes, which is much cheaper (~).
	Approx bool
	// Limit bounds the entries evicted by an approximate trim (LIMIT); zero: Redis's default.
	Limit int64
}

func (t XTrimOptions) any() bool { return t.MaxLen != 0 || t.MinID != "" }

func (t XTrimOptions) writeArgs(e *enc) {
	switch {
	case t.MaxLen != 0 && t.MinID != "", t.MaxLen < 0, !t.any():
		e.fail("XTrimOptions", "set exactly one of MaxLen (positive) and MinID")
		return
	case t.MinID != "":
		e.str("MINID")
	default:
		e.str("MAXLEN")
	}
	if t.Approx {
		e.str("~")
	}
	if t.MinID != "" {
		e.str(t.MinID)
	} else {
		e.int(t.MaxLen)
	}
	if t.Limit != 0 {
		if !t.Approx {
			e.fail("XTrimOptions.Limit", "needs Approx")
		}
		e.str("LIMIT")
		e.int(t.Limit)
	}
}

// XAddOptions are the options of XAdd.
type XAddOptions struct {
	// ID is the new entry's id; empty lets Redis choose one ("*").
	ID string
	// NoMkStream does not create the stream when it does not exist (XAdd then returns "").
	NoMkStream bool
	// Trim, when MaxLen or MinID is set, trims the stream as XTrim does.
	Trim XTrimOptions
}

func (o XAddOptions) writeArgs(e *enc) {
	if o.NoMkStream {
		e.str("NOMKSTREAM")
	}
	if o.Trim.any() || o.Trim.Approx || o.Trim.Limit != 0 {
		o.Trim.writeArgs(e)
	}
	if o.ID == "" {
		e.str("*")
	} else {
		e.str(o.ID)
	}
}

// XClaimOptions are the options of XClaim.
type XClaimOptions struct {
	// Idle sets the messages' idle time (IDLE); zero leaves it reset to now.
	Idle time.Duration
	// Time sets the messages' last delivery time (TIME) instead of Idle.
	Time time.Time
	// RetryCount sets the delivery counter (RETRYCOUNT); zero increments it as usual.
	RetryCount int64
	// Force claims ids that are not pending yet (FORCE).
	Force bool
	// LastID advances the group's last delivered id (LASTID).
	LastID string
}

func (o XClaimOptions) writeArgs(e *enc) {
	if o.Idle != 0 && !o.Time.IsZero() {
		e.fail("XClaimOptions", "Idle and Time exclude each other")
	}
	if o.Idle != 0 {
		e.str("IDLE")
		e.millis(o.Idle)
	}
	if !o.Time.IsZero() {
		e.str("TIME")
		e.unixMillis(o.Time)
	}
	if o.RetryCount != 0 {
		e.str("RETRYCOUNT")
		e.int(o.RetryCount)
	}
	if o.Force {
		e.str("FORCE")
	}
	if o.LastID != "" {
		e.str("LASTID")
		e.str(o.LastID)
	}
}

// XPendingOptions select the pending messages XPendingExt lists.
type XPendingOptions struct {
	// Idle keeps messages idle for at least this long (IDLE); zero: all.
	Idle time.Duration
	// Start and End bound the ids ("-" and "+" when empty).
	Start, End string
	// Count bounds the messages listed; it must be positive.
	Count int64
	// Consumer keeps the messages of one consumer; empty: all.
	Consumer string
}

func (o XPendingOptions) writeArgs(e *enc) {
	if o.Count <= 0 {
		e.fail("XPendingOptions.Count", "must be positive")
	}
	if o.Idle != 0 {
		e.str("IDLE")
		e.millis(o.Idle)
	}
	start, end := o.Start, o.End
	if start == "" {
		start = "-"
	}
	if end == "" {
		end = "+"
	}
	e.str(start)
	e.str(end)
	e.int(o.Count)
	if o.Consumer != "" {
		e.str(o.Consumer)
	}
}

// XAutoClaimResult is what XAutoClaim claimed.
type XAutoClaimResult struct {
	// Next is where the next XAutoClaim continues ("0-0" when the scan is complete).
	Next string
	// Entries are the claimed messages.
	Entries []XEntry
	// Deleted are the ids of pending messages that no longer exist (removed from the pending
	// list).
	Deleted []string
}

// XAutoClaimIDs is what XAutoClaimJustID claimed.
type XAutoClaimIDs struct {
	Next    string
	IDs     []string
	Deleted []string
}

// XPendingSummary summarises the pending messages of a consumer group.
type XPendingSummary struct {
	// Count is the number of pending messages.
	Count int64
	// Lowest and Highest are the smallest and largest pending ids ("" when none).
	Lowest, Highest string
	// Consumers maps each consumer with pending messages to their number.
	Consumers map[string]int64
}

// XPendingEntry is one pending message.
type XPendingEntry struct {
	ID, Consumer string
	// Idle is the time since the message was last delivered.
	Idle time.Duration
	// Deliveries counts its deliveries.
	Deliveries int64
}

// XStreamInfo describes a stream (XInfoStream).
type XStreamInfo struct {
	Length, RadixTreeKeys, RadixTreeNodes, Groups, EntriesAdded int64
	LastGeneratedID, MaxDeletedEntryID, RecordedFirstEntryID    string
	FirstEntry, LastEntry                                       Optional[XEntry]
}

// XGroupInfo describes a consumer group (XInfoGroups).
type XGroupInfo struct {
	Name               string
	Consumers, Pending int64
	LastDeliveredID    string
	// EntriesRead and Lag are not Valid when Redis cannot tell.
	EntriesRead, Lag Optional[int64]
}

// XConsumerInfo describes a consumer of a group (XInfoConsumers).
type XConsumerInfo struct {
	Name    string
	Pending int64
	// Idle is the time since the consumer's last attempted interaction.
	Idle time.Duration
}

// entryOf decodes [id, [field, value, ...]] (the field list is null for a deleted entry).
func entryOf(v *resp.Value) (XEntry, error) {
	if !isList(v) || v.Len() != 2 {
		return XEntry{}, unexpected("stream entry", v)
	}
	idv, fv := v.Elem(0), v.Elem(1)
	id, _, err := stringReply("stream entry", &idv)
	if err != nil {
		return XEntry{}, err
	}
	if fv.Kind == resp.KindNull {
		return XEntry{ID: id}, nil
	}
	fields, err := decStrings(&fv)
	return XEntry{ID: id, Fields: fields}, err
}

// decXEntries decodes a list of entries; null elements (entries deleted meanwhile) are left
// out.
func decXEntries(v *resp.Value) ([]XEntry, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	if !isList(v) {
		return nil, unexpected("stream", v)
	}
	out := make([]XEntry, 0, v.Len())
	for _, e := range v.All() {
		if e.Kind == resp.KindNull {
			continue
		}
		x, err := entryOf(&e)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// decXStreams decodes XREAD's reply: a RESP3 map or a RESP2 array of [key, entries] pairs;
// null when nothing arrived.
func decXStreams(v *resp.Value) ([]XStream, error) {
	if v.Kind == resp.KindNull {
		return nil, nil
	}
	out := []XStream{}
	add := func(k, entries *resp.Value) error {
		key, _, err := stringReply("XREAD", k)
		if err != nil {
			return err
		}
		es, err := decXEntries(entries)
		if err != nil {
			return err
		}
		out = append(out, XStream{Key: key, Entries: es})
		return nil
	}
	switch v.Kind {
	case resp.KindMap:
		var k resp.Value
		for i, e := range v.All() {
			if i%2 == 0 {
				k = e
				continue
			}
			if err := add(&k, &e); err != nil {
				return nil, err
			}
		}
	case resp.KindArray:
		for _, e := range v.All() {
			if !isList(&e) || e.Len() != 2 {
				return nil, unexpected("XREAD", &e)
			}
			k, entries := e.Elem(0), e.Elem(1)
			if err := add(&k, &entries); err != nil {
				return nil, err
			}
		}
	default:
		return nil, unexpected("XREAD", v)
	}
	return out, nil
}

// autoClaimParts splits XAUTOCLAIM's [next, claimed, deleted].
func autoClaimParts(v *resp.Value) (next string, claimed resp.Value, deleted []string, err error) {
	if !isList(v) || v.Len() < 2 {
		return "", resp.Value{}, nil, unexpected("XAUTOCLAIM", v)
	}
	n := v.Elem(0)
	if next, _, err = stringReply("XAUTOCLAIM", &n); err != nil {
		return "", resp.Value{}, nil, err
	}
	if v.Len() > 2 {
		d := v.Elem(2)
		if deleted, err = decStrings(&d); err != nil {
			return "", resp.Value{}, nil, err
		}
	}
	return next, v.Elem(1), deleted, nil
}

func decXAutoClaim(v *resp.Value) (XAutoClaimResult, error) {
	next, claimed, deleted, err := autoClaimParts(v)
	if err != nil {
		return XAutoClaimResult{}, err
	}
	entries, err := decXEntries(&claimed)
	return XAutoClaimResult{Next: next, Entries: entries, Deleted: deleted}, err
}

func decXAutoClaimIDs(v *resp.Value) (XAutoClaimIDs, error) {
	next, claimed, deleted, err := autoClaimParts(v)
	if err != nil {
		return XAutoClaimIDs{}, err
	}
	ids, err := decStrings(&claimed)
	return XAutoClaimIDs{Next: next, IDs: ids, Deleted: deleted}, err
}

func decXPending(v *resp.Value) (XPendingSummary, error) {
	if !isList(v) || v.Len() != 4 {
		return XPendingSummary{}, unexpected("XPENDING", v)
	}
	c, lo, hi, cs := v.Elem(0), v.Elem(1), v.Elem(2), v.Elem(3)
	var s XPendingSummary
	var err error
	if s.Count, err = intReply("XPENDING", &c); err != nil {
		return s, err
	}
	if s.Lowest, _, err = stringReply("XPENDING", &lo); err != nil {
		return s, err
	}
	if s.Highest, _, err = stringReply("XPENDING", &hi); err != nil {
		return s, err
	}
	pairs, err := pairList("XPENDING", &cs)
	if err != nil {
		return s, err
	}
	s.Consumers = make(map[string]int64, len(pairs))
	for _, p := range pairs {
		n := resp.BulkString(p[1])
		if s.Consumers[p[0]], err = intReply("XPENDING", &n); err != nil {
			return s, err
		}
	}
	return s, nil
}

func decXPendingExt(v *resp.Value) ([]XPendingEntry, error) {
	if !isList(v) {
		return nil, unexpected("XPENDING", v)
	}
	out := make([]XPendingEntry, 0, v.Len())
	for _, e := range v.All() {
		if !isList(&e) || e.Len() != 4 {
			return nil, unexpected("XPENDING", &e)
		}
		id, consumer, idle, n := e.Elem(0), e.Elem(1), e.Elem(2), e.Elem(3)
		var p XPendingEntry
		var err error
		if p.ID, _, err = stringReply("XPENDING", &id); err != nil {
			return nil, err
		}
		if p.Consumer, _, err = stringReply("XPENDING", &consumer); err != nil {
			return nil, err
		}
		ms, err := intReply("XPENDING", &idle)
		if err != nil {
			return nil, err
		}
		p.Idle = time.Duration(ms) * time.Millisecond
		if p.Deliveries, err = intReply("XPENDING", &n); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// fields calls fn for each field of a record: a RESP3 map or a RESP2 flat array.
func fields(name string, v *resp.Value, fn func(field string, val *resp.Value) error) error {
	if _, err := pairsOf(name, v); err != nil {
		return err
	}
	var k string
	for i, e := range v.All() {
		if i%2 == 0 {
			s, _, err := stringReply(name, &e)
			if err != nil {
				return err
			}
			k = s
			continue
		}
		if err := fn(k, &e); err != nil {
			return err
		}
	}
	return nil
}

func decXInfoStream(v *resp.Value) (XStreamInfo, error) {
	var s XStreamInfo
	err := fields("XINFO STREAM", v, func(f string, x *resp.Value) error {
		var err error
		switch f {
		case "length":
			s.Length, err = intReply(f, x)
		case "radix-tree-keys":
			s.RadixTreeKeys, err = intReply(f, x)
		case "radix-tree-nodes":
			s.RadixTreeNodes, err = intReply(f, x)
		case "groups":
			s.Groups, err = intReply(f, x)
		case "entries-added":
			s.EntriesAdded, err = intReply(f, x)
		case "last-generated-id":
			s.LastGeneratedID, _, err = stringReply(f, x)
		case "max-deleted-entry-id":
			s.MaxDeletedEntryID, _, err = stringReply(f, x)
		case "recorded-first-entry-id":
			s.RecordedFirstEntryID, _, err = stringReply(f, x)
		case "first-entry", "last-entry":
			var e Optional[XEntry]
			if x.Kind != resp.KindNull {
				e.Value, err = entryOf(x)
				e.Valid = err == nil
			}
			if f == "first-entry" {
				s.FirstEntry = e
			} else {
				s.LastEntry = e
			}
		}
		return err
	})
	return s, err
}

func decXInfoGroups(v *resp.Value) ([]XGroupInfo, error) {
	if !isList(v) {
		return nil, unexpected("XINFO GROUPS", v)
	}
	out := make([]XGroupInfo, 0, v.Len())
	for _, e := range v.All() {
		var g XGroupInfo
		err := fields("XINFO GROUPS", &e, func(f string, x *resp.Value) error {
			var err error
			switch f {
			case "name":
				g.Name, _, err = stringReply(f, x)
			case "consumers":
				g.Consumers, err = intReply(f, x)
			case "pending":
				g.Pending, err = intReply(f, x)
			case "last-delivered-id":
				g.LastDeliveredID, _, err = stringReply(f, x)
			case "entries-read":
				g.EntriesRead, err = decOptInt(x)
			case "lag":
				g.Lag, err = decOptInt(x)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func decXInfoConsumers(v *resp.Value) ([]XConsumerInfo, error) {
	if !isList(v) {
		return nil, unexpected("XINFO CONSUMERS", v)
	}
	out := make([]XConsumerInfo, 0, v.Len())
	for _, e := range v.All() {
		var c XConsumerInfo
		err := fields("XINFO CONSUMERS", &e, func(f string, x *resp.Value) error {
			var err error
			switch f {
			case "name":
				c.Name, _, err = stringReply(f, x)
			case "pending":
				c.Pending, err = intReply(f, x)
			case "idle":
				var ms int64
				ms, err = intReply(f, x)
				c.Idle = time.Duration(ms) * time.Millisecond
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
