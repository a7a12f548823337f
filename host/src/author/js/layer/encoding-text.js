// ---------------------------------------------------------------- TextEncoder, TextDecoder
//
// The WHATWG Encoding globals k6 2.2 has, UTF-8 only (as k6's): encode to a Uint8Array,
// decode with each byte that is not UTF-8 as U+FFFD (or a TypeError when `fatal`).

class TextEncoder {
  get encoding() { return 'utf-8'; }
  encode(input) { return utf8Encode(input === undefined ? '' : String(input)); }
  encodeInto(input, dest) {
    const bytes = utf8Encode(String(input));
    // Whole characters only: cut before a continuation byte that does not fit.
    let n = Math.min(bytes.length, dest.length);
    while (n < bytes.length && n > 0 && (bytes[n] & 0xc0) === 0x80) n--;
    dest.set(bytes.subarray(0, n));
    return { read: utf8Decode(bytes.subarray(0, n)).length, written: n };
  }
}

class TextDecoder {
  constructor(label, options) {
    const name = label === undefined ? 'utf-8' : String(label).trim().toLowerCase();
    if (name !== 'utf-8' && name !== 'utf8' && name !== 'unicode-1-1-utf-8') {
      throw new RangeError(`TextDecoder: ${label} is not an encoding here (utf-8 only, as k6)`);
    }
    this.fatal = Boolean(options && options.fatal);
    this.ignoreBOM = Boolean(options && options.ignoreBOM);
  }
  get encoding() { return 'utf-8'; }
  decode(input) {
    if (input === undefined) return '';
    let bytes;
    if (input instanceof ArrayBuffer) bytes = new Uint8Array(input);
    else if (ArrayBuffer.isView(input)) bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    else throw new TypeError('TextDecoder.decode takes an ArrayBuffer or a typed array');
    if (!this.ignoreBOM && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    const text = utf8Decode(bytes);
    if (this.fatal && text.includes('\ufffd')) {
      const back = utf8Encode(text);
      if (back.length !== bytes.length || !back.every((b, i) => b === bytes[i])) throw new TypeError('TextDecoder: the data is not valid UTF-8');
    }
    return text;
  }
}

globalThis.TextEncoder = TextEncoder;
globalThis.TextDecoder = TextDecoder;
