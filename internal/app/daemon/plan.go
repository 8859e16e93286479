package daemon

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// reloadPlan is a new configuration checked, and what applying it takes:
// each part is set when it changes, built already.
type reloadPlan struct {
	cfg config.Config
	// changed lists the file's top-level keys that changed; applied those
	// applied in place, restarted what restarts and why, history what
	// becomes of the history's keys (planHistory).
	changed, applied, restarted, history []string

	masker   *export.KeyMasker
	settings detect.Settings
	store    *sketch.Store // the sketches' shape changed
	retain   int64         // history.retention.size changed: the new bound
	recent   bool          // the live page's last seconds (export.Recent) start anew
	gen      *generation   // the sources restart
	listener net.Listener  // listen changed
}

// plan reads the configuration file once and builds what it changes,
// without changing anything.
func (d *Daemon) plan() (*reloadPlan, error) {
	cfg, err := d.opts.Load()
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
	sourcesChanged, shapeChanged, err := p.classify(d.opts.Demo)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(p.changed, func(k string) bool { return strings.HasPrefix(k, "key") }) {
		if p.masker, err = export.NewKeyMasker(cfg.Keys, cfg.KeyHashSecret); err != nil {
			return nil, err
		}
	}
	if err := d.planWindow(p, shapeChanged); err != nil {
		return nil, err
	}
	d.planHistory(p)
	restart := len(sourcesChanged) > 0 || p.store != nil
	if restart {
		why := strings.Join(sourcesChanged, ", ") + " changed"
		if len(sourcesChanged) == 0 {
			why = "the window restarts"
		}
		p.restarted = append(p.restarted, fmt.Sprintf("the sources (%s): they stop as on shutdown and go on from their checkpoints", why))
	}
	if err := d.planListener(p); err != nil {
		return nil, err
	}
	// The sources are built last: their constructors may say things in
	// the log, and nothing after them can refuse the file.
	if restart {
		if err := d.planSources(p); err != nil {
			p.closeListener()
			return nil, err
		}
	}
	return p, nil
}

// classify sorts the keys that changed by how a reload applies them
// (reloadKeys): those applied in place go to p.applied; it returns those
// that restart the sources (none in demo mode, whose source is its own)
// and those that may change the sketches' shape, or refuses a key a
// reload cannot change.
func (p *reloadPlan) classify(demo bool) (sourcesChanged, shapeChanged []string, err error) {
	for _, k := range p.changed {
		kind, ok := reloadKeys[k]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%s: cannot be changed by a reload; restart hotkeyd", k)
		case kind == inPlace:
			p.applied = append(p.applied, k)
		case kind == restartSources && !demo:
			sourcesChanged = append(sourcesChanged, k)
		}
		if kind == reshape || k == "detector" {
			shapeChanged = append(shapeChanged, k)
		}
	}
	return sourcesChanged, shapeChanged, nil
}

// planWindow sets the detector's new settings, and builds an empty store
// when the sketches' shape changes (shapeChanged is what may have changed
// it); the live page's last seconds start anew with a new shape or top.
func (d *Daemon) planWindow(p *reloadPlan, shapeChanged []string) error {
	was, pipeline := d.cfg.Pipeline(), p.cfg.Pipeline()
	shape, oldShape := pipeline.Sketch, was.Sketch
	p.settings = pipeline.Detect
	if shape != oldShape {
		var err error
		if p.store, err = sketch.NewStore(shape, time.Now); err != nil {
			return fmt.Errorf("sketch store: %w", err)
		}
		p.store.SetWatermarks(d.progress)
		p.restarted = append(p.restarted, fmt.Sprintf("the window (%s changed): it starts empty, the counters are kept", strings.Join(shapeChanged, ", ")))
	}
	p.recent = shape != oldShape || pipeline.Detect.Top != was.Detect.Top
	return nil
}

// planHistory plans the history's keys: history.retention.size applies in
// place, at the writer's next retention pass; history.path only at the
// next start, so the running configuration keeps the path the history is
// open on, and each reload says so until a restart.
func (d *Daemon) planHistory(p *reloadPlan) {
	was, now := d.cfg.History, p.cfg.History
	open := d.hist.Load() != nil
	if now.Retention.Size != was.Retention.Size {
		if open {
			p.retain = int64(now.Retention.Size)
			p.history = append(p.history, fmt.Sprintf("history.retention.size applied: the history is held to %s from the writer's next retention pass, within %s",
				now.Retention.Size, history.RetentionEvery))
		} else {
			p.history = append(p.history, fmt.Sprintf("history.retention.size (%s) not applied: this daemon keeps no history; it applies when hotkeyd restarts", now.Retention.Size))
		}
	}
	if now.Path != was.Path {
		stays := fmt.Sprintf("the history stays in %q", was.Path)
		if !open {
			stays = "no history is kept"
		}
		p.history = append(p.history, fmt.Sprintf("history.path (%q) not applied: %s until hotkeyd restarts", now.Path, stays))
		p.cfg.History.Path = was.Path
	}
}

// planListener binds the new address when listen changed.
func (d *Daemon) planListener(p *reloadPlan) error {
	if p.cfg.Listen == d.cfg.Listen {
		return nil
	}
	var err error
	if p.listener, err = net.Listen("tcp", p.cfg.Listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	p.restarted = append(p.restarted, fmt.Sprintf("the listener (listen changed): now on %s, %s closed once its connections are answered",
		p.listener.Addr(), d.listener.Addr()))
	return nil
}

// planSources builds the new generation of sources, refused when it has
// none and HTTP ingest is off.
func (d *Daemon) planSources(p *reloadPlan) error {
	var err error
	if p.gen, err = d.newGeneration(p.cfg, d.log); err != nil {
		return err
	}
	if len(p.gen.sources) == 0 && !d.opts.Web.Ingest {
		return errNoSources
	}
	return nil
}

func (p *reloadPlan) closeListener() {
	if p.listener != nil {
		p.listener.Close()
	}
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
	for _, h := range p.history {
		fmt.Fprintf(&b, "%s.\n", h)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
