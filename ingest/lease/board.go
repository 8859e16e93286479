package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
)

// Summary items: one per worker, in the lease table beside the leases,
// holding what the worker publishes for the others (hotkeyd: its window's
// per-table summary). Their entityType is not LEASE, so the coordinators
// leave them alone, and their leaseKey starts with SummaryKeyPrefix, which
// no stream ARN or KCL stream identifier does: neither a coordinator nor a
// person reading the table mistakes one for a shard's lease.
const (
	// SummaryKeyPrefix starts the leaseKey of a worker's summary item; the
	// worker id follows.
	SummaryKeyPrefix = "hotkeyd#summary#"
	// EntitySummary is the entityType of a summary item.
	EntitySummary = "HOTKEYD_SUMMARY"
	// MaxSummaryBytes bounds a summary's payload: DynamoDB items hold at
	// most 400 KB, attribute names included.
	MaxSummaryBytes = 380_000

	attrWorker    = "workerId"
	attrSeq       = "summarySeq"
	attrPublished = "publishedAt" // Unix milliseconds, the writer's clock
	attrExpires   = "expiresAt"   // Unix seconds: a TTL attribute, if the operator enables TTL on it
	attrPayload   = "summary"     // B
)

// staleDeleteAfter is how long a summary must stand still, in failover
// times, before a worker deletes it: its writer is long gone.
const staleDeleteAfter = 30

// BoardConfig says how a Board publishes and reads, and what a peer's
// payload decodes to: T (hotkeyd: *sketch.Summary, whose codec the caller
// passes in, so that this package knows nothing of sketches).
type BoardConfig[T any] struct {
	// Every is the pace of publishing and reading (default FailoverTime/3,
	// between one second and FailoverTime/2).
	Every time.Duration
	// Publish returns the payload to publish, at most MaxSummaryBytes
	// bytes; nil publishes nothing this time.
	Publish func() ([]byte, error)
	// Decode turns a peer's payload into the value Peers returns; an error
	// makes the summary ignored, logged once per worker and error.
	Decode func([]byte) (T, error)
}

// Board publishes this worker's summary in the lease table and reads the
// other workers'. A peer's summary is live while its sequence number moves:
// it goes stale once it has not moved for FailoverTime on this worker's
// clock (at first sight, when its writer's clock says it was written more
// than FailoverTime ago), the same rule as a lease's expiry.
type Board[T any] struct {
	c   *Coordinator
	cfg BoardConfig[T]
	key string
	rnd *rand.Rand

	mu       sync.Mutex
	peers    map[string]*peerSummary[T] // by worker
	reported map[string]string          // item key → problem last reported
	seq      int64
	failing  bool
}

// peerSummary is a peer's summary as last read.
type peerSummary[T any] struct {
	seq     string
	changed time.Time // when this worker saw seq move; zero: stale at first sight
	value   T
	decoded bool // value holds the payload decoded; false when it cannot be
}

// Peer is a live peer's decoded summary and how long ago it last moved.
type Peer[T any] struct {
	Worker string
	Value  T
	Age    time.Duration
}

// NewBoard returns a Board of c's worker in its lease table.
func NewBoard[T any](c *Coordinator, cfg BoardConfig[T]) (*Board[T], error) {
	if cfg.Publish == nil || cfg.Decode == nil {
		return nil, errors.New("summary board: Publish and Decode are required")
	}
	if cfg.Every <= 0 {
		cfg.Every = c.every
	}
	cfg.Every = min(max(cfg.Every, time.Second), max(c.cfg.FailoverTime/2, time.Second))
	c.m.peerAge.WithLabelValues(c.cfg.Table)
	c.m.peers.WithLabelValues(c.cfg.Table)
	return &Board[T]{
		c: c, cfg: cfg, key: SummaryKeyPrefix + c.cfg.WorkerID,
		rnd:   rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		peers: map[string]*peerSummary[T]{}, reported: map[string]string{},
	}, nil
}

