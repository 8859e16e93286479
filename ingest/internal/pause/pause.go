// Package pause holds the one context-aware wait of the readers: the
// shard engine and the lease coordinator both wait between calls, and a
// wait must end as soon as the reader is stopped.
package pause

import (
	"context"
	"time"
)

// For waits for d or until ctx is done, and reports whether the whole wait
// elapsed. A d of zero or less does not wait: it reports whether ctx is
// still live.
func For(ctx context.Context, d time.Duration) bool {
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
