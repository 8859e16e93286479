// Package analyze is hotkeyd analyze: it reads whole inputs (JSON lines,
// CloudTrail, DynamoDB stream records, compressed or not; package formats)
// on every core (package parallel) into one window that never expires,
// evaluates it once (detect.Evaluate) and writes one report: as text, as
// JSON, or as one self-contained HTML page with charts of the traffic
// across the input. It is the offline twin of the daemon's pipeline, with
// the same numbers.
package analyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/ingest/formats"
	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/ingest/jsonl"
	"github.com/hotkeyd/hotkeyd/ingest/parallel"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Config is what one analysis reads and how it reports.
type Config struct {
	// Files are the inputs; "-" is Stdin.
	Files []string
	// Pipeline is the detector's settings (Detect.Top keys per class are
	// listed) and the sketches' configuration (config.Config.Pipeline); the
	// sketches count one window over the whole input whatever its Window.
	Pipeline config.Pipeline
	// Schemas are the key schemas of CloudTrail tables and of stream
	// records' tables.
	Schemas map[string]traffic.KeySchema
	// Table is the table of stream records that name none (formats.Config).
	Table string
	// Fields are the JSON-lines member names.
	Fields jsonl.Fields
	// Masker masks the keys of the report, and the input quoted on
	// Stderr; nil shows them as they are.
	Masker *export.KeyMasker
	// Format is "text", "json" or "html" (one self-contained page with
	// the live page's views and charts, export.WriteHTMLReport).
	Format string
	// Version is written into the HTML report.
	Version string
	// Log receives the readers' hints (a table without a key schema).
	Log *zap.Logger
	// Workers is the number of inputs' parts read side by side
	// (package parallel); 0 means GOMAXPROCS.
	Workers int
	// MinPart is the smallest part a plain file is cut into
	// (parallel.Config.MinPart); 0 means parallel.DefaultMinPart.
	MinPart int64
	// Stdin, Stdout and Stderr are the process's streams: the report goes
	// to Stdout; progress, rejected lines and file errors to Stderr.
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// NoIncidents skips the incidents (TableReport.Incidents): the
	// input's events are not kept for them and not replayed
	// (incidents.go), which saves most of analyze's time and memory
	// beyond one reading (docs/analyze.md).
	NoIncidents bool

	// replayAll replays every table for its incidents, those the screen
	// finds quiet too (incidentscreen.go): the tests' check of the screen.
	replayAll bool
}

// Run reads every file and writes the report. A file that cannot be read
// is named on Stderr and the others are still reported; Run then returns
// ErrUnreadable. When every input was read but nothing in them was usable,
// it says so on Stderr and returns ErrNothingUsable.
//
// The report is the same whatever the order of the inputs' lines: a
// table's seconds add up over whole files (package sketch), and the keys'
// busiest seconds are counted again when the inputs did not run in time
// (keyseconds.go), from the records of the events the read wrote to a
// spill (spill.go). Standard input and pipes are copied to a temporary
// file first, so that they can be read in parts (spool). Times that make
// no sense are refused as bad_time (times.go).
func Run(ctx context.Context, cfg Config) error {
	var mask traffic.Masker
	if cfg.Masker != nil {
		mask = cfg.Masker
	}
	rep := input.NewTextReporter(cfg.Stderr, mask)
	rep.Order(cfg.Files)
	paths, cleanup, err := spool(cfg.Files, cfg.Stdin)
	if err != nil {
		return err
	}
	defer cleanup()
	failed := 0
	fail := func(name string, err error) {
		fmt.Fprintf(cfg.Stderr, "hotkeyd: %s: %v\n", name, bareError(err))
		failed++
	}
	inputs := cfg.formats(rep, cfg.Log, cfg.Format != "html")
	in, err := cfg.read(ctx, inputs, rep, paths, fail)
	if err != nil {
		return err
	}
	defer in.removeSpill()
	rep.Summary()
	nothing := ""
	if failed == 0 {
		nothing = cfg.nothingUsable(inputs, rep, in.passed)
	}
	snap, hours, unforeseen, unranked, err := cfg.snapshot(ctx, in, paths)
	if err != nil {
		return err
	}
	result := detect.Evaluate(snap, cfg.Pipeline.Detect)
	result = detect.Foresee(snap, result, hours, cfg.Pipeline.Detect)
	result.Rejected = rep.Rejected() + in.left
	result.Notes = append(inputs.Notes(), unranked...)
	if unforeseen > 0 {
		result.Notes = append(result.Notes, forecastNote(unforeseen))
	}
	if n := in.store.Untracked(); n > 0 {
		result.Notes = append(result.Notes, untrackedNote(n, in.store.Config().MaxTables))
	}
	// The store's figures are all in the result: it is let go before
	// the incidents are judged (the HTML report's recorder keeps it).
	in.store = nil
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if err := addIncidents(ctx, &result, in.incidents, cfg.Pipeline, workers, !cfg.replayAll); err != nil {
		return err
	}
	result.BadTime = badTimes(rep.Reason(traffic.ReasonBadTime), in.left, in.first, in.last)
	if err := cfg.write(result, in.rec); err != nil {
		return err
	}
	switch {
	case failed > 0:
		return ErrUnreadable
	case nothing != "":
		return ErrNothingUsable
	}
	return nil
}