// Run publishes and reads every BoardConfig.Every (±10 %) until ctx is
// done, then deletes this worker's summary so that the others stop counting
// it at once.
func (b *Board[T]) Run(ctx context.Context) error {
	// The coordinator makes the table: publish once it has used it.
	for !b.c.used() {
		if !pause.For(ctx, 100*time.Millisecond) {
			return nil
		}
	}
	for {
		b.round(ctx)
		wait := b.cfg.Every - b.cfg.Every/10 + time.Duration(b.rnd.Int64N(int64(b.cfg.Every/5)+1))
		if !pause.For(ctx, wait) {
			break
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cctx, ccancel := b.c.db.call(dctx, "DeleteItem")
	defer ccancel()
	if _, err := b.c.db.api.DeleteItem(cctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(b.c.cfg.Table),
		Key:       map[string]types.AttributeValue{attrKey: str(b.key)},
	}); err != nil {
		b.c.log.Info("could not delete this worker's summary; the others drop it once it is stale", zap.Error(err))
	}
	return nil
}

// round publishes, then reads.
func (b *Board[T]) round(ctx context.Context) {
	err := b.publish(ctx)
	if err == nil {
		err = b.read(ctx)
	}
	if ctx.Err() != nil {
		return
	}
	b.updateMetrics()
	b.mu.Lock()
	was := b.failing
	b.failing = err != nil
	b.mu.Unlock()
	switch {
	case err != nil && !was:
		b.c.log.Warn("cannot exchange summaries through the lease table; judging on the last ones read until they are stale", zap.Error(err))
		b.c.report(err)
	case err != nil:
		b.c.report(err)
	case was:
		b.c.log.Info("summary exchange usable again")
	}
}

func (b *Board[T]) publish(ctx context.Context) error {
	payload, err := b.cfg.Publish()
	if err != nil {
		return fmt.Errorf("make summary: %w", err)
	}
	if payload == nil {
		return nil
	}
	if len(payload) > MaxSummaryBytes {
		return fmt.Errorf("summary of %d bytes is over %d", len(payload), MaxSummaryBytes)
	}
	b.seq++
	now := time.Now()
	cctx, cancel := b.c.db.call(ctx, "PutItem")
	defer cancel()
	_, err = b.c.db.api.PutItem(cctx, &dynamodb.PutItemInput{
		TableName: aws.String(b.c.cfg.Table),
		Item: map[string]types.AttributeValue{
			attrKey:        str(b.key),
			attrEntityType: str(EntitySummary),
			attrWorker:     str(b.c.cfg.WorkerID),
			attrSeq:        number(b.seq),
			attrPublished:  number(now.UnixMilli()),
			attrExpires:    number(now.Add(staleDeleteAfter * b.c.cfg.FailoverTime).Unix()),
			attrPayload:    &types.AttributeValueMemberB{Value: payload},
		},
	})
	if isTableGone(err) {
		b.c.tableGone()
	}
	if err != nil {
		return fmt.Errorf("put summary %q: %w", b.key, err)
	}
	return nil
}

// read scans the table for the other workers' summaries.
func (b *Board[T]) read(ctx context.Context) error {
	raw, err := b.c.db.scan(ctx)
	if isTableGone(err) {
		b.c.tableGone()
	}
	if err != nil {
		return err
	}
	now := b.c.now()
	wall := time.Now()
	seen := map[string]bool{}
	var stale []staleItem
	for _, av := range raw {
		et, ok := av[attrEntityType].(*types.AttributeValueMemberS)
		if !ok || et.Value != EntitySummary {
			continue
		}
		key, _ := av[attrKey].(*types.AttributeValueMemberS)
		if key == nil || key.Value == b.key {
			continue
		}
		worker, seq, published, payload, problem := parseSummary(key.Value, av)
		if problem != "" {
			b.reportOnce(key.Value, problem)
			continue
		}
		b.reportOnce(key.Value, "")
		seen[worker] = true
		b.mu.Lock()
		p := b.peers[worker]
		switch {
		case p == nil || p.seq != seq:
			np := &peerSummary[T]{seq: seq, changed: now}
			if p == nil && wall.Sub(published) > b.c.cfg.FailoverTime {
				np.changed = time.Time{} // written long ago: stale until it moves
			}
			// Decoded outside the lock, and swapped in whole: meanwhile
			// Peers still returns the peer's previous summary, so that a
			// judgement made during a decode counts every live peer.
			b.mu.Unlock()
			v, derr := b.cfg.Decode(payload)
			np.value, np.decoded = v, derr == nil
			b.mu.Lock()
			b.peers[worker] = np
			b.mu.Unlock()
			if derr != nil {
				b.reportOnce(key.Value, "summary cannot be read: "+derr.Error())
				continue
			}
			b.reportOnce(key.Value, "")
		default:
			if !p.changed.IsZero() && now.Sub(p.changed) > staleDeleteAfter*b.c.cfg.FailoverTime ||
				p.changed.IsZero() && wall.Sub(published) > staleDeleteAfter*b.c.cfg.FailoverTime {
				stale = append(stale, staleItem{key.Value, av[attrSeq]})
			}
			b.mu.Unlock()
		}
	}
	b.mu.Lock()
	for w := range b.peers {
		if !seen[w] {
			delete(b.peers, w)
		}
	}
	b.mu.Unlock()
	for _, it := range stale {
		b.deleteStale(ctx, it)
	}
	return nil
}

// staleItem is a summary item long stale, and its sequence number as read.
type staleItem struct {
	key string
	seq types.AttributeValue
}

// deleteStale deletes a summary whose writer is long gone, if it has not
// moved since it was read.
func (b *Board[T]) deleteStale(ctx context.Context, it staleItem) {
	cctx, cancel := b.c.db.call(ctx, "DeleteItem")
	defer cancel()
	_, err := b.c.db.api.DeleteItem(cctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(b.c.cfg.Table),
		Key:                       map[string]types.AttributeValue{attrKey: str(it.key)},
		ConditionExpression:       aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": attrSeq},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": it.seq},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		b.c.log.Info("deleted the summary of a worker gone for long", zap.String("item", it.key))
	case errors.As(err, &ccf):
	default:
		b.c.report(fmt.Errorf("delete stale summary %q: %w", it.key, err))
	}
}

