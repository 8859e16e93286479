// hotkeyd's page. Live (data-mode="live"), it asks the daemon's API for the
// report and the per-second series once a second, with the page's own
// credentials (same origin), and keeps what it had while the daemon is
// away. As a report (data-mode="report", hotkeyd analyze --format html),
// it draws the data written into the page. Plain JavaScript, no build
// step; charts are uPlot's.
(function () {
  'use strict';

  var root = document.getElementById('app');
  var mode = root.getAttribute('data-mode');
  var embedded = JSON.parse(document.getElementById('hotkeyd-data').textContent || 'null');

  // HISTORY_SECONDS bounds what the page keeps of each table's traffic
  // since it opened: one hour of seconds.
  var HISTORY_SECONDS = 3600;
  var POLL_MS = 1000;

  var state = {
    report: null,
    series: null,
    status: mode === 'live' ? 'waiting' : 'report',
    message: '',
    downSince: null,
    hist: new Map(), // table id -> Map(second -> [read, write])
  };
  var charts = new Map(); // chart id -> uPlot
  // heats are the tables' heatmaps (table id -> entry, heatEntry), kept
  // across renders; incidents is the list of the last 24 hours.
  var heats = new Map();
  var incidents = { el: null, fetched: 0, gen: 0 };
  var pending = new Map(); // chart id -> {kind, data, colors}

  var COLORS = { read: '#2f6fdf', write: '#d9622b' };
  var UNIT = { read: 'RCU', write: 'WCU' };
  var CAUSE = {
    hot_key: 'hot key',
    partition_limit: 'key near the partition limit',
    low_cardinality: 'low partition key cardinality',
    time_ordered_key: 'time-ordered partition key',
    hot_partition: 'hot partition',
    capacity: 'short of capacity',
  };
  // LIMIT names the capacity a capacity diagnosis found short.
  var LIMIT = {
    provisioned: 'provisioned capacity',
    account: 'account quota',
    on_demand_max: 'on-demand maximum',
    unknown: 'capacity (no throttling reason: inferred)',
  };
  var FIX = {
    write_sharding: 'write sharding',
    calculated_suffix: 'calculated suffix',
    gsi: 'a GSI re-keyed',
    rekey: 're-key',
    cache: 'cache',
    sparse_index: 'sparse index',
    capacity: 'more capacity',
  };

  // ---- formatting ----

  function esc(s) {
    return String(s == null ? '' : s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function trim(s) {
    return s.indexOf('.') >= 0 ? s.replace(/\.?0+$/, '') : s;
  }
  function fmt(v) {
    if (v == null || isNaN(v)) return '–';
    var a = Math.abs(v);
    if (a >= 1000) return Math.round(v).toLocaleString('en-US');
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return trim(v.toFixed(1));
    return trim(v.toFixed(2));
  }
  // throttledCount is a throttled key's count: exact, or the bounds it is
  // known within.
  function throttledCount(k) {
    return k.count_max > k.count ? fmt(k.count) + ' to ' + fmt(k.count_max) : fmt(k.count);
  }
  // noun is the singular for a count of 1, else the plural (one + 's'
  // unless given): "1 finding", "2 findings".
  function noun(n, one, many) {
    return n === 1 ? one : (many || one + 's');
  }
  function pct(share) {
    return (share * 100).toFixed(1) + '%';
  }
  function clock(iso) {
    var d = new Date(iso);
    return isNaN(d) ? '' : d.toISOString().slice(11, 19) + ' UTC';
  }
  function stamp(iso) {
    var d = new Date(iso);
    return isNaN(d) ? '' : d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
  }
  function span(seconds) {
    if (seconds < 120) return Math.round(seconds) + ' s';
    if (seconds < 7200) return Math.round(seconds / 60) + ' min';
    if (seconds < 172800) return (seconds / 3600).toFixed(1).replace(/\.0$/, '') + ' h';
    return (seconds / 86400).toFixed(1).replace(/\.0$/, '') + ' days';
  }
  function tableName(t) {
    return t.index ? t.table + ' / ' + t.index : t.table;
  }
  // tableID names a table or index: DynamoDB names cannot hold "/".
  function tableID(t) {
    return t.table + '/' + (t.index || '');
  }
  function tableHref(t) {
    return '#/table/' + encodeURIComponent(t.table) + (t.index ? '/' + encodeURIComponent(t.index) : '');
  }
  function attrs(o) {
    var s = '';
    for (var k in o) s += ' data-' + k + '="' + esc(o[k]) + '"';
    return s;
  }
  function severityRank(s) {
    return s === 'critical' ? 0 : s === 'warning' ? 1 : 2;
  }

  // ---- routing ----

  function route() {
    var m = location.hash.match(/^#\/table\/([^/]+)(?:\/([^/]+))?$/);
    if (!m) return null;
    return { table: decodeURIComponent(m[1]), index: m[2] ? decodeURIComponent(m[2]) : '' };
  }

  // ---- data ----

  function seriesOf(t) {
    if (!state.series) return null;
    var id = tableID(t);
    for (var i = 0; i < state.series.tables.length; i++) {
      if (tableID(state.series.tables[i]) === id) return state.series.tables[i];
    }
    return null;
  }

  // keySeriesIndex maps a table's key series by class, key and occurrence
  // (masked keys may repeat: two redacted keys of one entity type).
  function keyIdentity(cls, key, seen) {
    var base = JSON.stringify([cls, key]);
    var n = seen[base] || 0;
    seen[base] = n + 1;
    return JSON.stringify([cls, key, n]);
  }
  function keySeriesIndex(ts) {
    var out = {}, seen = {};
    if (!ts) return out;
    ts.keys.forEach(function (k) {
      out[keyIdentity(k.class, k.key, seen)] = k.units_per_second;
    });
    return out;
  }
  function xs(ts) {
    var start = Date.parse(ts.start) / 1000, step = ts.step_seconds || 1, n = ts.classes.length ? ts.classes[0].units_per_second.length : 0;
    var x = new Array(n);
    for (var i = 0; i < n; i++) x[i] = start + i * step;
    return x;
  }

  // mergeHistory adds the answer's seconds to what the page has kept of
  // each table since it opened.
  function mergeHistory(series) {
    series.tables.forEach(function (ts) {
      var id = tableID(ts), h = state.hist.get(id);
      if (!h) {
        h = new Map();
        state.hist.set(id, h);
      }
      var x = xs(ts);
      for (var i = 0; i < x.length; i++) {
        var r = ts.classes[0].units_per_second[i], w = ts.classes[1].units_per_second[i];
        if (r == null && w == null) continue;
        h.set(x[i], [r, w]);
      }
      if (h.size > HISTORY_SECONDS) {
        var keys = Array.from(h.keys()).sort(function (a, b) { return a - b; });
        for (var j = 0; j < keys.length - HISTORY_SECONDS; j++) h.delete(keys[j]);
      }
    });
  }

  // historyData is a table's seconds since the page opened, one x per
  // second with gaps (null) where the page has none.
  function historyData(t) {
    var h = state.hist.get(tableID(t));
    if (!h || h.size === 0) return [[], [], []];
    var keys = Array.from(h.keys()).sort(function (a, b) { return a - b; });
    var first = keys[0], last = keys[keys.length - 1];
    var x = [], r = [], w = [];
    for (var s = first; s <= last; s++) {
      var v = h.get(s);
      x.push(s);
      r.push(v ? v[0] : null);
      w.push(v ? v[1] : null);
    }
    return [x, r, w];
  }

  // ---- live polling ----

  // FETCH_TIMEOUT_MS bounds one request: a daemon that accepts and never
  // answers (stopped, or a network that drops packets) must not stop the
  // polling.
  var FETCH_TIMEOUT_MS = 5000;

  function getJSON(path) {
    var ctl = typeof AbortController === 'function' ? new AbortController() : null;
    var timer = ctl ? setTimeout(function () { ctl.abort(); }, FETCH_TIMEOUT_MS) : null;
    var done = function () { clearTimeout(timer); };
    return fetch(path, { cache: 'no-store', credentials: 'same-origin', signal: ctl ? ctl.signal : undefined }).then(
      function (resp) {
        if (resp.status === 401) {
          throw { kind: 'auth', message: 'the server refused the page\'s credentials (401): reload the page to sign in again' };
        }
        if (resp.status === 503) {
          return resp.json().catch(function () { return {}; }).then(function (b) {
            throw { kind: 'waiting', message: b.error || 'hotkeyd has no report yet' };
          });
        }
        if (!resp.ok) throw { kind: 'down', message: path + ' answered ' + resp.status };
        return resp.json();
      },
      function () {
        throw { kind: 'down', message: 'hotkeyd does not answer' };
      }).then(
      function (v) { done(); return v; },
      function (e) { done(); throw e; });
  }

  var generation = 0, timer = null;

  function poll() {
    var gen = ++generation;
    clearTimeout(timer);
    var r = route(), q = '', hq = '?top=5';
    if (r) {
      q = '?table=' + encodeURIComponent(r.table) + '&index=' + encodeURIComponent(r.index);
      hq = q;
    }
    Promise.all([getJSON('api/v1/hotkeys' + q), getJSON('api/v1/hotkeys/history' + hq)]).then(
      function (answers) {
        if (gen !== generation) return;
        state.report = answers[0];
        state.series = answers[1];
        mergeHistory(answers[1]);
        state.status = 'live';
        state.message = '';
        state.downSince = null;
      },
      function (e) {
        if (gen !== generation) return;
        state.status = e.kind || 'down';
        state.message = e.message || String(e);
        if (state.status === 'down' && !state.downSince) state.downSince = new Date();
      }).then(function () {
        if (gen !== generation) return;
        render();
        timer = setTimeout(poll, POLL_MS);
      });
  }

  // ---- views ----

  // judgedBy returns the settings the shown report was judged by (the
  // report's settings: its threshold, ceilings and fractions), or an empty
  // object before the first report.
  function judgedBy() {
    return (state.report && state.report.settings) || {};
  }

  function header() {
    var rep = state.report, meta = [];
    var label = { live: 'live', waiting: 'waiting', down: 'reconnecting', auth: 'signed out', report: 'report' }[state.status];
    if (rep && mode === 'live') {
      meta.push('window ' + span((Date.parse(rep.end) - Date.parse(rep.start)) / 1000));
      meta.push('updated ' + clock(rep.end));
    }
    if (rep && mode === 'report') {
      meta.push(fmt(rep.events) + ' ' + noun(rep.events, 'event') + ' from ' + stamp(rep.start) + ' to ' + stamp(rep.end));
    }
    var threshold = judgedBy().threshold;
    if (threshold) meta.push('a key is hot at ' + pct(threshold).replace('.0%', '%') + ' of its table\'s units of a class');
    return '<header class="top"><h1><a href="#/">hotkeyd</a></h1>' +
      '<span class="status ' + esc(state.status) + '" id="status">' + esc(label) + '</span>' +
      '<span class="meta">' + esc(meta.join(' · ')) + '</span></header>';
  }

  function banner() {
    if (mode !== 'live' || state.status === 'live') return '';
    var text = state.message;
    if (state.status === 'down') {
      text = 'hotkeyd is unreachable since ' + state.downSince.toLocaleTimeString() + ' (' + state.message +
        '); the page keeps what it has and tries again every second.';
    }
    return '<div class="banner' + (state.status === 'waiting' ? '' : ' error') + '" id="banner">' + esc(text) + '</div>';
  }

  // catchingUp says which sources read a backlog: their seconds are still
  // coming in, judged at the rates they happened.
  function catchingUp() {
    var srcs = state.report && state.report.sources ? state.report.sources : [];
    return srcs.filter(function (s) { return s.catching_up; }).map(function (s) {
      return '<div class="banner catching-up" data-source="' + esc(s.source) + '">' + esc(s.source) +
        ' is catching up: ' + esc(fmt(Math.round(s.lag_seconds))) + ' s behind (read up to ' + esc(stamp(s.watermark)) +
        '); its backlog is judged at the rates it happened.</div>';
    }).join('');
  }

  function diagnosisCard(t, d) {
    var keys = d.keys || [];
    var keyLabel = d.cause === 'hot_partition' ? 'shard' : (keys.length > 1 ? 'keys' : 'key');
    var ceiling = d.limit ? (d.peak_units_per_second / d.limit) : 0;
    var html = '<article class="card diag ' + esc(d.severity) + '"' + attrs({
      table: t.table, index: t.index || '', cause: d.cause, class: d.class, severity: d.severity,
      keys: JSON.stringify(keys), fix: d.fix.kind, 'suffix-count': d.fix.suffix_count || 0,
      share: d.share, peak: d.peak_units_per_second,
      'after-severity': d.after ? d.after.severity : '',
    }) + '>';
    html += '<div><span class="sev ' + esc(d.severity) + '">' + esc(d.severity) + '</span> ' +
      '<span class="cause">' + esc(CAUSE[d.cause] || d.cause) + '</span> on <a href="' + tableHref(t) + '">' + esc(tableName(t)) + '</a>' +
      ' · ' + esc(d.class) + 's' + (keys.length ? ' · ' + keyLabel + ' ' + keys.map(function (k) { return '<code class="key" title="' + esc(k) + '">' + esc(k) + '</code>'; }).join(', ') : '') + '</div>';
    if (d.capacity) {
      var cp = d.capacity;
      html += '<div class="nums capacity"' + attrs({ limit: cp.limit, resource: cp.resource, 'throttled-share': cp.throttled_share }) + '>' +
        '<span>refused <b>' + pct(cp.throttled_share) + '</b> of ' + fmt(cp.calls) + ' calls</span>' +
        '<span><b>' + esc(LIMIT[cp.limit] || cp.limit) + '</b> of the ' + esc(cp.resource) + '</span>' +
        '<span>consumes <b>' + fmt(cp.units_per_second) + '</b> ' + UNIT[d.class] + '/s, needs about <b>' + fmt(cp.demand_units_per_second) + '</b></span></div>';
    } else {
      html += '<div class="nums"><span>share <b>' + pct(d.share) + '</b></span><span>busiest second <b>' + fmt(d.peak_units_per_second) + '</b> ' +
        UNIT[d.class] + '/s</span><span><b>' + trim((ceiling * 100).toFixed(ceiling < 0.1 ? 1 : 0)) + '%</b> of one partition\'s ' + fmt(d.limit) + ' ' + UNIT[d.class] + '/s</span>' +
        (d.throttled ? '<span>throttled <b>' + fmt(d.throttled) + '</b></span>' : '') + '</div>';
    }
    html += '<p class="summary">' + esc(d.summary) + '</p>';
    html += '<div class="fix"><span class="label">Fix: ' + esc(FIX[d.fix.kind] || d.fix.kind) +
      (d.fix.suffix_count ? ', ' + d.fix.suffix_count + ' keys' : '') + '.</span>' + esc(d.fix.text) +
      (d.fix.example ? ' <span class="example">e.g. <code>' + esc(d.fix.example) + '</code></span>' : '') + '</div>';
    if (d.after) {
      var good = d.after.under_threshold && d.after.under_ceiling;
      html += '<div class="after' + (d.after.under_ceiling ? '' : ' bad') + (good ? ' good' : '') + '"><span class="label">After the fix:</span>' +
        esc(d.after.summary) + ' <span class="sev ' + esc(d.after.severity) + '">' + esc(d.after.severity) + '</span></div>';
    }
    if (d.explains && d.explains.length) {
      html += '<div class="explains">explains: ' + d.explains.map(function (e) {
        return esc(e.kind) + (e.key ? ' ' + esc(e.key) : '') + (e.class ? ' (' + esc(e.class) + ')' : '');
      }).join('; ') + '</div>';
    }
    return html + '</article>';
  }

  function diagnosesSection(tables) {
    var all = [];
    tables.forEach(function (t) {
      (t.diagnoses || []).forEach(function (d) { all.push([t, d]); });
    });
    all.sort(function (a, b) {
      var da = a[1], db = b[1];
      return severityRank(da.severity) - severityRank(db.severity) ||
        (db.peak_units_per_second / db.limit) - (da.peak_units_per_second / da.limit);
    });
    var html = '<h2>Diagnoses</h2>';
    if (!all.length) return html + noDiagnosis(tables);
    return html + all.map(function (p) { return diagnosisCard(p[0], p[1]); }).join('');
  }

  // QUIET says why no key is diagnosed though one is at or above the
  // threshold, by the report's quiet reason.
  var QUIET = {
    traffic_floor: 'the traffic is under the traffic floor, where a key\'s share is noise',
    holding: 'a key is above the threshold, held until it stays there',
  };

  // noDiagnosis is the headline when there is no diagnosis: the reason the
  // tables are quiet when a key is at or above the threshold (its bar is
  // long, the headline must say why it is not a diagnosis), each table's
  // in the detector's words below it.
  function noDiagnosis(tables) {
    var quiet = tables.filter(function (t) { return t.quiet; });
    if (!quiet.length) return '<p class="none" id="no-diagnoses">No diagnosis: no key is hot or near a partition\'s ceiling, and no table short of capacity.</p>';
    var reasons = [];
    quiet.forEach(function (t) { if (reasons.indexOf(t.quiet.reason) < 0) reasons.push(t.quiet.reason); });
    var yet = reasons.length === 1 && reasons[0] === 'holding' ? ' yet' : '';
    return '<p class="none" id="no-diagnoses"' + attrs({ reasons: reasons.join(' ') }) + '>No diagnosis' + yet + ': ' +
      esc(reasons.map(function (r) { return QUIET[r] || r; }).join('; ')) + '.</p>' +
      '<ul class="quiet-tables">' + quiet.map(function (t) {
        return '<li' + attrs({ table: t.table, index: t.index || '', reason: t.quiet.reason }) + '><a href="' + tableHref(t) + '">' +
          esc(tableName(t)) + '</a>: ' + esc(t.quiet.text) + '</li>';
      }).join('') + '</ul>';
  }

  // chartSlot places a chart; yMax, when given, is the top of its scale
  // (the key charts of one table share it, so they compare at a glance).
  function chartSlot(id, kind, data, colors, yMax) {
    pending.set(id, { kind: kind, data: data, colors: colors, yMax: yMax });
    return '<div class="' + (kind === 'spark' ? 'spark' : 'chart-wide') + '" data-chart="' + esc(id) + '"></div>';
  }

  // keyText shows the text a binary key's bytes hold beside its base64
  // (key_text), escaped as every key.
  function keyText(k) {
    return k.key_text ? ' <span class="keytext" title="the text of the binary key">' + esc(k.key_text) + '</span>' : '';
  }

  function keysTable(t, cls, limit, ts) {
    var keys = (t.top_keys || []).filter(function (k) { return k.class === cls; });
    if (limit) keys = keys.slice(0, limit);
    if (!keys.length) return '';
    var threshold = judgedBy().threshold || 0;
    var index = keySeriesIndex(ts), seen = {}, x = ts ? xs(ts) : [];
    var unit = UNIT[cls], yMax = 1;
    Object.keys(index).forEach(function (id) {
      if (JSON.parse(id)[0] !== cls) return;
      index[id].forEach(function (v) { if (v != null && v > yMax) yMax = v; });
    });
    var rows = keys.map(function (k, i) {
      var id = keyIdentity(k.class, k.key, seen);
      var pts = index[id];
      var hot = threshold && k.share >= threshold;
      // At or above the threshold, but under the traffic floor: not judged.
      var floor = hot && t.quiet && t.quiet.reason === 'traffic_floor' && t.quiet.class === cls;
      return '<tr class="topkey"' + attrs({
        table: t.table, index: t.index || '', class: k.class, key: k.key, rank: i + 1,
        units: k.units, share: k.share, ups: k.units_per_second || 0, peak: k.peak_units_per_second,
      }) + '><td class="key" title="' + esc(k.key) + '"><span>' + esc(k.key) + '</span>' + keyText(k) + '</td>' +
        '<td class="num opt units">' + fmt(k.units) + '</td>' +
        '<td class="sharecell"><div class="bar"' + (floor ? ' title="under the traffic floor: a share is noise, not judged"' : '') +
        '><div class="fill' + (floor ? ' floor' : hot ? ' hot' : '') + '" style="width:' + Math.min(100, k.share * 100).toFixed(2) + '%"></div>' +
        (threshold ? '<div class="thr" data-threshold="' + threshold + '" style="left:' + (threshold * 100).toFixed(2) + '%" title="threshold ' + pct(threshold) + '"></div>' : '') +
        '<span class="pct share">' + pct(k.share) + '</span></div></td>' +
        '<td class="num opt ups">' + fmt(k.units_per_second || 0) + '</td>' +
        '<td class="num peak">' + fmt(k.peak_units_per_second) + '</td>' +
        '<td>' + (pts ? chartSlot('key:' + tableID(t) + ':' + id, 'spark', [x, pts], [COLORS[cls]], yMax) : '') + '</td></tr>';
    }).join('');
    return '<div><table class="keys ' + cls + '"><thead><tr><th>' + cls + ' key</th><th class="opt num">' + unit + '</th>' +
      '<th>share (threshold ┆)</th><th class="opt">' + unit + '/s</th><th>peak/s</th><th>per second</th></tr></thead><tbody>' +
      rows + '</tbody></table></div>';
  }

  function classNums(t) {
    var out = '<span>events <b>' + fmt(t.events) + '</b></span>';
    (t.classes || []).forEach(function (c) {
      out += '<span class="' + (c.class === 'read' ? 'r' : 'w') + '">' + c.class + 's <b class="cls-ups"' +
        attrs({ class: c.class, ups: c.units_per_second, peak: c.peak_units_per_second }) + '>' + fmt(c.units_per_second) + '</b> ' +
        UNIT[c.class] + '/s, peak <b>' + fmt(c.peak_units_per_second) + '</b></span>';
    });
    return out + '<span>~<b>' + fmt(t.distinct_partition_keys) + '</b> distinct partition ' + noun(t.distinct_partition_keys, 'key') + '</span>';
  }

  function classData(ts) {
    if (!ts) return [[], [], []];
    return [xs(ts), ts.classes[0].units_per_second, ts.classes[1].units_per_second];
  }

  function tableCard(t, limit) {
    var ts = seriesOf(t);
    var counts = {};
    (t.diagnoses || []).forEach(function (d) { counts[d.severity] = (counts[d.severity] || 0) + 1; });
    var sev = ['critical', 'warning', 'info'].filter(function (s) { return counts[s]; }).map(function (s) {
      return '<span class="sev ' + s + '">' + counts[s] + ' ' + s + '</span>';
    }).join(' ');
    var html = '<section class="card tbl"' + attrs({ table: t.table, index: t.index || '', events: t.events }) + '>' +
      '<h3><a href="' + tableHref(t) + '">' + esc(t.table) + '</a>' + (t.index ? '<span class="idx">index ' + esc(t.index) + '</span>' : '') + sev + '</h3>' +
      '<div class="nums">' + classNums(t) + '</div>' +
      chartSlot('traffic:' + tableID(t), 'wide-small', classData(ts), [COLORS.read, COLORS.write]);
    var parts = ['read', 'write'].map(function (c) { return keysTable(t, c, limit, ts); }).filter(Boolean);
    html += '<div class="split' + (parts.length > 1 ? ' two' : '') + '">' + parts.join('') + '</div>';
    if (t.quiet) html += '<p class="quiet">quiet (' + esc(t.quiet.reason) + '): ' + esc(t.quiet.text) + '</p>';
    return html + '</section>';
  }

  function overview() {
    var tables = state.report.tables || [];
    var html = diagnosesSection(tables) + incidentsSlot() + '<h2>Tables and indexes</h2>';
    if (!tables.length) html += '<p class="none">No traffic yet.</p>';
    return html + tables.map(function (t) { return tableCard(t, 5); }).join('');
  }

  function tablePage(r) {
    var tables = (state.report.tables || []).filter(function (t) {
      return t.table === r.table && (t.index || '') === r.index;
    });
    var html = '<p><a href="#/">← all tables</a></p>';
    if (!tables.length) {
      return html + '<p class="none">' + esc(tableName(r)) + ' has no traffic in the window' + (mode === 'live' ? ' (yet)' : '') + '.</p>';
    }
    var t = tables[0], ts = seriesOf(t);
    html += '<section class="card tbl"' + attrs({ table: t.table, index: t.index || '', events: t.events }) + '>' +
      '<h3>' + esc(t.table) + (t.index ? '<span class="idx">index ' + esc(t.index) + '</span>' : '') + '</h3>' +
      '<div class="nums">' + classNums(t) + '</div>';
    if (mode === 'live') {
      html += chartSlot('history:' + tableID(t), 'wide', historyData(t), [COLORS.read, COLORS.write]) +
        '<div class="legend-note">units per second since the page opened (and the window before it)</div>';
    } else {
      html += chartSlot('history:' + tableID(t), 'wide', classData(ts), [COLORS.read, COLORS.write]) +
        '<div class="legend-note">units per second across the input' + (ts && ts.step_seconds > 1 ? ', each point the mean of ' + span(ts.step_seconds) : '') + '</div>';
    }
    html += '</section>';
    html += heatSlot(t);
    html += diagnosesSection([t]);
    html += '<h2>Top keys</h2><section class="card">';
    var parts = ['read', 'write'].map(function (c) { return keysTable(t, c, 0, ts); }).filter(Boolean);
    html += parts.length ? parts.join('') : '<p class="none">No keys.</p>';
    if (t.quiet) html += '<p class="quiet">quiet (' + esc(t.quiet.reason) + '): ' + esc(t.quiet.text) + '</p>';
    html += '</section>';
    if (t.throttled_keys && t.throttled_keys.length) {
      html += '<h2>Throttled keys</h2><section class="card"><ul class="findings">' + t.throttled_keys.map(function (k) {
        return '<li><code class="key" title="' + esc(k.key) + '">' + esc(k.key) + '</code>' + keyText(k) + ' ' + throttledCount(k) + ' ' + noun(Math.max(k.count, k.count_max || 0), 'call') + '</li>';
      }).join('') + (t.throttled_keys_bound ? '<li class="none">every other key at most ' + fmt(t.throttled_keys_bound) + ' ' + noun(t.throttled_keys_bound, 'call') + '</li>' : '') +
        '</ul></section>';
    }
    html += forecastSection(t);
    if (t.findings && t.findings.length) {
      html += '<details data-id="findings"><summary>Evidence: ' + t.findings.length + ' ' + noun(t.findings.length, 'finding') + '</summary><ul class="findings">' +
        t.findings.map(function (f) {
          return '<li><span class="sev ' + esc(f.severity || 'info') + '">' + esc(f.severity || 'info') + '</span> ' + esc(f.kind) +
            (f.key ? ' <code class="key" title="' + esc(f.key) + '">' + esc(f.key) + '</code>' : '') + (f.class ? ' (' + esc(f.class) + ')' : '') +
            (f.evidence ? ': ' + esc(f.evidence.summary) : '') + '</li>';
        }).join('') + '</ul></details>';
    }
    return html;
  }

  // forecastSection is a table's forecasts (each judged key's headroom,
  // trend and time to its partition's ceiling) and its 10× / 100× view.
  function forecastSection(t) {
    var fs = t.forecasts || [], sc = t.scale || [];
    if (!fs.length && !sc.length) return '';
    var html = '<h2>Forecasts</h2><section class="card" data-id="forecasts"><table class="keys"><tr><th>class</th><th>peak/s</th><th>headroom</th><th>trend/day</th><th>reaches the ceiling</th><th>R²</th><th>key</th></tr>' +
      fs.map(function (f) {
        return '<tr' + attrs({ key: f.key, class: f.class }) + '><td>' + esc(f.class) + '</td><td>' + fmt(f.peak_units_per_second) + '</td><td>' + fmt(f.headroom) + '×</td><td>' +
          (f.trend_per_day == null ? (f.note ? '<span title="' + esc(f.note) + '">–</span>' : '–') : (f.trend_per_day > 0 ? '+' : '') + fmt(f.trend_per_day) + ' (' + esc(f.growth) + ')') + '</td><td>' +
          (f.reaches_ceiling_at ? esc(stamp(f.reaches_ceiling_at)) : '–') + '</td><td>' + (f.trend_per_day == null && !f.confidence ? '–' : f.confidence.toFixed(2)) + '</td><td><code class="key" title="' + esc(f.key) + '">' + esc(f.key) + '</code></td></tr>';
      }).join('') + '</table>';
    html += fs.map(function (f) { return forecastFigure(t, f); }).join('');
    [10, 100].forEach(function (factor) {
      var ks = sc.filter(function (k) { return k.factor === factor; });
      if (!ks.length) return;
      html += '<p class="scale" data-factor="' + factor + '">Throttles at ' + factor + '× today\'s traffic: ' + ks.map(function (k) {
        return '<code class="key" title="' + esc(k.key) + '">' + esc(k.key) + '</code> (' + esc(k.class) + ', ' + fmt(k.peak_units_per_second) + '/s): ' + esc(k.fix.kind) + (k.fix.suffix_count ? ' over ' + k.fix.suffix_count + ' keys' : '');
      }).join('; ') + '</p>';
    });
    return html + '</section>';
  }

  // forecastFigure is the forecast line of key f of table t (forecast.js):
  // its recorded busiest seconds, its projection and its partition's
  // ceiling, with what the line says in words; nothing for a forecast
  // with no trend.
  function forecastFigure(t, f) {
    var m = hotkeydForecast.model(f, judgedBy(), forecastHistory(t));
    if (!m) return '';
    var id = 'forecast:' + tableID(t) + ':' + JSON.stringify([f.class, f.key]);
    pending.set(id, {
      kind: 'forecast', data: [m.x, m.recorded, m.projected, m.ceiling], model: m,
      opts: function (width) { return hotkeydForecast.options(m, width, COLORS[f.class], fmt, stamp); },
    });
    var good = f.confidence >= 0.9;
    return '<figure class="forecast"' + attrs({ key: f.key, class: f.class, growth: f.growth, confidence: f.confidence, reaches: m.reaches ? 'yes' : 'no' }) + '>' +
      '<figcaption><code class="key" title="' + esc(f.key) + '">' + esc(f.key) + '</code> ' + esc(forecastWords(f, m, good)) + '</figcaption>' +
      '<div class="chart-wide" data-chart="' + esc(id) + '"></div></figure>';
  }

  // forecastWords says what a forecast line shows: the trend, its
  // confidence, and where the line ends.
  function forecastWords(f, m, good) {
    var unit = UNIT[f.class] + '/s';
    var words = (f.trend_per_day > 0 ? '+' : '') + fmt(f.trend_per_day) + ' ' + unit + ' a day (' + f.growth +
      (f.growth === 'compounding' ? ', ' + pct(f.growth_per_day) + ' a day' : '') + '), confidence R² ' + f.confidence.toFixed(2) +
      ' (' + (good ? 'good' : 'fair: not enough to warn') + ') over ' + fmt(f.days) + ' days; ';
    if (m.reaches) {
      return words + 'reaches one partition\'s ' + fmt(f.limit) + ' ' + unit + ' around ' + stamp(f.reaches_ceiling_at) +
        ', ' + span(m.stop - m.at) + ' after ' + stamp(f.fitted_at) + '.';
    }
    return words + 'does not reach one partition\'s ' + fmt(f.limit) + ' ' + unit + ' within ' + span(m.stop - m.at) +
      (f.note ? ' (' + f.note + ')' : '') + '; the line ends there.';
  }

  // forecastHistory is the cells the forecast lines of table t draw their
  // recorded busiest seconds from: the report's, or live the hourly cells
  // the page asked the history for (forecastPast), once every 10 minutes.
  var forecastPast = new Map(); // table id -> {fetched, gen, answer}
  var FORECAST_REFRESH_MS = 600000;
  function forecastHistory(t) {
    if (mode !== 'live') return embeddedHistory(t);
    if (!servesHistory) return null;
    var id = tableID(t), e = forecastPast.get(id);
    if (!e) {
      e = { fetched: 0, gen: 0, answer: null };
      forecastPast.set(id, e);
    }
    if (Date.now() - e.fetched > FORECAST_REFRESH_MS) loadForecastHistory(t, e);
    return e.answer;
  }

  function loadForecastHistory(t, e) {
    var from = Infinity, to = -Infinity;
    (t.forecasts || []).forEach(function (f) {
      if (f.trend_per_day == null || !f.fitted_at) return;
      var at = Date.parse(f.fitted_at) / 1000;
      from = Math.min(from, at - (f.days || 0) * DAY);
      to = Math.max(to, at);
    });
    if (!(to > from)) return;
    var gen = ++e.gen;
    e.fetched = Date.now();
    var q = '?table=' + encodeURIComponent(t.table) + '&index=' + encodeURIComponent(t.index || '') +
      '&from=' + iso(Math.floor(from / 3600) * 3600) + '&to=' + iso(Math.ceil(to)) + '&step=3600';
    getJSON('api/v1/history' + q).then(function (a) {
      if (gen === e.gen) e.answer = a;
    }, function () {
      // The line is drawn without its recorded part; asked again later.
    });
  }

  function footer() {
    var links = mode === 'live'
      ? '<a href="api/v1/hotkeys">report (JSON)</a><a href="api/v1/hotkeys/history">series (JSON)</a><a href="metrics">metrics</a><a href="-/ready">readiness</a>'
      : '';
    var notes = state.report && state.report.notes ? state.report.notes.map(function (n) { return '<p>note: ' + esc(n) + '</p>'; }).join('') : '';
    return '<footer>' + notes + links + '<span>charts by uPlot</span></footer>';
  }

  // ---- charts ----

  function timeOfDay(u, splits) {
    return splits.map(function (s) { return new Date(s * 1000).toISOString().slice(11, 19); });
  }

  // chartOptions returns a chart's options; ref.v is the top of its scale,
  // changed in place when new data come.
  function chartOptions(kind, width, colors, ref) {
    var small = kind !== 'wide';
    var series = [{ value: function (u, v) { return v == null ? '–' : stamp(new Date(v * 1000).toISOString()); } }];
    colors.forEach(function (c, i) {
      series.push({
        label: colors.length > 1 ? (i === 0 ? 'reads' : 'writes') : 'units/s',
        stroke: c, width: small ? 1.25 : 1.75, fill: c + '1f', spanGaps: false,
        points: { show: !small },
        value: function (u, v) { return v == null ? '–' : fmt(v); },
      });
    });
    // The overview's charts are small but keep their axes, smaller: the
    // time of day under, units per second beside.
    var font = '11px system-ui, sans-serif';
    var axes;
    if (kind === 'wide') {
      axes = [{ stroke: '#5d6575', grid: { stroke: '#eef0f4' }, space: 90, values: timeOfDay },
        { stroke: '#5d6575', grid: { stroke: '#eef0f4' }, size: 56, label: 'units / s' }];
    } else if (kind === 'wide-small') {
      axes = [{ stroke: '#5d6575', font: font, grid: { show: false }, ticks: { size: 3 }, size: 20, space: 110, values: timeOfDay },
        { stroke: '#5d6575', font: font, grid: { stroke: '#eef0f4' }, ticks: { size: 3 }, size: 44, space: 18,
          values: function (u, splits) { return splits.map(fmt); } }];
    } else {
      axes = [{ show: false }, { show: false }];
    }
    return {
      width: width,
      height: kind === 'spark' ? 34 : kind === 'wide-small' ? 104 : 200,
      series: series,
      legend: { show: kind === 'wide' },
      cursor: { show: kind === 'wide', drag: { x: false, y: false } },
      select: { show: false },
      scales: { x: { time: true }, y: { range: function (u, lo, hi) { return [0, Math.max(ref.v || 0, hi || 0, 1) * 1.05]; } } },
      axes: axes,
      padding: kind === 'spark' ? [2, 0, 2, 0] : kind === 'wide-small' ? [8, 28, 0, 0] : undefined,
    };
  }

  function attachCharts() {
    var used = new Set();
    root.querySelectorAll('[data-chart]').forEach(function (el) {
      var id = el.getAttribute('data-chart'), spec = pending.get(id);
      if (!spec) return;
      used.add(id);
      if (spec.model) el.hotkeydForecast = spec.model;
      var width = Math.max(60, el.clientWidth || 140);
      var u = charts.get(id);
      if (u && u._kind === spec.kind && u.series.length === spec.data.length) {
        u._ref.v = spec.yMax;
        el.appendChild(u.root);
        if (Math.abs(u.width - width) > 1) u.setSize({ width: width, height: u.height });
        u.setData(spec.data);
        return;
      }
      if (u) u.destroy();
      var ref = { v: spec.yMax };
      u = new uPlot(spec.opts ? spec.opts(width) : chartOptions(spec.kind, width, spec.colors, ref), spec.data, el);
      u._kind = spec.kind;
      u._ref = ref;
      charts.set(id, u);
    });
    charts.forEach(function (u, id) {
      if (!used.has(id)) {
        u.destroy();
        charts.delete(id);
      }
    });
    pending.clear();
  }

  // ---- history: heatmaps and incidents ----

  // HEAT_REFRESH_MS and INCIDENTS_REFRESH_MS are how often the live page
  // asks again for the open heatmap's cells (its finest cells are a
  // minute) and for the incidents.
  var HEAT_REFRESH_MS = 60000;
  // servesHistory: the daemon serves /api/v1/history and /api/v1/incidents
  // (the live page's data says so).
  var servesHistory = mode === 'live' && !!(embedded && embedded.serves_history);
  var INCIDENTS_REFRESH_MS = 30000;
  var DAY = 86400;

  function iso(sec) {
    return new Date(sec * 1000).toISOString().replace('.000Z', 'Z');
  }

  // historyAnswer is the report's cells of table t (the HTML report's
  // data), or null.
  function embeddedHistory(t) {
    var all = (embedded && embedded.history) || [];
    for (var i = 0; i < all.length; i++) {
      if (tableID(all[i]) === tableID(t)) return all[i];
    }
    return null;
  }

  // heatEntry returns table t's heatmap entry: its view, the range chosen
  // (seconds back from now), the zoom ([from, to] or null) and the answer.
  function heatEntry(t) {
    var id = tableID(t), e = heats.get(id);
    if (e) return e;
    e = { t: { table: t.table, index: t.index || '' }, range: 3600, zoom: null, answer: null, fetched: 0, gen: 0, kept: 0 };
    e.view = new hotkeydHeat.HeatView(id, {
      onRange: function (sec) { e.range = sec; e.zoom = null; showHeat(e, true); },
      onZoom: function (from, to) { e.zoom = [from, to]; showHeat(e, true); },
      onReset: function () { e.zoom = null; showHeat(e, true); },
    });
    heats.set(id, e);
    return e;
  }

  // heatSpan is the entry's time range, in seconds: the zoom, else the
  // range back from now (live) or the file's span (report).
  function heatSpan(e) {
    if (e.zoom) return e.zoom;
    if (mode !== 'live') {
      var a = embeddedHistory(e.t);
      return a ? [Date.parse(a.from) / 1000, Date.parse(a.to) / 1000] : [0, 1];
    }
    var now = Math.floor(Date.now() / 1000);
    return [now - e.range, now];
  }

  // showHeat draws the entry again; live, with fetch, it asks the API for
  // the cells of its range first.
  function showHeat(e, fetchNow) {
    var span = heatSpan(e), ctx = { live: mode === 'live', from: span[0], to: span[1], range: e.range, zoomed: !!e.zoom, kept: e.kept };
    if (mode !== 'live') {
      e.view.show(embeddedHistory(e.t) || { series: [] }, ctx);
      return;
    }
    if (!fetchNow) return;
    var gen = ++e.gen;
    e.fetched = Date.now();
    var q = '?table=' + encodeURIComponent(e.t.table) + '&index=' + encodeURIComponent(e.t.index) + '&from=' + iso(span[0]) + '&to=' + iso(span[1]);
    getJSON('api/v1/history' + q).then(function (a) {
      if (gen !== e.gen) return;
      e.kept = (a.resolutions || []).reduce(function (m, r) { return Math.max(m, r.kept_seconds || 0); }, 0);
      ctx.kept = e.kept;
      e.answer = a;
      e.view.show(a, ctx);
      e.view.root.setAttribute('data-state', 'shown');
    }, function (err) {
      if (gen !== e.gen) return;
      e.view.note.textContent = 'No history: ' + (err.message || String(err)) + '.';
      e.view.root.setAttribute('data-state', 'error');
    });
  }

  // heatSlot places table t's heatmaps on its page (where there is history
  // to draw: always live, in a report when it holds the table's cells).
  function heatSlot(t) {
    if (mode === 'live' ? !servesHistory : !embeddedHistory(t)) return '';
    return '<h2>History</h2><div data-heat-slot="' + esc(tableID(t)) + '"></div>';
  }

  // incidentsSlot places the incidents (the last 24 hours live, the
  // file's in a report when analyze gave them).
  function incidentsSlot() {
    if (mode === 'live' ? !servesHistory : !(embedded && embedded.incidents)) return '';
    return '<h2>Incidents</h2><div data-incidents-slot="all"></div>';
  }

  function incidentsView(list, status) {
    var range = mode === 'live' ? 'the last 24 hours' : 'across the input';
    return hotkeydHeat.incidents(list, { id: 'all', range: range, status: status, names: { cause: CAUSE, href: tableHref } });
  }

  // loadIncidents asks the API for the last 24 hours' incidents.
  function loadIncidents() {
    var gen = ++incidents.gen, now = Math.floor(Date.now() / 1000);
    incidents.fetched = Date.now();
    getJSON('api/v1/incidents?from=' + iso(now - DAY) + '&to=' + iso(now)).then(function (a) {
      if (gen !== incidents.gen) return;
      incidents.el = incidentsView(a.incidents || [], '');
    }, function (err) {
      if (gen !== incidents.gen) return;
      incidents.el = incidentsView([], 'No incidents: ' + (err.message || String(err)) + '.');
    }).then(function () { if (gen === incidents.gen) attachHeat(); });
  }

  // attachHeat puts the kept views in their slots, and live asks again
  // for what has grown old.
  function attachHeat() {
    root.querySelectorAll('[data-heat-slot]').forEach(function (slot) {
      var r = route(), e = heatEntry({ table: r.table, index: r.index });
      slot.replaceWith(e.view.root);
      if (mode !== 'live' && !e.view.m) showHeat(e, false);
      else if (mode === 'live' && !e.zoom && Date.now() - e.fetched > HEAT_REFRESH_MS) showHeat(e, true);
      else if (e.view.m && e.view.keys.wrap.clientWidth !== e.view.width) e.view.redraw();
    });
    var slot = root.querySelector('[data-incidents-slot]');
    if (!slot) return;
    if (mode !== 'live') {
      if (!incidents.el) incidents.el = incidentsView(embedded.incidents.incidents || [], '');
    } else if (Date.now() - incidents.fetched > INCIDENTS_REFRESH_MS) {
      loadIncidents();
    }
    var waiting = hotkeydHeat.el('p', 'none', 'Loading the incidents…');
    waiting.setAttribute('data-incidents-slot', 'all');
    slot.replaceWith(incidents.el || waiting);
  }

  // ---- render ----

  function render() {
    var open = new Set();
    root.querySelectorAll('details[open]').forEach(function (d) { open.add(d.getAttribute('data-id')); });
    var r = route(), html = header() + '<main>' + banner() + catchingUp();
    if (!state.report) {
      html += '<p class="none" id="waiting">Waiting for the first report…</p>';
    } else if (r) {
      html += tablePage(r);
    } else {
      html += overview();
    }
    html += footer() + '</main>';
    // Keep the charts' elements out of the way while the page is rebuilt.
    charts.forEach(function (u) { if (u.root.parentNode) u.root.parentNode.removeChild(u.root); });
    root.innerHTML = html;
    root.querySelectorAll('details').forEach(function (d) {
      if (open.has(d.getAttribute('data-id'))) d.open = true;
    });
    root.setAttribute('data-status', state.status);
    root.setAttribute('data-view', r ? 'table' : 'overview');
    if (state.report) root.setAttribute('data-end', state.report.end);
    attachCharts();
    attachHeat();
  }

  window.addEventListener('hashchange', function () {
    window.scrollTo(0, 0);
    render();
    if (mode === 'live') poll();
  });
  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 150);
  });

  if (mode === 'live') {
    render();
    poll();
  } else {
    state.report = embedded.report;
    state.series = embedded.series;
    render();
  }
})();