// untrackedNote says that n events of tables and indexes past the
// maxTables counted were not: analyze counts the busiest tables within
// the bound the config sets (max_tables), whose memory it is.
func untrackedNote(n uint64, maxTables int) string {
	return fmt.Sprintf("%s of tables and indexes past the %d counted (max_tables) were not counted: the report holds the busiest %d; raise max_tables in the config to count more",
		plural.Count(n, "event"), maxTables, maxTables)
}

// inputsRead is what reading the inputs gave: the count, the Events that
// passed the checks, the range of plausible times and the range counted,
// and the events far in time from the rest left out (from hour first to
// hour last since 1970).
type inputsRead struct {
	counted
	passed      uint64
	valid, keep timeRange
	left        uint64
	first, last int64
	// spill holds the records of the first read's events (spill.go); nil
	// without one.
	spill *keySpill
}

// read counts the inputs, and counts them again without the events far in
// time from the rest when there are some (outliers): they must stretch
// nothing, and what they counted cannot be taken out of a sketch.
func (cfg *Config) read(ctx context.Context, inputs *formats.Set, rep traffic.Reporter, paths map[string]string, fail func(string, error)) (inputsRead, error) {
	valid := plausible(time.Now())
	// Without a spill (no temporary file), the keys' seconds are counted
	// by reading the inputs again.
	spill, err := newKeySpill(valid)
	if err != nil {
		fmt.Fprintf(cfg.Stderr, "hotkeyd: %v; the inputs will be read twice\n", err)
		spill = nil
	}
	c, err := count(ctx, *cfg, counting{formats: inputs, rep: rep, paths: paths, valid: valid, keep: valid, fail: fail, spill: spill})
	if err != nil {
		if spill != nil {
			spill.remove()
		}
		return inputsRead{}, err
	}
	in := inputsRead{passed: c.passed.Load(), valid: valid, keep: valid, spill: spill, counted: c}
	keep, left, first, last, ok := outliers(c.times.hours)
	if ok {
		in.keep, in.left, in.first, in.last = keep, left, first, last
		fmt.Fprintf(cfg.Stderr, "hotkeyd: skipped %s far in time from the rest of the input (bad_time), from %s to %s\n",
			plural.Count(left, "event"), time.Unix(first*3600, 0).UTC().Format(time.RFC3339), time.Unix((last+1)*3600-1, 0).UTC().Format(time.RFC3339))
		if err := cfg.countAgainWith(ctx, &in, paths, nil); err != nil {
			return inputsRead{}, err
		}
	}
	// More tables than the store holds: the busiest of the tally are
	// counted (tables.go).
	if in.store.Untracked() > 0 {
		if names, ok := in.tally.busiest(in.store.Config().MaxTables); ok {
			if err := cfg.countAgainWith(ctx, &in, paths, names); err != nil {
				return inputsRead{}, err
			}
		}
	}
	return in, nil
}

