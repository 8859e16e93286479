package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: docs/benchmarks.md
)

// FileName is the database's name under --history.path.
const FileName = "history.db"

// applicationID marks a hotkeyd history database ("hkd1"): a SQLite file
// with another id is someone else's and is moved aside, not written.
const applicationID = 0x686b6431

// schemaVersion is the user_version of the schema below.
const schemaVersion = 1

// schema creates the tables. cells is keyed by table first, so that a
// table's range is one range scan; cells_age serves retention.
const schema = `
CREATE TABLE IF NOT EXISTS cells(
	tbl TEXT NOT NULL, idx TEXT NOT NULL, step INTEGER NOT NULL, start INTEGER NOT NULL, class TEXT NOT NULL,
	seconds INTEGER NOT NULL, units REAL NOT NULL, events INTEGER NOT NULL, throttled INTEGER NOT NULL,
	distinct_keys INTEGER NOT NULL, busiest REAL NOT NULL, keys TEXT NOT NULL, shards TEXT NOT NULL,
	PRIMARY KEY(tbl, idx, step, start, class)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cells_age ON cells(step, start);
CREATE TABLE IF NOT EXISTS incidents(
	id TEXT PRIMARY KEY, tbl TEXT NOT NULL, idx TEXT NOT NULL, cause TEXT NOT NULL, class TEXT NOT NULL,
	ident TEXT NOT NULL, keys TEXT NOT NULL, severity TEXT NOT NULL,
	start_ms INTEGER NOT NULL, end_ms INTEGER, last_seen_ms INTEGER NOT NULL,
	peak REAL NOT NULL, summary TEXT NOT NULL, fix TEXT NOT NULL, fix_kind TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS incidents_start ON incidents(start_ms);
`

// dsn is the driver's name of the file: WAL, so that readers (hotkeyd
// report) never wait for the writer and a commit is one append;
// synchronous NORMAL, which in WAL mode loses no committed transaction to
// a crash of the process, only to one of the machine
// (https://www.sqlite.org/pragma.html#pragma_synchronous).
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	if readOnly {
		q.Add("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	return "file:" + path + "?" + q.Encode()
}

// errForeign says a file is not a history database.
var errForeign = errors.New("not a hotkeyd history database")

// openDB opens the database at path for writing, creating it when
// absent; a file that is not a history database, or is corrupt, is
// returned as errForeign (wrapped) so that the caller moves it aside.
func openDB(ctx context.Context, path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create history directory: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("open history database %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; reads go through connections of their own (Store.rdb)
	if err := checkDB(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("history database %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create history schema in %s: %w", path, err)
	}
	return db, nil
}

// checkDB checks that db is empty or a history database of this schema,
// and marks an empty one as such.
func checkDB(ctx context.Context, db *sql.DB) error {
	var id, version int64
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id); err != nil {
		return foreignOr(err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return foreignOr(err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return foreignOr(err)
	}
	switch {
	case id == 0 && tables == 0: // new
		_, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d; PRAGMA user_version=%d", applicationID, schemaVersion))
		return err
	case id != applicationID:
		return fmt.Errorf("%w: application_id %#x", errForeign, id)
	case version != schemaVersion:
		return fmt.Errorf("%w: schema version %d, this hotkeyd writes %d", errForeign, version, schemaVersion)
	}
	// No quick_check: it reads every page (5.6 s for 28 days of 300
	// tables), past the 2 s a restart may take. A page damaged beyond the
	// header and schema read here fails the write that meets it: the
	// daemon then goes on without history, said in the log and metric.
	return nil
}

// foreignOr classifies an error of the first reads: SQLite says "file is
// not a database" (SQLITE_NOTADB) or "database disk image is malformed"
// (SQLITE_CORRUPT) of a file it cannot read as one.
func foreignOr(err error) error {
	if isCorrupt(err) {
		return fmt.Errorf("%w: %w", errForeign, err)
	}
	return err
}

// moveAside renames the file at path (and its WAL and shared-memory
// files) to path.<reason>-<time>, and returns the new name.
func moveAside(path, reason string, now time.Time) (string, error) {
	to := fmt.Sprintf("%s.%s-%s", path, reason, now.UTC().Format("20060102T150405Z"))
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("move %s aside: %w", path, err)
	}
	for _, ext := range []string{"-wal", "-shm"} {
		if err := os.Rename(path+ext, to+ext); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("move %s aside: %w", path+ext, err)
		}
	}
	return to, nil
}
