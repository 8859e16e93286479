package cloudtrail

import (
	"errors"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// PartiQL statements (ExecuteStatement, BatchExecuteStatement,
// ExecuteTransaction) carry their table in the text and their key, if at
// all, in the WHERE clause (or an INSERT's VALUE tuple). CloudTrail redacts
// non-key values as ***(Redacted), and parameters (?) are not logged, so a
// key is read only from literal equalities joined by AND. This is a reader
// for those few shapes, not a PartiQL parser: anything else is counted for
// its table without a key.

// statement is what hotkeyd needs from one PartiQL statement.
type statement struct {
	class traffic.Class
	table string
	index string
	// eq maps attribute names to the literal values they are compared
	// equal to (ok false: a redacted value or a parameter). Nil when the
	// condition cannot name a key (an OR).
	eq map[string]literal
}

type literal struct {
	val string
	ok  bool
}

type tokKind uint8

const (
	tIdent    tokKind = iota // unquoted name or keyword
	tQIdent                  // "quoted name"
	tString                  // 'string literal'
	tNumber                  // 123, -1.5e3
	tRedacted                // ***(Redacted)
	tParam                   // ?
	tPunct                   // any other single character
)

type token struct {
	kind tokKind
	text string
}

// maxTokens bounds the work spent on one statement.
const maxTokens = 4096

const redacted = "***(Redacted)"

func lexPartiQL(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		if len(toks) >= maxTokens {
			return nil, errors.New("statement too long")
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, errors.New("unterminated quote")
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			k := tString
			if c == '"' {
				k = tQIdent
			}
			toks = append(toks, token{k, b.String()})
			i = j + 1
		case strings.HasPrefix(s[i:], redacted):
			toks = append(toks, token{tRedacted, redacted})
			i += len(redacted)
		case c == '?':
			toks = append(toks, token{tParam, "?"})
			i++
		case isDigit(c) || (c == '-' && i+1 < len(s) && isDigit(s[i+1])):
			j := i + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				((s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E'))) {
				j++
			}
			toks = append(toks, token{tNumber, s[i:j]})
			i = j
		case isWordByte(c):
			j := i + 1
			for j < len(s) && (isWordByte(s[j]) || isDigit(s[j])) {
				j++
			}
			toks = append(toks, token{tIdent, s[i:j]})
			i = j
		default:
			toks = append(toks, token{tPunct, s[i : i+1]})
			i++
		}
	}
	return toks, nil
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool { return c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

func (t token) is(kw string) bool { return t.kind == tIdent && strings.EqualFold(t.text, kw) }
func (t token) punct(p string) bool {
	return t.kind == tPunct && t.text == p
}
func (t token) name() bool { return t.kind == tIdent || t.kind == tQIdent }

// parsePartiQL reads a statement's verb, table, index and key equalities.
func parsePartiQL(s string) (statement, error) {
	toks, err := lexPartiQL(s)
	if err != nil {
		return statement{}, err
	}
	// EXISTS(SELECT ...) is a transaction's condition check: a read.
	if len(toks) > 2 && toks[0].is("EXISTS") && toks[1].punct("(") {
		toks = toks[2:]
		if toks[len(toks)-1].punct(")") {
			toks = toks[:len(toks)-1]
		}
	}
	if len(toks) == 0 {
		return statement{}, errors.New("empty statement")
	}
	var st statement
	var rest []token
	switch {
	case toks[0].is("SELECT"):
		st.class = traffic.Read
		rest = after(toks, "FROM")
	case toks[0].is("DELETE"):
		st.class = traffic.Write
		rest = after(toks, "FROM")
	case toks[0].is("INSERT"):
		st.class = traffic.Write
		rest = after(toks, "INTO")
	case toks[0].is("UPDATE"):
		st.class = traffic.Write
		rest = toks[1:]
	default:
		// The word is not quoted: it may be anything, a key included.
		return statement{}, errors.New("the first word is not SELECT, INSERT, UPDATE or DELETE")
	}
	if len(rest) == 0 || !rest[0].name() {
		return statement{}, errors.New("no table name in statement")
	}
	st.table = rest[0].text
	rest = rest[1:]
	if len(rest) >= 2 && rest[0].punct(".") && rest[1].name() {
		st.index = rest[1].text
		rest = rest[2:]
	}
	if st.table == "" {
		return statement{}, errors.New("empty table name in statement")
	}
	if toks[0].is("INSERT") {
		st.eq = valueTuple(after(rest, "VALUE"))
	} else if w := after(rest, "WHERE"); w != nil {
		st.eq = equalities(w)
	}
	return st, nil
}

// after returns the tokens after the first kw keyword at nesting depth 0,
// or nil.
func after(toks []token, kw string) []token {
	depth := 0
	for i, t := range toks {
		switch {
		case t.punct("(") || t.punct("[") || t.punct("{"):
			depth++
		case t.punct(")") || t.punct("]") || t.punct("}"):
			depth--
		case depth == 0 && t.is(kw):
			return toks[i+1:]
		}
	}
	return nil
}

// equalities reads `a = 'x' AND b = 1 AND ...`. An OR at the top level
// means no single key: nil.
func equalities(toks []token) map[string]literal {
	eq := map[string]literal{}
	depth := 0
	start := 0
	flush := func(part []token) {
		// Strip parentheses around a whole conjunct.
		for len(part) >= 2 && part[0].punct("(") && part[len(part)-1].punct(")") {
			part = part[1 : len(part)-1]
		}
		if len(part) != 3 || !part[1].punct("=") {
			return
		}
		a, v := part[0], part[2]
		if !a.name() {
			a, v = v, a
		}
		if !a.name() || a.kind == tIdent && (a.is("AND") || a.is("OR")) {
			return
		}
		switch v.kind {
		case tString, tNumber:
			eq[a.text] = literal{val: v.text, ok: true}
		case tRedacted, tParam:
			eq[a.text] = literal{}
		}
	}
	for i, t := range toks {
		switch {
		case t.punct("(") || t.punct("[") || t.punct("{"):
			depth++
		case t.punct(")") || t.punct("]") || t.punct("}"):
			depth--
		case depth == 0 && t.is("OR"):
			return nil
		case depth == 0 && (t.is("AND") || t.is("RETURNING")):
			flush(toks[start:i])
			start = i + 1
			if t.is("RETURNING") {
				return eq
			}
		}
	}
	flush(toks[start:])
	return eq
}

// valueTuple reads INSERT's {'a' : 'x', 'b' : 1}.
func valueTuple(toks []token) map[string]literal {
	if len(toks) == 0 || !toks[0].punct("{") {
		return nil
	}
	eq := map[string]literal{}
	for i := 1; i+2 < len(toks); {
		k, colon, v := toks[i], toks[i+1], toks[i+2]
		if k.kind != tString || !colon.punct(":") {
			return eq
		}
		switch v.kind {
		case tString, tNumber:
			eq[k.text] = literal{val: v.text, ok: true}
		default:
			eq[k.text] = literal{}
		}
		// Skip to the next pair: past the value, nested or not.
		j, depth := i+2, 0
		for ; j < len(toks); j++ {
			t := toks[j]
			if t.punct("{") || t.punct("[") || t.punct("(") {
				depth++
			} else if t.punct("}") || t.punct("]") || t.punct(")") {
				if depth == 0 {
					return eq
				}
				depth--
			} else if depth == 0 && t.punct(",") {
				break
			}
		}
		i = j + 1
	}
	return eq
}

// statement reads one PartiQL statement into st.items.
func (st *stream) statement(v *fastjson.Value) error {
	if v == nil {
		return rerr(traffic.ReasonBadRecord, "no statement")
	}
	b, err := v.StringBytes()
	if err != nil {
		return rerr(traffic.ReasonBadType, "statement is not a string")
	}
	if !validUTF8(b) {
		return rerr(traffic.ReasonBadUTF8, "statement is not valid UTF-8")
	}
	s, err := parsePartiQL(string(b))
	if err != nil {
		return rerr(traffic.ReasonBadOp, "statement %s: %v", traffic.Quote(st.d.mask, b), err)
	}
	table, err := st.intern([]byte(s.table))
	if err != nil {
		return err
	}
	index := ""
	if s.index != "" {
		if index, err = st.intern([]byte(s.index)); err != nil {
			return err
		}
	}
	// The key counts only when the schema says which attribute is the
	// partition key and the statement names a literal value for it.
	var pk, sk string
	if ks, ok := st.d.schemas.get(table, index); ok && s.eq != nil {
		if p := s.eq[ks.PartitionKey]; p.ok && p.val != "" {
			pk = p.val
			if q := s.eq[ks.SortKey]; ks.SortKey != "" && q.ok {
				sk = q.val
			}
		}
	}
	st.add(table, index, pk, sk, s.class)
	return nil
}
