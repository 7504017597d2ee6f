//! Changed jobs held back until their estimates are final (see `estimate`'s module docs):
//! written to an anonymous temporary file as they come, read back in the same order after
//! the last job.
//!
//! Owns: the file (created on the first job held back, in `$TMPDIR`, gone when dropped:
//! it is unlinked as soon as it is made; `temp_file::anonymous_file` makes it) and its
//! encoding: compact numbers and strings, not rendered output, so that the sink renders each
//! job once. Memory stays flat whatever the number of jobs held back. Must not: render or count.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::model::duration::GoDuration;
use crate::model::failure_history::{Final, Outcome, Resources};
use crate::model::policy::Condition;

use super::compare::{JobDiff, RunStep, Side, Step, Steps};
use super::estimate::FailureClass;
use super::temp_file::anonymous_file;

/// A changed job as the replay hands it to the sink, less its estimate. (Its form in a
/// partial result is `partial`'s.)
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    pub diff: JobDiff,
    /// The job's failure class (its last recorded failed run's); `None`: no failed run.
    pub class: Option<FailureClass>,
    /// Its recorded failed runs: the depth of a Pending side's next run (docs/estimates.md).
    pub depth: u32,
    pub steps: Option<Box<Steps>>,
}

/// The jobs held back, in order.
#[derive(Default)]
pub struct Spool {
    file: Option<BufWriter<File>>,
    held: u64,
}

impl Spool {
    /// Whether any job is held back (then every later one must be too, to keep the order).
    pub fn active(&self) -> bool {
        self.file.is_some()
    }

    pub fn push(&mut self, c: &Changed) -> io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let f = anonymous_file("the changed jobs")?;
                self.file.insert(BufWriter::with_capacity(256 * 1024, f))
            }
        };
        let mut buf = Vec::with_capacity(128);
        encode(c, &mut buf);
        file.write_all(&(buf.len() as u32).to_le_bytes())?;
        file.write_all(&buf)?;
        self.held += 1;
        Ok(())
    }

    /// Hands every job held back to `f`, in order, until it returns `false`.
    pub fn drain(self, mut f: impl FnMut(Changed) -> io::Result<bool>) -> io::Result<()> {
        let Some(w) = self.file else { return Ok(()) };
        let mut file = w.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        let mut r = BufReader::with_capacity(256 * 1024, file);
        let mut buf = Vec::new();
        for _ in 0..self.held {
            let mut len = [0u8; 4];
            r.read_exact(&mut len)?;
            buf.resize(u32::from_le_bytes(len) as usize, 0);
            r.read_exact(&mut buf)?;
            let c = decode(&mut Reader(&buf))
                .ok_or_else(|| io::Error::other("the temporary file of changed jobs is corrupt"))?;
            if !f(c)? {
                break;
            }
        }
        Ok(())
    }
}

fn put_u64(b: &mut Vec<u8>, n: u64) {
    b.extend_from_slice(&n.to_le_bytes());
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_u64(b, s.len() as u64);
    b.extend_from_slice(s.as_bytes());
}

fn put_side(b: &mut Vec<u8>, s: &Side) {
    b.push(s.final_state as u8);
    put_u64(b, u64::from(s.retries));
    put_u64(b, s.delay.0);
    put_u64(b, s.runs as u64);
    put_u64(b, u64::from(s.runs_left));
    put_u64(b, s.compute.0);
}

fn put_class(b: &mut Vec<u8>, c: &Option<FailureClass>) {
    match c {
        None => b.push(0),
        Some(FailureClass::Category { category, subcategory }) => {
            b.push(1);
            put_str(b, category);
            match subcategory {
                Some(s) => {
                    b.push(1);
                    put_str(b, s);
                }
                None => b.push(0),
            }
        }
        Some(FailureClass::Exit(code)) => {
            b.push(2);
            put_u64(b, *code as u64);
        }
        Some(FailureClass::Condition(c)) => {
            b.push(3);
            b.push(*c as u8);
        }
        Some(FailureClass::Unknown) => b.push(4),
    }
}

