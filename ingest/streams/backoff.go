package streams

import (
	"context"
	"time"

	"github.com/jpillora/backoff"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// newBackoff returns the exponential backoff of a retry loop: the first
// wait is base, each next one a random wait between base and twice the
// previous ceiling, never above max, so that readers throttled together
// do not retry together. It is github.com/jpillora/backoff (with jitter);
// Duration gives the next wait, Reset starts over after a success.
func newBackoff(base, max time.Duration) *backoff.Backoff {
	return &backoff.Backoff{Min: base, Max: max, Factor: 2, Jitter: true}
}

// sleep waits for d or until ctx is done, and reports whether the whole
// wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool { return shards.Sleep(ctx, d) }
