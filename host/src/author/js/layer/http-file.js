// ---------------------------------------------------------------- http.file, multipart bodies
//
// An object body holding an http.file value is sent as multipart/form-data, as k6 (Go's
// mime/multipart) writes it: a random 60-hex-digit boundary, one part per field in the
// object's order (an array value gives one part per element), a file part with its
// filename and content type (application/octet-stream by default).

class FileData {
  constructor(data, filename, contentType) {
    this.data = typeof data === 'string' ? data : toBytes(data);
    this.filename = filename === undefined || filename === null ? String(Date.now() * 1000000) : String(filename);
    this.content_type = contentType || 'application/octet-stream';
  }
}

function file(data, filename, contentType) {
  if (data === undefined || data === null) throw new Error('http.file needs data (a string or an ArrayBuffer)');
  return new FileData(data, filename, contentType);
}

function hasFile(body) {
  for (const k in body) {
    const v = body[k];
    if (v instanceof FileData || (Array.isArray(v) && v.some((x) => x instanceof FileData))) return true;
  }
  return false;
}

// Go's mime/multipart quoting of a name in Content-Disposition.
function quoteField(s) { return String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"'); }

function multipart(body) {
  let boundary = '';
  for (let i = 0; i < 30; i++) boundary += Math.floor(Math.random() * 256).toString(16).padStart(2, '0');
  const parts = [];
  for (const k in body) {
    const vals = Array.isArray(body[k]) ? body[k] : [body[k]];
    for (const v of vals) {
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${quoteField(k)}"`;
      if (v instanceof FileData) {
        head += `; filename="${quoteField(v.filename)}"\r\nContent-Type: ${v.content_type}\r\n\r\n`;
        parts.push(utf8Encode(head), typeof v.data === 'string' ? utf8Encode(v.data) : v.data, utf8Encode('\r\n'));
      } else {
        head += '\r\n\r\n';
        parts.push(utf8Encode(head), toBytes(v === null || v === undefined ? '' : String(v)), utf8Encode('\r\n'));
      }
    }
  }
  parts.push(utf8Encode(`--${boundary}--\r\n`));
  let n = 0;
  for (const p of parts) n += p.length;
  const bytes = new Uint8Array(n);
  let at = 0;
  for (const p of parts) { bytes.set(p, at); at += p.length; }
  return { boundary, bytes };
}

