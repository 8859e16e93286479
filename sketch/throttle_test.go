package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// throttledTruth is the exact throttled calls per class and key, by slot
// number (Unix time / slot length).
type throttledTruth map[int64]map[[2]string]uint64

func (tt throttledTruth) add(slot int64, c traffic.Class, key string) {
	if tt[slot] == nil {
		tt[slot] = map[[2]string]uint64{}
	}
	tt[slot][[2]string{c.String(), key}]++
}

// window sums the slots from..to.
func (tt throttledTruth) window(from, to int64) map[[2]string]uint64 {
	out := map[[2]string]uint64{}
	for s, m := range tt {
		if s < from || s > to {
			continue
		}
		for k, n := range m {
			out[k] += n
		}
	}
	return out
}

// checkThrottleBounds checks a class's ThrottleStats against the truth:
// every key listed within its bounds, every key not listed within Error,
// the calls by cause adding up to the calls.
func checkThrottleBounds(t *testing.T, what string, ts *TableSnapshot, truth map[[2]string]uint64) (exact bool) {
	t.Helper()
	exact = true
	for c := range traffic.Class(traffic.NumClasses) {
		st := &ts.Classes[c].Throttled
		var want, byCause uint64
		for k, n := range truth {
			if k[0] == c.String() {
				want += n
			}
		}
		for _, n := range st.Causes {
			byCause += n
		}
		if st.Events != want || byCause != want {
			t.Errorf("%s %s: %d throttled calls, %d by cause, want %d", what, c, st.Events, byCause, want)
		}
		listed := map[string]bool{}
		for i, k := range st.Keys {
			n := truth[[2]string{c.String(), k.Key}]
			if k.Count > n || k.Max < n || k.Count == 0 {
				t.Errorf("%s %s: key %s listed within %d to %d, truth %d", what, c, k.Key, k.Count, k.Max, n)
			}
			if i > 0 && compareKeyCounts(st.Keys[i-1], k) > 0 {
				t.Errorf("%s %s: keys not ranked: %v before %v", what, c, st.Keys[i-1], k)
			}
			listed[k.Key] = true
			exact = exact && k.Count == k.Max
		}
		for k, n := range truth {
			if k[0] == c.String() && !listed[k[1]] && n > st.Error {
				t.Errorf("%s %s: key %s not listed with %d calls, over the bound %d", what, c, k[1], n, st.Error)
			}
		}
		exact = exact && st.Error == 0
	}
	return exact
}

// TestThrottledKeysBounded feeds throttled calls of many shapes (a few
// keys, a long tail past the keys kept, a heavy key among thousands, both
// classes), through a live window that rotates and expires, and checks
// every snapshot against exact counts: the keys listed within their
// bounds, the others within the bound of what is not listed, exact while
// no more keys were throttled than are kept.
func TestThrottledKeysBounded(t *testing.T) {
	cases := []struct {
		name      string
		keys      int
		heavy     float64 // share of the calls on key 0
		perSecond int
		exact     bool // no more keys than kept: exact counts
	}{
		{"few keys", 40, 0, 50, true},
		{"long tail", 5000, 0, 150, false},
		{"one heavy key among thousands", 5000, 0.2, 150, false},
		{"a heavy key and a few", 30, 0.5, 100, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			now := t0
			s := newTestStore(t, cfg, func() time.Time { return now })
			slotNanos := int64(cfg.Window) / int64(cfg.SubWindows)
			truth := throttledTruth{}
			rng := rand.New(rand.NewPCG(uint64(tc.keys), 9))
			for sec := range 150 {
				now = t0.Add(time.Duration(sec) * time.Second)
				var batch []traffic.Event
				for i := range tc.perSecond {
					k := rng.IntN(tc.keys)
					if rng.Float64() < tc.heavy {
						k = 0
					}
					c := traffic.Class(i % 2)
					at := now.Add(time.Duration(i) * time.Second / time.Duration(tc.perSecond))
					e := traffic.Event{Table: "t", PK: keyName(k), Class: c, Time: at, Source: "test", Throttled: true,
						ThrottleReason: traffic.MakeThrottleReason(k%3 == 0, c, traffic.ThrottleLimit(k%5))}
					batch = append(batch, e)
					truth.add(at.UnixNano()/slotNanos, c, e.PK)
				}
				put(t, s, batch...)
				if sec%25 != 24 {
					continue
				}
				head := now.UnixNano() / slotNanos
				ts := findTable(t, s.Snapshot(), "t", "")
				exact := checkThrottleBounds(t, fmt.Sprintf("second %d", sec), &ts, truth.window(head-int64(cfg.SubWindows)+1, head))
				if tc.exact && !exact {
					t.Errorf("second %d: %d keys, at most %d kept: counts not exact", sec, tc.keys, cfg.MaxThrottledKeys)
				}
				if tc.heavy > 0 && (len(ts.Classes[0].Throttled.Keys) == 0 || ts.Classes[0].Throttled.Keys[0].Key != keyName(0)) {
					t.Errorf("second %d: the heavy key is not the first listed: %v", sec, ts.Classes[0].Throttled.Keys[:min(3, len(ts.Classes[0].Throttled.Keys))])
				}
			}
		})
	}
}

// TestThrottledKeysMergeBounded merges stores fed parts of one input
// (analyze mode, one slot), and replicas' summaries (Combine), and checks
// the bounds against exact counts.
func TestThrottledKeysMergeBounded(t *testing.T) {
	for _, keys := range []int{50, 3000} {
		t.Run(fmt.Sprint(keys, "keys"), func(t *testing.T) {
			cfg := Config{Window: 0, MaxThrottledKeys: 64}
			parts := make([]*Store, 3)
			for i := range parts {
				parts[i] = newTestStore(t, cfg, nil)
			}
			truth := map[[2]string]uint64{}
			rng := rand.New(rand.NewPCG(uint64(keys), 3))
			sevens := 0
			for i := range 20_000 {
				k := rng.IntN(keys)
				if i%4 == 0 {
					k = 7 // a key throttled more than the rest
				}
				e := traffic.Event{Table: "t", PK: keyName(k), Class: traffic.Write, Time: t0.Add(time.Duration(i) * time.Millisecond),
					Source: "test", Throttled: true}
				part := parts[rng.IntN(len(parts))]
				if k == 7 {
					// Its first few calls in one part, where the others
					// crowd it out, the rest in another: its count adds
					// what the first part may have lost of it.
					part = parts[1-min(sevens/5, 1)]
					sevens++
				}
				put(t, part, e)
				truth[[2]string{"write", e.PK}]++
			}
			var replicas []Replica
			for i, p := range parts {
				replicas = append(replicas, Replica{Worker: fmt.Sprint("w", i), Summary: p.Summary(false)})
			}
			merged := newTestStore(t, cfg, nil)
			for _, p := range parts {
				if err := merged.Merge(p); err != nil {
					t.Fatal(err)
				}
			}
			ts := findTable(t, merged.Snapshot(), "t", "")
			exact := checkThrottleBounds(t, "merged", &ts, truth)
			if keys <= 64 && !exact {
				t.Errorf("merged: %d keys in stores that keep 64: not exact", keys)
			}
			if w := ts.Classes[traffic.Write].Throttled.Keys; len(w) == 0 || w[0].Key != keyName(7) {
				t.Errorf("merged: the most throttled key is not first: %v", w[:min(3, len(w))])
			}
			combined := Combine(replicas[0], replicas[1:], 0)
			cts := findTable(t, combined.Snapshot, "t", "")
			checkThrottleBounds(t, "combined", &cts, truth)
		})
	}
}
