package analyze

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestAnalyzeThrottledKeysExact: throttled calls spread over more keys than
// the store counts per table and class (a long tail of users, a few a
// little more throttled, a tenant much more, reads and writes), in a
// shuffled input read on several workers: every key listed is exact and
// the list is the true top, ranked, with the count of the first key left
// out as the bound of the others.
func TestAnalyzeThrottledKeysExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		users int
	}{
		{"fewer keys than the store counts", 300},
		{"more keys than the store counts", 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.users), 5))
			truth := map[string]int{}
			var lines []hostLine
			add := func(pk, op string, throttled bool, sec int) {
				at := burstStart.Add(time.Duration(sec)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
				l := fmt.Sprintf(`{"ts":%q,"table":"users","pk":%q,"op":%q`, at.Format(time.RFC3339Nano), pk, op)
				if throttled {
					l += `,"throttled":true`
					truth[pk]++
				}
				lines = append(lines, hostLine{at, l + "}"})
			}
			for u := range tc.users {
				pk := fmt.Sprintf("USER#%d", u)
				calls := 3 + rng.IntN(9)
				for i := range calls {
					add(pk, "PutItem", rng.IntN(3) == 0, rng.IntN(120))
					if i%4 == 0 {
						add(pk, "GetItem", rng.IntN(5) == 0, rng.IntN(120))
					}
				}
			}
			for i := range 8 {
				// A few users throttled a little more than the tail.
				for range 10 + i%2 {
					add(fmt.Sprintf("USER#%d", i*97), "PutItem", true, rng.IntN(120))
				}
			}
			for range 2000 {
				add("TENANT#acme", "PutItem", rng.IntN(3) == 0, rng.IntN(120))
			}
			rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
			path := writeLines(t, t.TempDir(), "users.jsonl", lines)

			rep, _ := analyzeJSON(t, 3, "", path)
			if len(rep.Tables) != 1 {
				t.Fatalf("%d tables", len(rep.Tables))
			}
			got := rep.Tables[0]
			type kc struct {
				key string
				n   int
			}
			var want []kc
			for k, n := range truth {
				want = append(want, kc{k, n})
			}
			slices.SortFunc(want, func(a, b kc) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.key, b.key)) })
			if len(got.ThrottledKeys) == 0 {
				t.Fatal("no throttled keys listed")
			}
			for i, k := range got.ThrottledKeys {
				if k.CountMax != 0 || uint64(truth[k.Key]) != k.Count {
					t.Errorf("listed %s with %d (to %d), truth %d", k.Key, k.Count, k.CountMax, truth[k.Key])
				}
				if k.Count != uint64(want[i].n) {
					t.Errorf("rank %d: %s with %d, the true %d-th most throttled has %d (%s)", i, k.Key, k.Count, i+1, want[i].n, want[i].key)
				}
			}
			n := len(got.ThrottledKeys)
			if n < 20 && n < len(want) && want[n].n != want[n-1].n {
				t.Errorf("%d keys listed of the 20 asked, yet the next (%s, %d) is below the last listed", n, want[n].key, want[n].n)
			}
			if n < len(want) && got.ThrottledBound != uint64(want[n].n) {
				t.Errorf("bound of the keys not listed %d, want the next key's %d", got.ThrottledBound, want[n].n)
			}
			var total uint64
			for _, c := range got.Classes {
				total += c.Throttled
			}
			var all int
			for _, n := range truth {
				all += n
			}
			if total != uint64(all) {
				t.Errorf("classes' throttled calls %d, truth %d", total, all)
			}
		})
	}
}

// TestAnalyzeThrottledKeysExactAtAnyNumber throttles more distinct keys
// than one part of the inputs used to count exactly (2^18), read on one
// worker, with three keys throttled more than the rest: they are listed
// first with their exact counts, as exact (no upper bound), and the
// bound of the keys not listed is the tail's one call.
func TestAnalyzeThrottledKeysExactAtAnyNumber(t *testing.T) {
	const tail = 1<<18 + 10_000
	var lines []hostLine
	add := func(pk string, i int) {
		at := burstStart.Add(time.Duration(i%600) * time.Second)
		lines = append(lines, hostLine{at, fmt.Sprintf(`{"ts":%q,"table":"users","pk":%q,"op":"PutItem","throttled":true}`, at.Format(time.RFC3339), pk)})
	}
	for i := range tail {
		add(fmt.Sprintf("USER#%07d", i), i)
	}
	heavy := map[string]int{"TENANT#a": 40, "TENANT#b": 30, "TENANT#c": 20}
	for pk, n := range heavy {
		for i := range n {
			add(pk, i*7)
		}
	}
	path := writeLines(t, t.TempDir(), "users.jsonl", lines)
	rep, _ := analyzeJSON(t, 1, "", path)
	if len(rep.Tables) != 1 || len(rep.Tables[0].ThrottledKeys) < 3 {
		t.Fatalf("tables %d, want one with at least three throttled keys listed", len(rep.Tables))
	}
	got := rep.Tables[0]
	for i, want := range []string{"TENANT#a", "TENANT#b", "TENANT#c"} {
		k := got.ThrottledKeys[i]
		if k.Key != want || k.Count != uint64(heavy[want]) || k.CountMax != 0 {
			t.Errorf("rank %d: %s with %d (to %d), want %s with exactly %d", i, k.Key, k.Count, k.CountMax, want, heavy[want])
		}
	}
	if got.ThrottledBound != 1 {
		t.Errorf("bound of the keys not listed %d, want 1 (every other key was throttled once)", got.ThrottledBound)
	}
}