// countAgainWith reads the inputs again, quietly, counting the events of
// in.keep only and, with declare, the tables and indexes it names only
// (sketch.Store.Declare); the first read's spill stays.
func (cfg *Config) countAgainWith(ctx context.Context, in *inputsRead, paths map[string]string, declare []string) error {
	quiet := cfg.formats(traffic.NopReporter{}, zap.NewNop(), cfg.Format != "html")
	in.incidents.closeFile()
	c, err := count(ctx, *cfg, counting{formats: quiet, paths: paths, valid: in.valid, keep: in.keep, declare: declare})
	if err != nil {
		in.removeSpill()
		return err
	}
	in.counted = c
	return nil
}

// nothingUsable says why nothing in inputs that were all read was usable,
// on Stderr too; empty when something was.
func (cfg *Config) nothingUsable(inputs *formats.Set, rep *input.TextReporter, passed uint64) string {
	nothing := inputs.Verdict()
	if events, omitted := inputs.Decoded(); nothing == "" && events > 0 && omitted == 0 && passed == 0 {
		// The readers made events, and the check refused every one.
		nothing = "every event it held was rejected"
	}
	if nothing != "" {
		if reasons := rep.Reasons(); reasons != "" {
			nothing += "; skipped: " + reasons
		}
		fmt.Fprintf(cfg.Stderr, "hotkeyd: nothing usable in %s: %s\n", strings.Join(cfg.Files, ", "), nothing)
	}
	return nothing
}

// snapshot is the store's snapshot, with the keys counted again where
// they need to be: keys counted exactly from their first event in inputs
// read in time are exact already; the others are counted again, and so
// are the throttled keys when there were more than the store counts. The
// classes with more keys than the store counts exactly list the keys
// their exact counts prove the heaviest (tailkeys.go), and notes says
// which list fewer than the report would. The judged keys of inputs that
// span days are counted too, for their forecasts: hours answers their
// busiest second of each hour (nil when none was counted), and unforeseen
// says how many were left out for the bound (forecasts.go).
func (cfg *Config) snapshot(ctx context.Context, in inputsRead, paths map[string]string) (snap sketch.Snapshot, hours detect.KeySeries, unforeseen int, notes []string, err error) {
	snap = in.store.Snapshot()
	want, throttled := rankedKeys(snap, in.inOrder), needsThrottleRecount(&snap)
	var keys *keyCounter
	// The classes' keys are settled first: the judged keys are known
	// then.
	if tails := overflowed(snap); len(tails) > 0 {
		addRanked(want, snap, tails)
		if keys, err = cfg.countAgain(ctx, in, paths, want, throttled, tails); err != nil {
			return sketch.Snapshot{}, nil, 0, nil, err
		}
		notes = keys.settle(&snap, cfg.Pipeline.Detect.Top)
		want, throttled = map[rankedKey]struct{}{}, false
	}
	foreseen, unforeseen := forecastKeys(snap, cfg.Pipeline.Detect.Top)
	for id := range foreseen {
		if keys == nil || keys.keys[id] == nil {
			want[id] = struct{}{}
		}
	}
	if len(want) > 0 || throttled {
		more, err := cfg.countAgain(ctx, in, paths, want, throttled, nil)
		if err != nil {
			return sketch.Snapshot{}, nil, 0, nil, err
		}
		keys = keys.join(more)
	}
	if keys == nil {
		return snap, nil, unforeseen, notes, nil
	}
	keys.apply(&snap)
	if keys.throttled != nil {
		keys.throttled.apply(&snap)
	}
	if len(foreseen) > 0 {
		hours = keys.hourly
	}
	return snap, hours, unforeseen, notes, nil
}

