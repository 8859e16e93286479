package dashboards

// Table returns the per-table drill-down dashboard: one table (or index),
// the chosen classes, its diagnoses and their evidence, its keys' shares
// and busiest seconds over time, and its stream.
func Table() Dashboard {
	l := &layout{}
	t := sel(`table="$table"`)
	tc := sel(`table="$table"`, `class=~"$class"`)
	var panels []Panel
	panels = append(panels, tableNow(l, t, tc)...)
	panels = append(panels, tableKeys(l, t, tc)...)
	panels = append(panels, tableStream(l, t)...)
	tmpl := variables(
		queryVariable("table", "Table", `label_values(hotkeyd_units_total{job=~"$job", instance=~"$instance"}, table)`, false),
		queryVariable("class", "Class", `label_values(hotkeyd_units_total{job=~"$job", instance=~"$instance", table="$table"}, class)`, true),
	)
	return newDashboard("hotkeyd-table", "hotkeyd / Table",
		"One DynamoDB table (or index) in detail: its diagnoses with severity and fix, the findings behind them, its keys' shares, rates and busiest seconds against the partition ceiling, distinct keys and its stream.",
		tmpl, panels)
}

// tableNow is the table dashboard's first row: its numbers, diagnoses and
// findings now, its top keys' shares and busiest seconds (t selects the
// table, tc the table and the chosen classes).
func tableNow(l *layout, t, tc string) []Panel {
	panels := []Panel{l.row("$table now")}
	panels = append(panels,
		l.stat("Units/s", "Capacity units per second of the chosen classes.", "short",
			`sum(rate(hotkeyd_units_total`+tc+`[$__rate_interval]))`, 5, 4, nil),
		l.stat("Events/s", "Accesses per second of the chosen classes.", "reqps",
			`sum(rate(hotkeyd_events_total`+tc+`[$__rate_interval]))`, 5, 4, nil),
		l.stat("Distinct partition keys", "Estimated distinct partition keys in the sliding window.", "short",
			`sum(hotkeyd_partition_keys_distinct`+t+`)`, 4, 4, nil),
		l.stat("Hottest key's share", "Largest share of the table's units of one class taken by a single key.", "percentunit",
			`max(hotkeyd_key_share`+tc+`)`, 5, 4, thresholds("green", 0.10, "orange", 0.25, "red")),
		l.stat("Busiest key against the ceiling", "The busiest second of the table's hottest key as a fraction of one partition's ceiling as configured (write_limit and read_limit: 1000 WCU/s and 3000 RCU/s unless set): warning from 50 %, critical from 80 %.", "percentunit",
			`max(`+ofCeiling("class, key", "hotkeyd_key_peak_units_per_second", `table="$table"`, `class=~"$class"`)+`)`, 5, 4, ceilingThresholds()),
	)
	panels = append(panels,
		l.findingsTable("Diagnoses and fixes",
			"One row per root cause flagged now for this table, with its severity (critical and warning page, info is shown only) and its one fix. /api/v1/hotkeys?table=$table has the full diagnosis: the shard count, what the fix would do to the traffic, and the findings it explains.",
			`max by (severity, cause, class, key, fix) (hotkeyd_diagnosis`+tc+` == 1)`,
			[]string{"severity", "cause", "class", "key", "fix"}, 12, 8),
		l.findingsTable("Evidence",
			"The findings behind the diagnoses: every rule that fired, each with the fix of the diagnosis that explains it.",
			`max by (class, key, kind, recommendation) (hotkeyd_hot_key`+tc+` == 1)`,
			[]string{"class", "key", "kind", "recommendation"}, 12, 8),
		l.shareBarGauge("Top keys' share now",
			"The table's heaviest keys' share of its units of one class.",
			`topk(15, max by (class, key) (hotkeyd_key_share`+tc+`))`, "{{class}} {{key}}", 12, 8),
		l.ceilingBarGauge("Top keys' busiest second now",
			"The table's top keys' busiest second of the window as a fraction of one partition's ceiling of their class: orange from 50 % (warning), red from 80 % (critical).",
			`topk(15, `+ofCeiling("class, key", "hotkeyd_key_peak_units_per_second", `table="$table"`, `class=~"$class"`)+`)`, "{{class}} {{key}}", 12, 8),
	)
	return panels
}

