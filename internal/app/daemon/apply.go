package daemon

import (
	"github.com/hotkeyd/hotkeyd/export"
)

// apply applies p, parts that cannot fail first: the listener move fails
// only once the server has stopped, the sources' replacement only once
// the daemon is stopping.
func (d *Daemon) apply(p *reloadPlan) error {
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
	if st := d.hist.Load(); st != nil && p.retain > 0 {
		st.SetRetentionSize(p.retain)
	}
	old := d.core.Load()
	old.tracker.SetSettings(p.settings)
	next := *old
	if p.store != nil {
		next.store = p.store
	}
	if p.recent {
		next.recent = export.NewRecent(export.RecentConfig{Window: p.cfg.Window, Top: p.settings.Top})
	}
	swap := func(gen *generation) {
		if p.store != nil {
			d.window.replace(p.store)
		}
		next.store.Declare(p.cfg.DeclaredTables())
		d.core.Store(&next)
		if p.recent {
			d.server.SetRecent(next.recent)
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
	c, err := d.newCore(p.cfg, next.store, next.tracker, p.gen)
	if err != nil {
		return err
	}
	next.judge, next.sources = c.judge, c.sources
	err = d.pipe.Replace(p.gen, DrainTimeout, func() {
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
