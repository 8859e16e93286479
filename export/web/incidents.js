// hotkeyd's list of incidents (the shape of /api/v1/incidents): each
// diagnosis from the time it was raised to the time it cleared, most
// recent first, on window.hotkeydHeat.incidents. Built from DOM nodes with
// textContent only: keys, summaries and fixes are data.
(function () {
  'use strict';

  var H = window.hotkeydHeat, el = H.el;
  var UNIT = { read: 'RCU', write: 'WCU' };

  function stamp(iso) {
    var d = new Date(iso);
    return isNaN(d) ? '' : d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
  }

  // when says when the incident ran: from its start to its end, or since
  // its start while open (end null).
  function when(inc, now) {
    var start = Date.parse(inc.start) / 1000;
    if (!inc.end) return 'open since ' + stamp(inc.start) + ' (' + H.span(Math.max(0, now - start)) + ')';
    var end = Date.parse(inc.end) / 1000;
    return stamp(inc.start) + ' to ' + stamp(inc.end).slice(11) + ' (' + H.span(Math.max(0, end - start)) + ')';
  }

  // item is one incident's entry. names: {cause, fix} maps of words,
  // href(table) the link to its table's page.
  function item(inc, names, now) {
    var li = el('li', 'incident ' + (inc.severity || 'info'));
    var d = li.dataset;
    d.id = inc.id || '';
    d.table = inc.table || '';
    d.index = inc.index || '';
    d.cause = inc.cause || '';
    d.severity = inc.severity || '';
    d.class = inc.class || '';
    d.start = inc.start || '';
    d.end = inc.end || '';
    d.peak = inc.peak_units_per_second;
    d.keys = JSON.stringify(inc.keys || []);
    var head = el('div', 'incident-head');
    var link = el('a', null, inc.index ? inc.table + ' / ' + inc.index : inc.table);
    link.href = names.href({ table: inc.table, index: inc.index });
    head.append(el('span', 'sev ' + (inc.severity || 'info'), inc.severity || 'info'), ' ',
      el('span', 'cause', names.cause[inc.cause] || inc.cause), ' on ', link, ' · ' + (inc.class || '') + 's');
    var keys = inc.keys || [];
    if (keys.length) {
      head.append(' · ' + (inc.cause === 'hot_partition' ? 'shard' : keys.length > 1 ? 'keys' : 'key') + ' ');
      keys.forEach(function (k, i) {
        var c = el('code', 'key', k);
        c.title = k;
        if (i) head.append(', ');
        head.append(c);
      });
    }
    var nums = el('div', 'nums');
    nums.append(el('span', 'incident-when', when(inc, now)));
    if (inc.peak_units_per_second != null) {
      nums.append(el('span', 'incident-peak', 'peak ' + H.fmt(inc.peak_units_per_second) + ' ' + (UNIT[inc.class] || 'units') + '/s'));
    }
    li.append(head, nums);
    if (inc.summary) li.append(el('p', 'summary', inc.summary));
    if (inc.fix) li.append(el('div', 'fix', 'Fix: ' + (typeof inc.fix === 'string' ? inc.fix : inc.fix.text || inc.fix.kind || '')));
    return li;
  }

  // incidents returns the list of incidents (newest start first) as a
  // section.card; status, when set, is said in place of an empty list.
  function incidents(list, opts) {
    var box = el('section', 'card incidents');
    box.setAttribute('data-incidents', opts.id || '');
    var sorted = (list || []).slice().sort(function (a, b) { return Date.parse(b.start) - Date.parse(a.start); });
    box.setAttribute('data-count', sorted.length);
    box.append(el('p', 'incidents-range', opts.range));
    if (!sorted.length) {
      box.append(el('p', 'none', opts.status || 'No incident in this range.'));
      return box;
    }
    if (opts.status) box.append(el('p', 'heat-note', opts.status));
    var ul = el('ul', 'incident-list');
    var now = opts.now || Date.now() / 1000;
    sorted.forEach(function (inc) { ul.append(item(inc, opts.names, now)); });
    box.append(ul);
    return box;
  }

  H.incidents = incidents;
})();