// tableKeys is the table dashboard's row of its keys over time.
func tableKeys(l *layout, t, tc string) []Panel {
	return []Panel{l.row("Keys"),
		l.timeSeries("Key share over time", "Share of the table's units of the class per top key.", "percentunit", 12, 8,
			Target{Expr: `max by (class, key) (hotkeyd_key_share` + tc + `)`, LegendFormat: "{{class}} {{key}}"}),
		l.timeSeries("Key units per second", "Capacity units per second per top key, averaged over the window, and its busiest second (peak).", "short", 12, 8,
			Target{Expr: `max by (class, key) (hotkeyd_key_units_per_second` + tc + `)`, LegendFormat: "{{class}} {{key}}"},
			Target{Expr: `max by (class, key) (hotkeyd_key_peak_units_per_second` + tc + `)`, LegendFormat: "{{class}} {{key}} peak"}),
		ceilingSeries(l, "Key busiest second against the ceiling", "Each top key's busiest second of the window as a fraction of one partition's ceiling of its class. The dashed lines are the default warning (50 %) and critical (80 %) levels.",
			ofCeiling("class, key", "hotkeyd_key_peak_units_per_second", `table="$table"`, `class=~"$class"`), "{{class}} {{key}}"),
		l.timeSeries("Units per second by class", "Consumed capacity units per second, summed over replicas.", "short", 12, 8,
			Target{Expr: `sum by (class) (rate(hotkeyd_units_total` + tc + `[$__rate_interval]))`, LegendFormat: "{{class}}"}),
		l.timeSeries("Events per second by class and source", "Accesses per second by class and the reader that saw them.", "reqps", 12, 8,
			Target{Expr: `sum by (class, source) (rate(hotkeyd_events_total` + tc + `[$__rate_interval]))`, LegendFormat: "{{class}} {{source}}"}),
		l.timeSeries("Distinct partition keys", "Estimated distinct partition keys in the sliding window, and the keys outside the exported top keys.", "short", 12, 8,
			Target{Expr: `sum(hotkeyd_partition_keys_distinct` + t + `)`, LegendFormat: "distinct"},
			Target{Expr: `sum(hotkeyd_keys_omitted` + t + `)`, LegendFormat: "left out of the top keys"}),
		l.timeSeries("Most throttled keys", "Throttled calls per key in the sliding window (sources that see failed calls): at least, and at most where the window counted more throttled keys than it keeps (64 a class). Only keys known to be more throttled than any other are listed.", "short", 12, 8,
			Target{Expr: `topk(10, max by (key) (hotkeyd_key_throttled` + t + `))`, LegendFormat: "{{key}}"},
			Target{Expr: `topk(10, max by (key) (hotkeyd_key_throttled_max` + t + `))`, LegendFormat: "{{key}} at most"}),
		l.timeSeries("Calls refused by throttling", "Share of the table's calls of each class refused by throttling. Spread over the keys, it is the table's capacity (a capacity diagnosis, warning from 1 %, critical from 5 %); on a few keys, their key range.", "percentunit", 12, 8,
			Target{Expr: `sum by (class) (rate(hotkeyd_throttled_events_total` + tc + `[$__rate_interval])) / (sum by (class) (rate(hotkeyd_throttled_events_total` + tc + `[$__rate_interval])) + sum by (class) (rate(hotkeyd_events_total` + tc + `[$__rate_interval])))`, LegendFormat: "{{class}}"}),
	}
}

// tableStream is the table dashboard's row of its stream.
func tableStream(l *layout, t string) []Panel {
	shard := `max by (shard) (hotkeyd_stream_shard_records` + t + `)`
	return []Panel{l.row("Stream"),
		l.heatmap("Stream shards' share of records", "Each stream shard's share of the table's stream records in the sliding window, over time: one row per shard (a shard is one physical partition), the table's busiest shards (detector.top of them) and \"other\" for the rest. A dark row is a hot partition; its key is on the Keys row.", "percentunit", 24, 8,
			Target{Expr: shard + ` / scalar(sum(` + shard + `))`, LegendFormat: "{{shard}}"}),
		l.timeSeries("Iterator age by shard", "How far behind the newest record each shard of the table's stream is read.", "s", 12, 8,
			Target{Expr: `max by (shard) (hotkeyd_stream_iterator_age_seconds` + t + `)`, LegendFormat: "{{shard}}"}),
		l.timeSeries("Shards by state", "The table's stream shards by state.", "short", 12, 8,
			Target{Expr: `max by (state) (hotkeyd_stream_shards` + t + `)`, LegendFormat: "{{state}}"}),
		l.timeSeries("Stream reads per second", "Stream records read (Time to Live deletes among them, which are not client writes) and GetRecords calls per second.", "short", 12, 8,
			Target{Expr: `sum(rate(hotkeyd_stream_records_total` + t + `[$__rate_interval]))`, LegendFormat: "records"},
			Target{Expr: `sum(rate(hotkeyd_stream_ttl_deletes_total` + t + `[$__rate_interval]))`, LegendFormat: "TTL deletes"},
			Target{Expr: `sum(rate(hotkeyd_stream_get_records_calls_total` + t + `[$__rate_interval]))`, LegendFormat: "GetRecords calls"}),
		l.timeSeries("Trimmed gaps", "Times unread records had been trimmed (older than 24 h) and the reader skipped to the oldest record left. Any increase means lost records.", "short", 12, 8,
			Target{Expr: `sum(increase(hotkeyd_stream_trimmed_gaps_total` + t + `[$__rate_interval]))`, LegendFormat: "gaps"}),
	}
}
