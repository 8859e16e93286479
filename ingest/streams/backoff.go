package streams

import (
	"context"
	"time"

	"github.com/jpillora/backoff"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// newBackoff returns the exponential backoff of a retry loop (see
// shards.NewBackoff).
func newBackoff(base, max time.Duration) *backoff.Backoff { return shards.NewBackoff(base, max) }

// sleep waits for d or until ctx is done, and reports whether the whole
// wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool { return shards.Sleep(ctx, d) }
