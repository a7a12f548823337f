//! The stripper's output on each kind of TypeScript syntax k6 scripts use: the types
//! gone, the lines kept, the code TypeScript emits (enums, parameter properties)
//! there, and what is refused said with its line.

use super::strip;

fn js(src: &str) -> String {
    let out = strip(src, "t.ts").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.matches('\n').count(),
        src.matches('\n').count(),
        "lines kept:\n{out}"
    );
    out
}

/// `s` without any blank: what is left of the code once its layout is set aside.
fn squash(s: &str) -> String {
    s.split_whitespace().collect()
}

#[test]
fn annotations_generics_and_assertions_become_blanks_in_place() {
    let src = "let a: number = 1;\nfunction f<T>(x: T, y?: string): T { return x!; }\nconst b = f<number>(a) as number;\nconst c = <string>'s';\nconst o = { a } satisfies object;\n";
    let out = js(src);
    assert_eq!(
        squash(&out),
        squash("let a = 1;\nfunction f(x, y) { return x; }\nconst b = f(a);\nconst c = 's';\nconst o = { a };\n"),
        "{out}"
    );
    // Columns too: the parameters stay where they were on their line.
    let at = |s: &str| s.lines().nth(1).unwrap().find("(x");
    assert_eq!(at(&out), at(src));
}

#[test]
fn type_declarations_go_and_leave_a_statement_end() {
    let src = "let a = 1\ninterface P {\n  x: number;\n}\ntype Id = string | number;\nexport interface Q { y: P }\nexport type R = Q;\ndeclare const g: number;\n(a)\n";
    let out = js(src);
    assert!(
        !out.contains("interface") && !out.contains("type ") && !out.contains("declare"),
        "{out}"
    );
    // `let a = 1` is not continued by `(a)`: a `;` stands for what was removed.
    assert!(out.contains("let a = 1\n;"), "{out}");
}

#[test]
fn type_imports_go_and_an_import_of_types_only_goes_whole() {
    let src = "import { Options } from 'k6/options';\nimport http, { type Response, RefinedParams } from 'k6/http';\nimport type { X } from './x.ts';\nimport { check, sleep } from 'k6';\nexport const options: Options = {};\nexport default function () { const r: Response = http.get('u'); check(r, {}); }\n";
    let out = js(src);
    assert!(
        !out.contains("k6/options") && !out.contains("./x.ts"),
        "{out}"
    );
    assert!(out.contains("import http from 'k6/http';"), "{out}");
    assert!(out.contains("import { check } from 'k6';"), "{out}");
}

#[test]
fn export_lists_lose_their_types() {
    let src = "interface I {}\nconst v = 1;\nexport { I, v, type I as J };\nexport type { I as K } from './i.ts';\n";
    let out = js(src);
    assert!(out.contains("export { v };"), "{out}");
    assert!(!out.contains("./i.ts"), "{out}");
}

#[test]
fn classes_lose_modifiers_and_keep_parameter_properties() {
    let src = "abstract class A implements I, J {\n  private readonly x: number = 1;\n  declare y: string;\n  z?: number;\n  w!: number;\n  abstract m(): void;\n  constructor(private a: number, public readonly b = 2) {}\n  protected get n(): number { return this.x; }\n}\nclass B extends A<number> {\n  constructor(public c: string) {\n    super(1);\n  }\n}\n";
    let out = js(src);
    for gone in [
        "abstract",
        "implements",
        "private",
        "public",
        "protected",
        "readonly",
        "declare",
        "?",
        "!",
    ] {
        assert!(!out.contains(gone), "{gone}: {out}");
    }
    assert!(
        squash(&out).contains(&squash("constructor(a, b = 2) { this.a = a; this.b = b;}")),
        "{out}"
    );
    assert!(out.contains("super(1); this.c = c;"), "{out}");
    assert!(squash(&out).contains("classBextendsA{"), "{out}");
    assert!(squash(&out).contains("x=1;z;w;"), "{out}");
}

#[test]
fn enums_are_objects_with_reverse_numbers() {
    let src = "enum Color { Red, Green = 5, Blue }\nexport enum S {\n  A = 'a',\n  B = 'b',\n}\nconst enum F { X = 1 << 0, Y = X << 1, Z = X | Y }\n";
    let out = js(src);
    assert!(out.starts_with("var Color = (function (Color) {"), "{out}");
    assert!(out.contains("export var S = "), "{out}");
    // Evaluated: the values TypeScript gives them.
    assert!(out.contains("const Blue = Color[\"Green\"] + 1;"), "{out}");
    assert!(
        out.contains("const Z = (X | Y); F[F[\"Z\"] = Z] = \"Z\";"),
        "{out}"
    );
    assert!(
        out.contains("S[\"A\"] = A;") && !out.contains("S[S["),
        "{out}"
    );
}

#[test]
fn this_parameters_optional_parameters_and_overloads_go() {
    let src = "function f(this: Window, a?: number): void;\nfunction f(this: Window, a?: number) { return a; }\nconst g = <T,>(x: T): T => x;\nlet h!: number;\n";
    let out = js(src);
    assert!(out.starts_with(";"), "the overload goes: {out}");
    assert!(squash(&out).contains("functionf(a){returna;}"), "{out}");
    assert!(squash(&out).contains("constg=(x)=>x;"), "{out}");
    assert!(squash(&out).contains("leth;"), "{out}");
}

#[test]
fn what_k6_cannot_run_is_refused_with_its_line() {
    for (src, line, what) in [
        ("\nclass A {\n  @log m() {}\n}\n", "t.ts:3:", "decorators"),
        (
            "namespace N { export const a = 1; }\n",
            "t.ts:1:",
            "namespace",
        ),
        ("\nimport fs = require('fs');\n", "t.ts:2:", "import NAME ="),
        ("const x = 1;\nexport = x;\n", "t.ts:2:", "export ="),
        ("let a: = 1;\n", "t.ts:1:", "syntax error"),
    ] {
        let e = strip(src, "t.ts").unwrap_err().to_string();
        assert!(e.contains(line) && e.contains(what), "{src}: {e}");
    }
    // A namespace of types only is emitted as nothing, as TypeScript does.
    assert!(!js("namespace T { export interface I {} }\n").contains("namespace"));
}
