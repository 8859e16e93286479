package dashboards

// Overview returns the hotkeyd overview dashboard: every watched table, its
// traffic by class, the diagnoses now with their severity and fix, the top
// keys' shares and busiest seconds against the partition ceiling, distinct
// keys, and the health of the stream readers.
func Overview() Dashboard {
	l := &layout{}
	all := sel()
	var panels []Panel
	panels = append(panels, overviewNow(l, all)...)
	panels = append(panels, overviewTraffic(l, all)...)
	panels = append(panels, overviewReaders(l, all)...)
	return newDashboard("hotkeyd-overview", "hotkeyd / Overview",
		"Hot partition keys in DynamoDB tables: traffic, hot keys with the advised fix, and the readers' health.",
		variables(), panels)
}

// overviewNow is the overview's first row: counts and diagnoses now, the
// top keys' shares and busiest seconds.
func overviewNow(l *layout, all string) []Panel {
	panels := []Panel{l.row("Now")}
	panels = append(panels,
		l.stat("Tables", "Tables and indexes (table/index) hotkeyd has seen traffic for.", "none",
			`count(count by (table) (hotkeyd_units_total`+all+`))`, 3, 4, nil),
		l.stat("Events/s", "Accesses per second, all tables, reads and writes.", "reqps",
			`sum(rate(hotkeyd_events_total`+all+`[$__rate_interval]))`, 4, 4, nil),
		l.stat("Critical", "Diagnoses flagged now at critical: a key's busiest second at 80 % of a partition's ceiling or more, or throttled in its key range; or a table refusing 5 % of its calls or more for lack of capacity. They page.", "none",
			`count(hotkeyd_diagnosis`+sel(`severity="critical"`)+` == 1) or vector(0)`, 3, 4, thresholds("green", 1.0, "red")),
		l.stat("Warnings", "Diagnoses flagged now at warning: a key's busiest second past half a partition's ceiling.", "none",
			`count(hotkeyd_diagnosis`+sel(`severity="warning"`)+` == 1) or vector(0)`, 3, 4, thresholds("green", 1.0, "orange")),
		l.stat("Source errors/s", "Errors reported by the readers (AWS calls, unreadable files), per second.", "none",
			`sum(rate(hotkeyd_source_errors_total`+all+`[$__rate_interval])) or vector(0)`, 4, 4, thresholds("green", 0.001, "red")),
		l.stat("Max stream lag", "Age of the oldest record being read from any stream shard: how far behind hot-key detection is.", "s",
			`max(hotkeyd_stream_iterator_age_seconds`+all+`) or vector(0)`, 4, 4, thresholds("green", 60.0, "orange", 300.0, "red")),
		l.stat("Keys left out", "Distinct partition keys of the window outside the exported top keys (they have no per-key series).", "short",
			`sum(hotkeyd_keys_omitted`+all+`) or vector(0)`, 3, 4, nil),
	)
	diagnoses := l.findingsTable("Diagnoses now, with the fix",
		"One row per root cause the detector flags now: the table, its severity (critical and warning page; info is the 10 % design rule at rates far from the ceiling, shown here and never alerted on), the cause, the class (read or write), the key (the first of its keys; the stream shard for hot_partition; none for capacity, a table or index short of capacity) and the one fix. The full diagnosis, with the shard count and what the fix would do to the traffic, is in /api/v1/hotkeys. See docs/monitoring.md for what to do. Click a table to drill down.",
		`max by (table, severity, cause, class, key, fix) (hotkeyd_diagnosis`+all+` == 1)`,
		[]string{"table", "severity", "cause", "class", "key", "fix"}, 24, 8)
	// Each table name links to the drill-down dashboard for it.
	diagnoses.FieldConfig.Overrides = []any{map[string]any{
		"matcher": map[string]any{"id": "byName", "options": "Table"},
		"properties": []any{map[string]any{"id": "links", "value": []any{map[string]any{
			"title": "hotkeyd / Table: ${__value.raw}",
			"url":   "/d/hotkeyd-table/hotkeyd-table?${__url_time_range}&${datasource:queryparam}&${job:queryparam}&${instance:queryparam}&var-table=${__value.raw}",
		}}}},
	}}
	panels = append(panels,
		diagnoses,
		l.shareBarGauge("Top keys' share now",
			"The heaviest partition keys' share of their table's units of one class over the sliding window. Orange from 10 % (the default hot threshold), red from 25 %. A share alone never pages: see the busiest second against the ceiling.",
			`topk(15, max by (table, class, key) (hotkeyd_key_share`+all+`))`, "{{table}} {{class}} {{key}}", 12, 9),
		l.ceilingBarGauge("Top keys' busiest second against the ceiling",
			"Each top key's busiest second of the window as a fraction of what one partition serves as configured (write_limit, 1000 WCU/s unless set; read_limit, 3000 RCU/s): orange from 50 % (warning), red from 80 % (critical), the detector's default severities.",
			`topk(15, `+ofCeiling("table, class, key", "hotkeyd_key_peak_units_per_second")+`)`, "{{table}} {{class}} {{key}}", 12, 9),
	)
	return panels
}