// parseSummary reads a summary item, or says what is wrong with it.
func parseSummary(key string, av map[string]types.AttributeValue) (worker, seq string, published time.Time, payload []byte, problem string) {
	var problems []string
	w, ok := av[attrWorker].(*types.AttributeValueMemberS)
	switch {
	case !ok:
		problems = append(problems, attrWorker+" is "+typeName(av[attrWorker])+", want a string")
	case key != SummaryKeyPrefix+w.Value:
		problems = append(problems, fmt.Sprintf("%s %q does not match the key", attrWorker, w.Value))
	default:
		worker = w.Value
	}
	if n, ok := av[attrSeq].(*types.AttributeValueMemberN); ok {
		seq = n.Value
	} else {
		problems = append(problems, attrSeq+" is "+typeName(av[attrSeq])+", want a number")
	}
	if n, ok := av[attrPublished].(*types.AttributeValueMemberN); ok {
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			problems = append(problems, attrPublished+" is not a whole number")
		}
		published = time.UnixMilli(ms)
	} else {
		problems = append(problems, attrPublished+" is "+typeName(av[attrPublished])+", want a number")
	}
	if p, ok := av[attrPayload].(*types.AttributeValueMemberB); ok {
		payload = p.Value
	} else {
		problems = append(problems, attrPayload+" is "+typeName(av[attrPayload])+", want binary")
	}
	return worker, seq, published, payload, strings.Join(problems, "; ")
}

// reportOnce logs and counts a summary item's problem once, until it
// changes; "" says the item is fine again.
func (b *Board[T]) reportOnce(key, problem string) {
	b.mu.Lock()
	last, known := b.reported[key]
	b.reported[key] = problem
	b.mu.Unlock()
	if problem == "" || (known && last == problem) {
		return
	}
	b.c.log.Warn("ignoring a worker summary in the lease table", zap.String("item", key), zap.String("problem", problem))
	b.c.report(fmt.Errorf("summary item %q: %s", key, problem))
}

// Every returns the pace of publishing and reading.
func (b *Board[T]) Every() time.Duration { return b.cfg.Every }

// Peers returns the live peers' summaries, sorted by worker id; stale
// ones, and those whose payload cannot be decoded, are left out. While a
// peer's newer summary is being decoded, its previous one is returned.
func (b *Board[T]) Peers() []Peer[T] {
	now := b.c.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Peer[T]
	for _, w := range slices.Sorted(maps.Keys(b.peers)) {
		p := b.peers[w]
		if !p.decoded || p.changed.IsZero() || now.Sub(p.changed) > b.c.cfg.FailoverTime {
			continue
		}
		out = append(out, Peer[T]{Worker: w, Value: p.value, Age: now.Sub(p.changed)})
	}
	return out
}

// updateMetrics sets the live peers and the age of the oldest.
func (b *Board[T]) updateMetrics() {
	peers := b.Peers()
	var oldest time.Duration
	for _, p := range peers {
		oldest = max(oldest, p.Age)
	}
	b.c.m.peers.WithLabelValues(b.c.cfg.Table).Set(float64(len(peers)))
	b.c.m.peerAge.WithLabelValues(b.c.cfg.Table).Set(oldest.Seconds())
}
