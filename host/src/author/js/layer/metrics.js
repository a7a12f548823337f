// ---------------------------------------------------------------- k6/metrics

class Metric {
  constructor(name, kind, isTime) {
    if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) {
      throw new Error(`invalid metric name ${JSON.stringify(name)}: letters, digits and _ (k6's rule)`);
    }
    this.name = name; this.kind = kind; this.isTime = !!isTime;
    // The series of samples without tags of their own (`counter.add(1)` per
    // WebSocket message): its number (`samples.register`) for the current tag list,
    // and the numbers by the VU's and group's tags.
    // `_at`: the tagsEpoch `_id` is for (-1: none); `_plain`: a number is recorded as
    // it is (not a rate's 0 or 1).
    this._list = null; this._id = -1; this._ids = null; this._at = -1; this._plain = kind !== 'rate';
    metricsMade.set(name, kind);
  }
  // `add` on the vendored runtime; on this project's runtime its common case is native
  // (below) and comes here for the rest.
  add(value, tags) {
    // The common case first (`counter.add(1)` per WebSocket message): a number, no
    // tags of its own, the series' number known for the current VU and group tags
    // (`_at`: the tagsEpoch it was found at): no call but the import's.
    // `value === 1` first: every kind records 1 as 1, and the interpreter compares two
    // integers inline, where `typeof` makes a string and compares it out of line.
    const id = this._id;
    if (id >= 0 && tags === undefined && this._at === tagsEpoch[0]
      && (value === 1 || (typeof value === 'number' && value === value && this._plain))) {
      samplesAdd(id, value);
      return true;
    }
    return this._add(value, tags);
  }
  // What the common case above does not take.
  _add(value, tags) {
    let v;
    if (this.kind === 'rate') v = value ? 1 : 0;
    else if (typeof value === 'number') v = value;
    else v = typeof value === 'boolean' ? (value ? 1 : 0) : Number(value);
    if (v !== v) throw new Error(`${this.name}.add: ${JSON.stringify(value)} is not a number`);
    let list;
    if (tags === undefined || tags === null) {
      list = plainTagList();
      // A number and a value cross to the host, not the name, kind and tags.
      if (this._list !== list) { this._list = list; this._id = this._seriesId(list); }
      this._at = tagsEpoch[0];
      if (this._id >= 0) { hostSamples.add(this._id, v); return true; }
    } else {
      list = tagList(tags);
    }
    // A trend of times (`new Trend(name, true)`) goes through add-time: shown and
    // exported as times, as k6 shows it.
    if (this.isTime && this.kind === 'trend') hostMetrics.addTime(this.name, v, list);
    else hostMetrics.add(this.name, this.kind, v, list);
    return true;
  }
  // The host's number for this metric with the VU's and group's tags (`list`), or -1
  // when the host keeps no more series (then `metrics.add` records each sample).
  _seriesId(list) {
    let key = groupPath;
    if (vuTagsVersion !== 0) key += vuTagsKey();
    if (this._ids === null) this._ids = new Map();
    let id = this._ids.get(key);
    if (id === undefined) {
      const time = this.isTime && this.kind === 'trend';
      const got = seriesMade < MAX_SERIES_IDS ? hostSamples.register(this.name, this.kind, time, list) : null;
      seriesMade++;
      id = got === null ? -1 : got;
      this._ids.set(key, id);
    }
    return id;
  }
}
// `samples.add`, held in a binding: `counter.add(1)` calls it once per WebSocket message.
const samplesAdd = hostSamples.add;
// This project's runtime does `add`'s common case natively (`nativeAdd`, given the
// epoch it compares `_at` with; plugins/js-runtime/src/natives.rs): per WebSocket
// message of capacity.js, one interpreted call fewer. The vendored runtime has none.
if (hostSamples.nativeAdd !== undefined) Metric.prototype.add = hostSamples.nativeAdd(tagsEpoch);
// Series registered by this VU (`samples.register`); the host keeps 10,000.
const MAX_SERIES_IDS = 10000;
let seriesMade = 0;
class Counter extends Metric { constructor(name, isTime) { super(name, 'counter', isTime); } }
class Gauge extends Metric { constructor(name, isTime) { super(name, 'gauge', isTime); } }
class Rate extends Metric { constructor(name, isTime) { super(name, 'rate', isTime); } }
class Trend extends Metric { constructor(name, isTime) { super(name, 'trend', isTime); } }
const k6metrics = { Counter, Gauge, Rate, Trend };

