//! JavaScript into a component with the host's own wasmtime: the QuickJS runtime that
//! ships inside the `componentize-qjs` crate (Apache-2.0, vendored in `host/assets/quickjs`)
//! is linked with a `wit-dylib` library generated for the contract, the k6 layer and the
//! user's bundle are evaluated once under Wizer, and the initialised heap is snapshotted
//! into the component: what every VU starts from, shared copy-on-write.
//!
//! That is the fallback: a host built with clang and wasi-libc embeds the QuickJS-ng
//! runtime built from source (plugins/js-runtime, issue #53) and builds on it instead
//! (`chosen_runtime`).
//!
//! This is `componentize_qjs::componentize` (0.4.5) redone against wasmtime 48, so the
//! host does not build the second wasmtime (47) that the crate links.

use anyhow::{anyhow, Context, Result};
use sha2::Digest;
use wasmtime::component::{Component, Instance, Lift, Linker, ResourceTable, WasmList};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

/// QuickJS built as a WASI library (componentize-qjs 0.4.5's `runtime-sync.wasm`: no
/// component-model async, which this host does not enable).
const RUNTIME: &[u8] = include_bytes!("../../../assets/quickjs/runtime-sync.wasm");

/// The globals the runtime expects before the module runs (the crate's generated shim;
/// it only adds stream and future factories, and the contract has neither).
const SHIM: &str = "const wit = globalThis.wit = {};\n";

/// The layer's own interface (not the public contract: see the file).
pub(crate) const LAYER_WIT: &str = include_str!("layer.wit");

/// What a script's component is built to: the contract's world with the `summary`
/// export (the layer exports `handleSummary` for every script, an empty answer when
/// the script has none), and the layer's own imports.
fn script_world() -> String {
    use crate::plugin::bindings::{WIT_PACKAGE, WIT_VERSION};
    format!(
        "package loadtest:k6-script;\n\
         world k6-script {{\n\
         \x20   include {WIT_PACKAGE}/scenario-with-summary@{WIT_VERSION};\n\
         \x20   include loadtest:k6-layer/layer@{LAYER_VERSION};\n\
         }}\n"
    )
}

/// The version in `layer.wit`'s package line.
pub(crate) const LAYER_VERSION: &str = "0.1.0";

wasmtime::component::bindgen!({
    inline: "
        package local:init;
        interface module-loader {
          resolve: func(referrer: string, specifier: string) -> result<string, string>;
          load: func(path: string) -> result<string, string>;
        }
        world init {
          import module-loader;
          export init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>;
        }
    ",
    world: "init",
    exports: { default: async },
});

/// The most memory the module may grow to while it is evaluated at build time: the
/// layer and a bundle with its files take a few MiB; a script whose code escaped into
/// build time (or a huge bundled file) is stopped with an error instead of growing the
/// host (a 600 MB allocation made the host panic, issue 49).
pub(crate) const BUILD_MEMORY_BYTES: usize = 512 << 20;

/// The longest the module may run at build time: its evaluation takes well under a
/// second; a loop there would hang `host build` (issue 49).
pub(crate) const BUILD_SECONDS: u64 = 10;

/// The wizer-time store: WASI for the runtime's libc, output captured for errors.
struct Ctx {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: BuildLimits,
}

/// Refuses memory growth past [`BUILD_MEMORY_BYTES`], remembering that it did (the
/// runtime then fails or traps, and the error is told as the limit).
#[derive(Default)]
struct BuildLimits {
    refused: bool,
}

