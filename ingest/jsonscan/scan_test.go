package jsonscan

import (
	"errors"
	"strings"
	"testing"
)

func TestSkip(t *testing.T) {
	cases := []struct {
		in   string
		end  int // -1: the whole input
		err  error
		deep int
	}{
		{`{}`, -1, nil, 1},
		{`[]`, -1, nil, 1},
		{`{"a":[1,{"b":null}],"c":"d"} tail`, 28, nil, 3},
		{`"x\u00e9" 1`, 9, nil, 0},
		{`-0.5e+10,`, 8, nil, 0},
		{` { "a" : 1 } `, 12, nil, 1},
		{`{"a":1`, 0, ErrEnd, 1},
		{`{"a"`, 0, ErrEnd, 1},
		{`{"a" 1}`, 0, ErrExpectColon, 1},
		{`{1:2}`, 0, ErrExpectName, 1},
		{`{"a":1,}`, 0, ErrExpectName, 1},
		{`{"a":1 "b":2}`, 0, ErrObjectComma, 1},
		{`[1 2]`, 0, ErrArrayComma, 1},
		{`[1,]`, 0, ErrExpectValue, 1},
		{`[01]`, 0, ErrArrayComma, 1},
		{`[1.]`, 0, ErrBadNumber, 1},
		{`[-]`, 0, ErrBadNumber, 1},
		{`[nul]`, 0, ErrBadLiteral, 1},
		{`[tru`, 0, ErrEnd, 1},
		{"[\"a\tb\"]", 0, ErrControlChar, 1},
		{`["\q"]`, 0, ErrBadEscape, 1},
		{`["\u12"]`, 0, ErrBadEscape, 1},
		{"[\"\xff\"]", 0, ErrBadUTF8, 1},
		{`[[[1]]]`, 0, ErrTooDeep, 2},
		{`[[[1]]]`, -1, nil, 3},
		{strings.Repeat("[", 10000), 0, ErrTooDeep, 64},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), -1, nil, 100},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), 0, ErrTooDeep, 100},
	}
	for _, c := range cases {
		b := []byte(c.in)
		end, err := Skip(b, Space(b, 0), c.deep)
		want := c.end
		if want < 0 {
			want = len(strings.TrimRight(c.in, " "))
		}
		if !errors.Is(err, c.err) || err == nil && end != want {
			t.Errorf("Skip(%.40q, %d) = %d, %v; want %d, %v", c.in, c.deep, end, err, want, c.err)
		}
	}
}

func TestSteps(t *testing.T) {
	// Walk {"a\"b":[1,"x"],"c":{}} with the container steps.
	b := []byte(` {"a\"b" : [1, "x"], "c":{} } `)
	i := Space(b, 0)
	i, empty := Open(b, i)
	if empty {
		t.Fatal("object read as empty")
	}
	var names []string
	var kinds []Kind
	for more := true; more; {
		end, esc, v, err := Name(b, i)
		if err != nil {
			t.Fatal(err)
		}
		name := b[i+1 : end-1]
		if esc {
			name = Unescape(nil, name)
		}
		names = append(names, string(name))
		sp, next, err := ScanValue(b, v, 4)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, sp.Kind)
		if i, more, err = Next(b, next, '}'); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(names, ",") != `a"b,c` || len(kinds) != 2 || kinds[0] != Array || kinds[1] != Object {
		t.Errorf("names %q kinds %v", names, kinds)
	}
	if Space(b, i) != len(b) {
		t.Errorf("stopped at %d of %d", i, len(b))
	}
	if _, empty := Open([]byte("[ ]"), 0); !empty {
		t.Error("[ ] read as not empty")
	}
	if _, _, err := Next([]byte("  "), 0, ']'); !errors.Is(err, ErrEnd) {
		t.Errorf("Next at the end: %v", err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{None: "absent", String: "string", True: "boolean", Null: "null", Object: "object", Array: "array", 99: "invalid"} {
		if k.String() != want {
			t.Errorf("Kind(%d) = %q, want %q", k, k.String(), want)
		}
	}
}
