package cloudtrail

import (
	"fmt"
	"strings"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Why a call was throttled. DynamoDB's ThrottlingReason names the
// resource (Table or Index), the operation (Read or Write) and the limit
// ("ResourceType+OperationType+LimitType",
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html),
// and an exception carries a list of them. CloudTrail keeps the
// exception's errorCode and errorMessage, not the list, so the reasons
// are those the message names, every one of them, and each item of the
// call takes the one that can be its own:
//
//   - the operation is the item's class: a write consumes write capacity
//     only, so a Read reason cannot have throttled a PutItem (nor a Write
//     reason a GetItem);
//   - the resource is the one the item used: a read of a table (GetItem,
//     a Query or Scan without indexName) is throttled by the table, a
//     read of an index by the index; a write is throttled by its table or
//     by one of the table's global secondary indexes (an index short of
//     write capacity throttles the table's writes).
//
// One reason that fits is taken. None that fits, where the message names
// some, cannot be what DynamoDB said: the item is refused as
// bad_throttle_reason, as a JSON line with a reason of the other class
// is. Several that fit (DynamoDB may list a table's and an index's) leave
// the item's reason unknown, counted as throttled (Stats.AmbiguousReasons,
// and a note): the detector then tells the causes apart from how the
// throttled calls spread over the keys, as for a message that names none.
// RequestLimitExceeded with no reason named is the account's limit on the
// item's table or index, which DynamoDB's API reference defines it as.

// namedReasons returns the distinct throttling reasons msg names, in the
// order it names them.
func namedReasons(msg []byte) []traffic.ThrottleReason {
	var out []traffic.ThrottleReason
	text := string(msg)
	for {
		r, ok := traffic.FindThrottleReason(text)
		if !ok {
			return out
		}
		name := r.String()
		if !containsReason(out, r) {
			out = append(out, r)
		}
		i := strings.Index(text, name)
		if i < 0 {
			return out
		}
		text = text[i+len(name):]
	}
}

func containsReason(rs []traffic.ThrottleReason, r traffic.ThrottleReason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// fits reports whether reason r can have throttled the access e.
func fits(r traffic.ThrottleReason, e *traffic.Event) bool {
	if r.Class() != e.Class {
		return false
	}
	return e.Class == traffic.Write || r.Index() == (e.Index != "")
}

// errAmbiguous marks an item whose message names several reasons that
// fit it: counted throttled, without a reason.
var errAmbiguous = fmt.Errorf("several throttling reasons fit")

// itemReason returns the reason of the throttled access e from the
// reasons its call's message named and its errorCode.
func itemReason(named []traffic.ThrottleReason, code string, e *traffic.Event) (traffic.ThrottleReason, error) {
	if len(named) == 0 {
		if code == "RequestLimitExceeded" {
			return traffic.MakeThrottleReason(e.Index != "", e.Class, traffic.LimitAccount), nil
		}
		return 0, nil
	}
	var found traffic.ThrottleReason
	n := 0
	for _, r := range named {
		if fits(r, e) {
			found = r
			n++
		}
	}
	switch n {
	case 0:
		names := make([]string, len(named))
		for i, r := range named {
			names[i] = r.String()
		}
		return 0, rerr(traffic.ReasonBadThrottleReason, "errorMessage names %s, which cannot have throttled a %s of %s",
			strings.Join(names, " and "), e.Class, tableIndex(e.Table, e.Index))
	case 1:
		return found, nil
	}
	return 0, errAmbiguous
}
