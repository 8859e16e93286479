package streamrecord

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The record decoder of decode.go also reads stream records as users
// keep them, which differ from GetRecords answers in a few members:
//
//   - Lambda events spell userIdentity's members "type" and "principalId"
//     (the API: "Type", "PrincipalId") and add eventSourceARN, which names
//     the table;
//   - Kinesis Data Streams for DynamoDB payloads add tableName and write
//     ApproximateCreationDateTime in milliseconds (or microseconds), where
//     Streams write seconds; the AWS CLI writes it as an ISO 8601 string;
//   - a Kinesis record wraps its payload in base64: "kinesis": {"data"} in
//     a Lambda event, "Data" in `aws kinesis get-records` output.
//
// decodeDump reads one such record; the GetRecords path is unchanged (the
// extra members are looked at only when d.dump is set).

// dumpRecord is one record of a dump as decoded.
type dumpRecord struct {
	rec types.Record
	// table is the tableName, or the table of the eventSourceARN.
	table string
	// arn is the eventSourceARN as written, for messages.
	arn string
	// kinesis is set for a Kinesis Data Streams for DynamoDB record.
	kinesis bool
	// wrapped is set once a base64 envelope was opened.
	wrapped bool
	// newImage and oldImage are the spans of the record's images (nil
	// when it has none), read once the table is known (readImages).
	newImage, oldImage []byte
}

// recordError is a record a dump decoder rejects, with the reason.
type recordError struct {
	reason string
	err    error
}

func (e *recordError) Error() string { return e.err.Error() }
func (e *recordError) Unwrap() error { return e.err }

func rejectf(reason, format string, args ...any) error {
	return &recordError{reason, fmt.Errorf(format, args...)}
}

// badKey is the error of a key attribute that is not {"S"|"N"|"B": string}.
func badKey(name string, err error) error {
	var re *recordError
	if errors.As(err, &re) {
		return err
	}
	return rejectf(traffic.ReasonBadType, "key attribute %q is not a string, number or binary value ({\"S\": \"...\"})", name)
}

// decodeDump decodes one record of a dump (raw is one JSON object) into
// out. The error is a *recordError.
func (d *decoder) decodeDump(raw []byte, out *dumpRecord) error {
	*out = dumpRecord{}
	d.b, d.i, d.dump = raw, 0, out
	defer func() { d.b, d.dump = nil, nil }()
	// d.blk is kept from record to record: its blocks are only appended
	// to, so what an earlier record points into stays as it was.
	err := d.record(&out.rec)
	if err == nil && jsonscan.Space(d.b, d.i) != len(d.b) {
		err = ErrFallback
	}
	if err != nil {
		return shapeError(raw, err, "stream record")
	}
	if out.wrapped {
		// The envelope's own members (a Kinesis eventID, eventName
		// "aws:kinesis:record") are not the record's.
		out.rec = d.payload
	}
	return nil
}

// shapeError turns a decoding error into a *recordError: a reason of the
// decoder's own, bad_json for text that is not JSON, bad_record for JSON
// that is not a stream record.
func shapeError(raw []byte, err error, what string) error {
	var re *recordError
	if errors.As(err, &re) {
		return err
	}
	i := jsonscan.Space(raw, 0)
	if end, serr := jsonscan.Skip(raw, i, maxNesting); serr != nil {
		return rejectf(traffic.ReasonBadJSON, "%s is not JSON: %v", what, serr)
	} else if jsonscan.Space(raw, end) != len(raw) {
		return rejectf(traffic.ReasonBadJSON, "%s is not one JSON value", what)
	}
	return rejectf(traffic.ReasonBadRecord, "%s of an unknown shape (a member of the wrong type)", what)
}

// dumpIdentity reads the Lambda spelling of userIdentity's members.
func (d *decoder) dumpIdentity(k []byte, id *types.Identity) error {
	switch string(k) {
	case "principalId":
		s, err := d.internStr()
		id.PrincipalId = d.blk.str(s)
		return err
	case "type":
		s, err := d.internStr()
		id.Type = d.blk.str(s)
		return err
	}
	return d.skip()
}

