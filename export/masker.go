package export

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect"
)

// KeyMode says how partition keys are shown outside the process.
type KeyMode string

const (
	// KeysPlain shows keys as they are.
	KeysPlain KeyMode = "plain"
	// KeysHash shows the entity prefix and a short keyed hash:
	// "USER#alice@example.com" becomes "USER#3f2a9c1d".
	KeysHash KeyMode = "hash"
	// KeysRedact shows the entity prefix only: "USER#<redacted>".
	KeysRedact KeyMode = "redact"
)

// ParseKeyMode maps "plain", "hash" and "redact" to a KeyMode; the empty
// string means plain.
func ParseKeyMode(s string) (KeyMode, error) {
	switch KeyMode(s) {
	case "", KeysPlain:
		return KeysPlain, nil
	case KeysHash, KeysRedact:
		return KeyMode(s), nil
	}
	return "", fmt.Errorf("key mode %q: want plain, hash or redact", s)
}

// redacted replaces the id part of a key in redact mode.
const redacted = "<redacted>"

// hashHexLen is the number of hex digits of the keyed hash shown in hash
// mode: 32 bits, enough to tell a table's top keys apart (a collision among
// ten keys has odds of about 1 in 10^8) and short enough to read.
const hashHexLen = 8

// maxPrefixLen bounds the entity prefix kept in hash and redact modes.
const maxPrefixLen = 32

// KeyMasker turns partition keys into what metrics, the API, logs and
// reports show. The same masker (same mode and hashing key) must be used
// everywhere so that one key reads the same in all of them, and replicas
// configured with the same hashing key agree. A KeyMasker is immutable and
// safe for concurrent use; the nil *KeyMasker shows keys as they are.
type KeyMasker struct {
	mode KeyMode
	key  []byte
}

// NewKeyMasker returns a masker for mode. hashKey is the secret the hash mode
// is keyed with (HMAC-SHA256); it is required in hash mode, so that a key
// cannot be recovered by hashing guesses without it, and ignored otherwise.
func NewKeyMasker(mode KeyMode, hashKey string) (*KeyMasker, error) {
	switch mode {
	case "", KeysPlain:
		return &KeyMasker{mode: KeysPlain}, nil
	case KeysRedact:
		return &KeyMasker{mode: KeysRedact}, nil
	case KeysHash:
		if hashKey == "" {
			return nil, fmt.Errorf("key mode hash: a hashing key is required")
		}
		return &KeyMasker{mode: KeysHash, key: []byte(hashKey)}, nil
	}
	return nil, fmt.Errorf("key mode %q: want plain, hash or redact", mode)
}

// Mode returns the masker's mode.
func (m *KeyMasker) Mode() KeyMode {
	if m == nil {
		return KeysPlain
	}
	return m.mode
}

// Mask returns the form of key shown outside the process.
//
// The entity prefix is the part up to and including the first "#" when that
// part looks like an entity type (letters, digits, "_", "-", ".", at most 32
// characters), as in single-table designs ("USER#", "ORDER#"). It is kept so
// that a person still sees which kind of item is hot; everything after it is
// replaced. A key without such a prefix is replaced whole. The empty key
// (table-wide traffic) stays empty.
func (m *KeyMasker) Mask(key string) string {
	if m == nil || m.mode == KeysPlain || key == "" {
		return key
	}
	prefix := entityPrefix(key)
	if m.mode == KeysRedact {
		return prefix + redacted
	}
	mac := hmac.New(sha256.New, m.key)
	mac.Write([]byte(key))
	var sum [sha256.Size]byte
	var buf [hashHexLen]byte
	hex.Encode(buf[:], mac.Sum(sum[:0])[:hashHexLen/2])
	return prefix + string(buf[:])
}

// entityPrefix returns key's entity prefix including its "#", or "".
func entityPrefix(key string) string {
	i := strings.IndexByte(key, '#')
	if i <= 0 || i > maxPrefixLen {
		return ""
	}
	for _, c := range []byte(key[:i]) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return ""
		}
	}
	return key[:i+1]
}

// MaskReport returns a copy of r with every partition key masked: the top
// keys, the throttled keys, and each finding's key together with the places
// its recommendation repeats it (example and text). A hot_partition
// finding's key is a stream shard id, not a partition key, and is kept. In
// plain mode r itself is returned; reports are never modified in place.
func (m *KeyMasker) MaskReport(r detect.Report) detect.Report {
	if m == nil || m.mode == KeysPlain {
		return r
	}
	out := r
	out.Tables = make([]detect.TableReport, len(r.Tables))
	for i, t := range r.Tables {
		mt := t
		if t.TopKeys != nil {
			mt.TopKeys = make([]detect.TopKey, len(t.TopKeys))
			for j, k := range t.TopKeys {
				k.Key = m.Mask(k.Key)
				mt.TopKeys[j] = k
			}
		}
		if t.ThrottledKeys != nil {
			mt.ThrottledKeys = make([]detect.ThrottledKey, len(t.ThrottledKeys))
			for j, k := range t.ThrottledKeys {
				k.Key = m.Mask(k.Key)
				mt.ThrottledKeys[j] = k
			}
		}
		if t.Findings != nil {
			mt.Findings = make([]detect.Finding, len(t.Findings))
			for j, f := range t.Findings {
				mt.Findings[j] = m.MaskFinding(f)
			}
		}
		out.Tables[i] = mt
	}
	return out
}

// MaskFinding returns a copy of f with its key masked, also where the
// recommendation's example and text repeat it. Logs of findings go through
// it too.
func (m *KeyMasker) MaskFinding(f detect.Finding) detect.Finding {
	if m == nil || m.mode == KeysPlain || f.Key == "" || f.Kind == "hot_partition" {
		return f
	}
	masked := m.Mask(f.Key)
	if f.Recommendation != nil {
		rec := *f.Recommendation
		rec.Example = strings.ReplaceAll(rec.Example, f.Key, masked)
		rec.Text = strings.ReplaceAll(rec.Text, f.Key, masked)
		f.Recommendation = &rec
	}
	f.Key = masked
	return f
}
