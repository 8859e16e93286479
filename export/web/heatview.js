// hotkeyd's heatmap view and incidents list, on window.hotkeydHeat
// (heatmap.js draws): the controls (range, zoom, class, colour), the two
// heatmaps with their tooltip, and the list of incidents. Built from DOM
// nodes with textContent only. The views outlive the page's re-renders:
// app.js keeps them and places them again.
(function () {
  'use strict';

  var H = window.hotkeydHeat, el = H.el;

  function button(text, on, handler) {
    var b = el('button', on ? 'on' : '', text);
    b.type = 'button';
    b.addEventListener('click', handler);
    return b;
  }

  // HeatView is one table's (or index's) heatmaps. opts.onRange(seconds),
  // opts.onZoom(from, to) and opts.onReset() ask for other cells; the view
  // redraws by itself when the class or the colour changes.
  function HeatView(id, opts) {
    this.opts = opts;
    this.mode = 'share';
    this.cls = null;
    this.root = el('section', 'card heat');
    this.root.setAttribute('data-heat', id);
    this.controls = el('div', 'heat-controls');
    this.note = el('p', 'heat-note');
    this.keys = this.grid('keys', 'Keys × time');
    this.shards = this.grid('shards', 'Stream shards × time (share of the table\'s stream records)');
    this.legend = el('div', 'heat-legend');
    this.tip = el('div', 'heat-tip');
    this.tip.hidden = true;
    this.root.append(this.controls, this.note, this.keys.box, this.shards.box, this.legend, this.tip);
  }

  // grid makes one heatmap's box: the row labels beside the canvas, a
  // highlight for the cell under the pointer and the zoom's selection.
  HeatView.prototype.grid = function (kind, title) {
    var g = { kind: kind, box: el('div', 'heat-block ' + kind), labels: el('div', 'heat-labels'), wrap: el('div', 'heat-canvas') };
    g.canvas = el('canvas');
    g.canvas.setAttribute('data-heatmap', kind);
    g.mark = el('div', 'heat-mark');
    g.sel = el('div', 'heat-sel');
    g.mark.hidden = g.sel.hidden = true;
    g.wrap.append(g.canvas, g.mark, g.sel);
    var body = el('div', 'heat-grid');
    body.append(g.labels, g.wrap);
    g.box.append(el('h4', null, title), body);
    this.pointer(g);
    return g;
  };

  // show draws answer over [from, to) (seconds); ctx says the range
  // chosen, whether it is zoomed, and how long the history is kept.
  HeatView.prototype.show = function (answer, ctx) {
    this.answer = answer;
    this.ctx = ctx;
    var classes = (answer && answer.series || []).map(function (s) { return s.class; });
    if (classes.indexOf(this.cls) < 0) this.cls = heaviest(answer) || classes[0] || 'write';
    this.drawControls(classes);
    this.redraw();
  };

  // heaviest is the class of the answer with the most units.
  function heaviest(answer) {
    var best = null, most = -1;
    (answer && answer.series || []).forEach(function (s) {
      var u = s.cells.reduce(function (a, c) { return a + c.units; }, 0);
      if (u > most) { most = u; best = s.class; }
    });
    return best;
  }

  HeatView.prototype.drawControls = function (classes) {
    var v = this, ctx = this.ctx, c = this.controls;
    c.textContent = '';
    var ranges = el('span', 'heat-ranges');
    if (ctx.live) {
      H.RANGES.forEach(function (r) {
        var b = button(r[0], !ctx.zoomed && ctx.range === r[1], function () { v.opts.onRange(r[1]); });
        b.setAttribute('data-range', r[1]);
        b.disabled = ctx.kept > 0 && r[1] > ctx.kept && r[1] !== H.RANGES[0][1];
        if (b.disabled) b.title = 'the history keeps ' + H.span(ctx.kept);
        ranges.append(b);
      });
    } else {
      ranges.append(button('the file\'s span', !ctx.zoomed, function () { v.opts.onReset(); }));
    }
    var reset = button('reset zoom', false, function () { v.opts.onReset(); });
    reset.className = 'heat-reset';
    reset.hidden = !ctx.zoomed;
    var cls = el('span', 'heat-classes');
    classes.forEach(function (k) {
      cls.append(button(k + 's', v.cls === k, function () { v.cls = k; v.drawControls(classes); v.redraw(); }));
    });
    var modes = el('span', 'heat-modes');
    [['share', 'share'], ['ceiling', 'busiest second ÷ ceiling']].forEach(function (p) {
      var b = button(p[1], v.mode === p[0], function () { v.mode = p[0]; v.drawControls(classes); v.redraw(); });
      b.setAttribute('data-mode', p[0]);
      modes.append(b);
    });
    c.append(ranges, reset, cls, modes);
  };

  // redraw rebuilds the model of the chosen class and draws both maps.
  HeatView.prototype.redraw = function () {
    if (!this.answer) return;
    var m = H.model(this.answer, this.cls, this.ctx.from, this.ctx.to);
    this.m = m;
    this.width = this.keys.wrap.clientWidth;
    var width = Math.max(120, this.width || 600);
    var cells = m.cells.filter(Boolean).length;
    this.note.textContent = cells
      ? H.utc(m.cols.first, true, m.cols.step < 60) + ' to ' + H.utc(m.cols.first + m.cols.n * m.cols.step, true, m.cols.step < 60) + ' UTC, each cell ' + H.span(m.cols.step) +
        (this.ctx.zoomed ? ' (zoomed: drag across the map to zoom again)' : ' (drag across the map to zoom)')
      : 'No traffic recorded for this ' + (m.cls || 'class') + ' in this range.';
    this.paint(this.keys, m.keys, m, width);
    this.shards.box.hidden = !m.shards.length;
    if (m.shards.length) this.paint(this.shards, m.shards, m, width);
    this.legend.textContent = this.mode === 'ceiling'
      ? 'colour: a key\'s busiest second against one partition\'s ' + H.fmt(m.ceiling) + ' ' + (m.cls === 'read' ? 'RCU' : 'WCU') + '/s ceiling (purple: at or over it); shards by share'
      : 'colour: share of the table\'s units (shards: of its stream records), light 0% to dark 100%';
    this.root.setAttribute('data-cells', cells);
  };

  // paint writes the row labels and draws the canvas; the canvas keeps its
  // model (hotkeydHeatmap), which tests read back.
  HeatView.prototype.paint = function (g, rows, m, width) {
    g.labels.textContent = '';
    rows.forEach(function (r) {
      var l = el('div', 'heat-label ' + r.kind, r.label);
      l.title = r.label;
      g.labels.append(l);
    });
    H.draw(g.canvas, rows, m, this.mode, width);
    g.rows = rows;
    g.canvas.hotkeydHeatmap = {
      rows: rows.map(function (r) { return r.label; }), kinds: rows.map(function (r) { return r.kind; }),
      n: m.cols.n, first: m.cols.first, step: m.cols.step, row: H.ROW,
      cells: function (label) {
        var r = rows.filter(function (x) { return x.label === label; })[0];
        return r ? Object.keys(r.cells).map(Number) : [];
      },
    };
    g.mark.hidden = true;
  };

  // at returns the row and column under the pointer event e, or null.
  function at(g, e) {
    var rect = g.canvas.getBoundingClientRect(), hm = g.canvas.hotkeydHeatmap;
    if (!hm || !g.rows) return null;
    var x = e.clientX - rect.left, y = e.clientY - rect.top;
    var r = Math.floor(y / H.ROW), i = Math.floor(x / (rect.width / hm.n));
    if (x < 0 || x >= rect.width || r < 0 || r >= g.rows.length || i < 0 || i >= hm.n) return null;
    return { r: r, i: i, x: x };
  }

  // pointer lets the pointer name a cell (hover, or click to keep the
  // tooltip) and drag across the map to zoom to the columns selected.
  HeatView.prototype.pointer = function (g) {
    var v = this, drag = null;
    g.canvas.addEventListener('mousedown', function (e) {
      var p = at(g, e);
      if (p) drag = { x0: p.x, x1: p.x };
      e.preventDefault();
    });
    g.canvas.addEventListener('mousemove', function (e) {
      var p = at(g, e);
      if (drag && p) {
        drag.x1 = p.x;
        var a = Math.min(drag.x0, drag.x1), w = Math.abs(drag.x1 - drag.x0);
        g.sel.hidden = w < 4;
        g.sel.style.left = a + 'px';
        g.sel.style.width = w + 'px';
        g.sel.style.height = g.rows.length * H.ROW + 'px';
        return;
      }
      if (!v.pinned) v.hover(g, p, e);
    });
    g.canvas.addEventListener('mouseup', function (e) {
      var d = drag;
      drag = null;
      g.sel.hidden = true;
      if (d && Math.abs(d.x1 - d.x0) >= 4) {
        v.zoomTo(g, Math.min(d.x0, d.x1), Math.max(d.x0, d.x1));
        return;
      }
      var p = at(g, e);
      v.pinned = !!p && !v.pinned;
      v.hover(g, p, e);
    });
    g.canvas.addEventListener('mouseleave', function () {
      drag = null;
      g.sel.hidden = true;
      if (!v.pinned) v.hover(g, null);
    });
  };

  // zoomTo asks for the time between pixels x0 and x1 of the map.
  HeatView.prototype.zoomTo = function (g, x0, x1) {
    var hm = g.canvas.hotkeydHeatmap, w = g.canvas.getBoundingClientRect().width;
    var per = hm.n * hm.step / w;
    var from = hm.first + Math.floor(x0 * per / hm.step) * hm.step;
    var to = hm.first + Math.ceil(x1 * per / hm.step) * hm.step;
    this.pinned = false;
    this.hover(g, null);
    this.opts.onZoom(from, Math.max(to, from + hm.step));
  };

  // hover names the cell at p in the tooltip and marks it; null hides both.
  HeatView.prototype.hover = function (g, p, e) {
    var tip = this.tip;
    [this.keys, this.shards].forEach(function (x) { x.mark.hidden = true; });
    if (!p || !this.m) {
      tip.hidden = true;
      this.pinned = false;
      return;
    }
    var row = g.rows[p.r], hm = g.canvas.hotkeydHeatmap, cw = g.canvas.getBoundingClientRect().width / hm.n;
    tip.textContent = '';
    H.describe(row, p.i, this.m).forEach(function (line, j) { tip.append(el('div', j ? null : 'heat-tip-head', line)); });
    tip.setAttribute('data-row', row.label);
    tip.setAttribute('data-kind', row.kind);
    tip.setAttribute('data-col', p.i);
    tip.classList.toggle('pinned', !!this.pinned);
    tip.hidden = false;
    g.mark.hidden = false;
    g.mark.style.left = Math.floor(p.i * cw) + 'px';
    g.mark.style.top = p.r * H.ROW + 'px';
    g.mark.style.width = Math.max(2, Math.ceil(cw)) + 'px';
    var box = this.root.getBoundingClientRect();
    var x = (e ? e.clientX : 0) - box.left + 14, y = (e ? e.clientY : 0) - box.top + 14;
    tip.style.left = Math.min(x, Math.max(0, box.width - 330)) + 'px';
    tip.style.top = y + 'px';
  };

  window.hotkeydHeat.HeatView = HeatView;
})();
