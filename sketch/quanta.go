package sketch

import "math"

// satAdd adds without wrapping.
func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint32
}

// toQuanta converts units to counter quanta, rounding to the nearest
// quarter unit and saturating.
func toQuanta(units float64) uint32 {
	q := units*quantum + 0.5
	if q >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(q)
}

// satAdd64 adds without wrapping.
func satAdd64(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// satAdd16 adds without wrapping.
func satAdd16(a, b uint16) uint16 {
	return uint16(min(uint32(a)+uint32(b), math.MaxUint16))
}
