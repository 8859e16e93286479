package traffic

import (
	"fmt"
	"strings"
)

// ThrottleLimit is why DynamoDB throttled a call: the limit part of one of
// its ThrottlingReasons (ResourceType + OperationType + LimitType, in
// DynamoDB's API reference, ThrottlingReason). The zero value is a call
// whose reason is not known.
type ThrottleLimit uint8

const (
	// LimitUnknown: the call was throttled, and the input does not say why.
	LimitUnknown ThrottleLimit = iota
	// LimitKeyRange (KeyRangeThroughputExceeded): the requests to one
	// partition's key range exceeded what one partition serves (in both
	// capacity modes): a hot key, fixed in the key design.
	LimitKeyRange
	// LimitProvisioned (ProvisionedThroughputExceeded): the table's or
	// index's provisioned capacity was exceeded (provisioned mode).
	LimitProvisioned
	// LimitAccount (AccountLimitExceeded): an on-demand table or index
	// exceeded the account's per-table throughput quota in its Region.
	LimitAccount
	// LimitOnDemandMax (MaxOnDemandThroughputExceeded): an on-demand table
	// or index exceeded the maximum throughput configured on it.
	LimitOnDemandMax
	// NumThrottleLimits is the number of limits, for arrays indexed by
	// ThrottleLimit.
	NumThrottleLimits
)

// limitNames are the LimitType parts of DynamoDB's reasons.
var limitNames = [NumThrottleLimits]string{
	LimitKeyRange:    "KeyRangeThroughputExceeded",
	LimitProvisioned: "ProvisionedThroughputExceeded",
	LimitAccount:     "AccountLimitExceeded",
	LimitOnDemandMax: "MaxOnDemandThroughputExceeded",
}

// String returns the limit as DynamoDB names it in a reason
// ("ProvisionedThroughputExceeded"), or "unknown".
func (l ThrottleLimit) String() string {
	if l == LimitUnknown || l >= NumThrottleLimits {
		return "unknown"
	}
	return limitNames[l]
}

// Capacity reports whether the limit is a capacity of the whole table or
// index (provisioned, account quota, on-demand maximum) rather than one
// partition's key range.
func (l ThrottleLimit) Capacity() bool {
	return l == LimitProvisioned || l == LimitAccount || l == LimitOnDemandMax
}

// ThrottleReason is why a call was throttled, as DynamoDB's
// ThrottlingReasons name it: which resource (the table or one of its
// indexes), which operation (read or write) and which limit, packed in one
// byte so that it rides on every Event at no cost. The zero value is "not
// known": a throttled call whose input gave no reason, or a call that was
// not throttled.
//
// DynamoDB has sixteen reasons, each resource × operation × limit:
// TableReadKeyRangeThroughputExceeded, TableWriteProvisionedThroughputExceeded,
// IndexWriteAccountLimitExceeded, TableReadMaxOnDemandThroughputExceeded
// and so on. A reason may also know only its resource (an index throttled
// the call) with its limit unknown.
type ThrottleReason uint8

const (
	reasonLimitMask = 0x07
	reasonIndex     = 0x08
	reasonWrite     = 0x10
	reasonKnown     = 0x20
)

// MakeThrottleReason returns the reason for a call of class c throttled by
// limit l on the table (index false) or one of its indexes.
func MakeThrottleReason(index bool, c Class, l ThrottleLimit) ThrottleReason {
	r := reasonKnown | ThrottleReason(l&reasonLimitMask)
	if index {
		r |= reasonIndex
	}
	if c == Write {
		r |= reasonWrite
	}
	return r
}

// Known reports whether the reason says anything.
func (r ThrottleReason) Known() bool { return r&reasonKnown != 0 }

// Limit is the reason's limit; LimitUnknown when it names none.
func (r ThrottleReason) Limit() ThrottleLimit {
	if l := ThrottleLimit(r & reasonLimitMask); l < NumThrottleLimits {
		return l
	}
	return LimitUnknown
}

// Index reports whether the throttled resource is an index of the table.
func (r ThrottleReason) Index() bool { return r&reasonIndex != 0 }

// Class is the operation the reason names: read or write.
func (r ThrottleReason) Class() Class {
	if r&reasonWrite != 0 {
		return Write
	}
	return Read
}

