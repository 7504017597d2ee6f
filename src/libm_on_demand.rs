//! `pow` and `log`, the only two functions of the C math library the program imports (tokio's
//! and indicatif's `f64::powf`, SQLite's `log`), defined here so that the binary does not need
//! `libm.so.6` at start-up: each loads the library and looks itself up there on its first
//! call, then calls the library's own function, so the results are the library's.
//!
//! Why: loading a shared library is a file to open, four mappings, its relocations and ~9
//! page faults in every process, about 0.04 ms of a 1 ms `validate` that never calls either
//! (SPEC §7 start-up bar; BENCHMARKS.md "Start-up"). A process that does call one pays that
//! once, then one indirect call per call.
//!
//! Must not: compute anything itself, or be defined outside glibc targets (elsewhere the math
//! library is linked as usual). A new import from the math library (`exp`, `sin`...) brings
//! `libm.so.6` back at start-up; the test `the_math_library_is_not_needed_at_start_up` says so.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The math library's `name`, loaded on first use and kept in `slot`.
fn resolve(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let cached = slot.load(Ordering::Acquire);
    if !cached.is_null() {
        return cached;
    }
    // SAFETY: NUL-terminated names; `dlopen` of a library already loaded only counts a
    // reference, so two threads racing here both get the same function.
    let found = unsafe {
        let lib = libc::dlopen(c"libm.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if lib.is_null() {
            std::ptr::null_mut()
        } else {
            libc::dlsym(lib, name.as_ptr() as *const c_char)
        }
    };
    if found.is_null() {
        // glibc always ships libm.so.6; without it there is no answer to give.
        std::process::abort();
    }
    slot.store(found, Ordering::Release);
    found
}

static POW: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static LOG: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// The math library's `pow`.
#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    let f = resolve(&POW, c"pow");
    // SAFETY: `f` is libm's `pow`, of this signature.
    let f: extern "C" fn(f64, f64) -> f64 = unsafe { std::mem::transmute(f) };
    f(x, y)
}

/// The math library's `log`.
#[no_mangle]
pub extern "C" fn log(x: f64) -> f64 {
    let f = resolve(&LOG, c"log");
    // SAFETY: `f` is libm's `log`, of this signature.
    let f: extern "C" fn(f64) -> f64 = unsafe { std::mem::transmute(f) };
    f(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow_and_log_answer_as_the_math_library() {
        // Exact in IEEE double for glibc's correctly rounded `pow` and `log`.
        assert_eq!(pow(2.0, 10.0), 1024.0);
        assert_eq!(pow(2.0, 0.5), std::f64::consts::SQRT_2);
        assert_eq!(pow(9.0, -0.5), 1.0 / 3.0);
        assert_eq!(log(1.0), 0.0);
        assert_eq!(log(std::f64::consts::E), 1.0);
        assert!(log(-1.0).is_nan());
        assert_eq!(log(0.0), f64::NEG_INFINITY);
        // Rust's own `powf` and `ln` reach these definitions too.
        assert_eq!(2f64.powf(3.0), 8.0);
        assert_eq!(1f64.ln(), 0.0);
    }
}
