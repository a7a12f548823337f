//! The generator of the JavaScript runtime guest's bridge (`plugins/js-runtime`, issue
//! #53): from the script world's WIT, Rust code that makes each imported interface a
//! JavaScript object whose functions call wit-bindgen's static bindings, converting
//! values as the vendored componentize-qjs runtime does (see the guest's `js.rs`).
//!
//! The guest cannot depend on the host, so the output is committed as
//! `plugins/js-runtime/src/bridge.rs`; the test below fails when the contract or this
//! generator changed and the committed file was not regenerated (`BRIDGE_WRITE=1`).
//! wit-bindgen does the canonical ABI; this file only names its Rust items the way it
//! names them and passes each argument the way its import functions take it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wit_parser::{
    Function, FunctionKind, Handle, Resolve, Type, TypeDefKind, TypeId, TypeOwner, WorldId,
    WorldItem,
};

/// The words Rust reserves: wit-bindgen appends `_` to a field named so.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// `kebab-name` as `UpperCamel` (wit-bindgen's type and case names, by the crate it
/// names them with).
fn upper_camel(name: &str) -> String {
    heck::ToUpperCamelCase::to_upper_camel_case(name)
}

/// `kebab-name` as `lowerCamel` (the JavaScript names of functions and fields).
fn lower_camel(name: &str) -> String {
    heck::ToLowerCamelCase::to_lower_camel_case(name)
}

/// `kebab-name` as a Rust identifier (wit-bindgen's functions, fields, modules).
fn snake(name: &str) -> String {
    let s = name.replace('-', "_");
    if KEYWORDS.contains(&s.as_str()) {
        format!("{s}_")
    } else {
        s
    }
}

struct Gen<'a> {
    resolve: &'a Resolve,
    out: String,
    /// Named types converted, by id: records, variants, enums, resources.
    done: BTreeMap<TypeId, ()>,
    /// Resources, in the order of their prototypes' slots.
    resources: Vec<TypeId>,
}

impl<'a> Gen<'a> {
    /// The type with aliases followed.
    fn dealias(&self, ty: Type) -> Type {
        let mut ty = ty;
        while let Type::Id(id) = ty {
            match &self.resolve.types[id].kind {
                TypeDefKind::Type(t) => ty = *t,
                _ => break,
            }
        }
        ty
    }

    /// The Rust module of an interface's bindings.
    fn module(&self, iface: wit_parser::InterfaceId) -> String {
        let i = &self.resolve.interfaces[iface];
        let pkg = &self.resolve.packages[i.package.expect("a named interface")].name;
        format!(
            "crate::bindings::{}::{}::{}",
            snake(&pkg.namespace),
            snake(&pkg.name),
            snake(i.name.as_deref().expect("a named interface"))
        )
    }

    /// The Rust path of a named type.
    fn path(&self, id: TypeId) -> String {
        let t = &self.resolve.types[id];
        let TypeOwner::Interface(iface) = t.owner else {
            panic!("type {:?} is not an interface's", t.name)
        };
        format!(
            "{}::{}",
            self.module(iface),
            upper_camel(t.name.as_deref().expect("a named type"))
        )
    }

