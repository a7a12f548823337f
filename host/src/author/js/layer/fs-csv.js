// ---------------------------------------------------------------- k6/experimental/fs, k6/experimental/csv

// fs.open(path) in the init code gives a File over the bytes `host build` bundled (the
// build takes each literal path of an `fs.open` as it takes `open()`'s, from inside the
// script's folder); each VU has its own offset, as in k6.
const SeekMode = Object.freeze({ Start: 0, Current: 1, End: 2 });

function bundledBytes(path, what) {
  const f = BUNDLE.files[path];
  if (f === undefined) throw new Error(`${what}(${JSON.stringify(path)}): not bundled by host build (the path must be a literal)`);
  return f.b64 !== undefined ? b64decodeBytes(f.b64) : utf8Encode(f.text);
}

class FsFile {
  constructor(path, bytes) {
    this.path = path;
    Object.defineProperty(this, '_bytes', { value: bytes });
    Object.defineProperty(this, '_at', { value: 0, writable: true });
  }

  stat() {
    const name = this.path.split('/').pop();
    return Promise.resolve({ name, size: this._bytes.length });
  }

  read(buffer) {
    return new Promise((resolve, reject) => {
      if (!(buffer instanceof Uint8Array)) { reject(new TypeError('read() needs a Uint8Array buffer')); return; }
      if (this._at >= this._bytes.length) { resolve(null); return; }
      const n = Math.min(buffer.length, this._bytes.length - this._at);
      buffer.set(this._bytes.subarray(this._at, this._at + n));
      this._at += n;
      resolve(n);
    });
  }

  seek(offset, whence) {
    return new Promise((resolve, reject) => {
      const mode = whence === undefined ? SeekMode.Start : whence;
      if (typeof offset !== 'number' || !Number.isInteger(offset)) { reject(new TypeError('seek() needs an integer offset')); return; }
      // From the end, k6 1.1.0 counts from the last byte (seek(-5, End) of 82 bytes
      // is 76): kept, so that a script reads here what it reads there.
      const base = mode === SeekMode.Start ? 0 : mode === SeekMode.Current ? this._at : mode === SeekMode.End ? this._bytes.length - 1 : NaN;
      if (Number.isNaN(base)) { reject(new TypeError('seek(): whence must be SeekMode.Start, SeekMode.Current or SeekMode.End')); return; }
      const to = base + offset;
      if (to < 0) { reject(new Error(`seek(): offset ${to} is before the start of the file`)); return; }
      this._at = to;
      resolve(to);
    });
  }
}

function fsOpen(path) {
  if (!inInitCode) return Promise.reject(new Error('open() failed; reason: opening a file is only allowed in the init context'));
  try {
    return Promise.resolve(new FsFile(String(path), bundledBytes(String(path), 'fs.open')));
  } catch (e) {
    return Promise.reject(e);
  }
}

const k6fs = { open: fsOpen, SeekMode };

// k6/experimental/csv over a File of k6/experimental/fs: records as Go's encoding/csv
// reads them (quoted fields, "" inside quotes, CRLF or LF), each record the same
// number of fields as the first.
function csvOptions(options) {
  const o = options || {};
  const delimiter = o.delimiter === undefined ? ',' : String(o.delimiter);
  if ([...delimiter].length !== 1 || delimiter === '"' || delimiter === '\r' || delimiter === '\n') {
    throw new TypeError(`csv: the delimiter must be one character other than a quote or a line break, got ${JSON.stringify(delimiter)}`);
  }
  for (const k of ['fromLine', 'toLine']) {
    if (o[k] !== undefined && !(Number.isInteger(o[k]) && o[k] >= 0)) throw new TypeError(`csv: ${k} must be a whole number >= 0`);
  }
  if (o.fromLine !== undefined && o.toLine !== undefined && o.toLine < o.fromLine) {
    throw new TypeError('csv: toLine must not be less than fromLine');
  }
  if (o.asObjects && o.fromLine > 0) {
    // k6's words.
    throw new TypeError("csv: the 'header' option cannot be enabled when 'fromLine' is set to a value greater than 0");
  }
  return { delimiter, skipFirstLine: !!o.skipFirstLine, fromLine: o.fromLine, toLine: o.toLine, asObjects: !!o.asObjects };
}

