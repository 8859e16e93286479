package main

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// A reload (SIGHUP, POST /-/reload) reads the configuration file once,
// within the bounds of config.Reader, builds from it everything that
// would change — the masker, an empty store when the sketches' shape
// changes, the new sources, a listener on a new address — and only then
// changes anything; a file or a part that fails is refused with its
// reason and the running configuration is kept whole. What it applies:
//
//   - threshold, detector, keys, key_hash_secret(_file), max_future and
//     max_event_age apply in place, from the next evaluation (the checks,
//     from the next batch): the window, what is flagged and every counter
//     are kept;
//   - sources and tables restart the sources: the running ones are
//     stopped and drained as on shutdown (checkpoints written), the new
//     ones start from their checkpoints; the window and the counters are
//     kept;
//   - window and max_tables (and a detector.top past the keys a table
//     reports) change the sketches' shape: the window starts empty, and
//     the sources restart with it; the counters are kept;
//   - listen moves the HTTP server to the new address, bound before
//     anything else changes; the old one is closed once its connections
//     are answered. The server never stops otherwise.
//
// Flags (--web.listen-address, --window, --threshold, --keys) still
// override the file, and the other flags are not reloaded.

// reloadKind is how a reload applies a key of the file.
type reloadKind int

const (
	inPlace        reloadKind = iota // from the next evaluation or batch
	restartSources                   // the sources restart
	reshape                          // the sketches restart empty, and the sources
	moveListener                     // the HTTP server moves
)

// reloadKeys says how a reload applies each top-level key of the file
// (every key of config.Config: a test holds it). detector reshapes only
// when its top passes the keys a table reports (config.Config.Pipeline).
var reloadKeys = map[string]reloadKind{
	"listen":               moveListener,
	"window":               reshape,
	"threshold":            inPlace,
	"keys":                 inPlace,
	"key_hash_secret":      inPlace,
	"key_hash_secret_file": inPlace,
	"tables":               restartSources,
	"max_tables":           reshape,
	"max_future":           inPlace,
	"max_event_age":        inPlace,
	"sources":              restartSources,
	"detector":             inPlace,
}

// reloadRequest asks the reload loop for a reload; answer, when set (POST
// /-/reload), gets its result.
type reloadRequest struct {
	answer chan<- reloadResult
}

// reloadResult is what a reload did, or why it was refused.
type reloadResult struct {
	done string
	err  error
}

// reloadLoop runs the reloads asked, one at a time, until the daemon
// begins to stop.
func (d *daemon) reloadLoop() {
	for {
		select {
		case <-d.stopping:
			return
		case req := <-d.reloads:
			done, err := d.reload()
			if req.answer != nil {
				req.answer <- reloadResult{done: done, err: err}
			}
		}
	}
}

// reload reads the file, checks what it changes and applies it, and says
// what it did in the log and in its result.
func (d *daemon) reload() (string, error) {
	p, err := d.plan()
	if err == nil {
		err = d.apply(p)
	}
	if errors.Is(err, errStopping) {
		return "", err
	}
	if err != nil {
		d.reloadOK.Set(0)
		d.log.Error("configuration reload failed; keeping the running configuration", zap.Error(err))
		return "", err
	}
	d.reloadOK.Set(1)
	d.reloadAt.SetToCurrentTime()
	fields := []zap.Field{zap.String("changed", strings.Join(p.changed, ", "))}
	if len(p.applied) > 0 {
		fields = append(fields, zap.String("applied", strings.Join(p.applied, ", ")))
	}
	if len(p.restarted) > 0 {
		fields = append(fields, zap.String("restarted", strings.Join(p.restarted, "; ")))
	}
	d.log.Info("configuration reloaded", fields...)
	return p.summary(), nil
}

// reloadPlan is a new configuration checked, and what applying it takes:
// each part is set when it changes, built already.
type reloadPlan struct {
	cfg config.Config
	// changed lists the file's top-level keys that changed; applied those
	// applied in place, restarted what restarts and why.
	changed, applied, restarted []string

	masker   *export.KeyMasker
	settings detect.Settings
	store    *sketch.Store // the sketches' shape changed
	history  bool          // the live page's history starts anew
	gen      *generation   // the sources restart
	listener net.Listener  // listen changed
}