    /// The Rust type wit-bindgen gives an owned value of `ty`.
    fn rust(&mut self, ty: Type) -> String {
        match self.dealias(ty) {
            Type::Bool => "bool".into(),
            Type::U8 => "u8".into(),
            Type::U16 => "u16".into(),
            Type::U32 => "u32".into(),
            Type::U64 => "u64".into(),
            Type::S8 => "i8".into(),
            Type::S16 => "i16".into(),
            Type::S32 => "i32".into(),
            Type::S64 => "i64".into(),
            Type::F32 => "f32".into(),
            Type::F64 => "f64".into(),
            Type::Char => "char".into(),
            Type::String => "String".into(),
            Type::ErrorContext => panic!("error-context is not in the contract"),
            Type::Id(id) => {
                let kind = self.resolve.types[id].kind.clone();
                match kind {
                    TypeDefKind::List(t) => format!("Vec<{}>", self.rust(t)),
                    TypeDefKind::Option(t) => format!("Option<{}>", self.rust(t)),
                    TypeDefKind::Result(r) => {
                        let ok = r.ok.map(|t| self.rust(t)).unwrap_or("()".into());
                        let err = r.err.map(|t| self.rust(t)).unwrap_or("()".into());
                        format!("Result<{ok}, {err}>")
                    }
                    TypeDefKind::Tuple(t) => {
                        let parts: Vec<String> = t.types.iter().map(|t| self.rust(*t)).collect();
                        format!("({},)", parts.join(", "))
                    }
                    TypeDefKind::Handle(Handle::Own(r))
                    | TypeDefKind::Handle(Handle::Borrow(r)) => {
                        let r = self.resource_id(r);
                        self.named(r);
                        self.path(r)
                    }
                    TypeDefKind::Record(_)
                    | TypeDefKind::Variant(_)
                    | TypeDefKind::Enum(_)
                    | TypeDefKind::Resource => {
                        self.named(id);
                        self.path(id)
                    }
                    other => panic!("the bridge does not convert {other:?}"),
                }
            }
        }
    }

    fn resource_id(&self, id: TypeId) -> TypeId {
        match self.dealias(Type::Id(id)) {
            Type::Id(r) => r,
            _ => unreachable!(),
        }
    }

    /// Whether wit-bindgen passes a parameter of `ty` by value (no string, list or
    /// resource inside).
    fn is_copy(&self, ty: Type) -> bool {
        match self.dealias(ty) {
            Type::String => false,
            Type::Id(id) => match &self.resolve.types[id].kind {
                TypeDefKind::List(_) | TypeDefKind::Handle(_) | TypeDefKind::Resource => false,
                TypeDefKind::Option(t) => self.is_copy(*t),
                TypeDefKind::Result(r) => {
                    r.ok.is_none_or(|t| self.is_copy(t)) && r.err.is_none_or(|t| self.is_copy(t))
                }
                TypeDefKind::Tuple(t) => t.types.iter().all(|t| self.is_copy(*t)),
                TypeDefKind::Record(r) => r.fields.iter().all(|f| self.is_copy(f.ty)),
                TypeDefKind::Variant(v) => {
                    v.cases.iter().all(|c| c.ty.is_none_or(|t| self.is_copy(t)))
                }
                _ => true,
            },
            _ => true,
        }
    }

    /// How argument `var` of `ty` is passed to an import function.
    fn pass(&self, ty: Type, var: &str) -> String {
        if self.is_copy(ty) {
            return var.to_string();
        }
        match self.dealias(ty) {
            Type::Id(id) => match &self.resolve.types[id].kind {
                TypeDefKind::Handle(Handle::Own(_)) => var.to_string(),
                TypeDefKind::Option(t) => match self.dealias(*t) {
                    Type::String => format!("{var}.as_deref()"),
                    Type::Id(i) if matches!(self.resolve.types[i].kind, TypeDefKind::List(_)) => {
                        format!("{var}.as_deref()")
                    }
                    _ => format!("{var}.as_ref()"),
                },
                _ => format!("&{var}"),
            },
            _ => format!("&{var}"),
        }
    }