// dumpMember reads the members a dump's record has besides a GetRecords
// record's.
func (d *decoder) dumpMember(key []byte, r *types.Record) error {
	out := d.dump
	switch string(key) {
	case "eventSourceARN":
		if d.null() {
			return nil
		}
		s, err := d.str()
		out.arn = s
		if t, ok := tableOfStreamARN(s); ok && out.table == "" {
			out.table = t
		}
		return err
	case "tableName":
		s, err := d.str()
		out.table, out.kinesis = s, true
		return err
	case "kinesis":
		// Lambda's Kinesis event: the payload is kinesis.data.
		if d.null() {
			return nil
		}
		return d.object(func(k []byte) error {
			if string(k) == "data" {
				return d.envelope()
			}
			return d.skip()
		})
	case "Data":
		// `aws kinesis get-records`: the payload is Data.
		return d.envelope()
	}
	return d.skip()
}

// envelope decodes a base64 Kinesis payload, which is the record itself,
// into d.payload.
func (d *decoder) envelope() error {
	out := d.dump
	if out.wrapped {
		return rejectf(traffic.ReasonBadRecord, "Kinesis record with two payloads")
	}
	enc, err := d.string(&d.text)
	if err != nil {
		return err
	}
	payload := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Decode(payload, enc)
	if err != nil {
		return rejectf(traffic.ReasonBadRecord, "Kinesis record data is not base64: %v", err)
	}
	payload = payload[:n]
	b, i := d.b, d.i
	d.b, d.i = payload, 0
	out.wrapped, out.kinesis = true, true
	out.newImage, out.oldImage = nil, nil
	d.payload = types.Record{}
	err = d.record(&d.payload)
	if err == nil && jsonscan.Space(d.b, d.i) != len(d.b) {
		err = ErrFallback
	}
	d.b, d.i = b, i
	if err != nil {
		return shapeError(payload, err, "Kinesis record payload")
	}
	return nil
}

// dumpTime reads ApproximateCreationDateTime as dumps write it: epoch
// seconds (DynamoDB Streams), milliseconds or microseconds (Kinesis Data
// Streams for DynamoDB), told apart by magnitude — a time in seconds
// reaches 1e11 only in the year 5138 — or an ISO 8601 string (the AWS CLI).
func (d *decoder) dumpTime(sr *types.StreamRecord) error {
	var t time.Time
	if d.at('"') {
		s, err := d.string(&d.text)
		if err != nil {
			return err
		}
		if t, err = time.Parse(time.RFC3339Nano, string(s)); err != nil {
			return rejectf(traffic.ReasonBadTime, "ApproximateCreationDateTime %q is not an ISO 8601 time", s)
		}
	} else {
		num, err := d.number()
		if err != nil {
			return rejectf(traffic.ReasonBadTime, "ApproximateCreationDateTime is not a number or a time")
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) {
			return rejectf(traffic.ReasonBadTime, "ApproximateCreationDateTime %s is out of range", num)
		}
		switch {
		case f >= 1e14:
			t = time.UnixMicro(int64(f))
		case f >= 1e11:
			t = time.UnixMilli(int64(f))
		default:
			t = time.UnixMilli(epochMillis(f))
		}
	}
	b := &d.blk
	if len(b.times) == cap(b.times) {
		b.times = make([]time.Time, 0, 64)
	}
	b.times = append(b.times, t.UTC())
	sr.ApproximateCreationDateTime = &b.times[len(b.times)-1]
	return nil
}

// tableOfStreamARN returns the table a DynamoDB ARN names:
// arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME, with /stream/LABEL for
// a stream. A Kinesis stream's ARN, or a placeholder, names none.
func tableOfStreamARN(arn string) (string, bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "dynamodb" {
		return "", false
	}
	rest, ok := strings.CutPrefix(parts[5], "table/")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name, name != ""
}
