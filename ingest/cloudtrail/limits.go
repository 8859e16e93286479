package cloudtrail

import (
	"github.com/valyala/fastjson"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// callLimit is the most items DynamoDB accepts in one call of a kind: a
// record of a larger call is not one DynamoDB served (it refuses the call
// whole with a ValidationException), so it is refused whole as
// beyond_dynamodb_limits, never counted as traffic. From DynamoDB's API
// reference:
//
//   - BatchWriteItem: "up to 25 item put or delete operations"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html);
//   - BatchGetItem: "as many as 100 items ... If you request more than 100
//     items, BatchGetItem returns a ValidationException"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html);
//   - TransactWriteItems: "groups up to 100 action requests"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html);
//   - TransactGetItems: "up to 100 TransactGetItem objects"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactGetItems.html);
//   - BatchExecuteStatement: Statements, "Maximum number of 25 items"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchExecuteStatement.html);
//   - ExecuteTransaction: TransactStatements, "Maximum number of 100 items"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ExecuteTransaction.html).
var callLimits = map[string]int{
	"BatchWriteItem":        25,
	"BatchGetItem":          100,
	"TransactWriteItems":    100,
	"TransactGetItems":      100,
	"BatchExecuteStatement": 25,
	"ExecuteTransaction":    100,
}

// maxPiece bounds the piece of a record parsed at once (fastjson): the
// parameters of a one-item call (GetItem, Query, ExecuteStatement...), one
// item of a batch or transaction, a control-plane record. DynamoDB's
// largest piece is an item of 400 KB, whose CloudTrail record lists the
// attribute names only; a larger piece is refused as too_long. A parsed
// value costs about 90 bytes, so a piece costs at most about 45 times its
// size, whatever it holds.
const maxPiece = 1 << 20

// checkCallSize refuses a call of n items when DynamoDB accepts fewer.
func checkCallSize(name string, n int) error {
	limit, ok := callLimits[name]
	if !ok || n <= limit {
		return nil
	}
	return rerr(traffic.ReasonBeyondLimits, "%d items in one call: DynamoDB accepts at most %d in a %s and refuses a larger one whole, so none was served",
		n, limit, name)
}

// piece parses one small piece of a record, the node n, with the stream's
// parser: the value is valid until the next piece is parsed.
func (st *stream) piece(n node, what string) (*fastjson.Value, error) {
	raw := n.raw()
	if len(raw) > maxPiece {
		return nil, rerr(traffic.ReasonTooLong, "%s of %d bytes: no DynamoDB call has one over %d", what, len(raw), maxPiece)
	}
	v, err := st.p.ParseBytes(raw)
	if err != nil {
		return nil, rerr(traffic.ReasonBadJSON, "%s: %v", what, parseError(err, st.d.mask))
	}
	return v, nil
}
