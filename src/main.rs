//! The `retryctl` binary: parse the command line, run, report, exit. The only process exit.
//! What the process does to start fast (its allocator, chosen before `main`) is `startup`.
//! std's runtime start-up opens descriptors 0–2 on `/dev/null` if they are closed and ignores
//! `SIGPIPE`, so that a closed pipe (`| head`) is an error the commands handle; a stdout
//! closed before the start (`>&-`) is told apart from `/dev/null` by `closed_stdout`.

mod closed_stdout;
mod startup;

use std::io::Write;
use std::os::fd::AsFd;

use retryctl::error::{report, ExitCode};

fn main() {
    // A shell asking for completions (`COMPLETE=bash retryctl -- retryctl get rp `:
    // clap_complete's dynamic completion, `commands::completion`). One getenv decides: a plain
    // run builds nothing for it. A completion exits here, printing nothing but candidates.
    if std::env::var_os(retryctl::commands::completion::COMPLETE_VAR).is_some() {
        std::panic::set_hook(Box::new(|_| {}));
        clap_complete::CompleteEnv::with_factory(retryctl::commands::completion::dynamic_command)
            .var(retryctl::commands::completion::COMPLETE_VAR)
            .complete();
        // `COMPLETE=` or `COMPLETE=0`: an ordinary run (clap_complete's convention).
        let _ = std::panic::take_hook();
    }
    let cli = match retryctl::cli::parse() {
        Ok(cli) => cli,
        // A value the house's own parsers refused (`cli::values`): said as every other error.
        Err(e) if std::error::Error::source(&e).is_some_and(|s| s.is::<retryctl::error::CliError>()) => {
            let ours = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<retryctl::error::CliError>());
            let ours = anyhow::Error::new(ours.cloned().expect("checked above"));
            let code = report(
                &ours,
                &mut retryctl::output::text::Escaping::new(&mut std::io::stderr().lock()),
            );
            std::process::exit(code.code().into());
        }
        // `--help`, `--version`: written to stdout as a command's output is, a failed write
        // an error (a closed stdout, `/dev/full`), a closed pipe not.
        Err(e) if !e.use_stderr() => {
            let written = match closed_stdout::was_closed() {
                true => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
                false => e.print().and_then(|()| std::io::stdout().flush()),
            };
            let code = match written {
                Err(w) if w.kind() != std::io::ErrorKind::BrokenPipe => {
                    let reason = retryctl::input::io_reason(&w);
                    let _ = writeln!(std::io::stderr(), "error: cannot write stdout: {reason}");
                    ExitCode::Failure
                }
                _ => ExitCode::Success,
            };
            std::process::exit(code.code().into());
        }
        Err(e) => {
            match retryctl::cli::house_words(&e) {
                // Escaped as every other error is: a value may hold a terminal's control bytes.
                Some(words) => {
                    let mut stderr = std::io::stderr().lock();
                    let _ = retryctl::output::text::Escaping::new(&mut stderr).write_all(words.as_bytes());
                }
                None => {
                    let _ = e.print();
                }
            }
            std::process::exit(ExitCode::Usage.code().into());
        }
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    // File descriptor 1 itself (a duplicate), not std's `Stdout`: that one is line-buffered
    // wherever it goes, so everything written through it was copied once more and searched
    // for its last newline (a million runs' records are tens of MB). Nothing else writes to
    // `Stdout`. Should the duplicate fail (no descriptor left), `Stdout` itself.
    // Closed at the start (`>&-`): every write fails, as on `/dev/full`.
    let raw: Box<dyn Write> = if closed_stdout::was_closed() {
        Box::new(closed_stdout::Closed)
    } else {
        match stdout.as_fd().try_clone_to_owned() {
            Ok(fd) => Box::new(std::fs::File::from(fd)),
            Err(_) => Box::new(stdout.lock()),
        }
    };
    // 64 KiB: a bulk command's output (a replay's records, a shard's partial) went out in one
    // write(2) per 8 KiB, std's default, and each costs the kernel more than its bytes do.
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, raw);
    let mut err = stderr.lock();
    let code = match retryctl::app::run(cli, &mut out, &mut err, retryctl::commands::dispatch) {
        Ok(code) => code,
        // `app::run` flushed `out`, so what the command printed comes before its error.
        Err(e) => {
            // An error may carry anything a file or the history held (a job id, a file
            // name): written escaped, its own lines kept (docs/cli.md).
            report(&e, &mut retryctl::output::text::Escaping::new(&mut err))
        }
    };
    std::process::exit(code.code().into());
}