// Cause is the reason without its operation: what the counts of a table's
// class are kept by (ThrottleCause).
func (r ThrottleReason) Cause() ThrottleCause {
	c := ThrottleCause(r.Limit())
	if r.Index() {
		c += ThrottleCause(NumThrottleLimits)
	}
	return c
}

// String returns DynamoDB's name of the reason
// ("TableWriteKeyRangeThroughputExceeded"); a reason that knows only its
// resource names it ("IndexWrite"), and one that knows nothing is "".
func (r ThrottleReason) String() string {
	if !r.Known() {
		return ""
	}
	var b strings.Builder
	if r.Index() {
		b.WriteString("Index")
	} else {
		b.WriteString("Table")
	}
	if r.Class() == Write {
		b.WriteString("Write")
	} else {
		b.WriteString("Read")
	}
	if l := r.Limit(); l != LimitUnknown {
		b.WriteString(limitNames[l])
	}
	return b.String()
}

// ParseThrottleReason reads one of DynamoDB's sixteen reason names.
func ParseThrottleReason(s string) (ThrottleReason, bool) {
	var index bool
	switch {
	case strings.HasPrefix(s, "Table"):
		s = s[len("Table"):]
	case strings.HasPrefix(s, "Index"):
		s, index = s[len("Index"):], true
	default:
		return 0, false
	}
	var c Class
	switch {
	case strings.HasPrefix(s, "Read"):
		s, c = s[len("Read"):], Read
	case strings.HasPrefix(s, "Write"):
		s, c = s[len("Write"):], Write
	default:
		return 0, false
	}
	for l := LimitKeyRange; l < NumThrottleLimits; l++ {
		if s == limitNames[l] {
			return MakeThrottleReason(index, c, l), true
		}
	}
	return 0, false
}

// ThrottleReasons returns DynamoDB's sixteen reasons, tables first, then
// reads first, in the order of ThrottleLimit.
func ThrottleReasons() []ThrottleReason {
	out := make([]ThrottleReason, 0, 16)
	for _, index := range []bool{false, true} {
		for c := range Class(NumClasses) {
			for l := LimitKeyRange; l < NumThrottleLimits; l++ {
				out = append(out, MakeThrottleReason(index, c, l))
			}
		}
	}
	return out
}

// FindThrottleReason returns the first of DynamoDB's reason names that
// occurs as a word in text (an error message that quotes one), if any.
func FindThrottleReason(text string) (ThrottleReason, bool) {
	for i := 0; i < len(text); i++ {
		if text[i] != 'T' && text[i] != 'I' || i > 0 && isLetter(text[i-1]) {
			continue
		}
		end := i + 1
		for end < len(text) && isLetter(text[end]) {
			end++
		}
		if r, ok := ParseThrottleReason(text[i:end]); ok {
			return r, true
		}
		i = end - 1
	}
	return 0, false
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// ThrottleCause is what a throttled call's counts are kept by in a
// table's class: its limit, on the table itself or on one of its indexes
// (ThrottleReason.Cause). Causes below NumThrottleLimits are the table's,
// the others an index's.
type ThrottleCause uint8

// NumThrottleCauses is the number of causes, for arrays indexed by
// ThrottleCause.
const NumThrottleCauses = 2 * NumThrottleLimits

// Limit is the cause's limit.
func (c ThrottleCause) Limit() ThrottleLimit {
	return ThrottleLimit(c % ThrottleCause(NumThrottleLimits))
}

// Index reports whether the cause is an index's.
func (c ThrottleCause) Index() bool { return c >= ThrottleCause(NumThrottleLimits) }

// ParseResourceARN reads a ThrottlingReason's resource, the ARN of a table
// or index (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME or
// .../table/NAME/index/INDEX), into the table's and the index's names.
func ParseResourceARN(arn string) (table, index string, err error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "dynamodb" {
		return "", "", fmt.Errorf("not the ARN of a DynamoDB table or index")
	}
	rest, ok := strings.CutPrefix(parts[5], "table/")
	if !ok {
		return "", "", fmt.Errorf("not the ARN of a DynamoDB table or index")
	}
	table, index, hasIndex := strings.Cut(rest, "/index/")
	if !ValidName(table) || hasIndex && !ValidName(index) || strings.Contains(table, "/") {
		return "", "", fmt.Errorf("not the ARN of a DynamoDB table or index")
	}
	return table, index, nil
}
