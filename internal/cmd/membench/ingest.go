package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// runIngest measures the live path's speed through the HTTP endpoint
// (mode http) or a followed file (mode file): see the package comment.
func runIngest(bin, mode string, events, tables int, tsv bool) error {
	if mode != "http" && mode != "file" {
		return fmt.Errorf("-ingest %q: want http or file", mode)
	}
	dir, err := os.MkdirTemp("", "membench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bodies := churnBodies(events, tables)
	cfg := "window: 60s\n"
	if mode == "file" {
		cfg += fmt.Sprintf("sources:\n  - type: jsonl\n    paths: [%q]\n    poll_interval: 100ms\n", filepath.Join(dir, "logs", "*.jsonl"))
		if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
			return err
		}
		// The file is written whole before it is put where the daemon
		// looks: it reads it from its beginning, as fast as it can.
		if err := writeBodies(filepath.Join(dir, "access.jsonl"), bodies); err != nil {
			return err
		}
	}
	d, err := startDaemon(bin, dir, cfg, nil)
	if err != nil {
		return err
	}
	defer d.stop()
	go io.Copy(io.Discard, d.stderr)
	url, pid := d.url, d.pid
	time.Sleep(time.Second) // the daemon settles
	cpu0, err := procCPU(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	switch mode {
	case "http":
		err = post(url, each(bodies))
	case "file":
		err = os.Rename(filepath.Join(dir, "access.jsonl"), filepath.Join(dir, "logs", "access.jsonl"))
	}
	if err != nil {
		return err
	}
	if err := waitAllCounted(url, events); err != nil {
		return err
	}
	took := time.Since(start).Seconds()
	cpu1, err := procCPU(pid)
	if err != nil {
		return err
	}
	_, hwm, err := procMemory(pid)
	if err != nil {
		return err
	}
	cpu := cpu1 - cpu0
	if tsv {
		fmt.Printf("%s\t%d\t%.3f\t%.0f\t%.2f\t%.3f\t%.0f\t%d\n", mode, events, took, float64(events)/took, cpu, cpu/took, float64(events)/cpu, hwm)
		return nil
	}
	fmt.Printf("ingest %s: %d events over %d tables (key churn) in %.2f s: %.0f events/s; the daemon used %.2f CPU-s (%.2f cores): %.0f events per CPU-second; peak RSS %.0f MiB\n",
		mode, events, tables, took, float64(events)/took, cpu, cpu/took, float64(events)/cpu, mib(hwm))
	return nil
}

// writeBodies writes the bodies into one file at path.
func writeBodies(path string, bodies [][]byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for _, b := range bodies {
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// waitAllCounted waits, at most five minutes, for every one of events to
// be counted: accepted or refused, in the totals.
func waitAllCounted(url string, events int) error {
	for deadline := time.Now().Add(5 * time.Minute); ; {
		m, err := scrape(url)
		if err != nil {
			return err
		}
		if int(m.sum("hotkeyd_events_total")+m.sum("hotkeyd_untracked_events_total")+m.sum("hotkeyd_input_rejected_total")) >= events {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the events were not all counted in 5 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// churnBodies returns events JSON lines over tables tables, reads and
// writes, each key drawn at random from 5 million, in bodies of at most
// 3 MiB ending with a whole line.
func churnBodies(events, tables int) [][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	var b bytes.Buffer
	for i := range events {
		op := "PutItem"
		if i%3 == 0 {
			op = "GetItem"
		}
		b.WriteString(`{"table":"table-`)
		b.WriteString(strconv.Itoa(rnd.IntN(tables)))
		b.WriteString(`","pk":"USER#`)
		b.WriteString(strconv.Itoa(rnd.IntN(5_000_000)))
		b.WriteString(`","op":"`)
		b.WriteString(op)
		b.WriteString("\"}\n")
		if b.Len() > 3<<20 {
			out = append(out, bytes.Clone(b.Bytes()))
			b.Reset()
		}
	}
	if b.Len() > 0 {
		out = append(out, bytes.Clone(b.Bytes()))
	}
	return out
}

// post sends bodies to the HTTP endpoint from two connections, as they
// come, until the channel is closed or a POST fails.
func post(url string, bodies <-chan []byte) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	client := &http.Client{Timeout: time.Minute}
	for range 2 {
		wg.Go(func() {
			for body := range bodies {
				resp, err := client.Post(url+"/api/v1/events", "application/x-ndjson", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("POST: %s", resp.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// each returns a channel that yields bodies one by one and is then closed.
func each(bodies [][]byte) <-chan []byte {
	next := make(chan []byte)
	go func() {
		defer close(next)
		for _, b := range bodies {
			next <- b
		}
	}()
	return next
}
