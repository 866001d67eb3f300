//! With the `ggml` feature, compiles `ggml/shim.cpp` against ggml's library as scripts/ggml.sh
//! builds it: `GGUFRW_GGML_LIB` names `libggml-base.a`, `GGUFRW_GGML_SRC` the `ggml` folder of
//! the llama.cpp tree it was built from (`fuzz/run.sh` sets both from `scripts/ggml.sh --lib`).

fn main() {
    println!("cargo:rerun-if-changed=ggml/shim.cpp");
    println!("cargo:rerun-if-env-changed=GGUFRW_GGML_LIB");
    println!("cargo:rerun-if-env-changed=GGUFRW_GGML_SRC");
    #[cfg(feature = "ggml")]
    ggml();
}

#[cfg(feature = "ggml")]
fn ggml() {
    use std::path::PathBuf;
    let var = |name: &str| -> PathBuf {
        std::env::var_os(name).map(PathBuf::from).unwrap_or_else(|| {
            panic!("the ggml feature needs {name} (fuzz/run.sh sets it from scripts/ggml.sh --lib)")
        })
    };
    let (lib, src) = (var("GGUFRW_GGML_LIB"), var("GGUFRW_GGML_SRC"));
    println!("cargo:rerun-if-changed={}", lib.display());
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .include(src.join("include"))
        .file("ggml/shim.cpp")
        .compile("ggufrw_ggml_shim");
    let dir = lib.parent().expect("the library's folder");
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=ggml-base");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    println!("cargo:rustc-link-lib=dylib=m");
}