// write writes the report to Stdout in the configured format, with the
// HTML report's series from rec, masked as the keys setting says.
func (cfg *Config) write(result report.Report, rec *recorder) error {
	var series report.Series
	var cells []history.Answer
	if rec != nil {
		series = rec.series(result)
		cells = rec.history(result)
	}
	if cfg.Masker != nil {
		result = cfg.Masker.MaskReport(result)
		series = cfg.Masker.MaskSeries(series)
		cells = cfg.Masker.MaskHistory(cells)
	}
	var err error
	switch cfg.Format {
	case "json":
		enc := json.NewEncoder(cfg.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(result)
	case "html":
		err = export.WriteHTMLReport(cfg.Stdout, export.HTMLReport{Report: result, Series: series, History: cells, Incidents: incidentsOf(result)},
			"hotkeyd analyze: "+strings.Join(cfg.Files, ", "), cfg.Version)
	default:
		err = export.WriteTextReport(cfg.Stdout, result)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// formats returns the readers of the inputs, telling rep and log; recycle
// says that nothing keeps an Event past Put (package formats).
func (cfg *Config) formats(rep traffic.Reporter, log *zap.Logger, recycle bool) *formats.Set {
	return formats.New(formats.Config{Schemas: cfg.Schemas, Table: cfg.Table, Fields: cfg.Fields, Log: log, Reporter: rep, Recycle: recycle})
}

// SketchConfig is the sketches' configuration analyze counts with, from
// the pipeline's (config.Config.Pipeline): one window over the whole
// input, which counts more throttled keys than a live window
// (analyzeThrottledKeys).
func SketchConfig(p config.Pipeline) sketch.Config {
	c := p.Sketch
	c.Window = 0
	c.MaxThrottledKeys = analyzeThrottledKeys
	return c
}

// counting says how to count the inputs once.
type counting struct {
	formats *formats.Set
	// rep is told about refused events; nil when counting again.
	rep   traffic.Reporter
	paths map[string]string
	// valid is the range of plausible times, keep the range counted.
	valid, keep timeRange
	// fail is told about inputs that could not be read; nil when counting
	// again (they were told the first time).
	fail func(name string, err error)
	// spill, when set, gets a record of every event counted (spill.go).
	spill *keySpill
	// declare, when set, names the tables and indexes counted
	// (sketch.Store.Declare): those of the store's events it holds.
	declare []string
}

// counted is what counting the inputs gave.
type counted struct {
	store *sketch.Store
	// rec holds the HTML report's series; nil for the other formats.
	rec   *recorder
	times *timeCheck
	// inOrder says the inputs ran in time (parallel.Outcome).
	inOrder bool
	// passed counts the Events that passed the checks.
	passed *atomic.Uint64
	// incidents holds the seconds the incidents are judged from.
	incidents *incidentLog
	// tally counts the events of every table and index (tables.go).
	tally *tableTally
}

// count reads every input into one store: on every core (package
// parallel), or for the HTML report, whose recorder keeps the charts'
// points by event time on the way to one store, one input after the
// other.
func count(ctx context.Context, cfg Config, how counting) (counted, error) {
	scfg := SketchConfig(cfg.Pipeline)
	passed := new(atomic.Uint64)
	incFile := cfg.incidentFile()
	part := func(store *sketch.Store, next traffic.Sink) *checkedStore {
		return newCheckedStore(cfg, how, store, next, passed, incFile)
	}
	newStore := func() (*sketch.Store, error) {
		store, err := sketch.NewStore(scfg, time.Now)
		if err == nil && len(how.declare) > 0 {
			store.Declare(how.declare)
		}
		return store, err
	}
	var progress io.Writer
	if how.fail != nil {
		progress = cfg.Stderr
	}
	if cfg.Format == "html" {
		// A sketch.Store keeps nothing of a batch once Put returns:
		// decoders recycle theirs, but for the HTML report, whose
		// recorder keeps keys.
		store, err := newStore()
		if err != nil {
			incFile.close()
			return counted{}, err
		}
		rec := newRecorder(store, report.ChartKeys(cfg.Pipeline.Detect.Top), min(scfg.MaxTables, maxSeriesTables))
		cs := part(store, rec)
		for _, name := range cfg.Files {
			if err := readFile(ctx, how.formats, name, how.paths, cfg.Stdin, cs, progress); err != nil && how.fail != nil {
				how.fail(name, err)
			}
		}
		cs.closeSpill()
		return counted{store: store, rec: rec, times: cs.times, passed: passed, incidents: cs.incidents, tally: cs.tally}, nil
	}
	cs, o, err := parallel.Read(ctx, parallel.Config[*checkedStore]{
		Formats: how.formats, Stdin: cfg.Stdin, Paths: how.paths, Progress: progress, Reorder: scfg.RecentSeconds, Workers: cfg.Workers, MinPart: cfg.MinPart,
		New: func() (*checkedStore, error) {
			store, err := newStore()
			if err != nil {
				return nil, err
			}
			return part(store, store), nil
		},
		Merge: func(dst, src *checkedStore) error {
			dst.times.absorb(src.times)
			dst.tally.absorb(src.tally)
			src.closeSpill()
			if dst.incidents != nil {
				dst.incidents.absorb(src.incidents)
			}
			return dst.store.Merge(src.store)
		},
		Failed: how.fail,
	}, cfg.Files...)
	if err != nil {
		incFile.close()
		return counted{}, err
	}
	cs.closeSpill()
	return counted{store: cs.store, times: cs.times, inOrder: o.InOrder, passed: passed, incidents: cs.incidents, tally: cs.tally}, nil
}

// incidentFile returns the file the incidents' records go to
// (incidents.go); nil without incidents, or without a temporary file
// (they are then kept in memory).
func (cfg *Config) incidentFile() *incidentFile {
	if cfg.NoIncidents {
		return nil
	}
	return newIncidentFile()
}

// countAgain counts the seconds of the keys of want, with throttled
// every throttled call's key, and every event of the classes of tails
// into their tailSketch: from the spill of the first read, or when there
// is none, by reading the inputs again.
func (cfg *Config) countAgain(ctx context.Context, in inputsRead, paths map[string]string, want map[rankedKey]struct{}, throttled bool, tails map[rankedClass]struct{}) (*keyCounter, error) {
	if in.spill != nil && in.spill.ok() {
		workers := cfg.Workers
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		keys, err := in.spill.count(want, throttled, tails, in.keep, workers)
		if err == nil {
			return keys, nil
		}
		fmt.Fprintf(cfg.Stderr, "hotkeyd: %v; reading the inputs again\n", err)
	}
	return countKeys(ctx, *cfg, paths, want, throttled, tails, in.valid, in.keep)
}

// removeSpill removes the spill's file, if any, and the incidents'.
func (in *inputsRead) removeSpill() {
	if in.spill != nil {
		in.spill.remove()
	}
	in.incidents.closeFile()
}

// countKeys reads the inputs again and counts the seconds of the keys of
// want, with throttled every throttled call's key, and every event of the
// classes of tails, with the same checks as the first reading, told to no
// one.
func countKeys(ctx context.Context, cfg Config, paths map[string]string, want map[rankedKey]struct{}, throttled bool, tails map[rankedClass]struct{}, valid, keep timeRange) (*keyCounter, error) {
	type keyPart struct {
		traffic.Sink
		keys *keyCounter
	}
	// Lines of other keys are skipped before they are parsed, unless
	// every throttled key is counted, or every key of some classes.
	var keys []string
	if !throttled && len(tails) == 0 {
		keys = make([]string, 0, len(want))
		for id := range want {
			keys = append(keys, id.key)
		}
	}
	set := formats.New(formats.Config{Schemas: cfg.Schemas, Table: cfg.Table, Fields: cfg.Fields, Log: zap.NewNop(),
		Reporter: traffic.NopReporter{}, Recycle: true, Keys: keys})
	kp, _, err := parallel.Read(ctx, parallel.Config[*keyPart]{
		Formats: set, Stdin: cfg.Stdin, Paths: paths, Workers: cfg.Workers, MinPart: cfg.MinPart,
		New: func() (*keyPart, error) {
			keys := newKeyCounter(want, tails)
			if throttled {
				keys.throttled = newThrottleCounter()
			}
			return &keyPart{Sink: traffic.Checked(newTimeCheck(keys, nil, valid, keep), nil), keys: keys}, nil
		},
		Merge: func(dst, src *keyPart) error {
			dst.keys.absorb(src.keys)
			return nil
		},
	}, cfg.Files...)
	if err != nil {
		return nil, err
	}
	return kp.keys, nil
}

// readFile reads the input name, from its copy in paths if it has one,
// into sink, with a progress line on progress (formats.Set.ReadFile).
func readFile(ctx context.Context, set *formats.Set, name string, paths map[string]string, stdin io.Reader, sink traffic.Sink, progress io.Writer) error {
	path, ok := paths[name]
	if !ok {
		return set.ReadFile(ctx, name, stdin, sink, progress)
	}
	in, err := input.Open(path, nil)
	if err != nil {
		return err
	}
	defer in.Close()
	in.Name = name
	counted := input.Count(sink)
	if progress != nil {
		stop := input.StartProgress(progress, name, in.BytesRead, counted.Events, input.ProgressEvery)
		defer stop()
	}
	return set.Read(ctx, in, counted)
}

// checkedStore is the store of one part of the inputs (package parallel),
// behind the daemon's last check of every Event (traffic.Checked) and the
// check of its time.
type checkedStore struct {
	store *sketch.Store
	times *timeCheck
	check traffic.Sink
	// spill writes the part's records to the spill; nil without one.
	spill *spillWriter
	// incidents keeps the part's events for the incidents.
	incidents *incidentLog
	// tally counts the part's events by table (tables.go).
	tally *tableTally
}

// newCheckedStore returns the sink of a part of the inputs, counting into
// store through next: every Event is checked once more before it is
// counted, as in the daemon (traffic.Checked), then for its time; passed
// counts those that pass. On the way, their units are put on a grid that
// adds up the same in any order (grid.go), they are tallied by table, written
// to the spill, and kept for the incidents in incFile (incidents.go),
// unless they are not wanted.
func newCheckedStore(cfg Config, how counting, store *sketch.Store, next traffic.Sink, passed *atomic.Uint64, incFile *incidentFile) *checkedStore {
	var spill *spillWriter
	if how.spill != nil {
		spill = newSpillWriter(how.spill)
	}
	var incidents *incidentLog
	tail := next
	if !cfg.NoIncidents {
		incidents = newIncidentLog(next, incFile)
		tail = incidents
	}
	tally := newTableTally()
	times := newTimeCheck(traffic.SinkFunc(func(ctx context.Context, batch []traffic.Event) error {
		passed.Add(uint64(len(batch)))
		gridUnits(batch)
		tally.put(batch)
		if spill != nil {
			spill.put(batch)
		}
		return tail.Put(ctx, batch)
	}), how.rep, how.valid, how.keep)
	return &checkedStore{store: store, times: times, check: traffic.Checked(times, how.rep), spill: spill, incidents: incidents, tally: tally}
}

// closeSpill flushes the part's records to the spill, where they count:
// the part is merged into the result (a part dropped is never closed).
func (c *checkedStore) closeSpill() {
	if c.spill != nil {
		c.spill.close()
	}
}

// Put checks the batch's Events and counts those that pass.
func (c *checkedStore) Put(ctx context.Context, batch []traffic.Event) error {
	return c.check.Put(ctx, batch)
}

// maxSeriesTables bounds the tables the HTML report has charts of; the
// report lists the others without.
const maxSeriesTables = 100

// ErrUnreadable is Run's error when some inputs could not be read; each was
// named on Stderr already.
var ErrUnreadable = errors.New("some inputs could not be read")

// ErrNothingUsable is Run's error when nothing in the inputs was usable
// (empty, in no format hotkeyd reads, every record rejected); one line on
// Stderr said what they held. A script must not take such an input for one
// without hot keys. Records left out on purpose (a CloudTrail file of
// management events, Time to Live deletes) are not this: the report's
// notes say why they were not counted.
var ErrNothingUsable = errors.New("nothing in the input was usable")

// bareError drops the file name an *fs.PathError repeats: every file error
// is printed as "hotkeyd: NAME: error".
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// KeySchemas merges the config file's tables with --key-schema values
// (TABLE=PK[,SK]); a value given wins over the file's key attributes for
// the same table (the file's indexes of the table stay).
func KeySchemas(tables map[string]traffic.KeySchema, flags []string) (map[string]traffic.KeySchema, error) {
	out := make(map[string]traffic.KeySchema, len(tables)+len(flags))
	for name, ks := range tables {
		out[name] = ks
	}
	for _, f := range flags {
		table, keys, ok := strings.Cut(f, "=")
		pk, sk, _ := strings.Cut(keys, ",")
		if !ok || table == "" || pk == "" || strings.Contains(sk, ",") {
			return nil, fmt.Errorf("%q: want TABLE=PK or TABLE=PK,SK", f)
		}
		// The table's indexes, from the file, stay.
		out[table] = traffic.KeySchema{PartitionKey: pk, SortKey: sk, Indexes: out[table].Indexes}
	}
	return out, nil
}