// A cursor over the records of `text`: next() parses one more record (null at the
// end), so a Parser reads as its next() asks, not the whole file when made.
function csvCursor(text, delimiter, where) {
  let i = 0;
  let line = 1;
  let width = -1;
  const n = text.length;
  return {
    next() {
      while (i < n) {
        const record = [];
        const startLine = line;
        for (;;) {
          let field = '';
          if (text[i] === '"') {
            i += 1;
            for (;;) {
              if (i >= n) throw new Error(`${where}: record on line ${startLine}: extraneous or missing " in quoted-field`);
              const c = text[i];
              if (c === '"') {
                if (text[i + 1] === '"') { field += '"'; i += 2; continue; }
                i += 1;
                break;
              }
              if (c === '\n') line += 1;
              field += c;
              i += 1;
            }
            if (i < n && text[i] !== delimiter && text[i] !== '\n' && text[i] !== '\r') {
              throw new Error(`${where}: record on line ${startLine}: extraneous or missing " in quoted-field`);
            }
          } else {
            while (i < n && text[i] !== delimiter && text[i] !== '\n' && !(text[i] === '\r' && text[i + 1] === '\n')) {
              if (text[i] === '"') throw new Error(`${where}: record on line ${line}: bare " in non-quoted-field`);
              field += text[i];
              i += 1;
            }
          }
          record.push(field);
          if (i < n && text[i] === delimiter) { i += 1; continue; }
          if (text[i] === '\r' && text[i + 1] === '\n') i += 2;
          else if (text[i] === '\n' || text[i] === '\r') i += 1;
          line += 1;
          break;
        }
        // Go's reader skips empty lines.
        if (record.length === 1 && record[0] === '') continue;
        if (width >= 0 && record.length !== width) {
          throw new Error(`${where}: record on line ${startLine}: wrong number of fields (${record.length}, the first record has ${width})`);
        }
        if (width < 0) width = record.length;
        return record;
      }
      return null;
    },
  };
}

function csvRecords(text, delimiter, where) {
  const cursor = csvCursor(text, delimiter, where);
  const records = [];
  for (let r = cursor.next(); r !== null; r = cursor.next()) records.push(r);
  return records;
}

// The records the options select, as arrays or (asObjects) objects keyed by the
// first record. fromLine and toLine count the file's records from 0 (the first line,
// which skipFirstLine and asObjects leave out), toLine included, as k6's. The file is
// read from its offset to its end, and left there, as k6's parser leaves it.
function csvSelect(file, o) {
  if (!(file instanceof FsFile)) throw new TypeError('csv: the first argument must be a file opened with k6/experimental/fs open()');
  const records = csvRecords(utf8Decode(file._bytes.subarray(file._at)), o.delimiter, file.path);
  file._at = file._bytes.length;
  const from = o.fromLine === undefined ? 0 : o.fromLine;
  const to = o.toLine === undefined ? Infinity : o.toLine;
  const out = [];
  records.forEach((r, i) => {
    if (i < from || i > to || (i === 0 && (o.skipFirstLine || o.asObjects))) return;
    out.push(r);
  });
  if (!o.asObjects) return out;
  const header = records[0] || [];
  return out.map((r) => Object.fromEntries(header.map((h, j) => [h, r[j]])));
}

const k6csv = {
  parse(file, options) {
    try {
      const o = csvOptions(options);
      if (!inInitCode && phase !== 'describe') throw new Error('csv.parse() can only be called in the init context');
      const records = csvSelect(file, o);
      // One copy for the run, as a SharedArray, named by its file and options (the
      // same in every VU: init code runs alike).
      return Promise.resolve(new SharedArray(`k6/experimental/csv:${file.path}:${JSON.stringify(o)}`, () => records));
    } catch (e) {
      return Promise.reject(e);
    }
  },
  Parser: class Parser {
    constructor(file, options) {
      if (!inInitCode && phase !== 'describe') throw new Error('csv Parser constructor must be called in the init context');
      const o = csvOptions(options);
      if (!(file instanceof FsFile)) throw new TypeError('csv: the first argument must be a file opened with k6/experimental/fs open()');
      // The file is read from its offset, and left at its end, as k6's parser leaves
      // it; its records are parsed one by one as next() asks.
      const cursor = csvCursor(utf8Decode(file._bytes.subarray(file._at)), o.delimiter, file.path);
      file._at = file._bytes.length;
      const header = o.asObjects ? cursor.next() || [] : null;
      Object.defineProperty(this, '_cursor', { value: cursor, writable: true });
      Object.defineProperty(this, '_o', { value: o });
      Object.defineProperty(this, '_header', { value: header });
      // The index of the next record in the file (the header is record 0).
      Object.defineProperty(this, '_index', { value: header ? 1 : 0, writable: true });
    }

    next() {
      const o = this._o;
      const from = o.fromLine === undefined ? 0 : o.fromLine;
      const to = o.toLine === undefined ? Infinity : o.toLine;
      try {
        for (;;) {
          const record = this._cursor ? this._cursor.next() : null;
          const i = this._index;
          if (record === null || i > to) {
            this._cursor = null; // the text is freed
            return Promise.resolve({ done: true, value: undefined });
          }
          this._index += 1;
          if (i < from || (i === 0 && o.skipFirstLine)) continue;
          const value = this._header
            ? Object.fromEntries(this._header.map((h, j) => [h, record[j]]))
            : record;
          return Promise.resolve({ done: false, value });
        }
      } catch (e) {
        return Promise.reject(e);
      }
    }
  },
};
