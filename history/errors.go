package history

import (
	"errors"
)

// SQLite's primary result codes for a file that is not a database or is
// damaged (https://www.sqlite.org/rescode.html).
const (
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// isCorrupt says whether err is SQLite's word for a file it cannot read
// as a database.
func isCorrupt(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	switch coded.Code() & 0xff {
	case sqliteCorrupt, sqliteNotADB:
		return true
	}
	return false
}