impl wasmtime::ResourceLimiter for BuildLimits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > BUILD_MEMORY_BYTES {
            self.refused = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// Ends the build's evaluation after [`BUILD_SECONDS`] (by the engine's epoch) unless
/// dropped first.
struct Deadline {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<bool>>,
}

impl Deadline {
    fn start(engine: &Engine) -> Self {
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let engine = engine.clone();
        let thread = std::thread::spawn(move || {
            let timeout = std::time::Duration::from_secs(BUILD_SECONDS);
            let fired = matches!(
                wait.recv_timeout(timeout),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            );
            if fired {
                engine.increment_epoch();
            }
            fired
        });
        Deadline {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Stops the clock; whether it had fired.
    fn stop(mut self) -> bool {
        drop(self.stop.take());
        self.thread
            .take()
            .is_some_and(|t| t.join().unwrap_or(false))
    }
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Builds the component: `wit` is the contract's WIT text, `module` the ES module
/// (the k6 layer with the bundle inside) that exports the `plugin` interface.
pub(crate) async fn componentize(wit: &str, module: &str) -> Result<Vec<u8>> {
    let mut resolve = wit_parser::Resolve::default();
    resolve
        .push_str("scenario.wit", wit)
        .context("the contract's WIT does not parse")?;
    resolve
        .push_str("layer.wit", LAYER_WIT)
        .context("the k6 layer's WIT does not parse")?;
    let pkg = resolve
        .push_str("k6-script.wit", &script_world())
        .context("the k6 script's world does not parse")?;
    let world = resolve.select_world(&[pkg], Some("k6-script"))?;
    let (mut dylib, _metadata) = wit_dylib::create_with_metadata(&resolve, world, None);
    wit_component::embed_component_metadata(
        &mut dylib,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )?;
    let mut linker = wit_component::Linker::default();
    linker.encoder().validate(true);
    linker.library("componentize_qjs_runtime.wasm", RUNTIME, false)?;
    linker.library("wit-dylib.wasm", &dylib, false)?;
    linker.encoder().adapter(
        "wasi_snapshot_preview1",
        wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
    )?;
    let linked = linker
        .encode()
        .context("cannot link the QuickJS runtime with the contract's bindings")?;
    let snapshot = wizer_init(&linked, module).await?;
    super::stub::stub_module_loader(&snapshot)
}

/// The environment variable that overrides the QuickJS runtime a script is built on:
/// the path of a runtime component built as plugins/js-runtime is (issue #53), or
/// [`VENDORED`] for the vendored runtime whatever this host embeds.
pub(crate) const RUNTIME_ENV: &str = "LOADTEST_JS_RUNTIME";

/// `RUNTIME_ENV`'s value that selects the vendored runtime: the one a host built
/// without clang uses, so a host built with clang can run (and benchmark, and test)
/// that route too.
pub(crate) const VENDORED: &str = "vendored";

/// The vendored runtime's name, as `host --version` gives it on a host built without
/// clang (host/build.rs).
const VENDORED_NAME: &str = "vendored componentize-qjs 0.4.5 runtime";

/// Which runtime this host builds k6 scripts on when `RUNTIME_ENV` is unset: the one
/// built from source when host/build.rs could build it (clang and wasi-libc were
/// there), else the vendored one. Also in `host --version`.
pub(crate) const DEFAULT_RUNTIME: &str = env!("HOST_JS_RUNTIME");

/// The runtime built from source, embedded when host/build.rs built it.
#[cfg(js_runtime_built)]
const SOURCE_RUNTIME: Option<&[u8]> =
    Some(include_bytes!(concat!(env!("OUT_DIR"), "/js_runtime.wasm")));
/// The runtime built from source, absent: the host was built without clang.
#[cfg(not(js_runtime_built))]
const SOURCE_RUNTIME: Option<&[u8]> = None;

/// The runtime component a script is built on, when it is one built from source:
/// `RUNTIME_ENV`'s file when set, else the embedded one; `None` for the vendored
/// runtime (linked with the contract's bindings at each build).
pub(crate) fn chosen_runtime() -> Result<Option<std::borrow::Cow<'static, [u8]>>> {
    match std::env::var_os(RUNTIME_ENV) {
        None => Ok(SOURCE_RUNTIME.map(std::borrow::Cow::Borrowed)),
        Some(v) if v == VENDORED => Ok(None),
        Some(path) => std::fs::read(&path)
            .map(|b| Some(std::borrow::Cow::Owned(b)))
            .with_context(|| format!("cannot read {RUNTIME_ENV}={}", path.to_string_lossy())),
    }
}

/// The runtime a build uses, for the user and benchmarks (`host build script.js`).
pub(crate) fn runtime_name() -> String {
    match std::env::var_os(RUNTIME_ENV) {
        None => DEFAULT_RUNTIME.to_string(),
        Some(v) if v == VENDORED => format!("{VENDORED_NAME} ({RUNTIME_ENV}={VENDORED})"),
        Some(path) => format!("{RUNTIME_ENV}={}", path.to_string_lossy()),
    }
}

/// Builds the component on a runtime built from source (`RUNTIME_ENV`): that component
/// already has the script world's bindings (wit-bindgen's, static), so nothing is
/// linked; the module is evaluated under Wizer as on the vendored runtime. The
/// snapshot then imports only the interfaces `module` can reach when `cut` (`prune`):
/// the runtime's static bindings import all of them, and each costs every VU's instance.
/// Last, the functions an event calls through the table get the first function
/// references (`funcref_order`): fewer pages of each VU's instance per wake-up.
pub(crate) async fn componentize_on(runtime: &[u8], module: &str, cut: bool) -> Result<Vec<u8>> {
    let snapshot = wizer_init(runtime, module).await?;
    let built = if cut {
        super::prune::prune(&snapshot, module)
            .context("cannot cut the interfaces the script does not reach")?
    } else {
        snapshot
    };
    super::funcref_order::hot_first(&built)
        .context("cannot put the hot functions' references first")
}

/// Evaluates `module` in the linked component under Wizer and returns the snapshot.
async fn wizer_init(component: &[u8], module: &str) -> Result<Vec<u8>> {
    let stdout = wasmtime_wasi::p2::pipe::MemoryOutputPipe::new(64 * 1024);
    let stderr = wasmtime_wasi::p2::pipe::MemoryOutputPipe::new(64 * 1024);
    let wasi = WasiCtxBuilder::new()
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .build();
    let mut config = Config::new();
    config.epoch_interruption(true);
    let engine = Engine::new(&config)?;
    let mut store = Store::new(
        &engine,
        Ctx {
            wasi,
            table: ResourceTable::new(),
            limits: BuildLimits::default(),
        },
    );
    store.limiter(|c| &mut c.limits);
    store.set_epoch_deadline(1);
    let wizer = Wizer::new();
    let (cx, instrumented) = wizer.instrument_component(component)?;
    // The instrumented runtime is the same for every script a host builds (the script
    // is handed to it below, at init), so its compiled form comes from the compile
    // cache: cranelift compiling QuickJS took ~2.4 CPU-s of each new script's build.
    let sha256 = hex::encode(sha2::Sha256::digest(&instrumented));
    let (comp, _) = crate::plugin::cache::load_or_compile(&engine, &instrumented, &sha256)?;
    let mut linker = Linker::new(&engine);
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    let mut loader = linker.instance("local:init/module-loader")?;
    loader.func_wrap(
        "resolve",
        |_, (_referrer, specifier): (String, String)| -> wasmtime::Result<_> {
            Ok((Err::<String, String>(format!(
                "module {specifier} is not bundled (imports are bundled by host build)"
            )),))
        },
    )?;
    loader.func_wrap("load", |_, (path,): (String,)| -> wasmtime::Result<_> {
        Ok((Err::<String, String>(format!(
            "module {path} is not bundled"
        )),))
    })?;
    // The contract's imports are not called while the module is evaluated (the k6
    // layer runs user code only from the exports): each is a function that fails.
    // (`define_unknown_imports_as_traps` would shadow the WASI instances that only
    // match by semver, with resource types of its own.)
    stub_contract(&engine, &comp, &mut linker)?;
    let deadline = Deadline::start(&engine);
    let run = async {
        let instance = linker.instantiate_async(&mut store, &comp).await?;
        let init = Init::new(&mut store, &instance)?;
        let answer = init.call_init(&mut store, SHIM, module, None, false).await;
        anyhow::Ok((instance, answer))
    }
    .await;
    let fired = deadline.stop();
    // Wizer's own calls below are not the script's: no deadline for them.
    store.set_epoch_deadline(u64::MAX / 2);
    if fired {
        anyhow::bail!(
            "the script ran for more than {BUILD_SECONDS} s while it was built: code that \
             runs at build time must not loop (a script's code runs in VUs, not at build)"
        );
    }
    if store.data().limits.refused {
        anyhow::bail!(
            "the script needed more than {} MiB while it was built (the k6 layer, the \
             script's files and the files it opens must fit); is a bundled file that large?",
            BUILD_MEMORY_BYTES >> 20
        );
    }
    let (instance, answer) = run?;
    answer?.map_err(|e| {
        anyhow!(
            "the k6 layer failed to start: {e}{}{}",
            String::from_utf8_lossy(&stdout.contents()),
            String::from_utf8_lossy(&stderr.contents())
        )
    })?;
    let snapshot = wizer
        .snapshot_component(
            &cx,
            &mut Snapshotting {
                store: &mut store,
                instance,
            },
        )
        .await?;
    Ok(snapshot)
}

/// Resources of the contract, stubbed while the module is evaluated.
struct ResponseContent;
struct PreparedRequest;
struct Socket;
struct GrpcChannel;
struct GrpcStream;
struct GrpcPreparedCall;
struct GrpcCallContent;
struct Document;
struct TcpSocket;
struct UdpSocket;
struct BrowserContext;
struct BrowserPage;

/// Defines every import of the contract (`loadtest:*`) as failing functions.
fn stub_contract(engine: &Engine, comp: &Component, linker: &mut Linker<Ctx>) -> Result<()> {
    use wasmtime::component::types::ComponentItem;
    use wasmtime::component::ResourceType;
    for (name, item) in comp.component_type().imports(engine) {
        if !name.starts_with("loadtest:") {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue;
        };
        let mut defined = linker.instance(name)?;
        for (export, item) in instance.exports(engine) {
            match item.ty {
                ComponentItem::ComponentFunc(_) => {
                    let what = format!("{name}#{export}");
                    defined.func_new(export, move |_, _, _, _| {
                        Err(wasmtime::format_err!(
                            "{what} was called while the script was built; the k6 layer calls the host only from its exports"
                        ))
                    })?;
                }
                ComponentItem::Resource(_) => {
                    let ty = match export {
                        "response-content" => ResourceType::host::<ResponseContent>(),
                        "prepared-request" => ResourceType::host::<PreparedRequest>(),
                        "socket" => ResourceType::host::<Socket>(),
                        "channel" => ResourceType::host::<GrpcChannel>(),
                        "grpc-stream" => ResourceType::host::<GrpcStream>(),
                        "prepared-call" => ResourceType::host::<GrpcPreparedCall>(),
                        "call-content" => ResourceType::host::<GrpcCallContent>(),
                        "document" => ResourceType::host::<Document>(),
                        "tcp-socket" => ResourceType::host::<TcpSocket>(),
                        "udp-socket" => ResourceType::host::<UdpSocket>(),
                        "context" => ResourceType::host::<BrowserContext>(),
                        "page" => ResourceType::host::<BrowserPage>(),
                        other => anyhow::bail!(
                            "the contract has a resource {other} this build does not know"
                        ),
                    };
                    defined.resource(export, ty, |_, _| Ok(()))?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Wizer's view of the running instance (wasmtime-wizer's own `WasmtimeWizerComponent`
/// sits behind a feature that would switch on wasmtime features the host does not use).
struct Snapshotting<'a, T: 'static> {
    store: &'a mut Store<T>,
    instance: Instance,
}

impl<T: Send> Snapshotting<'_, T> {
    async fn call<R: Lift + 'static, R2>(
        &mut self,
        instance: &str,
        func: &str,
        use_ret: impl FnOnce(&mut Store<T>, R) -> R2,
    ) -> R2 {
        let (_, iface) = self
            .instance
            .get_export(&mut *self.store, None, instance)
            .expect("wizer instruments this export");
        let (_, f) = self
            .instance
            .get_export(&mut *self.store, Some(&iface), func)
            .expect("wizer instruments this export");
        let f = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *self.store, f)
            .expect("wizer's accessor has this type");
        let ret = f
            .call_async(&mut *self.store, ())
            .await
            .expect("wizer's accessor does not trap")
            .0;
        use_ret(&mut *self.store, ret)
    }
}

impl<T: Send> ComponentInstanceState for Snapshotting<'_, T> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        self.call(instance, func, |store, list: WasmList<u8>| {
            contents(list.as_le_slice(&store));
        })
        .await
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func, |_, r| r).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func, |_, r| r).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call(instance, func, |_, r: f32| r.to_bits()).await
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call(instance, func, |_, r: f64| r.to_bits()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wit() -> &'static str {
        crate::author::sdk::SDK_FILES
            .iter()
            .find(|(n, _)| *n == "wit/scenario.wit")
            .expect("build.rs embeds the SDK's WIT")
            .1
    }

    /// Code that runs while the module is evaluated (as code escaping the bundle's
    /// wrapper did, issue 49) meets the build's time and memory limits: a clear error,
    /// soon, where the build hung and a 600 MB allocation made the host panic.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn code_run_at_build_time_is_stopped_by_time_and_memory_limits() {
        let layer = crate::author::js::layer::text();
        let started = std::time::Instant::now();
        let e = componentize(wit(), &format!("{layer}\nfor (;;) {{}}\n"))
            .await
            .map(|_| ())
            .unwrap_err();
        let took = started.elapsed();
        let e = format!("{e:#}");
        assert!(
            e.contains(&format!("more than {BUILD_SECONDS} s while it was built")),
            "{e}"
        );
        assert!(
            took < std::time::Duration::from_secs(BUILD_SECONDS + 30),
            "{took:?}"
        );

        let big = "const big = new Uint8Array(600 * 1024 * 1024); big[7] = 1;\n";
        let e = componentize(wit(), &format!("{layer}\n{big}"))
            .await
            .map(|_| ())
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("needed more than 512 MiB while it was built"),
            "{e}"
        );
    }
}
