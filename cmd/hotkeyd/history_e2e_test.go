package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// historyDaemon starts the daemon with HTTP ingest, a 20 s window and its
// history in dir.
func historyDaemon(t *testing.T, dir string) *testenv.Hotkeyd {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfgPath, []byte("window: 20s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfgPath, "--web.enable-ingest",
		"--web.ingest.rate-limit=0", "--history.path", dir)
}

// pumpStep is the step of pump's traffic: 20 steps a second of 30 WCU
// each for the hot key and as many spread over 40 other keys: the hot key
// takes 600 of 1200 WCU/s.
const pumpStep = 50 * time.Millisecond

// pump posts the table's traffic from now until stop says so, each line
// with its step's time (ts), hot taking half of it while hot returns true;
// it returns when stop does. The steps of a second of the clock go in one
// post as the second begins: the daemon judges a second as soon as the
// clock closes it, so that a step posted at its own time would have a
// twentieth of a second to land, and a loaded machine would leave seconds
// short of their traffic; posted as its second begins, it has the second.
func pump(t *testing.T, h *testenv.Hotkeyd, hotKey string, hot func(time.Time) bool, stop func(time.Time) bool) {
	t.Helper()
	next := time.Now().Truncate(pumpStep).Add(pumpStep)
	for i := 0; ; {
		time.Sleep(time.Until(next)) // pacing the traffic, not waiting for a result
		var body bytes.Buffer
		stopped := false
		for end := next.Truncate(time.Second).Add(time.Second); next.Before(end); next = next.Add(pumpStep) {
			if stopped = stop(next); stopped {
				break
			}
			ts := next.UTC().Format("2006-01-02T15:04:05.000Z")
			for range 6 {
				if hot(next) {
					fmt.Fprintf(&body, `{"ts":%q,"table":"orders","pk":%q,"op":"PutItem","units":5}`+"\n", ts, hotKey)
				}
				fmt.Fprintf(&body, `{"ts":%q,"table":"orders","pk":"USER#%d","op":"PutItem","units":5}`+"\n", ts, i%40)
				i++
			}
		}
		if body.Len() > 0 {
			if code, _, msg := post(t, h, body.Bytes(), nil); code != 200 {
				t.Fatalf("POST /api/v1/events: %d %s", code, msg)
			}
		}
		if stopped {
			return
		}
	}
}

// incidents reads /api/v1/incidents over the last hour.
func incidents(t *testing.T, h *testenv.Hotkeyd) []history.Incident {
	t.Helper()
	code, body := h.Get(t, "/api/v1/incidents?from="+url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)))
	var out struct{ Incidents []history.Incident }
	if err := json.Unmarshal(body, &out); code != 200 || err != nil {
		t.Fatalf("/api/v1/incidents: %d %s", code, body)
	}
	return out.Incidents
}

// incidentOf returns the hot-key incident of key, or nil.
func incidentOf(incs []history.Incident, key string) *history.Incident {
	for i := range incs {
		if incs[i].Table == "orders" && len(incs[i].Keys) > 0 && incs[i].Keys[0] == key {
			return &incs[i]
		}
	}
	return nil
}

