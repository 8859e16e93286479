// hotkeyd's forecast lines: for a key whose forecast has a trend, its
// recorded busiest seconds (the history's cells), its projected busiest
// second ahead and its partition's ceiling, as one uPlot chart. The
// projection is drawn from the forecast's own fields, never re-fitted
// here: from fitted_peak_units_per_second at fitted_at, in the shape of
// its growth (linear or compounding), to reaches_ceiling_at, where it
// meets the ceiling; where the trend does not reach the ceiling, by
// trend_per_day (linear) or growth_per_day (compounding) to the horizon
// (the settings' forecast_horizon_seconds). A forecast with no trend ("not
// predictable") has no line. The page's script (app.js) places the charts;
// this file only computes and draws, as window.hotkeydForecast.
(function () {
  'use strict';

  var DAY = 86400;
  // STEP is the spacing of the projection's points: a quarter of a day,
  // so that a compounding curve is drawn as a curve.
  var STEP = DAY / 4;
  // DEFAULT_HORIZON is forecast_horizon's default (7 days), for a report
  // that does not carry its settings' horizon.
  var DEFAULT_HORIZON = 7 * DAY;

  function sec(iso) {
    var t = Date.parse(iso);
    return isNaN(t) ? null : t / 1000;
  }

  // projector returns the projected busiest second at a time (seconds)
  // from the forecast's fields, and where the projection stops.
  function projector(f, horizon) {
    var at = sec(f.fitted_at), p0 = f.fitted_peak_units_per_second, reach = f.reaches_ceiling_at ? sec(f.reaches_ceiling_at) : null;
    var compounding = f.growth === 'compounding';
    if (reach != null && reach > at && p0 > 0 && p0 < f.limit) {
      // Pinned at both ends: the fitted busiest second now, the ceiling
      // at the time the forecast gives (a blend of the two growths
      // leans it sooner than the kept one alone: how-it-decides.md).
      var span = reach - at;
      return {
        at: at, stop: reach, reaches: true, value: function (t) {
          var x = (t - at) / span;
          return compounding ? p0 * Math.pow(f.limit / p0, x) : p0 + (f.limit - p0) * x;
        },
      };
    }
    return {
      at: at, stop: at + horizon, reaches: false, value: function (t) {
        var d = (t - at) / DAY;
        return Math.max(0, compounding ? p0 * Math.pow(1 + f.growth_per_day, d) : p0 + f.trend_per_day * d);
      },
    };
  }

  // recordedOf returns the key's busiest second of each cell of the
  // history answer a ([start seconds, units] pairs) over the span the
  // forecast was fitted on, up to at: a cell under way at at is left out,
  // as the forecast leaves it out (its busiest second so far would read
  // as a drop).
  function recordedOf(a, f, at) {
    var out = [];
    if (!a || !a.series) return out;
    var from = at - (f.days || 0) * DAY, step = a.step_seconds || 0;
    a.series.forEach(function (s) {
      if (s.class !== f.class) return;
      (s.cells || []).forEach(function (c) {
        var t = sec(c.start);
        if (t == null || t < from || t + step > at) return;
        for (var i = 0; i < (c.keys || []).length; i++) {
          if (c.keys[i].key === f.key) {
            out.push([t, c.keys[i].busiest_second_units]);
            return;
          }
        }
      });
    });
    return out.sort(function (p, q) { return p[0] - q[0]; });
  }

  // model returns what the chart of forecast f shows, or null when f has
  // no trend: x (seconds), the recorded, projected and ceiling series
  // (null where a series has no point), the projection's ends, and the
  // forecast it was drawn from.
  // history is the table's cells (the shape of /api/v1/history), or null.
  function model(f, settings, history) {
    if (f.trend_per_day == null || f.fitted_peak_units_per_second == null || !f.fitted_at || !(f.limit > 0)) return null;
    var horizon = (settings && settings.forecast_horizon_seconds) || DEFAULT_HORIZON;
    var p = projector(f, horizon);
    if (p.at == null || !(p.stop > p.at)) return null;
    var rec = recordedOf(history, f, p.at);
    var points = new Map();
    rec.forEach(function (r) { points.set(r[0], [r[1], null]); });
    for (var t = p.at; ; t += STEP) {
      if (t > p.stop) t = p.stop;
      var v = points.get(t) || [null, null];
      v[1] = p.value(t);
      points.set(t, v);
      if (t === p.stop) break;
    }
    var x = Array.from(points.keys()).sort(function (a, b) { return a - b; });
    var m = {
      key: f.key, class: f.class, limit: f.limit, at: p.at, stop: p.stop, reaches: p.reaches, forecast: f,
      x: x, recorded: [], projected: [], ceiling: [],
    };
    x.forEach(function (t) {
      var v = points.get(t);
      m.recorded.push(v[0]);
      m.projected.push(v[1]);
      m.ceiling.push(f.limit);
    });
    m.recordedPoints = rec.length;
    m.recordedStep = (history && history.step_seconds) || 0;
    return m;
  }

  function dayTime(u, splits) {
    return splits.map(function (s) { return new Date(s * 1000).toISOString().slice(5, 16).replace('T', ' '); });
  }

  // options returns the chart's uPlot options for model m, width px wide;
  // color is the class's, fmt and stamp the page's number and time
  // formats.
  function options(m, width, color, fmt, stamp) {
    var val = function (u, v) { return v == null ? '–' : fmt(v); };
    // The scale holds the ceiling and every point, whatever data the
    // chart is given later (the live page keeps it across renders).
    var range = function (u) {
      var top = m.limit;
      for (var i = 1; i < u.data.length; i++) {
        u.data[i].forEach(function (v) { if (v != null && v > top) top = v; });
      }
      return [0, top * 1.08];
    };
    return {
      width: width,
      height: 200,
      series: [
        { value: function (u, v) { return v == null ? '–' : stamp(new Date(v * 1000).toISOString()); } },
        { label: 'recorded busiest second', stroke: color, width: 1.25, spanGaps: false, points: { show: false }, value: val },
        { label: 'projected', stroke: color, width: 2, dash: [6, 4], spanGaps: true, points: { show: false }, value: val },
        { label: 'partition ceiling', stroke: '#b42318', width: 1.5, dash: [2, 3], spanGaps: true, points: { show: false }, value: val },
      ],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      select: { show: false },
      scales: { x: { time: true }, y: { range: range } },
      axes: [{ stroke: '#5d6575', grid: { stroke: '#eef0f4' }, space: 110, values: dayTime },
        { stroke: '#5d6575', grid: { stroke: '#eef0f4' }, size: 56, label: 'units / s' }],
    };
  }

  window.hotkeydForecast = { model: model, options: options, DAY: DAY };
})();
