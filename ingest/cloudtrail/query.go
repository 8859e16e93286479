package cloudtrail

import (
	"strings"

	"github.com/valyala/fastjson"
)

// A Query's key holds the values of its key condition: the partition key
// (always compared with =) and, often, the sort key. Without a schema the
// two are told apart by the condition itself: an attribute compared with
// begins_with, BETWEEN, <, <=, > or >= can only be the sort key, so when
// one attribute of two is, the other is the partition key.

// rangeAttrs returns the attributes a Query's key condition compares with
// anything but =, from keyConditionExpression (names resolved through
// expressionAttributeNames) or the legacy keyConditions.
func rangeAttrs(rp *fastjson.Value) map[string]bool {
	if rp == nil {
		return nil
	}
	out := map[string]bool{}
	if kc := get(rp, "keyConditions", "KeyConditions"); kc != nil {
		if obj, err := kc.Object(); err == nil {
			obj.Visit(func(k []byte, v *fastjson.Value) {
				op := string(get(v, "comparisonOperator", "ComparisonOperator").GetStringBytes())
				if op != "" && op != "EQ" {
					out[string(k)] = true
				}
			})
		}
	}
	expr := get(rp, "keyConditionExpression", "KeyConditionExpression")
	if expr == nil {
		return out
	}
	b, err := expr.StringBytes()
	if err != nil || !validUTF8(b) {
		return out
	}
	names := get(rp, "expressionAttributeNames", "ExpressionAttributeNames")
	resolve := func(tok string) string {
		if strings.HasPrefix(tok, "#") && names != nil {
			if n := names.GetStringBytes(tok); n != nil {
				return string(n)
			}
		}
		return tok
	}
	toks := exprTokens(string(b))
	for i, t := range toks {
		switch {
		case strings.EqualFold(t, "begins_with") && i+2 < len(toks) && toks[i+1] == "(":
			out[resolve(toks[i+2])] = true
		case (strings.EqualFold(t, "BETWEEN") || t == "<" || t == "<=" || t == ">" || t == ">=") && i > 0:
			out[resolve(toks[i-1])] = true
		}
	}
	return out
}

// exprTokens cuts a condition expression into names (#n0, :v0, pk),
// operators (=, <=, ...) and single punctuation.
func exprTokens(s string) []string {
	var toks []string
	for i := 0; i < len(s) && len(toks) < maxTokens; {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '<' || c == '>':
			if i+1 < len(s) && (s[i+1] == '=' || s[i+1] == '>') {
				toks = append(toks, s[i:i+2])
				i += 2
			} else {
				toks = append(toks, s[i:i+1])
				i++
			}
		case c == '#' || c == ':' || c == '_' || c == '.' || c == '-' || isDigit(c) || isWordByte(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '.' || s[j] == '-' || isDigit(s[j]) || isWordByte(s[j])) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			toks = append(toks, s[i:i+1])
			i++
		}
	}
	return toks
}
