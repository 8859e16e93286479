package ingesttest

import (
	"context"
	"errors"
	"testing"

	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestSinkAndReporter(t *testing.T) {
	var s Sink
	ctx := context.Background()
	if err := s.Put(ctx, []traffic.Event{{PK: "a"}, {PK: "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, []traffic.Event{{PK: "c"}}); err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(stopped, []traffic.Event{{PK: "d"}}); err == nil {
		t.Error("a stopped Put was taken")
	}
	if n, last := len(s.Events()), s.LastBatch(); n != 3 || len(last) != 1 || last[0] != "c" {
		t.Errorf("%d events, last batch %v; want 3 and [c]", n, last)
	}
	if n := s.CountWhere(func(e traffic.Event) bool { return e.PK != "b" }); n != 2 {
		t.Errorf("CountWhere = %d, want 2", n)
	}

	var r Reporter
	boom := errors.New("boom")
	r.Error("src", "throttled", errors.New("first"))
	r.Error("src", "throttled", boom)
	r.Reject("src", "bad_record", nil)
	if r.Errors("throttled") != 2 || r.Last("throttled") != boom || r.Rejects()["bad_record"] != 1 || r.Errors("network") != 0 {
		t.Errorf("reporter: errors %d, last %v, rejects %v", r.Errors("throttled"), r.Last("throttled"), r.Rejects())
	}
}
