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
	b := []byte(` {"a\"b" : [1, "x" ], "c":{} } `)
	i := Space(b, 0) + 1
	var names []string
	var elements []Kind
	for first := true; ; first = false {
		name, esc, v, more, err := Member(b, i, first)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			i = v
			break
		}
		if esc {
			name = Unescape(nil, name)
		}
		names = append(names, string(name))
		if b[v] == '[' {
			v++
			for first := true; ; first = false {
				var more bool
				if v, more, err = Element(b, v, first); err != nil {
					t.Fatal(err)
				}
				if !more {
					break
				}
				var sp Span
				if sp, v, err = ScanValue(b, v, 4); err != nil {
					t.Fatal(err)
				}
				elements = append(elements, sp.Kind)
			}
		} else if v, err = Skip(b, v, 4); err != nil {
			t.Fatal(err)
		}
		i = v
	}
	if strings.Join(names, ",") != `a"b,c` || len(elements) != 2 || elements[0] != Number || elements[1] != String {
		t.Errorf("names %q elements %v", names, elements)
	}
	if Space(b, i) != len(b) {
		t.Errorf("stopped at %d of %d", i, len(b))
	}
	for _, c := range []struct {
		in    string
		first bool
		err   error
	}{
		{`}`, true, nil}, {` , "a" : 1`, false, nil}, {`,}`, false, ErrExpectName}, {`1`, true, ErrExpectName},
		{`"a" 1`, true, ErrExpectColon}, {`"a"`, true, ErrEnd}, {` ;`, false, ErrObjectComma}, {``, true, ErrEnd},
	} {
		if _, _, _, _, err := Member([]byte(c.in), 0, c.first); !errors.Is(err, c.err) {
			t.Errorf("Member(%q, %v): %v, want %v", c.in, c.first, err, c.err)
		}
	}
	if _, _, err := Element([]byte(" 1"), 0, false); !errors.Is(err, ErrArrayComma) {
		t.Errorf("Element without a comma: %v", err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{None: "absent", String: "string", True: "boolean", Null: "null", Object: "object", Array: "array", 99: "invalid"} {
		if k.String() != want {
			t.Errorf("Kind(%d) = %q, want %q", k, k.String(), want)
		}
	}
}
