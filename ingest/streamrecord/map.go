package streamrecord

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// SourceName is the source label of the Events Map makes and of the
// rejections the DumpDecoder reports when its config names none.
const SourceName = "dynamodb-streams"

// TTLPrincipal is the userIdentity.principalId of the REMOVE records that
// DynamoDB's Time to Live process writes; no client wrote them.
const TTLPrincipal = "dynamodb.amazonaws.com"

// Kind says what a stream record turned out to be.
type Kind uint8

const (
	KindWrite     Kind = iota // a client write: one Event
	KindTTLDelete             // an item deleted by Time to Live: counted apart
	KindRejected              // a record that could not be mapped
)

var (
	errNoKeys      = errors.New("record has no dynamodb.Keys")
	errMissingHash = errors.New("record keys lack the partition key")
	errBadKeyType  = errors.New("key attribute is not of type S, N or B")
	errBadNumber   = errors.New("key attribute of type N is not a number")
)

// Map turns one stream record into an Event for table and shard.
// Key values take their canonical text form (see keyText). Units estimate the
// write capacity the write consumed: one WCU per started KB of the record's
// SizeBytes, at least 1 (SizeBytes counts the key and the images the stream
// view type carries, so it is an estimate of the item size, never exact).
// When a rejected record is returned, reason is an traffic.Reason* value.
func Map(r *types.Record, table, shard string, ks traffic.KeySchema, ev *traffic.Event) (kind Kind, reason string, err error) {
	if id := r.UserIdentity; id != nil && id.PrincipalId != nil && *id.PrincipalId == TTLPrincipal {
		return KindTTLDelete, "", nil
	}
	sr := r.Dynamodb
	if sr == nil || len(sr.Keys) == 0 {
		return KindRejected, traffic.ReasonBadRecord, errNoKeys
	}
	hash, rng := ks.PartitionKey, ks.SortKey
	if hash == "" && len(sr.Keys) == 1 {
		// No key schema known yet: a single key attribute can only be the
		// partition key.
		for name := range sr.Keys {
			hash = name
		}
	}
	pkv, ok := sr.Keys[hash]
	if !ok {
		return KindRejected, traffic.ReasonMissingPK, fmt.Errorf("%w %q", errMissingHash, hash)
	}
	pk, err := keyText(pkv)
	if err != nil {
		return KindRejected, traffic.ReasonBadType, fmt.Errorf("partition key %q: %w", hash, err)
	}
	if pk == "" {
		// DynamoDB refuses empty key values: the record is broken.
		return KindRejected, traffic.ReasonMissingPK, fmt.Errorf("partition key %q is empty", hash)
	}
	var sk string
	if rng != "" {
		if skv, ok := sr.Keys[rng]; ok {
			if sk, err = keyText(skv); err != nil {
				return KindRejected, traffic.ReasonBadType, fmt.Errorf("sort key %q: %w", rng, err)
			}
		}
	}
	var size int64
	if sr.SizeBytes != nil {
		size = *sr.SizeBytes
	}
	var at time.Time
	if sr.ApproximateCreationDateTime != nil {
		at = *sr.ApproximateCreationDateTime
	}
	*ev = traffic.Event{
		Table:  table,
		PK:     pk,
		SK:     sk,
		Class:  traffic.Write,
		Units:  writeUnits(size),
		Time:   at,
		Source: SourceName,
		Shard:  shard,
	}
	if inv := traffic.CheckUnits(traffic.Write, ev.Units); inv != nil {
		// A record size no item can have (a record holds at most the
		// keys and two images of 400 KB).
		return KindRejected, inv.Reason, fmt.Errorf("size %d bytes: %w", size, inv)
	}
	return KindWrite, "", nil
}

// writeUnits estimates the WCU of a write from the record size: ceil(size /
// 1 KB), at least 1.
func writeUnits(size int64) float64 {
	if size <= 1024 {
		return 1
	}
	return float64((size + 1023) / 1024)
}

// keyText returns the canonical text of a key attribute: S as is, N in
// canonical decimal form (canonicalNumber), B in standard padded base64.
func keyText(v types.AttributeValue) (string, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberN:
		n, ok := canonicalNumber(v.Value)
		if !ok {
			return "", &badNumber{v.Value}
		}
		return n, nil
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value), nil
	}
	return "", errBadKeyType
}

// badNumber is a key attribute of type N whose value is not a number. Its
// text leaves the value out: it is a key, quoted (masked) by the reporter
// of the record (QuoteBadNumber).
type badNumber struct{ value string }

func (e *badNumber) Error() string { return errBadNumber.Error() }

func (e *badNumber) Unwrap() error { return errBadNumber }

// QuoteBadNumber adds the value of a badNumber in err to its text, masked
// by m as keys are.
func QuoteBadNumber(err error, m traffic.Masker) error {
	var bn *badNumber
	if errors.As(err, &bn) {
		return fmt.Errorf("%w: %s", err, traffic.Quote(m, []byte(bn.value)))
	}
	return err
}
