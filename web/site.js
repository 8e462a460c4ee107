// archive view's one script (docs/cli.md#archive-view): filters a list page's rows by state and
// label, and searches their titles. The lists are complete without it; it only hides rows, from
// the data attributes each row carries, and shows the controls it drives.
'use strict';

(function () {
  var filters = document.querySelector('.filters');
  var table = document.querySelector('table[data-list]');
  if (!filters || !table) return;
  var state = filters.querySelector('[data-filter="state"]');
  var label = filters.querySelector('[data-filter="label"]');
  var title = filters.querySelector('[data-filter="title"]');
  var shown = filters.querySelector('[data-shown]');
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);

  function apply() {
    var wantState = state.value;
    var wantLabel = label.value;
    var words = title.value.toLowerCase().split(/\s+/).filter(Boolean);
    var count = 0;
    rows.forEach(function (row) {
      var labels = (row.getAttribute('data-labels') || '').split('\n');
      var text = row.getAttribute('data-title') || '';
      var visible = (!wantState || row.getAttribute('data-state') === wantState)
        && (!wantLabel || labels.indexOf(wantLabel) !== -1)
        && words.every(function (word) { return text.indexOf(word) !== -1; });
      row.hidden = !visible;
      if (visible) count++;
    });
    shown.textContent = count + ' of ' + rows.length + ' shown';
  }

  state.addEventListener('change', apply);
  label.addEventListener('change', apply);
  title.addEventListener('input', apply);
  filters.hidden = false;
  apply();
})();
