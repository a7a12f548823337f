// The in-page part of element actions (host/src/browser/actions.rs): finds the
// elements a selector (or a chain of them) names, waits for them, reads or changes
// them. Evaluated as an expression: the function itself, called by the host with
// (selector, nth, op, arg, needsReady, wait, timeoutMs); the selector may be an
// element itself (an element handle's). A chain enters same-origin iframes:
// `internal:control=enter-frame` goes into the documents of the iframes found so far
// (frameLocator), `internal:frame-path=[i, j]` starts in window.frames[i].frames[j]
// (a frame of page.frames()).
(function (q, nth, op, arg, ready, wait, timeoutMs) {
  function byText(root, t, exact) {
    const m = /^"(.*)"$/.exec(t); if (m) { t = m[1]; exact = true; }
    const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
    const want = exact ? norm(t) : norm(t).toLowerCase();
    const out = [];
    for (const e of root.querySelectorAll('body, body *')) {
      const own = norm(e.textContent);
      const ok = exact ? own === want : own.toLowerCase().includes(want);
      if (ok && ![...e.children].some((c) => (exact ? norm(c.textContent) === want : norm(c.textContent).toLowerCase().includes(want)))) out.push(e);
    }
    return out;
  }
  function roleOf(e) {
    const r = e.getAttribute('role'); if (r) return r;
    const t = e.tagName.toLowerCase(), ty = (e.getAttribute('type') || '').toLowerCase();
    if (t === 'button' || (t === 'input' && ['button', 'submit', 'reset'].includes(ty))) return 'button';
    if (t === 'a' && e.hasAttribute('href')) return 'link';
    if (t === 'input' && ty === 'checkbox') return 'checkbox';
    if (t === 'input' && ty === 'radio') return 'radio';
    if (t === 'input' || t === 'textarea') return 'textbox';
    if (t === 'select') return 'combobox';
    if (/^h[1-6]$/.test(t)) return 'heading';
    if (t === 'img') return 'img';
    if (t === 'li') return 'listitem';
    if (t === 'ul' || t === 'ol') return 'list';
    return '';
  }
  function nameOf(e) {
    const l = e.getAttribute('aria-label'); if (l) return l.trim();
    if (e.labels && e.labels.length) return e.labels[0].textContent.trim();
    if (e.tagName === 'IMG') return (e.getAttribute('alt') || '').trim();
    if (e.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(e.type)) return (e.value || '').trim();
    return (e.textContent || '').replace(/\s+/g, ' ').trim();
  }
  // One selector of a chain, searched under `root` (the document or an element).
  function one(root, q) {
    if (q.startsWith('xpath=') || q.startsWith('//') || q.startsWith('(//')) {
      let x = q.startsWith('xpath=') ? q.slice(6) : q;
      // Under an element, `//a` means its descendants (as Playwright reads it).
      if (root.nodeType !== 9 && x.startsWith('/')) x = '.' + x;
      const doc = root.nodeType === 9 ? root : root.ownerDocument;
      const r = doc.evaluate(x, root, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
      const out = []; for (let i = 0; i < r.snapshotLength; i++) out.push(r.snapshotItem(i)); return out;
    }
    if (q.startsWith('text=')) return byText(root, q.slice(5), false);
    const m = /^internal:(role|text|label|placeholder|testid|alt|title)=(.*)$/s.exec(q);
    if (m) {
      const a = JSON.parse(m[2]);
      const match = (v) => (v || '') && (a.exact ? v.trim() === a.value : v.toLowerCase().includes(String(a.value).toLowerCase()));
      const els = [...root.querySelectorAll('*')];
      switch (m[1]) {
        case 'text': return byText(root, a.exact ? JSON.stringify(a.value) : a.value, a.exact);
        case 'role': return els.filter((e) => roleOf(e) === a.value && (a.name === undefined || (a.exact ? nameOf(e) === a.name : nameOf(e).toLowerCase().includes(String(a.name).toLowerCase()))));
        case 'label': return els.filter((e) => (e.labels && [...e.labels].some((l) => match(l.textContent))) || match(e.getAttribute('aria-label')));
        case 'placeholder': return els.filter((e) => match(e.getAttribute('placeholder')));
        case 'testid': return els.filter((e) => e.getAttribute('data-testid') === a.value);
        case 'alt': return els.filter((e) => match(e.getAttribute('alt')));
        case 'title': return els.filter((e) => match(e.getAttribute('title')));
      }
    }
    return [...root.querySelectorAll(q)];
  }
  // A chain's parts: ` >> ` outside quotes separates them (the layer writes JSON
  // values in quotes, which may hold ` >> ` themselves).
  function split(q) {
    const parts = []; let cur = '', quote = null;
    for (let i = 0; i < q.length; i++) {
      const c = q[i];
      if (quote) { cur += c; if (c === '\\' && i + 1 < q.length) cur += q[++i]; else if (c === quote) quote = null; continue; }
      if (c === '"' || c === "'") { quote = c; cur += c; continue; }
      if (q.startsWith(' >> ', i)) { parts.push(cur.trim()); cur = ''; i += 3; continue; }
      cur += c;
    }
    parts.push(cur.trim());
    return parts;
  }
  function textOf(e) { return (e.textContent || '').replace(/\s+/g, ' ').trim(); }
  function hasText(e, a) { const t = textOf(e); return a.re !== undefined ? new RegExp(a.re, a.flags).test(t) : t.toLowerCase().includes(String(a.value).toLowerCase()); }
  // The elements a chain finds: each part searched under the last one's elements,
  // `nth=` picking one, `internal:has-text=` (and has-not-text, has, has-not)
  // keeping those that pass (locator.filter).
  function all(q, root) {
    let found = [root || document];
    for (const part of split(q)) {
      if (part === 'internal:control=enter-frame') {
        found = found.map((e) => { try { return e.contentDocument; } catch (_) { return null; } }).filter(Boolean);
        continue;
      }
      if (part.startsWith('internal:frame-path=')) {
        let w = window;
        try { for (const i of JSON.parse(part.slice(20))) w = w.frames[i]; found = w && w.document ? [w.document] : []; } catch (_) { found = []; }
        continue;
      }
      if (part.startsWith('nth=')) {
        const n = Number(part.slice(4)); const e = found[n < 0 ? found.length + n : n];
        found = e ? [e] : [];
        continue;
      }
      const f = /^internal:(has-text|has-not-text|has|has-not)=(.*)$/s.exec(part);
      if (f) {
        const a = JSON.parse(f[2]);
        const keep = {
          'has-text': (e) => hasText(e, a), 'has-not-text': (e) => !hasText(e, a),
          'has': (e) => all(a.selector, e).length > 0, 'has-not': (e) => all(a.selector, e).length === 0,
        }[f[1]];
        found = found.filter((e) => e.nodeType !== 9 && keep(e));
        continue;
      }
      const next = [];
      for (const r of found) for (const e of one(r, part)) if (!next.includes(e)) next.push(e);
      found = next;
    }
    return found;
  }
  function visible(e) {
    if (!e || !e.isConnected) return false;
    const s = e.ownerDocument.defaultView.getComputedStyle(e); if (s.visibility === 'hidden' || s.display === 'none') return false;
    const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0;
  }
  function pick() {
    if (typeof q !== 'string') return q && q.isConnected ? q : undefined;
    const els = all(q);
    if (nth === null) return els[0];
    return els[nth < 0 ? els.length + nth : nth];
  }
  function run(e) {
    switch (op) {
      case 'count': return typeof q === 'string' ? all(q).length : (pick() ? 1 : 0);
      case 'element': return e;
      case 'elements': return all(q);
      case 'dispatch': {
        const t = String(arg.type), W = e.ownerDocument.defaultView;
        const init = Object.assign({ bubbles: true, cancelable: true, composed: true }, arg.init || {});
        const kind = /^(click|dblclick|mouse|contextmenu|auxclick)/.test(t) ? W.MouseEvent
          : /^key/.test(t) ? W.KeyboardEvent : /^(focus|blur|focusin|focusout)$/.test(t) ? W.FocusEvent
          : /^pointer/.test(t) ? W.PointerEvent : /^(input|beforeinput)$/.test(t) ? W.InputEvent
          : /^(drag|drop)/.test(t) ? W.DragEvent : t === 'wheel' ? W.WheelEvent : W.CustomEvent;
        e.dispatchEvent(new kind(t, init));
        return null;
      }
      case 'isVisible': return visible(e);
      case 'isHidden': return !visible(e);
      case 'textContent': return e.textContent;
      case 'innerText': return e.innerText;
      case 'innerHTML': return e.innerHTML;
      case 'inputValue': if (!('value' in e)) throw new Error('not an input, textarea or select element'); return e.value;
      case 'getAttribute': return e.getAttribute(arg);
      case 'isEnabled': return !e.disabled;
      case 'isChecked': if (!('checked' in e)) throw new Error('not a checkbox or radio input'); return e.checked;
      case 'focus': e.focus(); return null;
      case 'fill': {
        e.focus();
        if (e.isContentEditable) e.textContent = arg; else e.value = arg;
        e.dispatchEvent(new Event('input', { bubbles: true }));
        e.dispatchEvent(new Event('change', { bubbles: true }));
        return null;
      }
      case 'select': {
        if (e.tagName !== 'SELECT') throw new Error('not a select element');
        const chosen = [];
        for (const o of e.options) { o.selected = arg.includes(o.value) || arg.includes(o.label); if (o.selected) chosen.push(o.value); }
        e.dispatchEvent(new Event('input', { bubbles: true }));
        e.dispatchEvent(new Event('change', { bubbles: true }));
        return chosen;
      }
      case 'point': {
        // An element in an iframe: its frame into view first, then it in its frame.
        const frames = [];
        for (let w = e.ownerDocument.defaultView; w.frameElement; w = w.parent) frames.unshift(w.frameElement);
        for (const f of frames) f.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
        e.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
        const r = e.getBoundingClientRect();
        let x = r.left + r.width / 2, y = r.top + r.height / 2;
        // The iframes' offsets: the point is in the top page's viewport.
        for (let w = e.ownerDocument.defaultView; w.frameElement; w = w.parent) {
          const f = w.frameElement, fr = f.getBoundingClientRect();
          x += fr.left + f.clientLeft; y += fr.top + f.clientTop;
        }
        return { x, y, checked: !!e.checked };
      }
    }
    throw new Error('unknown operation ' + op);
  }
  if (!wait) return run(pick());
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    (function poll() {
      let e;
      try { e = pick(); } catch (err) { reject(err); return; }
      if (e && (!ready || (visible(e) && !e.disabled))) {
        try { resolve(run(e)); } catch (err) { reject(err); }
        return;
      }
      if (Date.now() >= until) { reject(new Error('timeout')); return; }
      setTimeout(poll, 30);
    })();
  });
})
