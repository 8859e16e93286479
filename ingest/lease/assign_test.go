package lease

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestChoose(t *testing.T) {
	// leases builds n candidates owned by owner ("" unowned), live or not.
	leases := func(prefix string, n int, owner string, live, ready bool) []candidate {
		var out []candidate
		for i := range n {
			out = append(out, candidate{key: fmt.Sprintf("%s%d", prefix, i), owner: owner, live: live, ready: ready})
		}
		return out
	}
	join := func(parts ...[]candidate) []candidate { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name    string
		cands   []candidate
		take    int
		takeAll []string // when set, exactly these, in this order of class
		steal   string   // victim, "" for none
		target  int
		workers int
	}{
		{name: "nothing to take", workers: 1},
		{name: "alone: takes every free lease", cands: leases("u", 5, "", false, true), take: 5, target: 5, workers: 1},
		{name: "shares with a live worker", cands: join(leases("a", 3, "a", true, true), leases("u", 3, "", false, true)), take: 3, target: 3, workers: 2},
		{name: "rounds the share up", cands: join(leases("a", 2, "a", true, true), leases("u", 3, "", false, true)), take: 3, target: 3, workers: 2},
		{name: "holds its share already", cands: join(leases("me", 3, "me", true, true), leases("a", 2, "a", true, true), leases("u", 1, "", false, true)), target: 3, workers: 2},
		{
			name:    "unowned before expired",
			cands:   join(leases("a", 2, "a", true, true), leases("x", 2, "gone", false, true), leases("u", 1, "", false, true)),
			takeAll: []string{"u0", "x", "x"}, take: 3, target: 3, workers: 2,
		},
		{name: "not ready and not live: not counted", cands: join(leases("a", 2, "a", true, true), leases("c", 4, "", false, false)), target: 1, workers: 2, steal: "a"},
		{name: "steals one from the busiest", cands: leases("a", 4, "a", true, true), steal: "a", target: 2, workers: 2},
		{name: "no steal when one apart", cands: join(leases("a", 3, "a", true, true), leases("me", 2, "me", true, true)), target: 3, workers: 2},
		{
			name:  "steals from the busiest of three",
			cands: join(leases("a", 4, "a", true, true), leases("b", 2, "b", true, true)), steal: "a", target: 2, workers: 3,
		},
		{name: "never steals a lease that is not ready", cands: leases("a", 4, "a", true, false), target: 2, workers: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := choose("me", tc.cands, rand.New(rand.NewPCG(1, 2)))
			if len(p.take) != tc.take || p.victim != tc.steal || p.target != tc.target || p.workers != tc.workers {
				t.Fatalf("choose = %+v, want %d takes, steal from %q, target %d, %d workers", p, tc.take, tc.steal, tc.target, tc.workers)
			}
			if (p.steal != "") != (tc.steal != "") {
				t.Errorf("steal %q from %q", p.steal, p.victim)
			}
			if tc.takeAll != nil {
				for i, prefix := range tc.takeAll {
					if len(p.take[i]) < len(prefix) || p.take[i][:len(prefix)] != prefix {
						t.Errorf("take[%d] = %q, want %s…", i, p.take[i], prefix)
					}
				}
			}
		})
	}
}

// Run rounds of choose over a simulated table until nothing moves: any
// number of workers joining a table of any size ends with shares that
// differ by at most one, each lease held by one worker.
func TestChooseConverges(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, size := range [][2]int{{1, 1}, {7, 3}, {12, 3}, {5, 8}, {40, 6}} {
		leases, workers := size[0], size[1]
		owner := make([]string, leases)
		rounds := 0
		for moved := true; moved; rounds++ {
			if rounds > 10*leases+10 {
				t.Fatalf("%d leases, %d workers: no convergence after %d rounds: %v", leases, workers, rounds, owner)
			}
			moved = false
			for w := range workers {
				me := fmt.Sprintf("w%d", w)
				var cands []candidate
				for i, o := range owner {
					cands = append(cands, candidate{key: fmt.Sprint(i), owner: o, live: o != "", ready: true})
				}
				p := choose(me, cands, rnd)
				for _, k := range append(p.take, p.steal) {
					if k == "" {
						continue
					}
					var i int
					fmt.Sscan(k, &i)
					owner[i], moved = me, true
				}
			}
		}
		counts := map[string]int{}
		for _, o := range owner {
			counts[o]++
		}
		lo, hi := leases, 0
		for w := range workers {
			c := counts[fmt.Sprintf("w%d", w)]
			lo, hi = min(lo, c), max(hi, c)
		}
		if counts[""] != 0 || hi-lo > 1 {
			t.Errorf("%d leases, %d workers: shares %v after %d rounds", leases, workers, counts, rounds)
		}
	}
}
