package dashboards

// Overview returns the hotkeyd overview dashboard: every watched table, its
// traffic by class, the hot keys now with the advised fix, the top keys'
// shares, distinct keys, and the health of the stream readers.
func Overview() Dashboard {
	l := &layout{}
	all := sel()
	var panels []Panel

	panels = append(panels, l.row("Now"))
	panels = append(panels,
		l.stat("Tables", "Tables and indexes (table/index) hotkeyd has seen traffic for.", "none",
			`count(count by (table) (hotkeyd_units_total`+all+`))`, 4, 4, nil),
		l.stat("Events/s", "Accesses per second, all tables, reads and writes.", "reqps",
			`sum(rate(hotkeyd_events_total`+all+`[$__rate_interval]))`, 4, 4, nil),
		l.stat("Hot findings", "Findings flagged now (hot keys, keys near the partition limit, key design problems).", "none",
			`count(hotkeyd_hot_key`+all+` == 1) or vector(0)`, 4, 4, thresholds("green", 1.0, "orange")),
		l.stat("Source errors/s", "Errors reported by the readers (AWS calls, unreadable files), per second.", "none",
			`sum(rate(hotkeyd_source_errors_total`+all+`[$__rate_interval])) or vector(0)`, 4, 4, thresholds("green", 0.001, "red")),
		l.stat("Max stream lag", "Age of the oldest record being read from any stream shard: how far behind hot-key detection is.", "s",
			`max(hotkeyd_stream_iterator_age_seconds`+all+`) or vector(0)`, 4, 4, thresholds("green", 60.0, "orange", 300.0, "red")),
		l.stat("Keys left out", "Distinct partition keys of the window outside the exported top keys (they have no per-key series).", "short",
			`sum(hotkeyd_keys_omitted`+all+`) or vector(0)`, 4, 4, nil),
	)
	findings := l.findingsTable("Hot keys now, with advice",
		"Every finding the detector flags now: the table, the class (read or write), the key (empty for table-wide findings; the stream shard for hot_partition), the kind of finding and the recommended fix. See docs/monitoring.md for what to do. Click a table to drill down.",
		`max by (table, class, key, kind, recommendation) (hotkeyd_hot_key`+all+` == 1)`,
		[]string{"table", "class", "key", "kind", "recommendation"}, 14, 9)
	// Each table name links to the drill-down dashboard for it.
	findings.FieldConfig.Overrides = []any{map[string]any{
		"matcher": map[string]any{"id": "byName", "options": "Table"},
		"properties": []any{map[string]any{"id": "links", "value": []any{map[string]any{
			"title": "hotkeyd / Table: ${__value.raw}",
			"url":   "/d/hotkeyd-table/hotkeyd-table?${__url_time_range}&${datasource:queryparam}&${job:queryparam}&${instance:queryparam}&var-table=${__value.raw}",
		}}}},
	}}
	panels = append(panels,
		findings,
		l.shareBarGauge("Top keys' share now",
			"The heaviest partition keys' share of their table's units of one class over the sliding window. Orange from 10 % (the default hot threshold), red from 25 %.",
			`topk(15, max by (table, class, key) (hotkeyd_key_share`+all+`))`, "{{table}} {{class}} {{key}}", 10, 9),
	)

	panels = append(panels, l.row("Traffic"))
	panels = append(panels,
		l.timeSeries("Events per second by table and class", "Accesses per second, summed over replicas.", "reqps", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_events_total` + all + `[$__rate_interval]))`, LegendFormat: "{{table}} {{class}}"}),
		l.timeSeries("Units per second by table and class", "Consumed capacity units per second (RCU for reads, WCU for writes), summed over replicas.", "short", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_units_total` + all + `[$__rate_interval]))`, LegendFormat: "{{table}} {{class}}"}),
		l.timeSeries("Top keys' share over time", "Share of the table's units of one class taken by each of the heaviest keys. A key at or above the threshold is hot.", "percentunit", 12, 8,
			Target{Expr: `topk(10, max by (table, class, key) (hotkeyd_key_share` + all + `))`, LegendFormat: "{{table}} {{class}} {{key}}"}),
		l.timeSeries("Top keys' units per second", "Capacity units per second of the heaviest keys. One partition serves 1000 WCU/s and 3000 RCU/s; a key near that throttles whatever the table's capacity.", "short", 12, 8,
			Target{Expr: `topk(10, max by (table, class, key) (hotkeyd_key_units_per_second` + all + `))`, LegendFormat: "{{table}} {{class}} {{key}}"}),
		l.timeSeries("Distinct partition keys", "Estimated distinct partition keys accessed per table in the sliding window, summed over replicas. Few keys for much traffic means a low-cardinality key design.", "short", 12, 8,
			Target{Expr: `sum by (table) (hotkeyd_partition_keys_distinct` + all + `)`, LegendFormat: "{{table}}"}),
		l.timeSeries("Throttled calls per second", "Calls that failed with a throttling error, from sources that see failed calls (CloudTrail).", "reqps", 12, 8,
			Target{Expr: `sum by (table, class) (rate(hotkeyd_throttled_events_total` + all + `[$__rate_interval]))`, LegendFormat: "{{table}} {{class}}"}),
	)

	panels = append(panels, l.row("Readers"))
	panels = append(panels,
		l.timeSeries("Stream iterator age", "How far behind the newest record each stream shard is read. Records are trimmed after 24 hours.", "s", 8, 8,
			Target{Expr: `max by (table, shard) (hotkeyd_stream_iterator_age_seconds` + all + `)`, LegendFormat: "{{table}} {{shard}}"}),
		l.timeSeries("Stream shards by state", "Stream shards per table, by state.", "short", 8, 8,
			Target{Expr: `sum by (table, state) (hotkeyd_stream_shards` + all + `)`, LegendFormat: "{{table}} {{state}}"}),
		l.timeSeries("Source errors and rejected input", "Reader errors and input lines or records that could not be used, per second, by source and reason.", "short", 8, 8,
			Target{Expr: `sum by (source, reason) (rate(hotkeyd_source_errors_total` + all + `[$__rate_interval]))`, LegendFormat: "error {{source}} {{reason}}"},
			Target{Expr: `sum by (source, reason) (rate(hotkeyd_input_rejected_total` + all + `[$__rate_interval]))`, LegendFormat: "rejected {{source}} {{reason}}"}),
	)

	return newDashboard("hotkeyd-overview", "hotkeyd / Overview",
		"Hot partition keys in DynamoDB tables: traffic, hot keys with the advised fix, and the readers' health.",
		variables(), panels)
}
