package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// ingest posts JSON lines to the daemon's /api/v1/events at a rate, in
// bodies of batch lines spread over tables, with keys that churn: each
// minute draws its keys from a new set of keys of its own. It keeps what
// every answer said of every line.
type ingest struct {
	url                   string
	rate                  float64 // events per second
	batch, tables, keys   int
	workers               int
	sent                  atomic.Int64 // lines posted
	counted, untracked    atomic.Int64 // as the 200 answers say
	rejected              atomic.Int64 // refused line by line, with a reason
	refused               atomic.Int64 // in requests refused whole (429, 413, ...)
	lost                  atomic.Int64 // in requests that got no answer
	mu                    sync.Mutex
	statuses              map[int]int64
	failures              []string // the first few requests without an answer
	reasons               map[string]int64
	maxAnswer, sumAnswers time.Duration
	answers               int64
}

// answer is the body of a 200 or 400 answer of /api/v1/events.
type answer struct {
	Accepted  int64    `json:"accepted"`
	Counted   int64    `json:"counted"`
	Untracked int64    `json:"untracked"`
	Rejected  int64    `json:"rejected"`
	Errors    []string `json:"errors"`
}

func newIngest(url string, rate float64, batch, tables, keys int) *ingest {
	return &ingest{url: url, rate: rate, batch: batch, tables: tables, keys: keys, workers: 4,
		statuses: map[int]int64{}, reasons: map[string]int64{}}
}

// run posts until ctx is done.
func (l *ingest) run(ctx context.Context) {
	lim := rate.NewLimiter(rate.Limit(l.rate/float64(l.batch)), 1)
	client := &http.Client{Timeout: time.Minute}
	var wg sync.WaitGroup
	for w := range l.workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			var body []byte
			for lim.Wait(ctx) == nil {
				body = l.body(body[:0], rng)
				l.post(client, body)
			}
		})
	}
	wg.Wait()
}

// body appends a body of l.batch lines to b.
func (l *ingest) body(b []byte, rng *rand.Rand) []byte {
	minute := time.Now().Unix() / 60
	for i := range l.batch {
		b = append(b, `{"table":"soak-http-`...)
		b = strconv.AppendInt(b, int64(rng.IntN(l.tables)), 10)
		b = append(b, `","pk":"K`...)
		b = strconv.AppendInt(b, minute, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(rng.IntN(l.keys)), 10)
		if i%2 == 0 {
			b = append(b, `","op":"PutItem"}`+"\n"...)
		} else {
			b = append(b, `","op":"GetItem"}`+"\n"...)
		}
	}
	return b
}

func (l *ingest) post(client *http.Client, body []byte) {
	lines := int64(bytes.Count(body, []byte{'\n'}))
	l.sent.Add(lines)
	start := time.Now()
	resp, err := client.Post(l.url+"/api/v1/events", "application/x-ndjson", bytes.NewReader(body))
	if err != nil {
		l.lost.Add(lines)
		l.mu.Lock()
		if len(l.failures) < 5 {
			l.failures = append(l.failures, err.Error())
		}
		l.mu.Unlock()
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	var a answer
	jsonErr := json.Unmarshal(b, &a)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[resp.StatusCode]++
	l.answers++
	l.sumAnswers += took
	l.maxAnswer = max(l.maxAnswer, took)
	switch {
	case (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusBadRequest) && jsonErr == nil:
		l.counted.Add(a.Counted)
		l.untracked.Add(a.Untracked)
		l.rejected.Add(a.Rejected)
		for _, e := range a.Errors {
			l.reasons[reasonOf(e)]++
		}
		if a.Counted+a.Untracked+a.Rejected != lines {
			l.reasons[fmt.Sprintf("answer accounts for %d of %d lines", a.Counted+a.Untracked+a.Rejected, lines)]++
		}
	default:
		l.refused.Add(lines)
		l.reasons[fmt.Sprintf("HTTP %d", resp.StatusCode)] += lines
	}
}

// reasonOf returns the reason of an answer's error, "line K: reason:
// detail" → "reason".
func reasonOf(e string) string {
	if i := bytes.IndexByte([]byte(e), ':'); i >= 0 {
		e = e[i+1:]
	}
	if i := bytes.IndexByte([]byte(e), ':'); i >= 0 {
		e = e[:i]
	}
	return "rejected:" + e
}