fn encode(c: &Changed, b: &mut Vec<u8>) {
    let d = &c.diff;
    put_str(b, &d.job);
    put_side(b, &d.baseline);
    put_side(b, &d.candidate);
    put_u64(b, d.compute_added.0);
    put_u64(b, d.compute_removed.0);
    match &d.resources {
        None => b.push(0),
        Some(r) => {
            b.push(1);
            for m in [r.cpu_milli, r.gpu_milli] {
                put_u64(b, m.unwrap_or(u64::MAX));
            }
            put_u64(b, r.memory.map_or(u64::MAX, f64::to_bits));
        }
    }
    put_class(b, &c.class);
    put_u64(b, u64::from(c.depth));
    match &c.steps {
        None => b.push(0),
        Some(s) => {
            b.push(1);
            put_u64(b, s.runs.len() as u64);
            for r in &s.runs {
                put_u64(b, r.run as u64);
                b.push(r.outcome as u8);
                put_class(b, &r.class);
                b.push(r.baseline as u8);
                b.push(r.candidate as u8);
            }
            match s.gap {
                Some((i, n)) => {
                    b.push(1);
                    put_u64(b, i as u64);
                    put_u64(b, n as u64);
                }
                None => b.push(0),
            }
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*head))
    }

    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        if n > self.0.len() {
            return None;
        }
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8(s.to_vec()).ok()
    }

    fn side(&mut self) -> Option<Side> {
        Some(Side {
            final_state: *Final::ALL.get(usize::from(self.u8()?))?,
            retries: u32::try_from(self.u64()?).ok()?,
            delay: GoDuration(self.u64()?),
            runs: usize::try_from(self.u64()?).ok()?,
            runs_left: u32::try_from(self.u64()?).ok()?,
            compute: GoDuration(self.u64()?),
        })
    }

    /// A value written as `u64::MAX` when absent.
    fn maybe(&mut self) -> Option<Option<u64>> {
        let n = self.u64()?;
        Some((n != u64::MAX).then_some(n))
    }

    fn resources(&mut self) -> Option<Option<Resources>> {
        Some(match self.u8()? {
            0 => None,
            _ => Some(Resources {
                cpu_milli: self.maybe()?,
                gpu_milli: self.maybe()?,
                memory: self.maybe()?.map(f64::from_bits),
            }),
        })
    }

    fn class(&mut self) -> Option<Option<FailureClass>> {
        Some(match self.u8()? {
            0 => None,
            1 => Some(FailureClass::Category {
                category: self.string()?,
                subcategory: match self.u8()? {
                    0 => None,
                    _ => Some(self.string()?),
                },
            }),
            2 => Some(FailureClass::Exit(self.u64()? as i64)),
            3 => Some(FailureClass::Condition(*Condition::ALL.get(usize::from(self.u8()?))?)),
            4 => Some(FailureClass::Unknown),
            _ => return None,
        })
    }

    fn step(&mut self) -> Option<Step> {
        Step::ALL.get(usize::from(self.u8()?)).copied()
    }
}

fn decode(r: &mut Reader<'_>) -> Option<Changed> {
    const OUTCOMES: [Outcome; 4] = [
        Outcome::Failed,
        Outcome::Succeeded,
        Outcome::LeaseReturned,
        Outcome::Cancelled,
    ];
    let diff = JobDiff {
        job: r.string()?,
        baseline: r.side()?,
        candidate: r.side()?,
        compute_added: GoDuration(r.u64()?),
        compute_removed: GoDuration(r.u64()?),
        resources: r.resources()?,
    };
    let class = r.class()?;
    let depth = u32::try_from(r.u64()?).ok()?;
    let steps = match r.u8()? {
        0 => None,
        _ => {
            let n = usize::try_from(r.u64()?).ok()?;
            let mut runs = Vec::with_capacity(n.min(super::compare::MAX_STEPS));
            for _ in 0..n {
                runs.push(RunStep {
                    run: usize::try_from(r.u64()?).ok()?,
                    outcome: *OUTCOMES.get(usize::from(r.u8()?))?,
                    class: r.class()?,
                    baseline: r.step()?,
                    candidate: r.step()?,
                });
            }
            let gap = match r.u8()? {
                0 => None,
                _ => Some((usize::try_from(r.u64()?).ok()?, usize::try_from(r.u64()?).ok()?)),
            };
            Some(Box::new(Steps { runs, gap }))
        }
    };
    Some(Changed {
        diff,
        class,
        depth,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(final_state: Final, retries: u32) -> Side {
        Side {
            final_state,
            retries,
            delay: GoDuration(u64::MAX - 7),
            runs: 3,
            runs_left: retries * 7,
            compute: GoDuration(u64::from(retries) << 40),
        }
    }

    /// Every kind of field comes back as it went in, in order.
    #[test]
    fn jobs_come_back_as_they_went_in() {
        let classes = [
            None,
            Some(FailureClass::Category {
                category: "cuda_error".into(),
                subcategory: Some("xid-79 é".into()),
            }),
            Some(FailureClass::Category {
                category: "oom".into(),
                subcategory: None,
            }),
            Some(FailureClass::Exit(-9)),
            Some(FailureClass::Condition(Condition::Unschedulable)),
            Some(FailureClass::Unknown),
        ];
        let jobs: Vec<Changed> = classes
            .iter()
            .enumerate()
            .map(|(i, class)| Changed {
                diff: JobDiff {
                    job: format!("job-{i}"),
                    baseline: side(Final::Failed, 1),
                    candidate: side(Final::Pending, 4),
                    compute_added: GoDuration(i as u64),
                    compute_removed: GoDuration(0),
                    resources: (i % 3 != 0).then(|| Resources {
                        cpu_milli: Some(500 * i as u64),
                        memory: (i == 2).then_some(1.5e9),
                        gpu_milli: (i == 4).then_some(2000),
                    }),
                },
                class: class.clone(),
                depth: i as u32 * 3,
                steps: (i % 2 == 0).then(|| {
                    Box::new(Steps {
                        runs: vec![RunStep {
                            run: 7,
                            outcome: Outcome::LeaseReturned,
                            class: class.clone(),
                            baseline: Step::Cancelled,
                            candidate: Step::Requeued,
                        }],
                        gap: (i == 2).then_some((1, 99)),
                    })
                }),
            })
            .collect();
        let mut spool = Spool::default();
        assert!(!spool.active());
        for j in &jobs {
            spool.push(j).unwrap();
        }
        assert!(spool.active());
        let mut back = Vec::new();
        spool
            .drain(|c| {
                back.push(c);
                Ok(true)
            })
            .unwrap();
        assert_eq!(back, jobs);
    }
}
