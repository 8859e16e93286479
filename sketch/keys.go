package sketch

import (
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// HeldKey returns the form in which a table holds and reports key: key
// itself up to MaxKeyBytes, or its first bytes, "…" and its hash, so that
// a reader can find a long key it counted in a report.
func HeldKey(key string) string {
	if len(key) <= MaxKeyBytes {
		return key
	}
	return heldKey(key, keyHash(key))
}

// heldKey returns the copy of key, hashed to h, that a table holds: key
// itself up to MaxKeyBytes, or its first bytes (cut at a character
// boundary), "…" and h in hex, MaxKeyBytes at most.
func heldKey(key string, h uint64) string {
	if len(key) <= MaxKeyBytes {
		return strings.Clone(key)
	}
	cut := MaxKeyBytes - heldTail
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut--
	}
	b := make([]byte, 0, cut+heldTail)
	b = append(b, key[:cut]...)
	b = append(b, "…"...)
	for i := 60; i >= 0; i -= 4 {
		b = append(b, "0123456789abcdef"[h>>i&15])
	}
	return string(b)
}

// heldTail is the length of what heldKey puts after a long key's first
// bytes: "…" and 16 hex digits.
const heldTail = len("…") + 16

// sameKey reports whether held, a key heldKey returned, is key's, given
// that their hashes are equal: a long key is known by its first bytes and
// its hash.
func sameKey(held, key string) bool {
	if len(key) <= MaxKeyBytes {
		return held == key
	}
	return len(held) > heldTail && strings.HasPrefix(key, held[:len(held)-heldTail])
}

// sortKeyBit maps a sort key hash to its bit in a 32-bit linear-counting
// bitmap, or 0 when there is no sort key.
func sortKeyBit(sk string, hash func(string) uint64) uint32 {
	if sk == "" {
		return 0
	}
	return 1 << (hash(sk) >> 59)
}

// SortKeyBit is the bit sort key sk sets in a key's bitmap of sort keys
// as the store counts it (bit hash>>59 of its xxh3 hash), 0 for none: for
// a bitmap made elsewhere, which SortKeyEstimate reads.
func SortKeyBit(sk string) uint32 { return sortKeyBit(sk, xxh3.HashString) }

// SortKeyEstimate is sortKeyEstimate, for a bitmap of sort keys' bits
// made elsewhere (SortKeyBit of each sort key): hotkeyd analyze's count
// of a key's sort keys from its records.
func SortKeyEstimate(b uint32) uint64 { return sortKeyEstimate(b) }

// sortKeyEstimate is the linear-counting estimate -m·ln(zeros/m) of a
// 32-bit bitmap (m = 32): 0 for none, 1 for one sort key (the estimate of
// one set bit is 1.02), within about 20 % up to 40, and 111 (m·ln m) once
// every bit is set, which reads as "many". Detection only needs to tell
// one item from a collection, so 4 bytes per slot suffice.
func sortKeyEstimate(b uint32) uint64 {
	if b == 0 {
		return 0
	}
	z := 32 - bits.OnesCount32(b)
	if z == 0 {
		z = 1
	}
	e := -32 * math.Log(float64(z)/32)
	return uint64(math.Round(e))
}

// keyHash is the 64-bit hash every structure of a table shares: the
// candidate index, the count-min columns, the distinct-key sets. The empty
// key (no key) hashes to 0 and is never looked up.
func keyHash(pk string) uint64 {
	if pk == "" {
		return 0
	}
	return xxh3.HashString(pk)
}
