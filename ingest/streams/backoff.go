package streams

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff computes exponential delays with full jitter (a uniformly random
// wait between 0 and min(max, base·2^attempt)), the scheme AWS recommends so
// that many readers throttled together do not retry together.
type backoff struct {
	base, max time.Duration
	attempt   int
}

// next returns the next delay and counts one more attempt.
func (b *backoff) next() time.Duration {
	ceil := b.base << min(b.attempt, 30)
	if ceil <= 0 || ceil > b.max {
		ceil = b.max
	}
	b.attempt++
	return time.Duration(rand.Int64N(int64(ceil)) + 1)
}

// reset starts over after a success.
func (b *backoff) reset() { b.attempt = 0 }

// sleep waits for d or until ctx is done, and reports whether the whole
// wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