    /// Emits the conversions of a named type (once).
    fn named(&mut self, id: TypeId) {
        if self.done.insert(id, ()).is_some() {
            return;
        }
        let path = self.path(id);
        let kind = self.resolve.types[id].kind.clone();
        let mut s = String::new();
        match kind {
            TypeDefKind::Record(r) => {
                let mut from = String::new();
                let mut to = String::new();
                for f in &r.fields {
                    let ty = self.rust(f.ty);
                    let _ = writeln!(
                        from,
                        "            {}: cx.field::<{ty}>(v, c\"{}\")?,",
                        snake(&f.name),
                        lower_camel(&f.name)
                    );
                    let _ = writeln!(
                        to,
                        "        cx.put(o, c\"{}\", self.{})?;",
                        lower_camel(&f.name),
                        snake(&f.name)
                    );
                }
                let _ = write!(
                    s,
                    "impl FromJs for {path} {{\n    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {{\n        \
                     if !unsafe {{ q::JS_IsObject(v) }} {{\n            return Err(cx.type_error(\"expected an object\"));\n        }}\n        \
                     Ok(Self {{\n{from}        }})\n    }}\n}}\n\n\
                     impl ToJs for {path} {{\n    fn to_js(self, cx: Cx) -> Js<JSValue> {{\n        let o = cx.object()?;\n{to}        Ok(o)\n    }}\n}}\n\n"
                );
            }
            TypeDefKind::Variant(v) => {
                let mut from = String::new();
                let mut to = String::new();
                for c in &v.cases {
                    let case = upper_camel(&c.name);
                    match c.ty {
                        Some(t) => {
                            let ty = self.rust(t);
                            let _ = writeln!(
                                from,
                                "            \"{}\" => Ok(Self::{case}(cx.field::<{ty}>(v, c\"val\")?)),",
                                c.name
                            );
                            let _ = writeln!(
                                to,
                                "            Self::{case}(x) => {{ let x = x.to_js(cx)?; cx.tagged(\"{}\", Some(x)) }}",
                                c.name
                            );
                        }
                        None => {
                            let _ =
                                writeln!(from, "            \"{}\" => Ok(Self::{case}),", c.name);
                            let _ = writeln!(
                                to,
                                "            Self::{case} => cx.tagged(\"{}\", None),",
                                c.name
                            );
                        }
                    }
                }
                let _ = write!(
                    s,
                    "impl FromJs for {path} {{\n    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {{\n        match cx.tag(v)?.as_str() {{\n{from}            \
                     t => Err(cx.type_error(&format!(\"unknown case {{t}}\"))),\n        }}\n    }}\n}}\n\n\
                     impl ToJs for {path} {{\n    fn to_js(self, cx: Cx) -> Js<JSValue> {{\n        match self {{\n{to}        }}\n    }}\n}}\n\n"
                );
            }
            TypeDefKind::Enum(e) => {
                let mut from = String::new();
                let mut to = String::new();
                for c in &e.cases {
                    let case = upper_camel(&c.name);
                    let _ = writeln!(from, "            \"{}\" => Ok(Self::{case}),", c.name);
                    let _ = writeln!(to, "            Self::{case} => \"{}\",", c.name);
                }
                let _ = write!(
                    s,
                    "impl FromJs for {path} {{\n    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {{\n        match cx.text(v)?.as_str() {{\n{from}            \
                     t => Err(cx.type_error(&format!(\"unknown case {{t}}\"))),\n        }}\n    }}\n}}\n\n\
                     impl ToJs for {path} {{\n    fn to_js(self, cx: Cx) -> Js<JSValue> {{\n        cx.string(match self {{\n{to}        }})\n    }}\n}}\n\n"
                );
            }
            TypeDefKind::Resource => {
                let slot = self.resources.len();
                self.resources.push(id);
                let _ = write!(
                    s,
                    "impl Handle for {path} {{\n    unsafe fn from_handle(handle: u32) -> Self {{\n        unsafe {{ {path}::from_handle(handle) }}\n    }}\n}}\n\n\
                     impl FromJs for {path} {{\n    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {{\n        cx.take(v)\n    }}\n}}\n\n\
                     impl ToJs for {path} {{\n    fn to_js(self, cx: Cx) -> Js<JSValue> {{\n        cx.resource(proto({slot}), self.take_handle())\n    }}\n}}\n\n"
                );
            }
            _ => unreachable!(),
        }
        let _ = writeln!(s, "impl IsUnit for {path} {{}}\n");
        self.out.push_str(&s);
    }

