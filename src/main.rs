//! The `retryctl` binary: parse the command line, run, report, exit. The only process exit.
//! What the process does to start fast (its allocator, chosen before `main`) is `startup`.
//! std's runtime start-up opens descriptors 0–2 on `/dev/null` if they are closed and ignores
//! `SIGPIPE`, so that a closed stdout (`| head`) is an error the commands handle.

mod startup;

use std::io::Write;

use retryctl::error::{report, ExitCode};

fn main() {
    let cli = match retryctl::cli::parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() {
                ExitCode::Usage
            } else {
                ExitCode::Success
            };
            std::process::exit(code.code().into());
        }
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut err = stderr.lock();
    let code = match retryctl::app::run(cli, &mut out, &mut err, retryctl::commands::dispatch) {
        Ok(code) => code,
        Err(e) => {
            let _ = out.flush();
            report(&e, &mut err)
        }
    };
    // A closed pipe (`retryctl get ... | head`) is not an error worth reporting.
    let _ = out.flush();
    std::process::exit(code.code().into());
}
