//! `--queue Q` over a source that holds every queue's jobs: which jobs are replayed, and how
//! many of the others were left out ([`OneQueue`]). Must not: read a source.

/// `--queue Q` applied to a file, a directory or a stream (docs/simulate.md "Inputs"): the
/// jobs of other queues are left out of the replay, and counted for the command to say.
#[derive(Debug, Clone)]
pub struct OneQueue {
    name: std::sync::Arc<str>,
    left_out: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl OneQueue {
    pub fn new(name: &str) -> OneQueue {
        OneQueue {
            name: name.into(),
            left_out: Default::default(),
        }
    }

    /// Whether a job of `queue` is replayed; one that is not is counted.
    pub fn keeps(&self, queue: Option<&str>) -> bool {
        if queue == Some(&*self.name) {
            return true;
        }
        self.left_out.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        false
    }

    /// `n` jobs of other queues left out before the workers saw them (an empty history's check
    /// read them ahead).
    pub fn add_left_out(&self, n: u64) {
        self.left_out.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The jobs of other queues left out so far.
    pub fn left_out(&self) -> u64 {
        self.left_out.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}
