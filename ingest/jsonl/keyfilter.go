package jsonl

import (
	"bytes"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
)

// KeyFilter tells from a line's bytes alone, before it is parsed, whether
// an access-log line may hold one of a few partition keys: hotkeyd
// analyze's second read, which counts the seconds of the keys it reports
// only, skips the other lines at a fraction of a parse.
//
// It never refuses a line that would parse to one of its keys: in a line
// without a backslash, every JSON string is written as it is, so the
// partition key member is the name in quotes, then a colon, then the key
// in quotes, with nothing escaped. A line with a backslash anywhere passes
// (its names or key may be escaped), as does one where the name is
// followed by a string that is not closed, or by a string longer than
// every key (a key held shortened, sketch.MaxKeyBytes, is matched by
// whoever reads the line). Every member of that name, at any depth,
// is looked at, and the line passes when one of them holds a key: the
// parser decides which one counts. A line that does not parse may pass
// or not: it would be rejected anyway.
//
// A KeyFilter is read only once made; it may be shared by readers running
// side by side.
type KeyFilter struct {
	// name is the partition key member's name in quotes; nil lets every
	// line through.
	name    []byte
	keys    map[string]struct{}
	longest int
}

// NewKeyFilter returns the filter of the lines whose partition key (the
// member fields.PK names) may be one of keys.
func NewKeyFilter(fields Fields, keys []string) *KeyFilter {
	f := &KeyFilter{keys: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		f.keys[k] = struct{}{}
		f.longest = max(f.longest, len(k))
	}
	pk := fields.withDefaults().PK
	for i := 0; i < len(pk); i++ {
		if c := pk[i]; c < 0x20 || c == '"' || c == '\\' {
			// Such a name is always written escaped: nothing to find.
			return f
		}
	}
	f.name = []byte(`"` + pk + `"`)
	return f
}

// Maybe reports whether line may hold one of the keys. A nil filter lets
// every line through.
func (f *KeyFilter) Maybe(line []byte) bool {
	if f == nil || f.name == nil || bytes.IndexByte(line, '\\') >= 0 {
		return true
	}
	for i := 0; ; {
		n := f.index(line[i:])
		if n < 0 {
			return false
		}
		i += n + 1 // past the opening quote: the name may sit right after
		j := jsonscan.Space(line, i-1+len(f.name))
		if j >= len(line) || line[j] != ':' {
			continue // a string of the same text, not a member's name
		}
		j = jsonscan.Space(line, j+1)
		if j >= len(line) || line[j] != '"' {
			continue // not a string: no key
		}
		v := line[j+1:]
		end := bytes.IndexByte(v, '"')
		if end < 0 || end > f.longest {
			return true
		}
		if _, ok := f.keys[string(v[:end])]; ok {
			return true
		}
	}
}

// chunk is the longest text bytes.Index searches with one vector pass
// (bytealg.MaxBruteForce on amd64): on longer text it first looks for the
// pattern's first byte, a quote, which JSON has every few bytes.
const chunk = 64

// index is bytes.Index(b, f.name), searched chunk bytes at a time.
func (f *KeyFilter) index(b []byte) int {
	over := len(f.name) - 1
	if over >= chunk/2 {
		return bytes.Index(b, f.name)
	}
	for at := 0; at < len(b); at += chunk - over {
		end := min(at+chunk, len(b))
		if n := bytes.Index(b[at:end], f.name); n >= 0 {
			return at + n
		}
		if end == len(b) {
			break
		}
	}
	return -1
}
