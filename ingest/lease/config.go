package lease

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"
)

// DefaultFailoverTime is how long a lease's counter must stand still before
// another worker takes it.
const DefaultFailoverTime = 10 * time.Second

// MinFailoverTime is the shortest failover time accepted: a round is a
// third of it, and each round makes at least one call.
const MinFailoverTime = time.Second

// Config says which lease table to use and how.
type Config struct {
	// Table is the lease table's name. It is created on first use.
	Table string
	// WorkerID names this worker in leaseOwner. It must differ between
	// the workers sharing a table; empty means DefaultWorkerID().
	WorkerID string
	// FailoverTime is how long a lease's counter must not move before
	// another worker takes it (default DefaultFailoverTime). A round runs
	// every third of it.
	FailoverTime time.Duration
	// Start is the checkpoint of the leases created for the shards of a
	// stream the table has no lease of yet, at the first listing: Latest
	// or TrimHorizon (the default). Shards that appear later, and every
	// shard of a stream the table knows, start at TrimHorizon, so that no
	// record between two listings is missed.
	Start string
	// Source is the source label of errors reported to the Reporter.
	Source string
}

// tableName is what DynamoDB accepts as a table name.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if err := CheckTableName(c.Table); err != nil {
		return fmt.Errorf("lease table: %w", err)
	}
	if c.FailoverTime != 0 && c.FailoverTime < MinFailoverTime {
		return fmt.Errorf("failover time %s is below the minimum %s", c.FailoverTime, MinFailoverTime)
	}
	switch c.Start {
	case "", Latest, TrimHorizon:
	default:
		return fmt.Errorf("start %q is neither %s nor %s", c.Start, Latest, TrimHorizon)
	}
	if len(c.WorkerID) > 1024 {
		return errors.New("worker id is longer than 1024 bytes")
	}
	return nil
}

// CheckTableName returns an error unless name is a valid DynamoDB table
// name.
func CheckTableName(name string) error {
	if !tableName.MatchString(name) {
		return fmt.Errorf("%q is not a DynamoDB table name (3 to 255 of a-z, A-Z, 0-9, '_', '-', '.')", name)
	}
	return nil
}

// withDefaults fills the zero settings.
func (c Config) withDefaults() Config {
	if c.WorkerID == "" {
		c.WorkerID = DefaultWorkerID()
	}
	if c.FailoverTime <= 0 {
		c.FailoverTime = DefaultFailoverTime
	}
	if c.Start == "" {
		c.Start = TrimHorizon
	}
	return c
}

// DefaultWorkerID returns "<host name>:<process id>": unique among the
// processes of a host, and it tells an operator where a lease is read.
func DefaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}
