//! Everything the `retryctl` process does to start fast, and why (BENCHMARKS.md start-up bar;
//! BENCHMARKS.md "Start-up", "2026-11-24: each piece measured alone", has the numbers: each
//! piece was taken out alone and `validate` timed side by side). Two pieces are left, kept
//! because `validate` is more than ~10% slower without them:
//!
//! - **One allocator per process** (this file): mimalloc for the commands whose work is
//!   allocation (the verbs the verb table, `cli::VERBS`, marks `bulk`: `simulate`, `tune`, `suggest`,
//!   `merge`, `history`, `serve`), the C library's for every other command. mimalloc sets
//!   itself up on first use (an arena, a fresh page per size class): with it, a `validate`
//!   takes 56 more page faults and ~16% longer. With the C library's allocator the bulk
//!   commands lose instead: `simulate -o jsonl` 12% more instructions, 17% more CPU. The
//!   choice is made from the arguments before the first allocation, by a function glibc
//!   calls before `main` ([`CHOOSE_ALLOCATOR`]), and never changes once a block was given
//!   out.
//!   `.cargo/config.toml` builds mimalloc with `MI_PRIM_HAS_PROCESS_ATTACH`, so that its
//!   set-up is not a constructor that every process runs (that constructor: 18% more
//!   instructions, 8–14% longer); [`Allocator::use_mimalloc`] runs it where it is chosen.
//!   Two more C flags there lower what each process that sets mimalloc up pays once (a 64 MiB
//!   first arena, options read with `getenv`): a sharded replay starts N such processes.
//! - **A position-dependent executable** (build.rs, `-no-pie`): a PIE applies ~27,000 dynamic
//!   relocations at every start, 130 more page faults and 27–36% longer.
//!
//! Taken out for buying less than ~10% each: a symbol ordering file for lld
//! (`startup.order`: half of its names no longer matched a fresh build), a C `main` of our
//! own that skipped std's runtime start-up, and loading the math library on demand. Without
//! them `validate` is ~13% slower, ~1.9× `/bin/true` (2–3× is accepted).
//!
//! On other C libraries (musl, macOS) nothing runs before `main` and every process uses
//! mimalloc, as the `mimalloc` crate is usually used: the split is measured on glibc only.
//!
//! Owns: the process's global allocator and the choice of it. Must not: allocate before the
//! choice is made, change it after a block was given out, or do anything else before `main`.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
use split::Allocator;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: Allocator = Allocator::new();

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Whether `arg` names a verb whose work is allocation (decoded histories, reports,
/// requests): `bulk` in the verb table, a `const` read here without allocating.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn is_bulk(arg: &[u8]) -> bool {
    retryctl::cli::VERBS
        .iter()
        .any(|verb| verb.bulk && verb.name.as_bytes() == arg)
}

/// glibc calls each function of `.init_array` with `argc`, `argv` and `envp` (an extension
/// std's own `std::env::args` relies on), after the C library is set up and before `main`:
/// before std's runtime or the program allocates anything.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[used]
#[link_section = ".init_array"]
static CHOOSE_ALLOCATOR: extern "C" fn(
    std::ffi::c_int,
    *const *const std::ffi::c_char,
    *const *const std::ffi::c_char,
) = choose_allocator;

