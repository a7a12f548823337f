//! `k6/experimental/streams`, side by side with k6 1.1.0 on one script: a pulled
//! source with a CountQueuingStrategy read to its end (the chunks, and the pulls with
//! their desiredSize), a source that enqueues from a timer, cancel (the source's cancel
//! called, later reads done), errors from start and pull, the lock, releaseLock,
//! enqueue after close, a custom strategy's sizes, and what k6 refuses (byte streams).
//! ByteLengthQueuingStrategy, which k6 1.1.0 cannot construct, against the standard's
//! figures. `tee()` and the pipes, which neither builds, are refused at build with
//! their line.

use crate::support as common;

use common::k6::k6_in;
use common::{host_in as host, output_text as text};

const SCRIPT: &str = r#"import { ReadableStream, CountQueuingStrategy, ReadableStreamDefaultReader } from 'k6/experimental/streams';
import { setTimeout } from 'k6/timers';

export const options = { iterations: 1 };

function numbers(n, log) {
  let i = 0;
  return new ReadableStream({
    start(controller) { log.push('start ' + controller.desiredSize); },
    pull(controller) {
      log.push('pull ' + controller.desiredSize);
      if (i < n) controller.enqueue(i++); else controller.close();
    },
    cancel(reason) { log.push('cancel ' + reason); },
  }, new CountQueuingStrategy({ highWaterMark: 2 }));
}

// A read's result as [done, value] (k6 writes the object's keys in no fixed order).
const rv = (r) => [r.done, r.value === undefined ? null : r.value];

async function drain(reader) {
  const got = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return got;
    got.push(value);
  }
}

export default async function () {
  const out = [];
  const log = [];
  const s = numbers(3, log);
  const reader = s.getReader();
  out.push(await drain(reader), log, s.locked);

  const t = new ReadableStream({
    start(c) {
      c.enqueue('a');
      setTimeout(() => { c.enqueue('b'); c.close(); }, 10);
    },
  });
  const r2 = t.getReader();
  out.push([rv(await r2.read()), rv(await r2.read()), rv(await r2.read())]);

  const log3 = [];
  const r3 = numbers(10, log3).getReader();
  await r3.read();
  out.push(await r3.cancel('enough'), log3, rv(await r3.read()));

  try { await new ReadableStream({ start(c) { c.error(new Error('boom')); } }).getReader().read(); } catch (e) { out.push(e.name + ': ' + e.message); }
  try { await new ReadableStream({ pull() { throw new Error('pullfail'); } }).getReader().read(); } catch (e) { out.push(e.message); }
  try { s.getReader(); } catch (e) { out.push(e.name + ': ' + e.message); }
  reader.releaseLock();
  out.push(s.locked);
  try { new ReadableStream({ start(c) { c.close(); c.enqueue(1); } }); } catch (e) { out.push(e.name + ': ' + e.message); }
  const sizes = [];
  new ReadableStream({ start(c) { sizes.push(c.desiredSize); c.enqueue('ab'); sizes.push(c.desiredSize); c.enqueue('cd'); sizes.push(c.desiredSize); } }, { highWaterMark: 3, size: (ch) => ch.length });
  out.push(sizes);
  const q = new ReadableStream({ start(c) { c.enqueue(1); c.enqueue(2); c.close(); } });
  out.push(await drain(new ReadableStreamDefaultReader(q)));
  const closed = new ReadableStream({ start(c) { c.close(); } }).getReader();
  await closed.closed;
  out.push('closed');
  const er = new ReadableStream({ start(c) { c.error('plain'); } }).getReader();
  try { await er.closed; } catch (e) { out.push('closed ' + e); }
  const rr = new ReadableStream({}).getReader();
  const pending = rr.read();
  rr.releaseLock();
  try { await pending; } catch (e) { out.push(e.name + ': ' + e.message); }
  try { await rr.read(); } catch (e) { out.push(e.name + ': ' + e.message); }
  try { new CountQueuingStrategy(); } catch (e) { out.push(e.name + ': ' + e.message); }
  try { new CountQueuingStrategy({}); } catch (e) { out.push(e.name + ': ' + e.message); }
  try { new ReadableStream({ type: 'bytes' }); } catch (e) { out.push(String(e).includes("'bytes' stream is not supported yet")); }
  console.log('STREAMS ' + JSON.stringify(out));
}
"#;

/// The `STREAMS ...` line of a run's stderr (k6's taken out of `msg="..."`).
fn streams_line(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().find(|l| l.contains("STREAMS "))?;
    let rest = &line[line.find("STREAMS ")?..];
    let rest = rest.split("\" source=console").next().unwrap_or(rest);
    Some(rest.replace("\\\"", "\"").replace("\\\\", "\\"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readable_streams_behave_as_in_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("streams.js"), SCRIPT).unwrap();
    let h = host(dir.path(), ["run", "streams.js", "-q"]).await;
    let k = k6_in(dir.path(), vec!["streams.js".into(), "-q".into()]).await;
    let hs = streams_line(&h.stderr).unwrap_or_else(|| panic!("host: {}", text(&h)));
    let ks = streams_line(&k.stderr).unwrap_or_else(|| panic!("k6: {}", text(&k)));
    assert_eq!(hs, ks, "host vs k6");
    // What the line holds, so that agreeing on nothing cannot pass.
    assert!(hs.starts_with("STREAMS [[0,1,2],"), "{hs}");
    assert!(hs.contains("\"cancel enough\""), "{hs}");
    assert!(hs.contains("TypeError: stream is locked"), "{hs}");
    assert!(h.status.success(), "{}", text(&h));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_length_strategy_counts_bytes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bytes.js"),
        r#"import { ReadableStream, ByteLengthQueuingStrategy } from 'k6/experimental/streams';
export const options = { iterations: 1 };
export default async function () {
  const bl = new ByteLengthQueuingStrategy({ highWaterMark: 16 });
  const sizes = [bl.highWaterMark, bl.size(new Uint8Array(5))];
  const s = new ReadableStream({
    start(c) { sizes.push(c.desiredSize); c.enqueue(new Uint8Array(10)); sizes.push(c.desiredSize); c.enqueue(new Uint8Array(10)); sizes.push(c.desiredSize); c.close(); },
  }, bl);
  const r = s.getReader();
  const a = await r.read();
  sizes.push(a.value.length, (await r.read()).value.length, (await r.read()).done);
  console.log('BYTES ' + JSON.stringify(sizes));
}
"#,
    )
    .unwrap();
    let h = host(dir.path(), ["run", "bytes.js", "-q"]).await;
    let err = String::from_utf8_lossy(&h.stderr);
    // The standard's figures: 16 - 10 = 6, 6 - 10 = -4.
    assert!(
        err.contains("BYTES [16,5,16,6,-4,10,10,true]"),
        "{}",
        text(&h)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tee_and_pipes_are_refused_at_build_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tee.js"),
        "import { ReadableStream } from 'k6/experimental/streams';\nexport default function () {\n  const [a, b] = new ReadableStream().tee();\n}\n",
    )
    .unwrap();
    let h = host(dir.path(), ["build", "tee.js"]).await;
    assert!(!h.status.success(), "{}", text(&h));
    let err = String::from_utf8_lossy(&h.stderr);
    assert!(
        err.contains("tee.js:3") && err.contains("`tee()` of k6/experimental/streams"),
        "{}",
        text(&h)
    );
}
