package export

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

var hashedForm = regexp.MustCompile(`^[0-9a-f]{8}$`)

// FuzzMask checks the masker's promises on any key: hash mode keeps at most
// the entity prefix and adds 8 hex digits, redact keeps at most the prefix,
// both are deterministic, and a diagnosis's text that names the key as a
// word names only the masked form afterwards.
func FuzzMask(f *testing.F) {
	for _, k := range []string{"USER#alice@example.com", "ORDER#2026-11-22#9", "C-7781", "2026-11-22", "#", "a#b#c", "é#x", "OPEN", `q"uote`} {
		f.Add(k)
	}
	hash := mustMasker(f, KeysHash, "fuzz")
	redact := mustMasker(f, KeysRedact, "")
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return
		}
		h := hash.Mask(key)
		if h != hash.Mask(key) {
			t.Fatalf("hash mode is not deterministic for %q", key)
		}
		prefix := entityPrefix(key)
		if !strings.HasPrefix(key, prefix) || !strings.HasPrefix(h, prefix) || !hashedForm.MatchString(h[len(prefix):]) {
			t.Fatalf("hash.Mask(%q) = %q, want prefix %q and 8 hex digits", key, h, prefix)
		}
		if r := redact.Mask(key); r != prefix+"<redacted>" {
			t.Fatalf("redact.Mask(%q) = %q", key, r)
		}
		if strings.ContainsAny(key, " \"\\") || !isWordByte(key[0]) || !isWordByte(key[len(key)-1]) {
			return
		}
		d := report.Diagnosis{Cause: "hot_key", Keys: []string{key}, Fix: report.Recommendation{
			Kind: "write_sharding", Example: key + "#0 .. " + key + "#3", Text: "shard " + key + " now",
		}}
		m := hash.MaskDiagnosis(d)
		if m.Fix.Text != "shard "+h+" now" || m.Fix.Example != h+"#0 .. "+h+"#3" || m.Keys[0] != h {
			t.Fatalf("MaskDiagnosis(%q): keys %q, text %q, example %q", key, m.Keys, m.Fix.Text, m.Fix.Example)
		}
	})
}
