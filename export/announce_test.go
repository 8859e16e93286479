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
	alice, pending := m.Mask("USER#alice"), m.Mask("PENDING")
	hot := report.Diagnosis{Cause: report.KindPartitionLimit, Keys: []string{"USER#alice"}, Class: "write", Severity: report.SeverityCritical,
		Share: 0.123456, PeakUnitsPerSecond: 850.555, Limit: 1000,
		Fix: report.Recommendation{Kind: report.AdviceWriteSharding, SuffixCount: 2,
			Example: "USER#alice#0 .. USER#alice#1", Text: `Write key "USER#alice" with a suffix.`},
		After:    &report.After{Keys: 2, Summary: `Spread, "USER#alice" is fine.`},
		Explains: []report.Explained{{Kind: report.KindPartitionLimit, Key: "USER#alice", Class: "write"}}}
	warm := hot
	warm.Cause, warm.Severity = report.KindHotKey, report.SeverityWarning
	shard := report.Diagnosis{Cause: report.KindHotPartition, Keys: []string{"shardId-0001"}, Class: "write", Severity: report.SeverityWarning, Share: 0.7,
		Fix: report.Recommendation{Kind: report.AdviceWriteSharding, Text: "Spread."}}
	status := report.Diagnosis{Cause: report.KindLowCardinality, Keys: []string{"PENDING", "SHIPPED"}, Class: "read", Severity: report.SeverityInfo, Share: 0.5,
		Fix: report.Recommendation{Kind: report.AdviceCalculatedSuffix, Text: "Shard PENDING."}}
	odd := report.Diagnosis{Cause: "new_kind", Keys: []string{"X#1"}, Severity: report.SeverityWarning, Fix: report.Recommendation{Kind: report.AdviceCache, Text: "t"}}
	change := func(index string, d report.Diagnosis, cleared bool, was *report.Diagnosis) report.Change {
		return report.Change{Flag: report.Flag{Table: "orders", Index: index, Diagnosis: d}, Cleared: cleared, Was: was}
	}
	NewAnnouncer(zap.New(core), m).Announce([]report.Change{
		change("", hot, false, nil),
		change("status-index", status, false, nil),
		change("", odd, false, nil),
		change("", warm, false, &hot),
		change("", warm, true, nil),
		change("", shard, true, nil),
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
	masked := "key=" + alice + " severity=%s share=0.1235 peak_units_per_second=850.56 fix=write_sharding suffix_count=2 example=" + alice + "#0 .. " + alice +
		"#1 advice=Write key \"" + alice + "\" with a suffix. after=Spread, \"" + alice + "\" is fine."
	want := []string{
		"error key near the partition limit table=orders class=write " + fmt.Sprintf(masked, "critical"),
		"info low partition key cardinality table=orders index=status-index class=read key=" + pending + " keys=" + pending + "," + m.Mask("SHIPPED") +
			" severity=info share=0.5 fix=calculated_suffix advice=Shard " + pending + ".",
		"warn finding table=orders key=" + m.Mask("X#1") + " kind=new_kind severity=warning fix=cache advice=t",
		"warn hot key changed table=orders class=write " + fmt.Sprintf(masked, "warning") + " was_cause=partition_limit was_severity=critical",
		"info hot key cleared table=orders class=write key=" + alice,
		"info hot partition cleared table=orders class=write key=shardId-0001",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAnnouncerKeyText: a binary key whose bytes are text is logged with
// that text beside it; with keys masked, not.
func TestAnnouncerKeyText(t *testing.T) {
	const key = "dXNlcjYyODQ3ODE4NjA2NjczNzcyMTE="
	d := report.Diagnosis{Cause: report.KindHotKey, Keys: []string{key}, Class: "read", Severity: report.SeverityWarning, Share: 0.5,
		Fix: report.Recommendation{Kind: report.AdviceCache, Text: "Cache it."}}
	for _, c := range []struct {
		masker *KeyMasker
		want   string
	}{{nil, "user6284781860667377211"}, {mustMasker(t, KeysHash, "k"), ""}, {mustMasker(t, KeysRedact, ""), ""}} {
		core, logs := observer.New(zapcore.DebugLevel)
		NewAnnouncer(zap.New(core), c.masker).Announce([]report.Change{{Flag: report.Flag{Table: "users", Diagnosis: d}}})
		got := ""
		for _, e := range logs.All() {
			if v, ok := e.ContextMap()["key_text"]; ok {
				got = fmt.Sprint(v)
			}
		}
		if got != c.want {
			t.Errorf("masker %v: key_text %q, want %q", c.masker.Mode(), got, c.want)
		}
	}
}
