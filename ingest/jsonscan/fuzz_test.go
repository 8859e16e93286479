package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

// seeds are texts every fuzz target starts from; testdata/fuzz holds more.
var seeds = []string{
	`{"ts":"2026-11-22T10:00:00.123Z","table":"orders","index":"GSI1","pk":"USER#123","sk":"ORDER#2026-11-22#9","op":"GetItem","units":0.5}`,
	`{"Records":[{"eventID":"e\"1","dynamodb":{"Keys":{"p\u006b":{"S":"USER#\u00e9\n1"}},"NewImage":{"x":{"M":{"y":{"L":[{"NULL":true}]}}}}}}]}`,
	`[1, -0.5e+3, true, false, null, "a\/b", {"": []}, [[[]]]]`,
	`"\ud83d\ude00 \ud800 \udc00x"`,
	`{"a" : { "b" : [ 1 , 2 ] } }`,
	"{\"a\":\"\xff\"}",
	`{"a":01}`,
	`{"a":1,}`,
	`[1 2]`,
	`{{{{`,
	`tru`,
	"\"\t\"",
}

// depthOf returns the deepest nesting of a valid JSON text, as
// encoding/json's tokens say.
func depthOf(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// FuzzSkip holds the checking half to encoding/json: a text Skip accepts
// whole is valid JSON, and valid JSON within the depth bound is accepted,
// with ScanValue agreeing on where the value ends.
func FuzzSkip(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		i := Space(b, 0)
		end, err := Skip(b, i, 16)
		if !bytes.Equal(in, b) {
			t.Fatal("Skip modified its input")
		}
		whole := err == nil && Space(b, end) == len(b)
		// encoding/json lets invalid UTF-8 through (and replaces it when
		// decoding); the scanner refuses it.
		valid := json.Valid(b) && utf8.Valid(b)
		if whole && !valid {
			t.Fatalf("Skip accepted invalid JSON %q", b)
		}
		if valid && depthOf(b) <= 16 && !whole {
			t.Fatalf("Skip refused valid JSON %q: %v (end %d)", b, err, end)
		}
		if valid && depthOf(b) > 16 && !errors.Is(err, ErrTooDeep) {
			t.Fatalf("Skip of JSON nested %d deep: %v, want ErrTooDeep", depthOf(b), err)
		}
		sp, vend, verr := ScanValue(b, i, 16)
		if (verr == nil) != (err == nil) || err == nil && vend != end {
			t.Fatalf("ScanValue ends at %d (%v), Skip at %d (%v)", vend, verr, end, err)
		}
		if verr == nil && sp.Kind == String && !utf8.Valid(b[sp.Start:sp.End]) {
			t.Fatalf("string span %q is not UTF-8", b[sp.Start:sp.End])
		}
	})
}

// FuzzUnescape holds ScanString and Unescape to encoding/json: a string
// accepted is decoded to the same text.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u20AC\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`, `"\ud83d\u0041"`, "\"é€😀\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		end, esc, err := ScanString(b, 0)
		if err != nil || end != len(b) {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("ScanString accepted %q, encoding/json: %v", b, err)
		}
		got := Unescape(nil, b[1:end-1])
		if string(got) != want {
			t.Fatalf("Unescape(%q) = %q, encoding/json %q", b, got, want)
		}
		if !esc && !bytes.Equal(got, b[1:end-1]) {
			t.Fatalf("%q reported without escapes", b)
		}
	})
}

// FuzzReader feeds the framing half anything: it must not panic or loop,
// must return only bracketed values within its limit, and must give back
// whole every value of a stream of valid ones.
func FuzzReader(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\"a\":1}\n{\"b\":\"x\n{\"c\":[2]}\n"))
	f.Add([]byte("\ufeff [{\"a\":\"]\"}, {}] {\"b\":{}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 256
		r := NewReader(bytes.NewReader(b), limit)
		values := 0
		for steps := 0; ; steps++ {
			if steps > len(b)+1 {
				t.Fatalf("no progress after %d steps", steps)
			}
			c, err := r.PeekByte()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c != '{' && c != '[' {
				r.SkipLine()
				continue
			}
			v, err := r.Value()
			switch {
			case errors.Is(err, ErrTruncated):
				return
			case errors.Is(err, ErrBroken), errors.Is(err, ErrTooLong):
				continue
			case err != nil:
				t.Fatal(err)
			}
			if len(v) > limit || len(v) < 2 || v[0] != c || (v[len(v)-1] != '}' && v[len(v)-1] != ']') {
				t.Fatalf("value %q", v)
			}
			values++
		}
		// A stream of valid values, one per line, comes back whole.
		if json.Valid(b) && (b[0] == '{' || b[0] == '[') && len(b) <= limit && !bytes.ContainsRune(b, '\n') && values != 1 {
			t.Fatalf("%q read as %d values, want 1", b, values)
		}
	})
}
