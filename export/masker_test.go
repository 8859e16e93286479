package export

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

func mustMasker(t testing.TB, mode KeyMode, key string) *KeyMasker {
	t.Helper()
	m, err := NewKeyMasker(mode, key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMaskShapes(t *testing.T) {
	hash := mustMasker(t, KeysHash, "secret-1")
	redact := mustMasker(t, KeysRedact, "")
	plain := mustMasker(t, KeysPlain, "")
	hex8 := `[0-9a-f]{8}`
	for _, tc := range []struct {
		key             string
		hashRE, redactd string
	}{
		{"USER#alice@example.com", `^USER#` + hex8 + `$`, "USER#<redacted>"},
		{"ORDER#2026-11-22#9", `^ORDER#` + hex8 + `$`, "ORDER#<redacted>"},
		{"tenant_x.y-z#42", `^tenant_x\.y-z#` + hex8 + `$`, "tenant_x.y-z#<redacted>"},
		{"12345#profile", `^` + hex8 + `$`, "<redacted>"},
		{"2026-11-22#host", `^` + hex8 + `$`, "<redacted>"},
		{"alice@example.com", `^` + hex8 + `$`, "<redacted>"},
		// A first component that does not look like an entity type is not kept.
		{"alice@example.com#profile", `^` + hex8 + `$`, "<redacted>"},
		{"#leading", `^` + hex8 + `$`, "<redacted>"},
		{strings.Repeat("A", 33) + "#1", `^` + hex8 + `$`, "<redacted>"},
		{"", `^$`, ""},
	} {
		if got := plain.Mask(tc.key); got != tc.key {
			t.Errorf("plain.Mask(%q) = %q", tc.key, got)
		}
		if got := hash.Mask(tc.key); !regexp.MustCompile(tc.hashRE).MatchString(got) {
			t.Errorf("hash.Mask(%q) = %q, want match %s", tc.key, got, tc.hashRE)
		}
		if got := redact.Mask(tc.key); got != tc.redactd {
			t.Errorf("redact.Mask(%q) = %q, want %q", tc.key, got, tc.redactd)
		}
	}
	var nilMasker *KeyMasker
	if got := nilMasker.Mask("USER#1"); got != "USER#1" {
		t.Errorf("nil masker changed the key: %q", got)
	}
}

func TestMaskHashIsKeyedAndStable(t *testing.T) {
	a1 := mustMasker(t, KeysHash, "replica-secret")
	a2 := mustMasker(t, KeysHash, "replica-secret")
	b := mustMasker(t, KeysHash, "another-secret")
	keys := []string{"USER#alice@example.com", "USER#bob@example.com", "C-7781", "2026-11-22"}
	seen := map[string]string{}
	for _, k := range keys {
		if a1.Mask(k) != a2.Mask(k) {
			t.Errorf("two maskers with the same hashing key disagree on %q: %q vs %q", k, a1.Mask(k), a2.Mask(k))
		}
		if a1.Mask(k) == b.Mask(k) {
			t.Errorf("maskers with different hashing keys agree on %q: %q", k, a1.Mask(k))
		}
		if a1.Mask(k) == k || strings.Contains(a1.Mask(k), "alice") {
			t.Errorf("hash mode leaks the key: %q", a1.Mask(k))
		}
		if other, dup := seen[a1.Mask(k)]; dup {
			t.Errorf("%q and %q mask to the same value", k, other)
		}
		seen[a1.Mask(k)] = k
	}
}

func TestNewKeyMaskerErrors(t *testing.T) {
	if _, err := NewKeyMasker(KeysHash, ""); err == nil {
		t.Error("hash mode without a hashing key was accepted")
	}
	if _, err := NewKeyMasker("scramble", ""); err == nil || !strings.Contains(err.Error(), `"scramble"`) {
		t.Errorf("unknown mode: err = %v, want it named", err)
	}
	for in, want := range map[string]KeyMode{"": KeysPlain, "plain": KeysPlain, "hash": KeysHash, "redact": KeysRedact} {
		got, err := ParseKeyMode(in)
		if err != nil || got != want {
			t.Errorf("ParseKeyMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseKeyMode("Hash"); err == nil {
		t.Error("ParseKeyMode accepted Hash")
	}
}

func sampleReport() report.Report {
	return report.Report{
		Events: 100,
		Tables: []report.TableReport{{
			Table: "orders",
			TopKeys: []report.TopKey{
				{Key: "USER#alice@example.com", Class: "write", Units: 46, Share: 0.46},
				{Key: "USER#bob@example.com", Class: "write", Units: 10, Share: 0.10},
			},
			Findings: []report.Finding{
				{Kind: "hot_key", Key: "USER#alice@example.com", Class: "write", Share: 0.46, UnitsPerSecond: 1.5,
					Recommendation: &report.Recommendation{Kind: "write_sharding", SuffixCount: 4,
						Example: "USER#alice@example.com#0 .. USER#alice@example.com#3",
						Text:    "shard USER#alice@example.com over 4 suffixes"}},
				{Kind: "hot_partition", Key: "shardId-00000001", Share: 0.6},
				{Kind: "low_cardinality", Share: 0.9},
			},
			ThrottledKeys: []report.ThrottledKey{{Key: "C-7781", Count: 422}},
		}},
	}
}

func TestMaskReport(t *testing.T) {
	m := mustMasker(t, KeysHash, "k")
	in := sampleReport()
	before, _ := json.Marshal(in)
	out := m.MaskReport(in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatal("MaskReport modified its input")
	}
	js, _ := json.Marshal(out)
	for _, leak := range []string{"alice", "bob", "C-7781"} {
		if strings.Contains(string(js), leak) {
			t.Errorf("masked report still contains %q: %s", leak, js)
		}
	}
	alice := m.Mask("USER#alice@example.com")
	tr := out.Tables[0]
	if tr.TopKeys[0].Key != alice || tr.Findings[0].Key != alice {
		t.Errorf("top key %q and finding key %q, want both %q", tr.TopKeys[0].Key, tr.Findings[0].Key, alice)
	}
	rec := tr.Findings[0].Recommendation
	if rec.Example != alice+"#0 .. "+alice+"#3" || rec.Text != "shard "+alice+" over 4 suffixes" {
		t.Errorf("recommendation not masked consistently: %+v", rec)
	}
	if tr.Findings[1].Key != "shardId-00000001" {
		t.Errorf("a shard id was masked: %q", tr.Findings[1].Key)
	}
	if tr.ThrottledKeys[0].Key != m.Mask("C-7781") || tr.ThrottledKeys[0].Count != 422 {
		t.Errorf("throttled key = %+v", tr.ThrottledKeys[0])
	}
	if out.Events != 100 || tr.TopKeys[0].Share != 0.46 {
		t.Error("masking changed numbers")
	}
}

func BenchmarkMask(b *testing.B) {
	m := mustMasker(b, KeysHash, "k")
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Mask("USER#alice@example.com")
	}
}

// TestKeyMaskerReplace: a masker replaced by another masks as the other
// from then on, wherever it is held (a reload of keys).
func TestKeyMaskerReplace(t *testing.T) {
	m := mustMasker(t, KeysPlain, "")
	if got := m.Mask("USER#alice"); got != "USER#alice" {
		t.Fatalf("plain: %q", got)
	}
	hashed := mustMasker(t, KeysHash, "k")
	m.Replace(hashed)
	if got, want := m.Mask("USER#alice"), hashed.Mask("USER#alice"); got != want || m.Mode() != KeysHash {
		t.Errorf("after Replace(hash): %q (%s), want %q", got, m.Mode(), want)
	}
	m.Replace(mustMasker(t, KeysRedact, ""))
	if got := m.Mask("USER#alice"); got != "USER#<redacted>" {
		t.Errorf("after Replace(redact): %q", got)
	}
}