// plan reads the configuration file once and builds what it changes,
// without changing anything.
func (d *daemon) plan() (*reloadPlan, error) {
	cfg, err := loadConfigWith(d.reader, d.flags, !d.demo)
	if err != nil {
		return nil, err
	}
	select {
	case <-d.stopping:
		return nil, errStopping
	default:
	}
	p := &reloadPlan{cfg: cfg, changed: changedKeys(d.cfg, cfg)}
	if len(p.changed) == 0 {
		return p, nil
	}
	var sourcesChanged, shapeChanged []string
	for _, k := range p.changed {
		kind, ok := reloadKeys[k]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: cannot be changed by a reload; restart hotkeyd", k)
		case kind == inPlace:
			p.applied = append(p.applied, k)
		case kind == restartSources && !d.demo:
			sourcesChanged = append(sourcesChanged, k)
		}
		if kind == reshape || k == "detector" {
			shapeChanged = append(shapeChanged, k)
		}
	}

	if slices.ContainsFunc(p.changed, func(k string) bool { return strings.HasPrefix(k, "key") }) {
		if p.masker, err = export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret); err != nil {
			return nil, err
		}
	}
	was, pipeline := d.cfg.Pipeline(), cfg.Pipeline()
	shape, oldShape := pipeline.Sketch, was.Sketch
	p.settings = pipeline.Detect
	if shape != oldShape {
		if p.store, err = sketch.NewStore(shape, time.Now); err != nil {
			return nil, fmt.Errorf("sketch store: %w", err)
		}
		p.store.SetWatermarks(d.progress)
		p.restarted = append(p.restarted, fmt.Sprintf("the window (%s changed): it starts empty, the counters are kept", strings.Join(shapeChanged, ", ")))
	}
	p.history = shape != oldShape || pipeline.Detect.Top != was.Detect.Top

	restart := len(sourcesChanged) > 0 || p.store != nil
	if restart {
		why := strings.Join(sourcesChanged, ", ") + " changed"
		if len(sourcesChanged) == 0 {
			why = "the window restarts"
		}
		p.restarted = append(p.restarted, fmt.Sprintf("the sources (%s): they stop as on shutdown and go on from their checkpoints", why))
	}
	if cfg.Listen != d.cfg.Listen {
		if p.listener, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		p.restarted = append(p.restarted, fmt.Sprintf("the listener (listen changed): now on %s, %s closed once its connections are answered",
			p.listener.Addr(), d.listener.Addr()))
	}
	// The sources are built last: their constructors may say things in
	// the log, and nothing after them can refuse the file.
	if restart {
		if p.gen, err = d.newGeneration(cfg, d.log); err != nil {
			p.closeListener()
			return nil, err
		}
		if len(p.gen.sources) == 0 && !d.ingest {
			p.closeListener()
			return nil, errors.New("no sources: list some under sources: in the config file, or pass --web.enable-ingest")
		}
	}
	return p, nil
}

func (p *reloadPlan) closeListener() {
	if p.listener != nil {
		p.listener.Close()
	}
}

// apply applies p, parts that cannot fail first: the listener move fails
// only once the server has stopped, the sources' replacement only once
// the daemon is stopping.
func (d *daemon) apply(p *reloadPlan) error {
	if len(p.changed) == 0 {
		return nil
	}
	if p.listener != nil {
		if err := d.server.Move(p.listener); err != nil {
			p.closeListener()
			return errStopping
		}
		d.listener = p.listener
	}
	if p.masker != nil {
		d.masker.Replace(p.masker)
	}
	old := d.core.Load()
	old.tracker.SetSettings(p.settings)
	next := *old
	if p.store != nil {
		next.store = p.store
	}
	if p.history {
		next.history = export.NewHistory(export.HistoryConfig{Window: p.cfg.Window, Top: p.settings.Top})
	}
	swap := func(gen *generation) {
		if p.store != nil {
			d.window.replace(p.store)
		}
		d.core.Store(&next)
		if p.history {
			d.server.SetHistory(next.history)
		}
		d.exposition.SetCollector(d.newCollector(gen))
		d.sink.set(d.checkedSink(p.cfg, gen.sources))
	}
	if p.gen == nil {
		// The store and the sources stay: the same judge, with the
		// tracker's new settings.
		swap(d.running)
		d.cfg = p.cfg
		return nil
	}
	c, err := d.newCore(p.cfg, next.store, next.tracker, p.gen, d.log)
	if err != nil {
		return err
	}
	next.judge, next.sources = c.judge, c.sources
	err = d.pipe.Replace(p.gen, drainTimeout, func() {
		swap(p.gen)
		d.gathered.sources.Store(p.gen.reg)
		d.ready.WatchOnly(p.gen.sources...)
		d.running = p.gen
	})
	if err != nil {
		return err
	}
	d.cfg = p.cfg
	return nil
}

// changedKeys returns the top-level keys of the configuration file whose
// values differ between a and b, in the order of config.Config's fields,
// threshold (the detector's, set at the top level) just before detector.
func changedKeys(a, b config.Config) []string {
	var out []string
	// The detector's threshold is the file's top-level threshold: a
	// change of it is a change of threshold, not of detector.
	threshold := a.Detector.Threshold != b.Detector.Threshold
	a.Detector.Threshold, b.Detector.Threshold = 0, 0
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if name == "detector" && threshold {
			out = append(out, "threshold")
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// summary is the answer to POST /-/reload: what changed, what applies in
// place and what restarted.
func (p *reloadPlan) summary() string {
	if len(p.changed) == 0 {
		return "configuration reloaded: nothing changed."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "configuration reloaded: %s changed.\n", strings.Join(p.changed, ", "))
	if len(p.applied) > 0 {
		fmt.Fprintf(&b, "applied from the next evaluation, the window and every counter kept: %s.\n", strings.Join(p.applied, ", "))
	}
	for _, r := range p.restarted {
		fmt.Fprintf(&b, "restarted: %s.\n", r)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
