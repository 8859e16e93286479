package shards

import (
	"time"

	"github.com/jpillora/backoff"
)

// Ready returns, in listing order, the shards of list that may start now:
// not finished, not running, and whose parents are all finished or no
// longer listed (trimmed away). A child therefore starts only once every
// record of its parents was read, so that a key's writes are counted in the
// order they were made, as the Kinesis Client Library does. A Kinesis
// shard made by a merge has two parents; a split's children, and every
// DynamoDB Streams shard, have one.
func Ready[S any](list []S, id func(S) string, parents func(S) []string, finished func(id string) bool, running map[string]bool) []S {
	listed := make(map[string]bool, len(list))
	for _, s := range list {
		listed[id(s)] = true
	}
	var out []S
next:
	for _, s := range list {
		if running[id(s)] || finished(id(s)) {
			continue
		}
		for _, p := range parents(s) {
			if p != "" && listed[p] && !finished(p) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// NewBackoff returns the exponential backoff of a retry loop: the first
// wait is base, each next one a random wait up to twice the previous,
// never above max, so that readers throttled together do not retry
// together (github.com/jpillora/backoff with jitter). Duration gives the
// next wait, Reset starts over after a success.
func NewBackoff(base, max time.Duration) *backoff.Backoff {
	return &backoff.Backoff{Min: base, Max: max, Factor: 2, Jitter: true}
}
