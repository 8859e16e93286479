package shards

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// Book keeps each stream's latest listing for the lease coordinator: it
// lists shards from what the stream readers found, without calling the
// stream's API again. Safe for concurrent use.
type Book struct {
	mu       sync.Mutex
	byStream map[string][]lease.Shard
}

var _ lease.ShardLister = (*Book)(nil)

// NewBook returns an empty Book.
func NewBook() *Book { return &Book{byStream: map[string][]lease.Shard{}} }

// Set records a stream's listing.
func (b *Book) Set(stream string, list []lease.Shard) {
	b.mu.Lock()
	b.byStream[stream] = list
	b.mu.Unlock()
}

// Remove forgets a stream no longer read (read to its end, or gone): its
// leases are left alone.
func (b *Book) Remove(stream string) {
	b.mu.Lock()
	delete(b.byStream, stream)
	b.mu.Unlock()
}

// ListShards implements lease.ShardLister.
func (b *Book) ListShards(context.Context) ([]lease.Shard, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []lease.Shard
	for _, s := range slices.Sorted(maps.Keys(b.byStream)) {
		out = append(out, b.byStream[s]...)
	}
	return out, nil
}
