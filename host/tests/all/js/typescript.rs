//! TypeScript scripts (`host run script.ts`), side by side with k6 1.1.0 (which runs
//! `.ts` natively) against the demo target: the same iterations and checks from a
//! script that imports a `.ts` module with an enum, a class with parameter properties,
//! interfaces, generics, `as`, `satisfies`, `!` and a types-only `k6/options` import;
//! a thrown error names the `.ts` file and line in both; decorators, which k6 1.1.0
//! spins on, are refused at build with their line.

use crate::support as common;

use common::k6::k6_in;
use common::{host_in as host, output_text as text};

const LIB: &str = r#"export enum Kind { Page = 1, Api, Other = 'other' }

export interface Target { path: string; kind: Kind }

export class Visitor<T extends object> {
  private count: number = 0;
  constructor(private readonly base: string, public tag?: string) {}
  url(t: Target): string {
    this.count!++;
    return `${this.base}${t.path}` as string;
  }
  seen(): number { return this.count; }
  fail(when: number): void {
    if (when > 1) {
      throw new Error(`failed on purpose at ${when}`);
    }
  }
}
"#;

const SCRIPT: &str = r#"import http from 'k6/http';
import { check } from 'k6';
import { Options } from 'k6/options';
import type { Target } from './lib.ts';
import { Kind, Visitor } from './lib.ts';

type Pair<A, B> = [A, B];

export const options: Options = {
  vus: 2,
  iterations: 6,
} satisfies Options;

const home: Target = { path: '/', kind: Kind.Page };

function both<A, B>(a: A, b: B): Pair<A, B> {
  return [a, b];
}

export default function (): void {
  const v = new Visitor<object>(__ENV.BASE_URL as string, 'ts');
  const res = http.get(v.url(home));
  const [status, kind] = both<number, Kind>(res.status, Kind.Api);
  check(res, {
    'status is 200': () => status === 200,
    'enum numbers': () => kind === 2 && Kind[2] === 'Api' && Kind.Other === 'other',
    'parameter properties': () => v.tag === 'ts' && v.seen() === 1,
  });
}
"#;

const THROWS: &str = r#"import { Visitor } from './lib.ts';

interface Opts { n: number }

export const options = { iterations: 1 };

export default function (): void {
  const o: Opts = { n: 2 };
  new Visitor<object>('x').fail(o.n);
}
"#;

fn count(export: &serde_json::Value, metric: &str, field: &str) -> f64 {
    export["metrics"][metric][field]
        .as_f64()
        .unwrap_or_else(|| panic!("{metric}.{field} in {export}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_script_runs_as_k6_runs_it() {
    let target = common::demo_target(std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.ts"), LIB).unwrap();
    std::fs::write(dir.path().join("script.ts"), SCRIPT).unwrap();
    let base = format!("BASE_URL={}", target.base_url());
    let h = host(
        dir.path(),
        [
            "run",
            "script.ts",
            "-q",
            "-e",
            &base,
            "--summary-export",
            "host.json",
        ],
    )
    .await;
    assert!(h.status.success(), "{}", text(&h));
    let k = k6_in(
        dir.path(),
        vec![
            "script.ts".into(),
            "-q".into(),
            "-e".into(),
            base.clone(),
            "--summary-export".into(),
            "k6.json".into(),
        ],
    )
    .await;
    assert!(k.status.success(), "{}", text(&k));
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(f)).unwrap()).unwrap()
    };
    let (he, ke) = (read("host.json"), read("k6.json"));
    for (metric, field) in [
        ("iterations", "count"),
        ("http_reqs", "count"),
        ("checks", "passes"),
        ("checks", "fails"),
    ] {
        assert_eq!(
            count(&he, metric, field),
            count(&ke, metric, field),
            "{metric}.{field}: host {he}\nk6 {ke}"
        );
    }
    // What both gave, so that the same failure in both is seen too.
    assert_eq!(count(&he, "iterations", "count"), 6.0);
    assert_eq!(count(&he, "checks", "passes"), 18.0, "{he}");
    assert_eq!(count(&he, "checks", "fails"), 0.0, "{he}");

    // `host build script.ts` writes the component beside it, as for a .js script.
    let b = host(dir.path(), ["build", "script.ts"]).await;
    assert!(b.status.success(), "{}", text(&b));
    assert!(dir.path().join("script.wasm").is_file(), "{}", text(&b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thrown_error_names_the_ts_line_as_k6_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.ts"), LIB).unwrap();
    std::fs::write(dir.path().join("throws.ts"), THROWS).unwrap();
    let h = host(dir.path(), ["run", "throws.ts", "-q"]).await;
    let k = k6_in(dir.path(), vec!["throws.ts".into(), "-q".into()]).await;
    let (hs, ks) = (
        String::from_utf8_lossy(&h.stderr),
        String::from_utf8_lossy(&k.stderr),
    );
    // lib.ts line 15 throws; throws.ts line 9 called it.
    assert!(ks.contains("lib.ts:15:"), "k6: {}", text(&k));
    assert!(ks.contains("throws.ts:9:"), "k6: {}", text(&k));
    assert!(hs.contains("failed on purpose at 2"), "{}", text(&h));
    assert!(hs.contains("lib.ts:15:"), "host: {}", text(&h));
    assert!(hs.contains("throws.ts:9:"), "host: {}", text(&h));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_k6_cannot_run_is_refused_at_build_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("deco.ts"),
        "function log(t: any, k: string, d: PropertyDescriptor) { return d; }\nclass A {\n  @log\n  m() { return 1; }\n}\nexport default function () { new A().m(); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.ts"),
        "export default function (): void {\n  let x: = 1;\n}\n",
    )
    .unwrap();
    let d = host(dir.path(), ["build", "deco.ts"]).await;
    assert!(!d.status.success(), "{}", text(&d));
    let err = String::from_utf8_lossy(&d.stderr);
    assert!(
        err.contains("deco.ts:3:3") && err.contains("decorators"),
        "{}",
        text(&d)
    );
    let b = host(dir.path(), ["run", "bad.ts"]).await;
    assert!(!b.status.success(), "{}", text(&b));
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(err.contains("bad.ts:2:"), "{}", text(&b));
    assert!(
        !err.contains("Cargo") && !err.contains("WebAssembly"),
        "{}",
        text(&b)
    );
}
