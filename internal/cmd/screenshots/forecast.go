package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The forecasts' pictures: a key of orders that grows by 150 WCU/s a day,
// 475 WCU/s at the top of its daily cycle now (3.5 days from one
// partition's 1000 WCU/s), and one that only cycles, as the forecast
// tests plant them (cmd/hotkeyd/forecast_e2e_test.go): in three days of
// history for the live page, in a log of two and a half days for the
// HTML report.

// growingKey and flatKey are the two keys; the others write a little.
const (
	growingKey = "TENANT#acme"
	flatKey    = "TENANT#globex"
)

// cycle is a daily cycle of depth a: 1 at the top (hours a multiple of
// 24 from now), 1-a at the bottom.
func cycle(hours, a float64) float64 {
	return 1 - a*(0.5-0.5*math.Cos(2*math.Pi*hours/24))
}

// busiest is each key's busiest second h hours from the end (h ≤ 0).
func busiest(h float64) map[string]float64 {
	return map[string]float64{
		growingKey: (475 + 150*h/24) * cycle(h, 0.5),
		flatKey:    380 * cycle(h, 0.7),
		"USER#7":   25 * cycle(h, 0.3),
		"USER#12":  15,
	}
}

// growthLog is the report's input: a second of each key every ten
// minutes over span up to end, a line at most 100 WCU (a PutItem of
// 100 KB), with a little deterministic jitter.
func growthLog(end time.Time, span time.Duration) []byte {
	var b bytes.Buffer
	n := 0
	for at := end.Add(-span); !at.After(end); at = at.Add(10 * time.Minute) {
		for key, units := range busiest(at.Sub(end).Hours()) {
			n++
			units *= 1 + 0.02*math.Sin(float64(n)*1.7)
			for units > 0 {
				u := min(units, 100)
				fmt.Fprintf(&b, `{"ts":%q,"table":"orders","pk":%q,"op":"PutItem","units":%.2f}`+"\n", at.Format(time.RFC3339), key, u)
				units -= u
			}
		}
	}
	return b.Bytes()
}

// plantHistory writes three days of busiest seconds, an hourly cell each,
// up to end into a history database in dir, through the history's own
// writer, in accelerated event time (its clock is the time written).
func plantHistory(dir string, end time.Time) error {
	var now atomic.Int64 // the writer reads the clock too
	st, err := history.Open(context.Background(), history.Options{Dir: dir, Grace: 30 * time.Second, Now: func() time.Time { return time.Unix(now.Load(), 0).UTC() }})
	if err != nil {
		return fmt.Errorf("open the history to plant: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { st.Run(ctx); close(done) }()
	for at := end.Add(-72 * time.Hour); at.Before(end); at = at.Add(time.Hour) {
		for i, keys := range []map[string]float64{busiest(at.Sub(end).Hours()), {"USER#12": 1}} {
			sec := at.Add(time.Duration(10+i) * time.Second) // the second folds the first
			now.Store(sec.Add(time.Second).Unix())
			recordSecond(st, sec, keys)
		}
	}
	cancel()
	<-done
	return st.Close()
}

// recordSecond records one judged second of writes of table orders.
func recordSecond(st *history.Store, at time.Time, keys map[string]float64) {
	var total float64
	var ks []report.KeySecond
	var top []sketch.KeyStat
	for k, u := range keys {
		total += u
		ks = append(ks, report.KeySecond{Key: k, Units: u})
		top = append(top, sketch.KeyStat{Key: k, Units: u})
	}
	ts := sketch.TableSnapshot{Table: "orders", Start: at.Add(-59 * time.Second), End: at.Add(time.Second), LastSecond: at, DistinctKeys: uint64(len(keys))}
	ts.Classes[traffic.Write] = sketch.ClassStats{Events: uint64(total), Units: total, Top: top}
	sec := report.TableSecond{Table: "orders", At: at, Classes: []report.ClassSecond{{Class: "read"}, {Class: "write", Units: total, Keys: ks}}}
	st.Record(history.Evaluation{Snapshot: sketch.Snapshot{Tables: []sketch.TableSnapshot{ts}}, Seconds: []report.TableSecond{sec}})
}

// startForecastDaemon plants the history in a fresh directory, runs
// hotkeyd on it with HTTP ingest, and posts today's traffic, each key at
// its busiest second now, until stopped. It returns the base URL and the
// function that stops it all and removes the directory.
func startForecastDaemon(bin string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "hotkeyd-screenshots-forecast-")
	if err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, "hotkeyd.yaml")
	err = os.WriteFile(cfg, []byte("window: 20s\n"), 0o600)
	if err == nil {
		err = plantHistory(filepath.Join(dir, "data"), time.Now().UTC().Truncate(time.Hour))
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	cmd := exec.Command(bin, "run", "--config.file", cfg, "--web.listen-address=127.0.0.1:0", "--web.enable-ingest",
		"--web.ingest.rate-limit=0", "--history.path", filepath.Join(dir, "data"))
	base, stopDaemon, err := startListening(cmd)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	posted := make(chan struct{})
	go func() { postTraffic(ctx, base); close(posted) }()
	return base, func() {
		cancel()
		<-posted
		stopDaemon()
		_ = os.RemoveAll(dir)
	}, nil
}

// startListening starts cmd (a hotkeyd listening on a free port) and
// returns its base URL, read from its log, and the function that stops it.
func startListening(cmd *exec.Cmd) (string, func(), error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", cmd.Args, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	started := regexp.MustCompile(`msg="hotkeyd started" address=(\S+)`)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if m := started.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return "http://" + m[1], stop, nil
		}
	}
	stop()
	return "", nil, errors.New("hotkeyd exited before it listened")
}

// postTraffic posts, ten times a second until ctx is done, a tenth of
// each key's busiest second now.
func postTraffic(ctx context.Context, base string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-tick.C:
			var b bytes.Buffer
			for key, units := range busiest(0) {
				fmt.Fprintf(&b, `{"ts":%q,"table":"orders","pk":%q,"op":"PutItem","units":%.1f}`+"\n",
					at.UTC().Format("2006-01-02T15:04:05.000Z"), key, units/10)
			}
			if resp, err := client.Post(base+"/api/v1/events", "application/x-ndjson", &b); err == nil {
				resp.Body.Close()
			}
		}
	}
}

// waitForecast waits until the daemon's report of orders forecasts the
// growing key with a trend and raises its forecast diagnosis.
func waitForecast(base string, timeout time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := client.Get(base + "/api/v1/hotkeys?table=orders"); err == nil {
			var rep report.Report
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&rep) == nil && forecastRaised(rep)
			resp.Body.Close()
			if ok {
				return nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("no forecast of %s after %s", growingKey, timeout)
}

// forecastRaised says whether rep holds the growing key's forecast
// diagnosis.
func forecastRaised(rep report.Report) bool {
	for _, t := range rep.Tables {
		for _, d := range t.Diagnoses {
			if d.Cause == report.KindForecast && d.Key() == growingKey {
				return true
			}
		}
	}
	return false
}