// overviewTraffic is the overview's row of traffic over time.
func overviewTraffic(l *layout, all string) []Panel {
	return []Panel{l.row("Traffic"),
		l.timeSeries("Events per second by table and class", "Accesses per second, summed over replicas.", "reqps", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_events_total` + all + `[$__rate_interval]))`, LegendFormat: "{{table}} {{class}}"}),
		l.timeSeries("Units per second by table and class", "Consumed capacity units per second (RCU for reads, WCU for writes), summed over replicas.", "short", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_units_total` + all + `[$__rate_interval]))`, LegendFormat: "{{table}} {{class}}"}),
		l.timeSeries("Top keys' share over time", "Share of the table's units of one class taken by each of the heaviest keys. A key at or above the threshold is hot.", "percentunit", 12, 8,
			Target{Expr: `topk(10, max by (table, class, key) (hotkeyd_key_share` + all + `))`, LegendFormat: "{{table}} {{class}} {{key}}"}),
		l.timeSeries("Top keys' units per second", "Capacity units per second of the heaviest keys, averaged over the window. One partition serves 1000 WCU/s and 3000 RCU/s; a key near that throttles whatever the table's capacity.", "short", 12, 8,
			Target{Expr: `topk(10, max by (table, class, key) (hotkeyd_key_units_per_second` + all + `))`, LegendFormat: "{{table}} {{class}} {{key}}"}),
		ceilingSeries(l, "Top keys' busiest second against the ceiling over time", "Each top key's busiest second of the window as a fraction of one partition's ceiling of its class. The dashed lines are the default warning (50 %) and critical (80 %) levels.",
			`topk(10, `+ofCeiling("table, class, key", "hotkeyd_key_peak_units_per_second")+`)`, "{{table}} {{class}} {{key}}"),
		l.timeSeries("Distinct partition keys", "Estimated distinct partition keys accessed per table in the sliding window, summed over replicas. Few keys for much traffic means a low-cardinality key design.", "short", 12, 8,
			Target{Expr: `sum by (table) (hotkeyd_partition_keys_distinct` + all + `)`, LegendFormat: "{{table}}"}),
		l.timeSeries("Throttled calls per second", "Calls that failed with a throttling error, from sources that see failed calls (CloudTrail; JSON lines and HTTP ingest that say so).", "reqps", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_throttled_events_total` + all + `[$__rate_interval]))`, LegendFormat: "{{table}} {{class}}"}),
		l.timeSeries("Calls refused by throttling", "Share of each table's calls of a class refused by throttling. Spread over the keys, it is the table's (or index's) capacity: a capacity diagnosis, warning from 1 %, critical from 5 %; on a few keys, their key range.", "percentunit", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_throttled_events_total` + all + `[$__rate_interval])) / (sum by (table, class) (rate(hotkeyd_throttled_events_total` + all + `[$__rate_interval])) + sum by (table, class) (rate(hotkeyd_events_total` + all + `[$__rate_interval])))`, LegendFormat: "{{table}} {{class}}"}),
	}
}

// overviewReaders is the overview's row of the readers' health.
func overviewReaders(l *layout, all string) []Panel {
	return []Panel{l.row("Readers"),
		l.timeSeries("Stream iterator age", "How far behind the newest record each stream shard is read. Records are trimmed after 24 hours.", "s", 8, 8,
			Target{Expr: `max by (table, shard) (hotkeyd_stream_iterator_age_seconds` + all + `)`, LegendFormat: "{{table}} {{shard}}"}),
		l.timeSeries("Stream shards by state", "Stream shards per table, by state. Every replica reports the whole listing, so replicas are combined with max, not summed.", "short", 8, 8,
			Target{Expr: `max by (table, state) (hotkeyd_stream_shards` + all + `)`, LegendFormat: "{{table}} {{state}}"}),
		l.timeSeries("Source errors and rejected input", "Reader errors and input lines or records that could not be used, per second, by source and reason.", "short", 8, 8,
			Target{Expr: `sum by (source, reason) (rate(hotkeyd_source_errors_total` + all + `[$__rate_interval]))`, LegendFormat: "error {{source}} {{reason}}"},
			Target{Expr: `sum by (source, reason) (rate(hotkeyd_input_rejected_total` + all + `[$__rate_interval]))`, LegendFormat: "rejected {{source}} {{reason}}"}),
		l.timeSeries("Source lag in event time", "How far each source reads behind the clock in event time: now less the newest event time of its slowest shard or file that still has records to read; 0 when caught up. A backlog (a start from the oldest record, a restart, a lease taken over) shows here and is judged at the rates it happened.", "s", 8, 8,
			Target{Expr: `max by (source) (hotkeyd_source_lag_seconds` + all + `)`, LegendFormat: "{{source}}"}),
		l.timeSeries("Late events", "Events per second that arrived older than their table's window: counted in the totals, in no window and no peak. Steady late events mean a source delivers later than the window is long.", "short", 8, 8,
			Target{Expr: `sum by (source) (rate(hotkeyd_late_events_total` + all + `[$__rate_interval]))`, LegendFormat: "{{source}}"}),
		l.timeSeries("Leases held by replica", "With a lease table: the shards each replica reads. Replicas differ by at most one once the spread settles; a replica at 0 is a standby.", "short", 12, 8,
			Target{Expr: `sum by (instance, lease_table) (hotkeyd_leases_held` + all + `)`, LegendFormat: "{{instance}} {{lease_table}}"}),
		l.timeSeries("Oldest peer summary by replica", "With a lease table: how old the oldest other replica's window summary is that each replica adds to its own to judge shares on the whole traffic. Summaries older than failover_time are dropped; values near it mean a replica is failing to publish.", "s", 12, 8,
			Target{Expr: `max by (instance, lease_table) (hotkeyd_lease_peer_summary_age_seconds` + all + `)`, LegendFormat: "{{instance}} {{lease_table}}"}),
	}
}

// ceilingSeries is a time series of fractions of the partition ceiling,
// with the severities' levels dashed.
func ceilingSeries(l *layout, title, description, expr, legend string) Panel {
	p := l.timeSeries(title, description, "percentunit", 12, 8, Target{Expr: expr, LegendFormat: legend})
	p.FieldConfig.Defaults.Thresholds = ceilingThresholds()
	p.FieldConfig.Defaults.Custom["thresholdsStyle"] = map[string]any{"mode": "dashed"}
	return p
}
