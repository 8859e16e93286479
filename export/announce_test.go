package export

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// TestAnnouncerLines checks each line's level, message and keys in the
// order the README's "Log lines" section documents, with keys masked and a
// shard id left as it is.
func TestAnnouncerLines(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	m := mustMasker(t, KeysHash, "k")
	alice := m.Mask("USER#alice")
	hot := report.Finding{Kind: report.KindHotKey, Key: "USER#alice", Class: "write", Severity: report.SeverityCritical,
		Share: 0.123456, UnitsPerSecond: 850.555,
		Recommendation: &report.Recommendation{Kind: report.AdviceWriteSharding, SuffixCount: 3,
			Example: "USER#alice#0 .. USER#alice#2", Text: `Write key "USER#alice" with a suffix.`}}
	shard := report.Finding{Kind: report.KindHotPartition, Key: "shardId-0001", Class: "write", Share: 0.7}
	status := report.Finding{Kind: report.KindLowCardinality, Class: "read", Share: 0.9}
	odd := report.Finding{Kind: "new_kind", Key: "X#1"}
	change := func(index string, f report.Finding, cleared bool) report.Change {
		return report.Change{Flag: report.Flag{Table: "orders", Index: index, Finding: f}, Cleared: cleared}
	}
	NewAnnouncer(zap.New(core), m).Announce([]report.Change{
		change("", hot, false),
		change("status-index", status, false),
		change("", odd, false),
		change("", hot, true),
		change("", shard, true),
	})
	var got []string
	for _, e := range logs.All() {
		line := e.Level.String() + " " + e.Message
		for _, f := range e.Context {
			enc := zapcore.NewMapObjectEncoder()
			f.AddTo(enc)
			line += fmt.Sprintf(" %s=%v", f.Key, enc.Fields[f.Key])
		}
		got = append(got, line)
	}
	want := []string{
		"warn hot key table=orders class=write key=" + alice + " severity=critical share=0.1235 units_per_second=850.56 recommendation=write_sharding suffix_count=3 example=" + alice + "#0 .. " + alice + "#2 advice=Write key \"" + alice + "\" with a suffix.",
		"warn low partition key cardinality table=orders index=status-index class=read share=0.9",
		"warn finding table=orders key=" + m.Mask("X#1") + " kind=new_kind",
		"info hot key cleared table=orders class=write key=" + alice,
		"info hot partition cleared table=orders class=write key=shardId-0001",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