/// mimalloc when any argument names a bulk command, wherever it is (global flags may come
/// first): a wrong guess only costs speed. Otherwise nothing: the first allocation settles on
/// the C library's allocator.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn choose_allocator(
    argc: std::ffi::c_int,
    argv: *const *const std::ffi::c_char,
    _envp: *const *const std::ffi::c_char,
) {
    if argv.is_null() {
        return;
    }
    // SAFETY: glibc passes the `argc` NUL-terminated strings the process was started with.
    let args = unsafe { std::slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) };
    // SAFETY: as above; each is read, not kept.
    if args
        .iter()
        .skip(1)
        .any(|&a| is_bulk(unsafe { std::ffi::CStr::from_ptr(a) }.to_bytes()))
    {
        ALLOCATOR.use_mimalloc();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod split {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    const UNDECIDED: u8 = 0;
    const SYSTEM: u8 = 1;
    const MIMALLOC: u8 = 2;

    /// Routes every allocation to the allocator chosen for the process. A block is always
    /// freed by the allocator that gave it, because the choice never changes once made:
    /// [`Allocator::use_mimalloc`] takes effect only before the first allocation, and the
    /// first allocation without a choice settles on the C library's for the rest of the
    /// process.
    pub struct Allocator {
        choice: AtomicU8,
    }

    impl Allocator {
        pub const fn new() -> Allocator {
            Allocator {
                choice: AtomicU8::new(UNDECIDED),
            }
        }

        /// Chooses mimalloc, if no allocation was made yet, and sets it up; whether mimalloc
        /// is the choice. Called before the process starts a thread.
        pub fn use_mimalloc(&self) -> bool {
            if self.choice.load(Relaxed) == UNDECIDED {
                attach_mimalloc();
                let _ = self.choice.compare_exchange(UNDECIDED, MIMALLOC, Relaxed, Relaxed);
            }
            self.choice.load(Relaxed) == MIMALLOC
        }

        #[inline]
        fn mimalloc(&self) -> bool {
            match self.choice.load(Relaxed) {
                MIMALLOC => true,
                SYSTEM => false,
                _ => {
                    let _ = self.choice.compare_exchange(UNDECIDED, SYSTEM, Relaxed, Relaxed);
                    self.choice.load(Relaxed) == MIMALLOC
                }
            }
        }
    }

    /// mimalloc's process set-up, which its C sources would otherwise run as a constructor
    /// in every process (its options, a page map, its main heap). `.cargo/config.toml` builds
    /// it with `MI_PRIM_HAS_PROCESS_ATTACH`, mimalloc's switch for a platform that calls
    /// `_mi_auto_process_init` itself. Built without it (another target), the constructor
    /// has run, mimalloc is no longer "preloading", and nothing is called twice. The matching
    /// `_mi_auto_process_done` is not called at exit: it would only free what the exit frees.
    fn attach_mimalloc() {
        extern "C" {
            fn _mi_preloading() -> bool;
            fn _mi_auto_process_init();
        }
        static ATTACHED: std::sync::Once = std::sync::Once::new();
        // SAFETY: mimalloc's own process set-up, at most once, before it gives out a block.
        ATTACHED.call_once(|| unsafe {
            if _mi_preloading() {
                _mi_auto_process_init();
            }
        });
    }

    // SAFETY: every call goes to one of two allocators that uphold `GlobalAlloc`'s contract,
    // and a block's `dealloc`/`realloc` goes to the allocator that gave it: the choice is
    // fixed before the first block is given out (`use_mimalloc` cannot change it afterwards).
    unsafe impl GlobalAlloc for Allocator {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if self.mimalloc() {
                mimalloc::MiMalloc.alloc(layout)
            } else {
                System.alloc(layout)
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            if self.mimalloc() {
                mimalloc::MiMalloc.alloc_zeroed(layout)
            } else {
                System.alloc_zeroed(layout)
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if self.mimalloc() {
                mimalloc::MiMalloc.dealloc(ptr, layout)
            } else {
                System.dealloc(ptr, layout)
            }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if self.mimalloc() {
                mimalloc::MiMalloc.realloc(ptr, layout, new_size)
            } else {
                System.realloc(ptr, layout, new_size)
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_choice_is_made_once_before_the_first_block() {
            let chosen = Allocator::new();
            assert!(chosen.use_mimalloc());
            let layout = Layout::from_size_align(24, 8).unwrap();
            // SAFETY: a non-zero layout; the block is freed with the same allocator and
            // layout.
            unsafe {
                let p = chosen.alloc(layout);
                assert!(!p.is_null());
                assert!(chosen.mimalloc());
                chosen.dealloc(p, layout);
            }

            let late = Allocator::new();
            // SAFETY: as above.
            unsafe {
                let p = late.alloc(layout);
                assert!(!p.is_null());
                // Too late: a block was given out by the C library's allocator.
                assert!(!late.use_mimalloc());
                let p = late.realloc(p, layout, 4096);
                assert!(!p.is_null());
                late.dealloc(p, Layout::from_size_align(4096, 8).unwrap());
            }
            assert!(!late.mimalloc());
        }
    }
}
