package jsonl

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file reads the contract's fields of a line into an Event, in one
// table (readings) and one loop (build): for each field, in the order its
// reading needs the others (op before pk: a Scan has no key; the table and
// op before the throttling fields, which are checked against them), what
// an absent (or null) member means, which kinds of value it takes, what a
// value of another kind gets, and how a value sets the Event. What a line
// gets for each is the contract's (contract.go), which its tests hold to
// these readings.

// reading is how one field of the contract is read.
type reading struct {
	field int
	// kinds are the kinds of value the field takes (bit 1<<Kind).
	kinds uint16
	// want names them in the rejection of another kind; wrong is that
	// rejection's reason.
	want, wrong string
	// absent is what a line without the member (or with null) gets: a
	// rejection, or a default set on the Event; nil for nothing.
	absent func(p *Parser, ev *traffic.Event) error
	// set reads a value of one of kinds into the Event.
	set func(p *Parser, line []byte, v jsonscan.Span, ev *traffic.Event) error
}

// kinds is the set of the kinds of value ks.
func kinds(ks ...jsonscan.Kind) uint16 {
	var m uint16
	for _, k := range ks {
		m |= 1 << k
	}
	return m
}

var (
	aString  = kinds(jsonscan.String)
	aNumber  = kinds(jsonscan.Number)
	aBoolean = kinds(jsonscan.True, jsonscan.False)
)

// readings are the fields' readings in the order build applies them.
var readings = [numFields]reading{
	{field: fTable, kinds: aString, want: "a string", wrong: traffic.ReasonBadType,
		absent: func(*Parser, *traffic.Event) error { return errMissingTable }, set: (*Parser).setTable},
	{field: fOp, kinds: aString, want: "a string", wrong: traffic.ReasonBadType,
		absent: func(*Parser, *traffic.Event) error { return errMissingOp }, set: (*Parser).setOp},
	{field: fPK, kinds: aString, want: "a string", wrong: traffic.ReasonBadType,
		absent: (*Parser).absentPK, set: (*Parser).setPK},
	{field: fIndex, kinds: aString, want: "a string", wrong: traffic.ReasonBadType, set: (*Parser).setIndex},
	{field: fSK, kinds: aString, want: "a string", wrong: traffic.ReasonBadType, set: (*Parser).setSK},
	// A transaction costs twice its items (traffic.Operation).
	{field: fUnits, kinds: aNumber, want: "a number", wrong: traffic.ReasonBadUnits,
		absent: func(p *Parser, ev *traffic.Event) error { ev.Units = p.op.DefaultUnits; return nil }, set: (*Parser).setUnits},
	{field: fThrottled, kinds: aBoolean, want: "a boolean", wrong: traffic.ReasonBadType, set: (*Parser).setThrottled},
	{field: fThrottleReason, kinds: aString, want: "a string", wrong: traffic.ReasonBadType, set: (*Parser).setThrottleReason},
	{field: fThrottleResource, kinds: aString, want: "a string", wrong: traffic.ReasonBadType, set: (*Parser).setThrottleResource},
	{field: fTime, kinds: aString | aNumber, want: "an RFC 3339 string or a Unix epoch number", wrong: traffic.ReasonBadType,
		absent: func(p *Parser, ev *traffic.Event) error { ev.Time = p.now(); return nil }, set: (*Parser).setTime},
}

// build fills ev from the recorded spans, field by field (readings).
func (p *Parser) build(line []byte, ev *traffic.Event) error {
	*ev = traffic.Event{Source: p.source}
	p.said = false
	for i := range readings {
		r := &readings[i]
		v := p.vals[r.field]
		switch {
		case optional(v):
			if r.absent != nil {
				if err := r.absent(p, ev); err != nil {
					return err
				}
			}
		case r.kinds&(1<<v.Kind) == 0:
			return &ParseError{Reason: r.wrong, Detail: fmt.Sprintf("%q is %s, want %s", p.names[r.field], aKind(v.Kind), r.want)}
		default:
			if err := r.set(p, line, v, ev); err != nil {
				return err
			}
		}
	}
	if ev.Time.Before(traffic.DynamoDBLaunch) {
		// Year 0001 would be the zero time: no time at all.
		t := p.vals[fTime]
		return &ParseError{Reason: traffic.ReasonBadTime, Detail: p.quote(line[t.Start:t.End]) + " is before 2012, when DynamoDB did not exist"}
	}
	return nil
}

func (p *Parser) setTable(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	tb := p.bytesOf(line, v)
	if len(tb) == 0 {
		return errMissingTable
	}
	name, ok := p.validName(tb)
	if ev.Table = name; !ok {
		return p.invalid(traffic.CheckName("table", ev.Table))
	}
	return nil
}

func (p *Parser) setOp(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	op, ok := p.lookupOp(p.bytesOf(line, v))
	if !ok {
		return &ParseError{Reason: traffic.ReasonBadOp, Detail: "unknown operation " + p.quote(p.bytesOf(line, v))}
	}
	p.op, ev.Class = op, op.Class
	return nil
}

// absentPK refuses a line without a partition key, unless its operation
// reads no particular key (Scan).
func (p *Parser) absentPK(*traffic.Event) error {
	if !p.op.Keyless {
		return errMissingPK
	}
	return nil
}

