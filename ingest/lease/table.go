package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"
)

// DynamoDBAPI is the part of the DynamoDB client the coordinator uses.
// *dynamodb.Client implements it; tests wrap it to inject faults.
type DynamoDBAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// errConflict is a conditional write that found the item other than
// expected: another worker wrote it, or it is gone (old is nil).
type errConflict struct {
	key string
	old map[string]types.AttributeValue
}

func (e *errConflict) Error() string {
	if e.old == nil {
		return fmt.Sprintf("lease %q: the item is gone", e.key)
	}
	return fmt.Sprintf("lease %q: written by another worker", e.key)
}

// isTableGone reports whether err says the lease table does not exist.
func isTableGone(err error) bool {
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf)
}

// table does the DynamoDB calls on the lease table, each bounded by
// timeout and counted in requests.
type table struct {
	api      DynamoDBAPI
	name     string
	timeout  time.Duration
	requests *prometheus.CounterVec // call
}

func (t *table) call(ctx context.Context, name string) (context.Context, context.CancelFunc) {
	t.requests.WithLabelValues(t.name, name).Inc()
	return context.WithTimeout(ctx, t.timeout)
}

// ensure makes sure the lease table exists and is active: it is created on
// first use, keyed by leaseKey (S), with on-demand billing. A table of the
// same name with another key schema is an error.
func (t *table) ensure(ctx context.Context) (created bool, err error) {
	desc, err := t.describe(ctx)
	if isTableGone(err) {
		cctx, cancel := t.call(ctx, "CreateTable")
		_, err = t.api.CreateTable(cctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(t.name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrKey), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrKey), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		cancel()
		var inUse *types.ResourceInUseException
		switch {
		case errors.As(err, &inUse):
			// Another worker created it at the same time.
		case err != nil:
			return false, fmt.Errorf("create lease table %q: %w", t.name, err)
		default:
			created = true
		}
		desc, err = t.describe(ctx)
	}
	// A new table takes a few seconds to become active on AWS.
	for err == nil && desc.TableStatus != types.TableStatusActive {
		if desc.TableStatus != types.TableStatusCreating && desc.TableStatus != types.TableStatusUpdating {
			return created, fmt.Errorf("lease table %q is %s", t.name, desc.TableStatus)
		}
		select {
		case <-ctx.Done():
			return created, ctx.Err()
		case <-time.After(time.Second):
		}
		desc, err = t.describe(ctx)
	}
	if err != nil {
		return created, fmt.Errorf("describe lease table %q: %w", t.name, err)
	}
	if ks := desc.KeySchema; len(ks) != 1 || aws.ToString(ks[0].AttributeName) != attrKey {
		names := make([]string, 0, len(ks))
		for _, k := range ks {
			names = append(names, aws.ToString(k.AttributeName))
		}
		return created, fmt.Errorf("lease table %q is keyed by %s, want %s alone: is it another application's table?", t.name, strings.Join(names, ", "), attrKey)
	}
	return created, nil
}

func (t *table) describe(ctx context.Context) (*types.TableDescription, error) {
	cctx, cancel := t.call(ctx, "DescribeTable")
	defer cancel()
	out, err := t.api.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.name)})
	if err != nil {
		return nil, err
	}
	if out.Table == nil {
		return nil, errors.New("no table description in the answer")
	}
	return out.Table, nil
}

// scan reads every item of the table, with strongly consistent reads so
// that a counter just written is seen.
func (t *table) scan(ctx context.Context) ([]map[string]types.AttributeValue, error) {
	var all []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		cctx, cancel := t.call(ctx, "Scan")
		out, err := t.api.Scan(cctx, &dynamodb.ScanInput{
			TableName:         aws.String(t.name),
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("scan lease table %q: %w", t.name, err)
		}
		all = append(all, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return all, nil
		}
		start = out.LastEvaluatedKey
	}
}

// put writes a whole item if no item has its key, and reports whether it
// did (false: one exists already).
func (t *table) put(ctx context.Context, av map[string]types.AttributeValue) (bool, error) {
	cctx, cancel := t.call(ctx, "PutItem")
	defer cancel()
	_, err := t.api.PutItem(cctx, &dynamodb.PutItemInput{
		TableName:                aws.String(t.name),
		Item:                     av,
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": attrKey},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		key := ""
		if s, ok := av[attrKey].(*types.AttributeValueMemberS); ok {
			key = s.Value
		}
		return false, fmt.Errorf("put lease %q: %w", key, err)
	}
	return true, nil
}

// update is the one conditional write of a lease: if leaseCounter is still
// expect (nil: the attribute is missing), it sets leaseCounter to next, the
// attributes of set, and removes those of remove. It returns the item as
// written, or an *errConflict holding the item as found.
func (t *table) update(ctx context.Context, key string, expect types.AttributeValue, next int64,
	set map[string]types.AttributeValue, remove ...string) (map[string]types.AttributeValue, error) {
	names := map[string]string{"#c": attrCounter}
	values := map[string]types.AttributeValue{":next": number(next)}
	exprs := []string{"#c = :next"}
	// Sorted, so that the expression is the same for the same update.
	for i, name := range slices.Sorted(maps.Keys(set)) {
		n, v := fmt.Sprintf("#s%d", i), fmt.Sprintf(":s%d", i)
		names[n], values[v] = name, set[name]
		exprs = append(exprs, n+" = "+v)
	}
	expr := "SET " + strings.Join(exprs, ", ")
	if len(remove) > 0 {
		var rs []string
		for i, name := range remove {
			n := fmt.Sprintf("#r%d", i)
			names[n] = name
			rs = append(rs, n)
		}
		expr += " REMOVE " + strings.Join(rs, ", ")
	}
	cond := "attribute_exists(#k) AND attribute_not_exists(#c)"
	if expect == nil {
		names["#k"] = attrKey
	} else {
		cond = "#c = :expect"
		values[":expect"] = expect
	}
	cctx, cancel := t.call(ctx, "UpdateItem")
	defer cancel()
	out, err := t.api.UpdateItem(cctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(t.name),
		Key:                                 map[string]types.AttributeValue{attrKey: str(key)},
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return nil, &errConflict{key: key}
		}
		return nil, &errConflict{key: key, old: ccf.Item}
	}
	if err != nil {
		return nil, fmt.Errorf("update lease %q: %w", key, err)
	}
	return out.Attributes, nil
}

// remove deletes a lease item if its counter is still expect.
func (t *table) remove(ctx context.Context, key string, expect types.AttributeValue) error {
	in := &dynamodb.DeleteItemInput{
		TableName:                aws.String(t.name),
		Key:                      map[string]types.AttributeValue{attrKey: str(key)},
		ConditionExpression:      aws.String("attribute_not_exists(#c)"),
		ExpressionAttributeNames: map[string]string{"#c": attrCounter},
	}
	if expect != nil {
		in.ConditionExpression = aws.String("#c = :expect")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":expect": expect}
	}
	cctx, cancel := t.call(ctx, "DeleteItem")
	defer cancel()
	_, err := t.api.DeleteItem(cctx, in)
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("delete lease %q: %w", key, err)
	}
	return nil
}
