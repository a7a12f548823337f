// ---------------------------------------------------------------- k6/html
//
// parseHTML, res.html(), res.submitForm() and res.clickLink() over the host's `html`
// interface: the page is parsed once on the host (html5ever, CSS selectors), and a
// Selection here is a list of node numbers in document order. Documents made by a
// call are dropped when it returns (as responses are); those made by the init code
// live as long as the VU, since init code may keep a Selection for its iterations.

const heldDocs = [];
function releaseDocuments() {
  for (const d of heldDocs) d.release();
  heldDocs.length = 0;
}

function hostResult(fn) {
  try {
    return fn();
  } catch (e) {
    throw new Error(typeof e === 'string' ? e : (e && e.val !== undefined ? String(e.val) : String(e)));
  }
}

class Doc {
  constructor(handle) {
    this.h = handle;
    this.nodes = new Map();
    if (loaded) heldDocs.push(this);
  }
  release() {
    const h = this.h;
    this.h = null;
    if (h) h[Symbol.dispose]();
  }
  live() {
    if (!this.h) throw new Error('k6/html: this document was parsed in an earlier iteration and has been freed; parse it again in the iteration that uses it');
    return this.h;
  }
  node(id) {
    let n = this.nodes.get(id);
    if (n === undefined) { n = this.live().node(id); this.nodes.set(id, n); }
    return n;
  }
  select(scope, selector) { return hostResult(() => this.live().select(scope, String(selector))); }
  matches(ids, selector) { return hostResult(() => this.live().matches(ids, String(selector))); }
  isElement(id) { const n = this.node(id); return !!n && n.kind === 'element'; }
  attr(id, name) {
    const n = this.node(id);
    if (!n) return undefined;
    for (const [k, v] of n.attributes) if (k === name) return v;
    return undefined;
  }
}

const sortIds = (ids) => Array.from(new Set(ids)).sort((a, b) => a - b);

// A matcher from a selector, a function (index, Selection) or a Selection.
function matcher(sel, what) {
  if (typeof what === 'function') return (ids) => ids.map((id, i) => !!what.call(new Selection(sel.doc, [id], sel.url), i, new Selection(sel.doc, [id], sel.url)));
  if (what instanceof Selection) { const set = new Set(what.ids); return (ids) => ids.map((id) => set.has(id)); }
  return (ids) => sel.doc.matches(ids, what);
}

function valueOf(doc, id) {
  const n = doc.node(id);
  if (!n || n.kind !== 'element') return undefined;
  switch (n.name) {
    case 'input': {
      const v = doc.attr(id, 'value');
      if (v !== undefined) return v;
      const t = (doc.attr(id, 'type') || '').toLowerCase();
      return t === 'radio' || t === 'checkbox' ? 'on' : '';
    }
    case 'button': { const v = doc.attr(id, 'value'); return v === undefined ? '' : v; }
    case 'textarea': return doc.live().text(id);
    case 'option': { const v = doc.attr(id, 'value'); return v === undefined ? doc.live().text(id) : v; }
    case 'select': {
      const values = doc.live().formFields(id).map(([, v]) => v);
      return doc.attr(id, 'multiple') !== undefined ? values : (values.length ? values[0] : '');
    }
    default: return undefined;
  }
}

