package daemon

import (
	"errors"
	"strings"

	"go.uber.org/zap"
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
//     are answered. The server never stops otherwise;
//   - history.retention.size applies in place, from the history writer's
//     next retention pass (within five minutes); history.path applies at
//     the next start only: the history stays where it is, and each reload
//     says so until then.
//
// Flags (--web.listen-address, --window, --threshold, --keys,
// --history.path, --history.retention.size) still override the file, and
// the other flags are not reloaded.

// reloadKind is how a reload applies a key of the file.
type reloadKind int

const (
	inPlace        reloadKind = iota // from the next evaluation or batch
	restartSources                   // the sources restart
	reshape                          // the sketches restart empty, and the sources
	moveListener                     // the HTTP server moves
	historyParts                     // planHistory says which part applies when
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
	"history":              historyParts,
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
func (d *Daemon) reloadLoop() {
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
func (d *Daemon) reload() (string, error) {
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
	if len(p.history) > 0 {
		fields = append(fields, zap.String("history", strings.Join(p.history, "; ")))
	}
	d.log.Info("configuration reloaded", fields...)
	return p.summary(), nil
}

// reloadFunc returns what POST /-/reload calls, nil unless enabled
// (--web.enable-lifecycle): it asks the reload loop to reload and returns
// its answer.
func (d *Daemon) reloadFunc(enabled bool) func() (string, error) {
	if !enabled {
		return nil
	}
	return func() (string, error) {
		answer := make(chan reloadResult, 1)
		select {
		case d.reloads <- reloadRequest{answer: answer}:
		case <-d.stopping:
			return "", errStopping
		}
		select {
		case r := <-answer:
			return r.done, r.err
		case <-d.stopping:
			return "", errStopping
		}
	}
}