// TestHistorySurvivesRestarts is the scenario: a key takes half
// of 1200 WCU/s for 70 s over HTTP ingest, then goes quiet; after a
// SIGTERM and a restart on the same --history.path, /api/v1/incidents
// lists it, closed, with its start within 5 s and its peak within 15 %,
// and /api/v1/history has it. Then another key is hot for 90 s and the
// daemon is killed (SIGKILL): after a restart that incident is still
// listed with its start right.
func TestHistorySurvivesRestarts(t *testing.T) {
	t.Parallel() // a process and a history of its own, on a port of its own
	dir := t.TempDir()
	h := historyDaemon(t, dir)
	began := time.Now()
	hotFrom := began.Truncate(time.Second).Add(5 * time.Second)
	hotTo := hotFrom.Add(70 * time.Second)
	during := func(at time.Time) bool { return !at.Before(hotFrom) && at.Before(hotTo) }
	pump(t, h, "TENANT#acme", during, func(at time.Time) bool { return at.After(hotTo) })
	// Quiet: the other keys go on until the incident is closed.
	closed := func() bool { inc := incidentOf(incidents(t, h), "TENANT#acme"); return inc != nil && inc.End != nil }
	pump(t, h, "", func(time.Time) bool { return false }, func(at time.Time) bool {
		if at.After(hotTo.Add(90 * time.Second)) {
			t.Fatalf("the incident did not close within 90 s of the quiet: %+v", incidents(t, h))
		}
		return at.Sub(hotTo)%time.Second < pumpStep && closed()
	})
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}

	h = historyDaemon(t, dir)
	inc := incidentOf(incidents(t, h), "TENANT#acme")
	if inc == nil || inc.End == nil {
		t.Fatalf("after the restart, incidents %+v: want TENANT#acme's, closed", incidents(t, h))
	}
	if d := inc.Start.Sub(hotFrom); d < 0 || d > 5*time.Second {
		t.Errorf("incident starts at %v, %v after the key turned hot at %v: want within 5 s", inc.Start, d, hotFrom)
	}
	if math.Abs(inc.Peak-600)/600 > 0.15 {
		t.Errorf("incident's peak %.1f WCU/s, want 600 within 15%%", inc.Peak)
	}
	checkHistoryCells(t, h, "TENANT#acme", hotFrom, int(hotTo.Sub(hotFrom)/time.Second))

	// Another hot key, and a crash 90 s into it.
	hotFrom = time.Now().Truncate(time.Second).Add(2 * time.Second)
	pump(t, h, "TENANT#globex", func(at time.Time) bool { return !at.Before(hotFrom) }, func(at time.Time) bool { return at.Sub(hotFrom) >= 90*time.Second })
	h.Kill(t)
	h = historyDaemon(t, dir)
	inc = incidentOf(incidents(t, h), "TENANT#globex")
	if inc == nil {
		t.Fatalf("after a kill and a restart, incidents %+v: want TENANT#globex's", incidents(t, h))
	}
	if d := inc.Start.Sub(hotFrom); d < 0 || d > 5*time.Second {
		t.Errorf("killed incident starts at %v, %v after the key turned hot at %v: want within 5 s", inc.Start, d, hotFrom)
	}
	if incidentOf(incidents(t, h), "TENANT#acme") == nil {
		t.Error("the first incident is gone after the kill")
	}
}

// checkHistoryCells: /api/v1/history has the hot key's minutes: its units
// over them those of its hot seconds (600 WCU/s, within 15 %), at most
// half of any minute's units, and its busiest second near 600 WCU/s. Its
// span falls across two minutes wherever the clock puts it, so no minute
// need hold it whole.
func checkHistoryCells(t *testing.T, h *testenv.Hotkeyd, key string, from time.Time, seconds int) {
	t.Helper()
	q := url.Values{"table": {"orders"}, "class": {"write"}, "from": {from.Add(-time.Minute).UTC().Format(time.RFC3339)}, "step": {"60"}}
	code, body := h.Get(t, "/api/v1/history?"+q.Encode())
	var a history.Answer
	if err := json.Unmarshal(body, &a); code != 200 || err != nil || len(a.Series) != 1 {
		t.Fatalf("/api/v1/history: %d %s", code, body)
	}
	units, busiest := 0.0, 0.0
	for _, c := range a.Series[0].Cells {
		for _, k := range c.Keys {
			if k.Key != key {
				continue
			}
			units += k.Units
			busiest = max(busiest, k.BusiestSecond)
			if k.Share > 0.55 {
				t.Errorf("%s: %s holds %.1f%% of the minute's units, want at most half", c.Start, key, 100*k.Share)
			}
		}
	}
	want := float64(seconds) * 600
	if math.Abs(units-want)/want > 0.15 || busiest < 510 {
		t.Errorf("/api/v1/history has %s at %.0f units, busiest second %.0f: want %.0f within 15%% and about 600: %s", key, units, busiest, want, strings.TrimSpace(string(body)))
	}
}
