package sketch

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Config. DefaultConfig documents the memory they cost.
const (
	// DefaultWindow is the sliding window of the live daemon.
	DefaultWindow = 60 * time.Second
	// DefaultSubWindows cuts the default window into 5 s slots.
	DefaultSubWindows = 12
	// DefaultTracked is the number of heavy keys reported per table and class.
	DefaultTracked = 100
	// DefaultCandidates is the number of keys counted exactly per table and
	// class, of which the Tracked heaviest are reported. Counting more keys
	// than are reported keeps the boundary of the reported set stable.
	DefaultCandidates = 384
	// DefaultDepth is the number of count-min rows: δ = e^-5 ≈ 0.67 %.
	DefaultDepth = 5
	// DefaultWidth is the number of count-min columns: ε = e/4096 ≈ 0.066 %
	// of the class's units in a generation.
	DefaultWidth = 4096
	// DefaultHLLPrecision gives 2^14 registers: a standard error of
	// 1.04/√16384 ≈ 0.81 %.
	DefaultHLLPrecision = 14
	// DefaultMaxTables bounds the tables and indexes tracked, so that input
	// with random table names cannot exhaust memory: its MemoryBudget,
	// 300 × at most 0.998 MiB plus the process, fits the shipped 512 MiB
	// memory limit (GOMEMLIMIT 460 MiB) with room for garbage
	// (docs/limits.md).
	DefaultMaxTables = 300
	// DefaultMaxShards bounds the stream shards counted per table.
	DefaultMaxShards = 512
	// DefaultMaxThrottledKeys bounds the throttled keys counted per table
	// and class.
	DefaultMaxThrottledKeys = 64
	// DefaultRecentSeconds is the number of complete seconds whose units
	// are reported as recent, for judging a key's onset quickly.
	DefaultRecentSeconds = 3
	// maxRecentSeconds bounds RecentSeconds: every candidate key keeps a
	// ring of that many seconds and one more.
	maxRecentSeconds = 15
	// exactDistinct is the number of distinct keys per sub-window counted
	// exactly before the HyperLogLog takes over: up to it distinct counts
	// are exact.
	exactDistinct = 1000
	// quantum is the resolution of the count-min counters and of the
	// per-key counts: units are counted in quarters, which keeps the 0.5 RCU
	// of eventually consistent reads exact.
	quantum = 4
)

// Config sizes the sketches. It bounds the memory of a table whatever the
// number of distinct keys (Footprint), and below that bound a table's
// memory follows its keys (FootprintFor).
type Config struct {
	// Window is the sliding window the shares are computed over. Zero means
	// one window that never expires (hotkeyd analyze over whole files).
	Window time.Duration
	// SubWindows is the number of slots the window is cut into; traffic
	// expires one slot at a time.
	SubWindows int
	// Tracked is the number of heavy partition keys reported per table and
	// class (ClassStats.Top).
	Tracked int
	// Candidates is the number of partition keys counted exactly per table
	// and class; at least Tracked. Zero means DefaultCandidates (or Tracked,
	// if larger).
	Candidates int
	// Depth and Width size the count-min sketch of each generation and
	// class (Depth rows of Width counters, Width a power of two). A key's
	// estimate in a generation overcounts by at most ε = e/Width of the
	// generation's units with probability 1-δ, δ = e^-Depth. Zero means the
	// default.
	Depth, Width int
	// HLLPrecision is the HyperLogLog precision (4 to 18) of the distinct
	// key count. Zero means DefaultHLLPrecision.
	HLLPrecision int
	// MaxTables bounds the tables and indexes tracked. Past it a table is
	// tracked only in place of an idle or less busy one (evict.go); the
	// events of tables not tracked are dropped and counted
	// (Store.Dropped). Zero means DefaultMaxTables.
	MaxTables int
	// MaxShards bounds the stream shards counted per table; records of
	// further shards count in the totals but for no shard. Zero means
	// DefaultMaxShards.
	MaxShards int
	// MaxThrottledKeys bounds the throttled partition keys counted per
	// table and class; past it a key's count is known within bounds
	// (ThrottleStats). Zero means DefaultMaxThrottledKeys.
	MaxThrottledKeys int
	// RecentSeconds is the number of complete seconds, up to the last one,
	// whose units are reported per key and class (KeyStat.RecentUnits,
	// ClassStats.RecentUnits), 1 to 15. Zero means DefaultRecentSeconds.
	RecentSeconds int
}

// DefaultConfig returns the defaults: a 60 s window of 12 × 5 s slots, 100
// keys reported and 384 counted per table and class, count-min 5 × 4096
// (ε ≈ 0.066 %, δ ≈ 0.67 %), HyperLogLog precision 14 (0.81 %), at most
// 300 tables. A table costs at most Footprint() bytes, 0.998 MiB.
func DefaultConfig() Config {
	return Config{
		Window:           DefaultWindow,
		SubWindows:       DefaultSubWindows,
		Tracked:          DefaultTracked,
		Candidates:       DefaultCandidates,
		Depth:            DefaultDepth,
		Width:            DefaultWidth,
		HLLPrecision:     DefaultHLLPrecision,
		MaxTables:        DefaultMaxTables,
		MaxShards:        DefaultMaxShards,
		MaxThrottledKeys: DefaultMaxThrottledKeys,
		RecentSeconds:    DefaultRecentSeconds,
	}
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.SubWindows == 0 {
		c.SubWindows = DefaultSubWindows
	}
	if c.Window == 0 {
		c.SubWindows = 1
	}
	if c.Tracked == 0 {
		c.Tracked = DefaultTracked
	}
	if c.Candidates == 0 {
		c.Candidates = max(DefaultCandidates, c.Tracked)
	}
	if c.Depth == 0 {
		c.Depth = DefaultDepth
	}
	if c.Width == 0 {
		c.Width = DefaultWidth
	}
	if c.HLLPrecision == 0 {
		c.HLLPrecision = DefaultHLLPrecision
	}
	if c.MaxTables == 0 {
		c.MaxTables = DefaultMaxTables
	}
	if c.MaxShards == 0 {
		c.MaxShards = DefaultMaxShards
	}
	if c.MaxThrottledKeys == 0 {
		c.MaxThrottledKeys = DefaultMaxThrottledKeys
	}
	if c.RecentSeconds == 0 {
		c.RecentSeconds = DefaultRecentSeconds
	}
	return c
}

