//! Link settings of the `retryctl` binary: on Linux, a position-dependent executable. As a
//! PIE it would apply ~27,000 dynamic relocations at every start: `validate` 27–36% slower
//! (src/startup.rs says what else the process does to start fast, and why). Only the final
//! link changes: the objects stay position-independent, so nothing else is rebuilt.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    link_settings();
}

fn link_settings() {
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-link-arg-bin=retryctl=-no-pie");
    }
}
