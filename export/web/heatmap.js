// hotkeyd's heatmaps and incidents: a table's keys (its top keys and "the
// rest") × time and its stream shards × time, from the history's cells
// (the shape of /api/v1/history), and the list of incidents (that of
// /api/v1/incidents). Plain JavaScript on a canvas; every name and figure
// that leaves the canvas is set with textContent, never as HTML: keys are
// user data. The page's script (app.js) fetches and places them; this file
// only draws, as window.hotkeydHeat.
(function () {
  'use strict';

  // RANGES are the ranges a heatmap offers, from the last hour to the
  // length of the finest history (Spanner's and TiDB's key visualizers
  // keep as long).
  var RANGES = [['1h', 3600], ['6h', 21600], ['24h', 86400], ['7d', 604800], ['28d', 2419200]];
  // MAX_KEY_ROWS bounds the keys drawn as rows of their own: every other
  // key of a cell is in "the rest".
  var MAX_KEY_ROWS = 16;
  var ROW = 18; // px per row
  var AXIS = 18; // px under the cells for the time axis
  var UNIT = { read: 'RCU', write: 'WCU' };
  // RAMP is ColorBrewer's sequential "Oranges" (9 classes, from light to
  // dark); OVER marks a busiest second at or above the ceiling.
  var RAMP = ['#fff5eb', '#fee6ce', '#fdd0a2', '#fdae6b', '#fd8d3c', '#f16913', '#d94801', '#a63603', '#7f2704'];
  var OVER = '#4a1486';

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function fmt(v) {
    if (v == null || isNaN(v)) return '–';
    var a = Math.abs(v);
    if (a >= 1000) return Math.round(v).toLocaleString('en-US');
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1).replace(/\.0$/, '');
    return v.toFixed(2).replace(/\.?0+$/, '') || '0';
  }
  function pct(x) {
    return (x * 100).toFixed(1) + '%';
  }
  function span(s) {
    if (s < 120) return Math.round(s) + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    if (s < 172800) return (s / 3600).toFixed(1).replace(/\.0$/, '') + ' h';
    return (s / 86400).toFixed(1).replace(/\.0$/, '') + ' days';
  }
  // utc writes a time of day (HH:MM, HH:MM:SS with seconds), with its
  // date when withDate.
  function utc(sec, withDate, seconds) {
    var s = new Date(sec * 1000).toISOString(), end = seconds ? 19 : 16;
    return withDate ? s.slice(0, end).replace('T', ' ') : s.slice(11, end);
  }

  // colour maps x in [0, 1] on the ramp; at or above 1 with over, OVER.
  function colour(x, over) {
    if (over && x >= 1) return OVER;
    x = Math.max(0, Math.min(1, x));
    return RAMP[Math.min(RAMP.length - 1, Math.floor(x * (RAMP.length - 1) + 0.5))];
  }

  // ---- the model: rows × columns of one class of an answer ----

  // seriesOf returns the answer's series of class cls, or its first.
  function seriesOf(answer, cls) {
    var ss = (answer && answer.series) || [];
    for (var i = 0; i < ss.length; i++) if (ss[i].class === cls) return ss[i];
    return ss[0] || null;
  }

  // columns lays the range [from, to) out in steps, aligned on the step.
  function columns(from, to, step) {
    var first = Math.floor(from / step) * step;
    return { first: first, step: step, n: Math.max(1, Math.ceil((to - first) / step)) };
  }

  // rank returns the names of rows, heaviest first, by the sum of what
  // each cell's list (of cell[field]) gives them.
  function rank(cells, field, name, weight) {
    var sum = {};
    cells.forEach(function (c) {
      (c[field] || []).forEach(function (k) {
        var id = name(k);
        sum[id] = (sum[id] || 0) + weight(k);
      });
    });
    return Object.keys(sum).sort(function (a, b) { return sum[b] - sum[a] || (a < b ? -1 : a > b ? 1 : 0); });
  }

  function keyName(k) {
    return k.key;
  }

  // model turns one class of an answer into rows of cells over [from, to):
  // the heaviest keys, "the rest" (every other key of each cell), and the
  // stream shards. A cell is {units, share, busiest, …, cell} or absent
  // (no traffic: a gap).
  function model(answer, cls, from, to) {
    var s = seriesOf(answer, cls);
    var cols = columns(from, to, answer.step_seconds || 60);
    var m = { cls: s ? s.class : cls, cols: cols, ceiling: s ? s.ceiling_units_per_second : 0, keys: [], shards: [], cells: [] };
    if (!s) return m;
    var cells = s.cells.filter(function (c) {
      var t = Date.parse(c.start) / 1000;
      return t >= cols.first && t < cols.first + cols.n * cols.step;
    });
    var names = rank(cells, 'keys', keyName, function (k) { return k.units; }).slice(0, MAX_KEY_ROWS);
    var rows = {};
    names.forEach(function (n) { rows[n] = { label: n, kind: 'key', cells: {} }; m.keys.push(rows[n]); });
    var rest = { label: 'the rest', kind: 'rest', cells: {} };
    var shardNames = rank(cells, 'shards', function (x) { return x.shard; }, function (x) { return x.records; });
    var shardRows = {};
    shardNames.forEach(function (n) { shardRows[n] = { label: n, kind: 'shard', cells: {} }; m.shards.push(shardRows[n]); });
    cells.forEach(function (c) {
      var i = Math.floor((Date.parse(c.start) / 1000 - cols.first) / cols.step);
      m.cells[i] = c;
      var restUnits = c.rest ? c.rest.units : 0;
      (c.keys || []).forEach(function (k) {
        var row = rows[keyName(k)];
        if (!row) { restUnits += k.units; return; }
        row.cells[i] = { units: k.units, share: k.share, busiest: k.busiest_second_units, key: k.key };
      });
      if (restUnits > 0 || c.rest) {
        rest.cells[i] = { units: restUnits, share: c.units > 0 ? restUnits / c.units : 0, busiest: null };
      }
      (c.shards || []).forEach(function (x) {
        shardRows[x.shard].cells[i] = { records: x.records, share: x.share };
      });
    });
    m.keys.push(rest);
    return m;
  }

  // shade is the colour of a cell of row in mode ("share" or "ceiling").
  function shade(row, c, m, mode) {
    if (mode === 'ceiling' && row.kind !== 'shard' && m.ceiling > 0) {
      // "The rest" keeps no busiest second: its mean rate, a floor of it.
      var b = c.busiest != null ? c.busiest : c.units / m.cols.step;
      return colour(b / m.ceiling, true);
    }
    return colour(c.share, false);
  }

  // ---- drawing ----

  // draw paints rows on canvas cv, width w px, with a time axis under.
  function draw(cv, rows, m, mode, w) {
    var dpr = window.devicePixelRatio || 1, h = rows.length * ROW + AXIS;
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(h * dpr);
    cv.style.width = w + 'px';
    cv.style.height = h + 'px';
    var g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#f3f4f7';
    g.fillRect(0, 0, w, rows.length * ROW);
    var cw = w / m.cols.n;
    rows.forEach(function (row, r) {
      Object.keys(row.cells).forEach(function (i) {
        g.fillStyle = shade(row, row.cells[i], m, mode);
        g.fillRect(Math.floor(i * cw), r * ROW + 1, Math.max(1, Math.ceil(cw) - (cw > 4 ? 1 : 0)), ROW - 2);
      });
    });
    axis(g, m, w, rows.length * ROW);
  }

  // axis writes the time under the cells, a label every ~110 px.
  function axis(g, m, w, y) {
    var total = m.cols.n * m.cols.step, every = Math.max(1, Math.floor(m.cols.n / Math.max(1, Math.floor(w / 110))));
    var days = total > 86400;
    g.fillStyle = '#5d6575';
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'top';
    for (var i = 0; i < m.cols.n; i += every) {
      var x = i * w / m.cols.n;
      g.fillRect(x, y, 1, 4);
      if (x < w - 60) g.fillText(utc(m.cols.first + i * m.cols.step, days, m.cols.step < 60), x + 2, y + 4);
    }
  }

  // ---- the tooltip's words ----

  // describe returns the lines that name a cell and its figures.
  function describe(row, i, m) {
    var c = row.cells[i], cell = m.cells[i], unit = UNIT[m.cls] || 'units';
    var t0 = m.cols.first + i * m.cols.step, t1 = t0 + m.cols.step;
    var sec = m.cols.step < 60, when = utc(t0, true, sec) + '–' + utc(t1, false, sec) + ' UTC (' + span(m.cols.step) + ')';
    if (!c) return [row.kind === 'rest' ? 'the rest' : row.label, when, 'no traffic'];
    var lines = [row.kind === 'shard' ? 'shard ' + row.label : row.kind === 'rest' ? 'the rest (every other key)' : row.label, when];
    if (row.kind === 'shard') {
      lines.push(fmt(c.records) + ' stream records, ' + pct(c.share) + ' of the table\'s');
    } else {
      lines.push(fmt(c.units) + ' ' + unit + ', ' + pct(c.share) + ' of the table\'s ' + fmt(cell.units));
      if (c.busiest != null) {
        lines.push('busiest second ' + fmt(c.busiest) + ' ' + unit + '/s' +
          (m.ceiling > 0 ? ', ' + pct(c.busiest / m.ceiling) + ' of the ' + fmt(m.ceiling) + ' ' + unit + '/s ceiling' : ''));
      } else {
        lines.push('mean ' + fmt(c.units / m.cols.step) + ' ' + unit + '/s (no busiest second kept for the rest)');
      }
    }
    lines.push('the table: ' + fmt(cell.events) + ' events, ' + fmt(cell.throttled) + ' throttled, busiest second ' +
      fmt(cell.busiest_second_units) + ' ' + unit + '/s' + (cell.distinct_keys > 0 ? ', ~' + fmt(cell.distinct_keys) + ' distinct keys' : ''));
    return lines;
  }

  window.hotkeydHeat = {
    RANGES: RANGES, ROW: ROW, el: el, fmt: fmt, pct: pct, span: span, utc: utc,
    colour: colour, model: model, draw: draw, describe: describe, seriesOf: seriesOf,
  };
})();
