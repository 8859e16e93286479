package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// scrapeLoad is what scrapeRounds measured: how long each scrape took to
// be answered, how many failed, and the daemon's peak resident memory
// while they ran.
type scrapeLoad struct {
	took   []time.Duration // sorted
	failed int
	hwm    int
}

func (l scrapeLoad) quantile(q float64) time.Duration {
	if len(l.took) == 0 {
		return 0
	}
	return l.took[min(len(l.took)-1, int(q*float64(len(l.took))))]
}

// scrapeRounds sends rounds of n GET /metrics at once, as Prometheus asks
// (OpenMetrics, gzip), each read to its end, and returns how long each took
// and the process's peak resident memory meanwhile: the peak is reset
// first (clear_refs), so that the feeding's does not hide the scrapes'.
func scrapeRounds(url string, pid, n, rounds int) (scrapeLoad, error) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return scrapeLoad{}, fmt.Errorf("reset the peak resident memory: %w", err)
	}
	var load scrapeLoad
	var mu sync.Mutex
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxConnsPerHost: n, MaxIdleConnsPerHost: n}}
	for range rounds {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
				req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;escaping=underscores,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
				req.Header.Set("Accept-Encoding", "gzip")
				start := time.Now()
				resp, err := client.Do(req)
				ok := err == nil
				if ok {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok = err == nil && resp.StatusCode == http.StatusOK
				}
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				load.took = append(load.took, took)
				if !ok {
					load.failed++
				}
			})
		}
		wg.Wait()
	}
	slices.Sort(load.took)
	_, hwm, err := procMemory(pid)
	load.hwm = hwm
	return load, err
}
