package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/ingest"
	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// generation is one set of sources the daemon runs, with their own
// metrics, and, when they share shards with other replicas, the exchange
// of window summaries through their lease table. A reload that changes
// the sources replaces the whole generation.
type generation struct {
	sources []traffic.Source
	// reg holds the sources' own metrics; the daemon's registry and the
	// running generation's are gathered together.
	reg *export.Registry
	// replicas is the judge across replicas, nil without a lease table.
	replicas *judge.Replicas

	runner    *ingest.Runner
	stopBoard context.CancelFunc
	boardDone chan struct{}
}

// newGeneration builds the sources of cfg (the demo's in demo mode), with
// a registry of their own. It starts nothing; the judge across replicas
// is made with the core (newCore), as it needs the store.
func (d *Daemon) newGeneration(cfg config.Config, log *zap.Logger) (*generation, error) {
	g := &generation{reg: export.NewSourcesRegistry()}
	env := ingest.Env{Log: log, Reporter: d.reporter, Registerer: g.reg, Tables: cfg.KeySchemas(), Stdin: d.opts.Stdin, Progress: d.progress, Window: cfg.Window}
	if d.opts.Demo {
		// The demo's events carry their arrival time.
		g.sources = []traffic.Source{demosource.New(demosource.Config{})}
		d.progress.Declare(demosource.SourceName, 0)
		return g, nil
	}
	for i, sc := range cfg.Sources {
		src, err := sc.Settings.NewSource(env)
		if err != nil {
			return nil, fmt.Errorf("sources[%d] (%s): %w", i, sc.Type, err)
		}
		g.sources = append(g.sources, src)
	}
	return g, nil
}

// checkedSink returns the checks of cfg in front of the counting sink:
// every Event is checked once more before it is counted, whatever reader
// made it: names DynamoDB would refuse, units no call consumes and times
// no window can judge (max_future, the input's retention or max_event_age)
// never reach a total or a series.
func (d *Daemon) checkedSink(cfg config.Config, sources []traffic.Source) traffic.Sink {
	for _, src := range sources {
		d.reporter.InitSource(src.Name())
		d.counting.InitSource(src.Name())
	}
	return traffic.CheckedTimes(d.counting, d.reporter, traffic.TimeLimits{
		MaxFuture: cfg.MaxFuture, MaxAge: traffic.MaxAges(sources, cfg.MaxEventAge), Now: time.Now,
	})
}

// start runs every source into sink, and the board; a source's error is
// sent to errs.
func (g *generation) start(sink traffic.Sink, log *zap.Logger, errs chan<- error) {
	g.runner = ingest.NewRunner(g.sources, sink, log)
	for i := range g.sources {
		go func() {
			if err := g.runner.Run(i); err != nil {
				select {
				case errs <- err:
				default: // the daemon stops on the first
				}
			}
		}()
	}
	g.boardDone = make(chan struct{})
	if g.replicas == nil {
		close(g.boardDone)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.stopBoard = cancel
	go func() {
		defer close(g.boardDone)
		if err := g.replicas.Run(ctx); err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}()
}

// cancel tells the sources to stop, without waiting.
func (g *generation) cancel() {
	if g.runner != nil {
		g.runner.Cancel()
	}
}

// stop stops the board, which takes its summary off the lease table, and
// the sources, their batches in flight landing in the sink for at most
// drain (ingest.Runner.Stop); both at once, so that a stop takes at most
// drain.
func (g *generation) stop(drain time.Duration) {
	if g.runner == nil {
		return
	}
	if g.stopBoard != nil {
		g.stopBoard()
	}
	g.runner.Stop(drain)
	<-g.boardDone
}
