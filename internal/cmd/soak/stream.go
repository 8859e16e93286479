package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/time/rate"
)

// streamTable is the DynamoDB Local table whose stream the daemon reads.
const streamTable = "soak-orders"

// hotKey is the key that turns hot and cools down again.
const hotKey = "HOT"

// writes writes to the table as an application would: a steady background
// over many keys, and, during each hot phase, one key many times a second
// (the hot key). It keeps the writes that succeeded and the phases.
type writes struct {
	db              *dynamodb.Client
	background, hot float64 // writes per second
	keys            int
	on, off         time.Duration // a hot phase, the pause after it
	written, failed atomic.Int64
	seq             atomic.Int64 // the value each write sets, new every time
	mu              sync.Mutex
	phases          []phase
	firstErr        string
}

// phase is a hot phase as it was run.
type phase struct{ start, end time.Time }

func createTable(ctx context.Context, db *dynamodb.Client) error {
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(streamTable),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("customer"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("customer"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
	}); err != nil {
		return fmt.Errorf("create table %s: %w", streamTable, err)
	}
	return nil
}

// run writes until ctx is done: the background from the start, the hot
// key in phases of w.on every w.on+w.off, the first after w.off.
func (w *writes) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		lim := rate.NewLimiter(rate.Limit(w.background), 1)
		for i := 0; lim.Wait(ctx) == nil; i++ {
			w.put(ctx, "C-"+strconv.Itoa(i%w.keys))
		}
	})
	wg.Go(func() {
		lim := rate.NewLimiter(rate.Limit(w.hot), 1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(w.off):
			}
			p := phase{start: time.Now()}
			end := time.After(w.on)
		hot:
			for lim.Wait(ctx) == nil {
				select {
				case <-end:
					break hot
				default:
				}
				w.put(ctx, hotKey)
			}
			p.end = time.Now()
			w.mu.Lock()
			w.phases = append(w.phases, p)
			w.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
		}
	})
	wg.Wait()
}

// put writes the key's item with a value no earlier write set: DynamoDB
// Streams writes no record for a put that changes nothing in the item
// (docs/streams.md, What is counted), so a put of an unchanged item would be a
// write the stream cannot count.
func (w *writes) put(ctx context.Context, key string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := w.db.PutItem(cctx, &dynamodb.PutItemInput{
		TableName: aws.String(streamTable),
		Item: map[string]types.AttributeValue{
			"customer": &types.AttributeValueMemberS{Value: key},
			"n":        &types.AttributeValueMemberN{Value: strconv.FormatInt(w.seq.Add(1), 10)},
		},
	})
	if err != nil {
		w.failed.Add(1)
		w.mu.Lock()
		if w.firstErr == "" {
			w.firstErr = err.Error()
		}
		w.mu.Unlock()
		return
	}
	w.written.Add(1)
}
