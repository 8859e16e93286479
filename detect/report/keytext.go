package report

import (
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"
)

// KeyText is the text a binary partition key holds, when its bytes are
// printable text; "" for any other key. Every reader counts a binary key
// (DynamoDB type B) by its base64, the form DynamoDB's JSON gives it, so a
// key whose bytes are text (a client that stores "user6284781860667377211"
// as bytes) reads "dXNlcjYyODQ3ODE4NjA2NjczNzcyMTE=" everywhere. A key
// that is standard padded base64, whose bytes are valid UTF-8 of printable
// characters (letters, marks, numbers, punctuation, symbols and the ASCII
// space), has that text shown beside it: in the reports' key_text, the
// pages, the text report and the log lines. The key itself, its series
// and its metric label stay the base64. A string key that happens to be
// the base64 of text shows the text too: it is shown beside the key, never
// in its place.
//
// A key longer than the sketches hold is reported as its first bytes, "…"
// and a hash (sketch.MaxKeyBytes): its text is that of those first bytes,
// followed by "…".
func KeyText(key string) string {
	if head, _, held := strings.Cut(key, "…"); held {
		head = head[:len(head)-len(head)%4]
		b, err := base64.StdEncoding.Strict().DecodeString(head)
		if err != nil {
			return ""
		}
		// The cut may fall inside a character.
		for n := 0; n < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); n++ {
			b = b[:len(b)-1]
		}
		if text := printableText(b); text != "" {
			return text + "…"
		}
		return ""
	}
	if len(key) < 4 || len(key)%4 != 0 {
		return ""
	}
	b, err := base64.StdEncoding.Strict().DecodeString(key)
	if err != nil {
		return ""
	}
	return printableText(b)
}

// printableText is b as text when it is valid UTF-8 of printable
// characters, "" otherwise.
func printableText(b []byte) string {
	if len(b) == 0 || !utf8.Valid(b) {
		return ""
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) {
			return ""
		}
	}
	return string(b)
}