// Validate reports the first field that cannot be used, after zero fields
// took their defaults. The window's errors start with "window:", the
// config file's key for it.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Window < 0:
		return fmt.Errorf("window: must not be negative, got %v", c.Window)
	case c.SubWindows < 1 || c.SubWindows > 64:
		return fmt.Errorf("sub-windows %d: must be 1 to 64", c.SubWindows)
	case c.Window > 0 && c.Window/time.Duration(c.SubWindows) < time.Millisecond:
		return fmt.Errorf("window: must be at least %v (%d slots of 1ms), got %v", time.Duration(c.SubWindows)*time.Millisecond, c.SubWindows, c.Window)
	case c.Tracked < 1:
		return fmt.Errorf("tracked %d: must be positive", c.Tracked)
	case c.Candidates < c.Tracked || c.Candidates > 1<<15:
		return fmt.Errorf("candidates %d: must be tracked (%d) to 32768", c.Candidates, c.Tracked)
	case c.Depth < 1 || c.Depth > maxDepth:
		return fmt.Errorf("depth %d: must be 1 to %d", c.Depth, maxDepth)
	case c.Width < 16 || c.Width > 1<<24 || c.Width&(c.Width-1) != 0:
		return fmt.Errorf("width %d: must be a power of two from 16 to 2^24", c.Width)
	case c.HLLPrecision < 4 || c.HLLPrecision > 18:
		return fmt.Errorf("hll precision %d: must be 4 to 18", c.HLLPrecision)
	case c.MaxTables < 1:
		return fmt.Errorf("max tables %d: must be positive", c.MaxTables)
	case c.MaxShards < 1:
		return fmt.Errorf("max shards %d: must be positive", c.MaxShards)
	case c.MaxThrottledKeys < 1:
		return fmt.Errorf("max throttled keys %d: must be positive", c.MaxThrottledKeys)
	case c.RecentSeconds < 1 || c.RecentSeconds > maxRecentSeconds:
		return fmt.Errorf("recent seconds %d: must be 1 to %d", c.RecentSeconds, maxRecentSeconds)
	}
	return nil
}

// Epsilon is the count-min error bound: with probability 1-Delta a key's
// estimate in a generation overcounts by at most Epsilon times its class's
// units in that generation (a key's estimate before it is counted exactly is
// the sum over the two generations overlapping the window).
func (c Config) Epsilon() float64 { return math.E / float64(c.withDefaults().Width) }

// Delta is the probability that a key's estimate misses the Epsilon bound.
func (c Config) Delta() float64 { return math.Exp(-float64(c.withDefaults().Depth)) }

// Sizes assumed for the parts whose size depends on the key strings:
// DynamoDB allows 2048-byte partition keys, real ones are short. A table
// holds no key longer than MaxKeyBytes (a longer one is held shortened,
// heldKey), so that Footprint bounds its key bytes whatever the keys;
// FootprintFor assumes keys of typical length.
const (
	// MaxKeyBytes is the longest key a table holds as it is: a longer
	// partition key is held, counted and reported as its first bytes, "…"
	// and its 64-bit hash in hex, MaxKeyBytes in all, so that 2 KiB keys
	// cost no more than short ones (the hash keeps keys that share their
	// first bytes apart).
	MaxKeyBytes = 96
	// footprintShardBytes is the length of a stream shard id
	// ("shardId-00000001700000000000-0123abcd").
	footprintShardBytes = 56
)

// keyLateSeconds is how far out of order, in seconds, a key's events may
// come in a live window and still count in their own second: a key lives
// in one stream shard, read in order, but a key logged by several hosts
// comes as late as the slowest host's log.
const keyLateSeconds = 7

// maxClassRing bounds a class's per-second ring in a live window (a window
// longer than about an hour keeps its class seconds for the last 4096).
const maxClassRing = 4096

// keyRing is the length of a candidate key's per-second ring: the recent
// seconds, and in a live window keyLateSeconds of disorder.
func (c Config) keyRing() int {
	if c.Window > 0 {
		return ringLen(max(c.RecentSeconds, keyLateSeconds))
	}
	return ringLen(c.RecentSeconds)
}

// classRing is the length of a class's per-second ring: in a live window
// every second of the window, so that events of a table read from several
// shards or hosts, each at its own pace, still add up second by second.
func (c Config) classRing() int {
	if c.Window <= 0 {
		return ringLen(c.RecentSeconds)
	}
	secs := int((c.Window + c.Window/time.Duration(c.SubWindows) + time.Second - 1) / time.Second)
	return min(max(ringLen(secs), c.keyRing()), maxClassRing)
}

// maxDepth bounds Config.Depth.
const maxDepth = 8