    /// Emits function `f` of `module` as `extern "C" fn {name}`; its JavaScript length.
    fn function(&mut self, module: &str, f: &Function, name: &str) -> usize {
        let mut body = String::new();
        let mut params = f
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty))
            .collect::<Vec<_>>();
        let callee = match f.kind {
            FunctionKind::Freestanding => format!("{module}::{}", snake(&f.name)),
            FunctionKind::Method(r) => {
                let path = self.path(r);
                // The receiver is `this`.
                params.remove(0);
                let _ = writeln!(body, "        let this = cx.borrow::<{path}>(this)?;");
                let method = f.name.split('.').nth(1).expect("[method]r.m");
                format!("this.{}", snake(method))
            }
            FunctionKind::Static(r) => {
                let method = f.name.split('.').nth(1).expect("[static]r.m");
                format!("{}::{}", self.path(r), snake(method))
            }
            FunctionKind::Constructor(r) => format!("{}::new", self.path(r)),
            _ => panic!("async functions are not in the contract: {}", f.name),
        };
        let mut pass = Vec::new();
        for (i, (_, ty)) in params.iter().enumerate() {
            let borrowed = match self.dealias(*ty) {
                Type::Id(id) => match self.resolve.types[id].kind {
                    TypeDefKind::Handle(Handle::Borrow(r)) => Some(self.resource_id(r)),
                    _ => None,
                },
                _ => None,
            };
            match borrowed {
                Some(r) => {
                    self.named(r);
                    let _ = writeln!(
                        body,
                        "        let a{i} = cx.borrow::<{}>(args.at({i}))?;",
                        self.path(r)
                    );
                }
                None => {
                    let t = self.rust(*ty);
                    let _ = writeln!(body, "        let a{i}: {t} = args.get(cx, {i})?;");
                }
            }
            pass.push(self.pass(*ty, &format!("a{i}")));
        }
        let call = format!("{callee}({})", pass.join(", "));
        let is_result = f.result.is_some_and(|t| match self.dealias(t) {
            Type::Id(id) => matches!(self.resolve.types[id].kind, TypeDefKind::Result(_)),
            _ => false,
        });
        if let Some(t) = f.result {
            self.rust(t);
        }
        let ret = match (f.result, is_result) {
            (None, _) => format!("        {call};\n        Ok(q::JS_UNDEFINED)\n"),
            (Some(_), true) => format!("        ret_result(cx, {call})\n"),
            (Some(_), false) => format!("        {call}.to_js(cx)\n"),
        };
        let uses_args = !params.is_empty();
        let this_name = if matches!(f.kind, FunctionKind::Method(_)) {
            "this"
        } else {
            "_this"
        };
        let args_name = if uses_args { "args" } else { "_args" };
        let _ = write!(
            self.out,
            "/// `{}`.\nunsafe extern \"C\" fn {name}(ctx: *mut q::JSContext, {this_name}: JSValue, argc: c_int, argv: *mut JSValue) -> JSValue {{\n    \
             let cx = Cx(ctx);\n    let {args_name} = Args::new(argc, argv);\n    call(|| {{\n{body}{ret}    }})\n}}\n\n",
            f.name
        );
        params.len()
    }
}

