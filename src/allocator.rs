//! The process's memory allocator, chosen once per process: mimalloc for the commands that
//! allocate in bulk (`simulate`, `history`, `serve`), the C library's for every other one.
//!
//! Why two: mimalloc pays where allocation is the work (`simulate -o jsonl` runs 24% more
//! instructions on glibc's allocator, a `serve` GET 4%), but sets itself up on first use: an
//! arena, a page per size class, ~50 page faults, 0.18 ms of a 1.2 ms `validate` (SPEC §7
//! start-up bar; BENCHMARKS.md "Start-up"). A short command that allocates a few thousand
//! blocks gains nothing from it.
//!
//! Owns: the choice and the routing of every allocation to the chosen allocator. A block is
//! always freed by the allocator that gave it, because the choice never changes once made:
//! [`use_mimalloc`] takes effect only before the first allocation; the first allocation
//! without a choice settles on the C library's for the rest of the process.
//!
//! Must not: allocate, or change the choice after a block was given out.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;

/// The allocator of the `retryctl` binary (`#[global_allocator]` in main.rs).
pub struct Allocator {
    choice: AtomicU8,
}

impl Allocator {
    pub const fn new() -> Allocator {
        Allocator {
            choice: AtomicU8::new(UNDECIDED),
        }
    }

    /// Chooses mimalloc, if no allocation was made yet, and sets it up; whether mimalloc is
    /// the choice. Called by the main thread before it starts others.
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

/// mimalloc's process set-up, which its C sources would otherwise run as a constructor in
/// every process (its options, a page map, its main heap: 0.065 ms of a `validate` that never
/// uses it). `.cargo/config.toml` builds it with `MI_PRIM_HAS_PROCESS_ATTACH`, mimalloc's
/// switch for a platform that calls `_mi_auto_process_init` itself. Built without it (other
/// flags, another target), the constructor has run, mimalloc is no longer "preloading", and
/// nothing is called twice. mimalloc's matching `_mi_auto_process_done` is not called at
/// exit: with `MI_SKIP_COLLECT_ON_EXIT` and no statistics it only frees what the exit frees.
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

impl Default for Allocator {
    fn default() -> Self {
        Allocator::new()
    }
}

// SAFETY: every call goes to one of two allocators that uphold `GlobalAlloc`'s contract, and
// a block's `dealloc`/`realloc` goes to the allocator that gave it: the choice is fixed
// before the first block is given out (`use_mimalloc` cannot change it afterwards).
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
        // SAFETY: a non-zero layout; the block is freed with the same allocator and layout.
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
