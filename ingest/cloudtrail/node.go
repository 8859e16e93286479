package cloudtrail

import (
	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
)

// maxDepth bounds how deep a record's values may nest.
const maxDepth = 64

// node is one JSON value inside a record's bytes, found and checked by
// jsonscan. The decoder walks a record through nodes rather than parsing
// it whole: a record's memory is its bytes and the one small piece
// (an item's key, a call's parameters) parsed at a time (piece), however
// many items it lists, so that no record of the 8 MiB CloudTrail allows
// can take more than a bounded multiple of its size.
type node struct {
	b  []byte
	sp jsonscan.Span
}

func (n node) kind() jsonscan.Kind { return n.sp.Kind }

// exists reports whether the node is a value (get finds none as absent).
func (n node) exists() bool { return n.sp.Kind != jsonscan.None }

// raw is the value's JSON text (a string's with its quotes).
func (n node) raw() []byte {
	if n.sp.Kind == jsonscan.String {
		return n.b[n.sp.Start-1 : n.sp.End+1]
	}
	return n.b[n.sp.Start:n.sp.End]
}

// text is a string's content, unescaped; ok is false for any other kind.
func (n node) text() (b []byte, ok bool) {
	if n.sp.Kind != jsonscan.String {
		return nil, false
	}
	b = n.b[n.sp.Start:n.sp.End]
	if n.sp.Escaped {
		b = jsonscan.Unescape(nil, b)
	}
	return b, true
}

// is reports whether the node is the string s.
func (n node) is(s string) bool {
	b, ok := n.text()
	return ok && string(b) == s
}

// members calls f with each member of an object, in order, until f
// returns false. The node was checked: nothing here can fail.
func (n node) members(f func(name []byte, v node) bool) {
	if n.sp.Kind != jsonscan.Object {
		return
	}
	i := n.sp.Start + 1
	for first := true; ; first = false {
		name, esc, next, more, err := jsonscan.Member(n.b, i, first)
		if err != nil || !more {
			return
		}
		sp, after, err := jsonscan.ScanValue(n.b, next, maxDepth)
		if err != nil {
			return
		}
		if esc {
			name = jsonscan.Unescape(nil, name)
		}
		if !f(name, node{n.b, sp}) {
			return
		}
		i = after
	}
}

// elements calls f with each element of an array, in order, until f
// returns false.
func (n node) elements(f func(v node) bool) {
	if n.sp.Kind != jsonscan.Array {
		return
	}
	i := n.sp.Start + 1
	for first := true; ; first = false {
		next, more, err := jsonscan.Element(n.b, i, first)
		if err != nil || !more {
			return
		}
		sp, after, err := jsonscan.ScanValue(n.b, next, maxDepth)
		if err != nil {
			return
		}
		if !f(node{n.b, sp}) {
			return
		}
		i = after
	}
}

// get returns the first member of an object named by the first of names
// that it has (CloudTrail mixes tableName and TableName, key and Key in
// one record), or an absent node.
func (n node) get(names ...string) node {
	best, found := len(names), node{}
	n.members(func(name []byte, v node) bool {
		for i := 0; i < best; i++ {
			if string(name) == names[i] {
				best, found = i, v
				break
			}
		}
		return best > 0
	})
	return found
}

// count is the number of elements of an array or members of an object.
func (n node) count() int {
	c := 0
	n.elements(func(node) bool { c++; return true })
	n.members(func([]byte, node) bool { c++; return true })
	return c
}

// fields are the members of a record (or of an envelope, or of an object
// holding a Records list) that the decoder reads, each the first of its
// name.
type fields struct {
	records, detail, source, name, time, code, msg, params node
}

// scanFields walks the members of the object v once, checking every
// value, and keeps those the decoder reads.
func scanFields(v node) (fields, error) {
	var f fields
	b := v.b
	i := v.sp.Start + 1
	for first := true; ; first = false {
		name, esc, next, more, err := jsonscan.Member(b, i, first)
		if err != nil {
			return f, err
		}
		if !more {
			return f, nil
		}
		sp, after, err := jsonscan.ScanValue(b, next, maxDepth)
		if err != nil {
			return f, err
		}
		if esc {
			name = jsonscan.Unescape(nil, name)
		}
		if dst := f.slot(name); dst != nil && !dst.exists() {
			*dst = node{b, sp}
		}
		i = after
	}
}

// slot is where the member name is kept, or nil.
func (f *fields) slot(name []byte) *node {
	switch string(name) {
	case "Records":
		return &f.records
	case "detail":
		return &f.detail
	case "eventSource":
		return &f.source
	case "eventName":
		return &f.name
	case "eventTime":
		return &f.time
	case "errorCode":
		return &f.code
	case "errorMessage":
		return &f.msg
	case "requestParameters":
		return &f.params
	}
	return nil
}

// objectAt returns the object that starts b (white space skipped), unchecked:
// scanFields checks it as it walks it.
func objectAt(b []byte) (node, bool) {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return node{}, false
	}
	return node{b, jsonscan.Span{Start: i, End: len(b), Kind: jsonscan.Object}}, true
}