/// The bridge's Rust source for `world`'s imported interfaces.
pub(crate) fn generate(resolve: &Resolve, world: WorldId) -> String {
    let mut g = Gen {
        resolve,
        out: String::new(),
        done: BTreeMap::new(),
        resources: Vec::new(),
    };
    // Per interface: its name, and its members as (JavaScript name, function, length,
    // resource slot for a class member).
    let mut register = String::new();
    let mut n = 0;
    for (key, item) in &resolve.worlds[world].imports {
        let WorldItem::Interface { id, .. } = item else {
            continue;
        };
        let full = resolve.name_world_key(key);
        if !full.starts_with("loadtest:") {
            continue;
        }
        let module = g.module(*id);
        let iface = &resolve.interfaces[*id];
        let _ = writeln!(register, "    {{\n        let o = cx.object()?;");
        // Classes first, so that their statics and methods find them.
        let mut classes: BTreeMap<TypeId, String> = BTreeMap::new();
        for (name, ty) in &iface.types {
            if matches!(resolve.types[*ty].kind, TypeDefKind::Resource) {
                g.named(*ty);
                let slot = g
                    .resources
                    .iter()
                    .position(|r| r == ty)
                    .expect("just named");
                let ctor = iface
                    .functions
                    .values()
                    .find(|f| matches!(f.kind, FunctionKind::Constructor(r) if r == *ty));
                let ctor = match ctor {
                    Some(f) => {
                        let fname = format!("f{n}");
                        n += 1;
                        let len = g.function(&module, f, &fname);
                        format!("Some(({fname}, {len}))")
                    }
                    None => "None".to_string(),
                };
                let class = upper_camel(name);
                let path = g.path(*ty);
                let _ = writeln!(
                    register,
                    "        let (cls{slot}, proto{slot}) = class(cx, c\"{class}\", {ctor}, {slot}, dispose_fn::<{path}>)?;\n        \
                     cx.set(o, c\"{class}\", cls{slot})?;"
                );
                classes.insert(*ty, format!("{slot}"));
            }
        }
        for f in iface.functions.values() {
            let target = match f.kind {
                FunctionKind::Freestanding => "o".to_string(),
                FunctionKind::Method(r) => format!("proto{}", classes[&r]),
                FunctionKind::Static(r) => format!("cls{}", classes[&r]),
                FunctionKind::Constructor(_) => continue,
                _ => panic!("async functions are not in the contract"),
            };
            let short = f.name.rsplit('.').next().expect("a name");
            let fname = format!("f{n}");
            n += 1;
            let len = g.function(&module, f, &fname);
            let _ = writeln!(
                register,
                "        put_fn(cx, {target}, c\"{}\", {fname}, {len})?;",
                lower_camel(short)
            );
        }
        let _ = writeln!(register, "        out.push((\"{full}\", o));\n    }}");
    }
    let mut out = String::new();
    out.push_str(
        "// Generated by host/src/author/js/bridge.rs from the script world's WIT: do not edit.\n\
         // Regenerate: BRIDGE_WRITE=1 cargo test -p host --lib the_committed_bridge_is_generated.\n\n\
         #![allow(clippy::all, unused_unsafe)]\n\n\
         use crate::js::*;\n\
         use crate::{class, dispose_fn, proto, put_fn};\n\
         use core::ffi::c_int;\n\
         use rquickjs_sys as q;\n\n",
    );
    out.push_str(&g.out);
    let _ = write!(
        out,
        "/// How many imported resource types the bridge has (their prototypes' slots).\n\
         pub const RESOURCES: usize = {};\n\n\
         /// The imported interfaces as objects: each one's name and value.\n\
         pub fn interfaces(cx: Cx) -> Js<Vec<(&'static str, JSValue)>> {{\n    \
         let mut out = Vec::new();\n{register}    Ok(out)\n}}\n",
        g.resources.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed bridge is this generator's output for the script world (rewritten
    /// with `BRIDGE_WRITE=1`).
    #[test]
    fn the_committed_bridge_is_generated_from_the_script_world() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut resolve = Resolve::default();
        resolve
            .push_str(
                "scenario.wit",
                &std::fs::read_to_string(root.join("wit/scenario.wit")).unwrap(),
            )
            .unwrap();
        resolve
            .push_str("layer.wit", super::super::componentize::LAYER_WIT)
            .unwrap();
        let dir = root.join("plugins/js-runtime");
        let pkg = resolve
            .push_str(
                "runtime.wit",
                &std::fs::read_to_string(dir.join("wit/runtime.wit")).unwrap(),
            )
            .unwrap();
        let world = resolve.select_world(&[pkg], Some("k6-script")).unwrap();
        let text = generate(&resolve, world);
        let file = dir.join("src/bridge.rs");
        if std::env::var_os("BRIDGE_WRITE").is_some() {
            std::fs::write(&file, &text).unwrap();
        }
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            committed == text,
            "{} is not the generator's output: BRIDGE_WRITE=1 cargo test -p host --lib \
             the_committed_bridge_is_generated",
            file.display()
        );
    }
}