function dataValue(v) {
  if (v === 'true') return true;
  if (v === 'false') return false;
  if (v === 'null') return null;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v)) { const n = Number(v); if (String(n) === v) return n; }
  if (/^[[{]/.test(v)) { try { return JSON.parse(v); } catch (_) { /* a plain string */ } }
  return v;
}

class Selection {
  constructor(doc, ids, url, prev) {
    this.doc = doc; this.ids = ids; this.url = url; this._prev = prev;
  }
  get length() { return this.ids.length; }
  _new(ids) { return new Selection(this.doc, sortIds(ids), this.url, this); }
  _walk(step, selector, until) {
    // Nodes reached by `step` from each node (elements only), filtered by `selector`.
    const out = [];
    for (const id of this.ids) {
      for (let cur = step(id, true); cur !== null && cur !== undefined; cur = step(cur, false)) {
        if (!this.doc.isElement(cur)) continue;
        if (until !== undefined && this.doc.matches([cur], until)[0]) break;
        out.push(cur);
      }
    }
    return this._new(this._only(sortIds(out), selector));
  }
  _only(ids, selector) {
    if (selector === undefined) return ids;
    const m = this.doc.matches(ids, selector);
    return ids.filter((_, i) => m[i]);
  }
  _sibling(id, dir) {
    const n = this.doc.node(id);
    if (!n || n.parent === null || n.parent === undefined) return null;
    const kids = this.doc.node(n.parent).children;
    const at = kids.indexOf(id) + dir;
    return at >= 0 && at < kids.length ? kids[at] : null;
  }
  _parentOf(id) { const n = this.doc.node(id); return n && n.parent !== undefined && n.parent !== null && n.parent !== 0 ? n.parent : null; }

  find(selector) { return this._new(this.ids.length ? this.doc.select(this.ids, selector) : []); }
  size() { return this.ids.length; }
  get(i) { const id = this.ids[i < 0 ? this.ids.length + i : i]; return id === undefined ? undefined : new Element(this.doc, id, this.url); }
  toArray() { return this.ids.map((id) => new Selection(this.doc, [id], this.url, this)); }
  first() { return this._new(this.ids.slice(0, 1)); }
  last() { return this._new(this.ids.slice(-1)); }
  eq(i) { const id = this.ids[i < 0 ? this.ids.length + i : i]; return this._new(id === undefined ? [] : [id]); }
  slice(start, end) { return this._new(this.ids.slice(start, end)); }
  end() { return this._prev || this._new([]); }
  add(what) {
    const more = what instanceof Selection ? what.ids : this.doc.select([], what);
    return this._new(this.ids.concat(more));
  }
  filter(what) { const m = matcher(this, what)(this.ids); return this._new(this.ids.filter((_, i) => m[i])); }
  not(what) { const m = matcher(this, what)(this.ids); return this._new(this.ids.filter((_, i) => !m[i])); }
  is(what) { return matcher(this, what)(this.ids).some(Boolean); }
  has(selector) { return this._new(this.ids.filter((id) => this.doc.select([id], selector).length > 0)); }
  children(selector) { return this._walk((id, first) => (first ? (this.doc.node(id).children[0] ?? null) : this._sibling(id, 1)), selector); }
  contents() {
    const out = [];
    for (const id of this.ids) out.push(...this.doc.node(id).children);
    return this._new(out);
  }
  parent(selector) { return this._walk((id, first) => (first ? this._parentOf(id) : null), selector); }
  parents(selector) { return this._walk((id) => this._parentOf(id), selector); }
  parentsUntil(until, filter) { return this._walk((id) => this._parentOf(id), filter, until); }
  closest(selector) {
    const out = [];
    for (const id of this.ids) {
      for (let cur = id; cur !== null; cur = this._parentOf(cur)) {
        if (this.doc.isElement(cur) && this.doc.matches([cur], selector)[0]) { out.push(cur); break; }
      }
    }
    return this._new(out);
  }
  next(selector) { return this._walkOne(1, selector); }
  prev(selector) { return this._walkOne(-1, selector); }
  _walkOne(dir, selector) {
    const out = [];
    for (const id of this.ids) {
      let cur = this._sibling(id, dir);
      while (cur !== null && !this.doc.isElement(cur)) cur = this._sibling(cur, dir);
      if (cur !== null) out.push(cur);
    }
    return this._new(this._only(sortIds(out), selector));
  }
  nextAll(selector) { return this._walk((id) => this._sibling(id, 1), selector); }
  prevAll(selector) { return this._walk((id) => this._sibling(id, -1), selector); }
  nextUntil(until, filter) { return this._walk((id) => this._sibling(id, 1), filter, until); }
  prevUntil(until, filter) { return this._walk((id) => this._sibling(id, -1), filter, until); }
  siblings(selector) {
    const out = [];
    for (const id of this.ids) {
      const p = this.doc.node(id).parent;
      if (p === null || p === undefined) continue;
      for (const c of this.doc.node(p).children) if (c !== id && this.doc.isElement(c)) out.push(c);
    }
    return this._new(this._only(sortIds(out), selector));
  }
  each(fn) {
    this.ids.forEach((id, i) => fn.call(new Element(this.doc, id, this.url), i, new Element(this.doc, id, this.url)));
    return this;
  }
  map(fn) {
    const out = [];
    this.ids.forEach((id, i) => {
      const s = new Selection(this.doc, [id], this.url, this);
      const v = fn.call(s, i, s);
      if (v === null || v === undefined) return;
      if (Array.isArray(v)) out.push(...v); else out.push(v);
    });
    return out;
  }
  attr(name, def) {
    if (!this.ids.length) return def;
    const v = this.doc.attr(this.ids[0], String(name));
    return v === undefined ? def : v;
  }
  text() { return this.ids.map((id) => this.doc.live().text(id)).join(''); }
  html() { return this.ids.length ? this.doc.live().innerHtml(this.ids[0]) : undefined; }
  val() { return this.ids.length ? valueOf(this.doc, this.ids[0]) : undefined; }
  data(key) {
    if (!this.ids.length) return undefined;
    const n = this.doc.node(this.ids[0]);
    const out = {};
    for (const [k, v] of n.attributes) {
      if (!k.startsWith('data-')) continue;
      out[k.slice(5).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = dataValue(v);
    }
    return key === undefined ? out : out[String(key).replace(/-([a-z])/g, (_, c) => c.toUpperCase())];
  }
  serializeArray() {
    const out = [];
    for (const id of this.ids) for (const [name, value] of this.doc.live().formFields(id)) out.push({ name, value });
    return out;
  }
  serializeObject() {
    const out = {};
    for (const { name, value } of this.serializeArray()) {
      if (name in out) out[name] = [].concat(out[name], value); else out[name] = value;
    }
    return out;
  }
  serialize() { return this.serializeArray().map((f) => `${encodeURIComponent(f.name)}=${encodeURIComponent(f.value)}`).join('&'); }
}

const NODE_TYPES = { element: 1, text: 3, comment: 8, document: 9, doctype: 10, other: 11 };

class Element {
  constructor(doc, id, url) { this._doc = doc; this._id = id; this._url = url; }
  _n() { return this._doc.node(this._id); }
  _el(id) { return id === null || id === undefined ? undefined : new Element(this._doc, id, this._url); }
  _kids(elementsOnly) { return this._n().children.filter((c) => !elementsOnly || this._doc.isElement(c)); }
  _sib(dir, elementsOnly) {
    const p = this._n().parent;
    if (p === null || p === undefined) return undefined;
    const kids = this._doc.node(p).children;
    for (let i = kids.indexOf(this._id) + dir; i >= 0 && i < kids.length; i += dir) {
      if (!elementsOnly || this._doc.isElement(kids[i])) return this._el(kids[i]);
    }
    return undefined;
  }
  selection() { return new Selection(this._doc, [this._id], this._url); }
  nodeName() { return this._n().name; }
  nodeType() { return NODE_TYPES[this._n().kind]; }
  nodeValue() { const n = this._n(); return n.kind === 'text' || n.kind === 'comment' ? n.value : undefined; }
  id() { return this.getAttribute('id') || ''; }
  innerHTML() { return this._doc.live().innerHtml(this._id); }
  outerHTML() { return this._doc.live().outerHtml(this._id); }
  textContent() { return this._doc.live().text(this._id); }
  ownerDocument() { return this._el(0); }
  attributes() {
    const out = {};
    for (const [k, v] of this._n().attributes) out[k] = { name: k, value: v, nodeName: k, nodeValue: v };
    return out;
  }
  firstChild() { return this._el(this._kids(false)[0]); }
  lastChild() { return this._el(this._kids(false).slice(-1)[0]); }
  childElementCount() { return this._kids(true).length; }
  firstElementChild() { return this._el(this._kids(true)[0]); }
  lastElementChild() { return this._el(this._kids(true).slice(-1)[0]); }
  previousSibling() { return this._sib(-1, false); }
  nextSibling() { return this._sib(1, false); }
  previousElementSibling() { return this._sib(-1, true); }
  nextElementSibling() { return this._sib(1, true); }
  parentElement() { const p = this._n().parent; return p && this._doc.isElement(p) ? this._el(p) : undefined; }
  parentNode() { return this._el(this._n().parent); }
  childNodes() { return this._kids(false).map((c) => this._el(c)); }
  children() { return this._kids(true).map((c) => this._el(c)); }
  classList() { return (this.getAttribute('class') || '').split(/\s+/).filter(Boolean); }
  className() { return this.getAttribute('class'); }
  lang() { return this.getAttribute('lang'); }
  toString() { return this._n().kind === 'element' ? `[object html${this._n().name}]` : `[object ${this._n().name}]`; }
  hasAttribute(name) { return this._doc.attr(this._id, String(name)) !== undefined; }
  getAttribute(name) { return this._doc.attr(this._id, String(name)); }
  getAttributeNode(name) { const v = this.getAttribute(name); return v === undefined ? undefined : { name, value: v, nodeName: name, nodeValue: v }; }
  hasAttributes() { return this._n().attributes.length > 0; }
  hasChildNodes() { return this._n().children.length > 0; }
  isSameNode(other) { return other instanceof Element && other._doc === this._doc && other._id === this._id; }
  isEqualNode(other) { return other instanceof Element && other.outerHTML() === this.outerHTML(); }
  getElementsByClassName(name) { return this.querySelectorAll(String(name).split(/\s+/).filter(Boolean).map((c) => `.${c}`).join('')); }
  getElementsByTagName(name) { return this.querySelectorAll(String(name)); }
  querySelector(selector) { return this._el(this._doc.select([this._id], selector)[0]); }
  querySelectorAll(selector) { return this._doc.select([this._id], selector).map((c) => this._el(c)); }
  contains(other) {
    for (let cur = other && other._id; cur !== null && cur !== undefined; cur = this._doc.node(cur).parent) if (cur === this._id) return true;
    return false;
  }
  matches(selector) { return this._doc.matches([this._id], selector)[0]; }
  namespaceURI() { return 'http://www.w3.org/1999/xhtml'; }
  isDefaultNamespace(ns) { return ns === 'http://www.w3.org/1999/xhtml'; }
  // Form controls and links, as k6's element types give them.
  value() { return valueOf(this._doc, this._id); }
  name() { return this.getAttribute('name'); }
  type() { return this.getAttribute('type'); }
  href() { const h = this.getAttribute('href'); return h === undefined || !this._url ? h : resolveUrl(this._url, h); }
  action() { const a = this.getAttribute('action'); return a === undefined || !this._url ? a : resolveUrl(this._url, a); }
  method() { return (this.getAttribute('method') || 'get').toLowerCase(); }
  checked() { return this.hasAttribute('checked'); }
  disabled() { return this.hasAttribute('disabled'); }
  selected() { return this.hasAttribute('selected'); }
  text() { return this.textContent(); }
}

// `ref` resolved against the absolute URL `base` by the host, as a browser would.
function resolveUrl(base, ref) {
  return hostResult(() => hostHtml.resolve(String(base), String(ref)));
}

function parseHTML(src) {
  const doc = new Doc(new hostHtml.Document(String(src)));
  return new Selection(doc, [0], '');
}

function responseDocument(res) {
  if (res._doc && res._doc.h) return res._doc;
  let doc;
  if (res._slot >= 0) doc = new Doc(hostResponses.documentOf(res._slot));
  else if (typeof res.body === 'string') doc = new Doc(new hostHtml.Document(res.body));
  else throw new Error(`response.html(): the response from ${res.url} has no text body (status ${res.status}, responseType ${res._type})`);
  Object.defineProperty(res, '_doc', { value: doc, writable: true, enumerable: false });
  return doc;
}

function responseHtml(res, selector) {
  const sel = new Selection(responseDocument(res), [0], res.url);
  return selector === undefined ? sel : sel.find(selector);
}

// The form's fields as the host's `submission` gives them (hidden inputs kept, the
// pressed button's own, method, action and encoding as a browser takes them), with
// `fields` set over them: a name given replaces every field of that name.
function submitForm(res, args) {
  args = args || {};
  const formSelector = args.formSelector || 'form';
  const submitSelector = args.submitSelector || '[type="submit"]';
  const form = responseHtml(res).find(formSelector).first();
  if (!form.size()) throw new Error(`submitForm: no form found for selector '${formSelector}' in response '${res.url}'`);
  const submit = form.find(submitSelector).first();
  const sub = hostResult(() => form.doc.live().submission(form.ids[0], submit.size() ? submit.ids[0] : null, res.url));
  const given = args.fields || {};
  const pairs = sub.fields.filter(([name]) => !(name in given));
  for (const k in given) {
    const v = given[k];
    for (const x of Array.isArray(v) ? v : [v]) pairs.push([k, x === null || x === undefined ? '' : String(x)]);
  }
  const encoded = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  const params = Object.assign({}, args.params || {});
  const headers = Object.assign({}, params.headers || {});
  if (sub.method === 'GET') {
    const u = sub.url.replace(/[?#].*$/, '');
    return request('GET', encoded ? `${u}?${encoded}` : u, null, params);
  }
  let body;
  if (sub.enctype === 'multipart/form-data') {
    const boundary = `----k6html${Math.floor(Math.random() * 1e16).toString(36)}`;
    const esc = (n) => n.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
    body = pairs.map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${esc(k)}"\r\n\r\n${v}\r\n`).join('') + `--${boundary}--\r\n`;
    headers['Content-Type'] = `multipart/form-data; boundary=${boundary}`;
  } else if (sub.enctype === 'text/plain') {
    body = pairs.map(([k, v]) => `${k}=${v}\r\n`).join('');
    headers['Content-Type'] = 'text/plain';
  } else {
    body = encoded;
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  }
  params.headers = headers;
  return request(sub.method, sub.url, body, params);
}

function clickLink(res, args) {
  args = args || {};
  const selector = args.selector || 'a[href]';
  const link = responseHtml(res).find(selector).first();
  if (!link.size()) throw new Error(`clickLink: no element found for selector '${selector}' in response '${res.url}'`);
  const href = link.attr('href');
  if (href === undefined) throw new Error(`clickLink: no valid href attribute value found on element '${selector}' in response '${res.url}'`);
  return request('GET', resolveUrl(res.url, href), null, args.params);
}

const k6html = { parseHTML };