func (p *Parser) setPK(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	pk := p.bytesOf(line, v)
	if len(pk) == 0 && !p.op.Keyless {
		return errMissingPK
	}
	ev.PK = p.key(pk)
	return nil
}

func (p *Parser) setIndex(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	if ix := p.bytesOf(line, v); len(ix) > 0 {
		name, ok := p.validName(ix)
		if ev.Index = name; !ok {
			return p.invalid(traffic.CheckName("index", ev.Index))
		}
	}
	return nil
}

func (p *Parser) setSK(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	if sk := p.bytesOf(line, v); len(sk) > 0 {
		ev.SK = p.key(sk)
	}
	return nil
}

func (p *Parser) setUnits(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	u := line[v.Start:v.End]
	f, ok := plainNumber(u)
	var err error
	if !ok {
		f, err = strconv.ParseFloat(unsafeString(u), 64)
	}
	switch {
	case err != nil || math.IsInf(f, 0) || math.IsNaN(f):
		return &ParseError{Reason: traffic.ReasonBadUnits, Detail: "units " + p.quote(u) + " out of range"}
	case f < 0:
		return &ParseError{Reason: traffic.ReasonBadUnits, Detail: "negative units " + p.quote(u)}
	case f > p.op.MaxUnits:
		// No call of this kind consumes that much (traffic.MaxUnits).
		return &ParseError{Reason: traffic.ReasonBadUnits, Detail: fmt.Sprintf("%s units for %s: one call consumes at most %g",
			p.quote(u), p.quote(p.bytesOf(line, p.vals[fOp])), p.op.MaxUnits)}
	}
	ev.Units = f
	return nil
}

// setThrottled reads throttled; a reason (setThrottleReason) marks the
// call throttled too, and must not come with throttled false.
func (p *Parser) setThrottled(_ []byte, v jsonscan.Span, ev *traffic.Event) error {
	ev.Throttled, p.said = v.Kind == jsonscan.True, true
	return nil
}

// setThrottleReason reads throttle_reason: one of DynamoDB's sixteen (an
// empty one is none of them), naming the call's operation.
func (p *Parser) setThrottleReason(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	b := p.bytesOf(line, v)
	reason, ok := traffic.ParseThrottleReason(unsafeString(b))
	switch {
	case !ok:
		return &ParseError{Reason: traffic.ReasonBadThrottleReason, Detail: p.quote(b) + " is not one of DynamoDB's throttling reasons (such as TableWriteKeyRangeThroughputExceeded)"}
	case p.said && !ev.Throttled:
		return &ParseError{Reason: traffic.ReasonBadThrottleReason, Detail: fmt.Sprintf("%s on a call that was not throttled (%q is false)", reason, p.names[fThrottled])}
	case reason.Class() != ev.Class:
		return &ParseError{Reason: traffic.ReasonBadThrottleReason, Detail: fmt.Sprintf("%s on a %s", reason, ev.Class)}
	}
	ev.Throttled, ev.ThrottleReason = true, reason
	return nil
}

// setThrottleResource reads throttle_resource, which must agree with the
// reason. A call throttled by one of its table's indexes (an index's
// reason, whose resource names the index: a write held back by the
// index's capacity) is counted on that index, without the table's key,
// which is not the index's.
func (p *Parser) setThrottleResource(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	b := p.bytesOf(line, v)
	if len(b) == 0 || !ev.ThrottleReason.Known() {
		// A resource without a reason says nothing the table does not.
		return nil
	}
	table, index, err := traffic.ParseResourceARN(unsafeString(b))
	switch {
	case err != nil:
		return &ParseError{Reason: traffic.ReasonBadThrottleReason, Detail: fmt.Sprintf("resource %s: %v", p.quote(b), err)}
	case table != ev.Table:
		return &ParseError{Reason: traffic.ReasonBadThrottleReason, Detail: fmt.Sprintf("resource %s is not of table %q", p.quote(b), ev.Table)}
	case (index != "") != ev.ThrottleReason.Index():
		return &ParseError{Reason: traffic.ReasonBadThrottleReason, Detail: fmt.Sprintf("resource %s with %s", p.quote(b), ev.ThrottleReason)}
	case index != "" && index != ev.Index:
		ev.Index, ev.PK, ev.SK = p.internBytes([]byte(index)), "", ""
	}
	return nil
}

// setTime reads ts: an RFC 3339 string, or an epoch number in the unit
// its size says (epochTime).
func (p *Parser) setTime(line []byte, v jsonscan.Span, ev *traffic.Event) error {
	if v.Kind == jsonscan.Number {
		tm, ok := epochTime(unsafeString(line[v.Start:v.End]))
		if !ok {
			return &ParseError{Reason: traffic.ReasonBadTime, Detail: "epoch time " + p.quote(line[v.Start:v.End]) +
				" is no time from 2012 to 9999 in seconds, milliseconds, microseconds or nanoseconds"}
		}
		ev.Time = tm
		return nil
	}
	s := p.bytesOf(line, v)
	tm, ok := p.parseTime(s)
	if !ok {
		hint := ""
		if _, err := strconv.ParseFloat(unsafeString(s), 64); err == nil {
			hint = " (an epoch time is a JSON number, without quotes)"
		}
		return &ParseError{Reason: traffic.ReasonBadTime, Detail: p.quote(s) + " is not an RFC 3339 time" + hint}
	}
	ev.Time = tm
	return nil
}
