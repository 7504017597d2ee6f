//! What the binary loads at start-up (SPEC §7 start-up bar; BENCHMARKS.md "Start-up").

/// The math library is loaded on demand (src/libm_on_demand.rs), not by every process. A new
/// import from it (`exp`, `sin`...) brings it back: define that function there too, or accept
/// ~0.04 ms on every command and drop this test.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_math_library_is_not_needed_at_start_up() {
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let out = std::process::Command::new("ldd")
        .arg(&bin)
        .output()
        .expect("ldd (glibc's libc-bin)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let libs = String::from_utf8_lossy(&out.stdout);
    assert!(libs.contains("libc.so.6"), "{libs}");
    assert!(!libs.contains("libm.so"), "{libs}");
}
