//! `retryctl config view|get-contexts|current-context|use-context NAME`: the armadactl
//! config file (`--config`, `$ARMADACTL_CONFIG`, `~/.armadactl.yaml`).
//!
//! `view` prints the file with every secret masked; with no file it says so on stderr and
//! prints nothing. `use-context` rewrites the file keeping every other key.

use crate::app::Context;
use crate::armadactl_config::{ConfigFile, Origin, NO_HOME};
use crate::cli::{ConfigArgs, ConfigCommand};
use crate::connection::{self, Env, DEFAULT_URL};
use crate::error::{CliError, ExitCode};

pub fn run(ctx: &mut Context, args: &ConfigArgs) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let mut file = connection::load_config(&ctx.global, &env)?;
    // Every subcommand shows or changes the file: without a home there is none to name.
    if file.origin == Origin::NoHome {
        return Err(CliError::usage(format!("no config file: {NO_HOME}"))
            .with_hint("name it with `--config FILE` or `$ARMADACTL_CONFIG`")
            .into());
    }
    match &args.command {
        ConfigCommand::View => {
            if !file.exists {
                writeln!(
                    ctx.err,
                    "no config file at `{}`: using {DEFAULT_URL}, anonymous",
                    file.path.display()
                )?;
                return Ok(ExitCode::Success);
            }
            ctx.out.write_all(serde_yaml::to_string(&file.masked())?.as_bytes())?;
        }
        ConfigCommand::GetContexts => get_contexts(ctx, &file)?,
        ConfigCommand::CurrentContext => match file.current_context() {
            Some(c) => writeln!(ctx.out, "{c}")?,
            None => {
                return Err(
                    CliError::failed(format!("no current context set in `{}`", file.path.display()))
                        .with_hint("set one with `retryctl config use-context NAME`")
                        .into(),
                )
            }
        },
        ConfigCommand::UseContext { name } => {
            if !file.exists {
                return Err(CliError::failed(format!(
                    "no config file at `{}`: there are no contexts to use",
                    file.path.display()
                ))
                .into());
            }
            file.use_context(name)?;
            writeln!(ctx.out, "switched to context `{name}`")?;
        }
    }
    Ok(ExitCode::Success)
}

fn get_contexts(ctx: &mut Context, file: &ConfigFile) -> anyhow::Result<()> {
    let names = file.context_names();
    if names.is_empty() {
        writeln!(ctx.err, "no contexts in `{}`", file.path.display())?;
        return Ok(());
    }
    let current = file.current_context();
    let mut rows = Vec::new();
    for n in &names {
        let c = file.context(Some(n))?;
        // The one the context sends, in docs/cli.md's order (`connection`): a `user:password` in
        // the URL it is reached at comes before its `bearerToken`.
        let in_url = crate::connection::context_url_has_auth(c.armada_rest_url.as_ref(), c.armada_url.as_ref());
        let raw = c.armada_rest_url.or(c.armada_url);
        let url = raw.as_deref().map_or_else(|| "-".into(), crate::redact::redact_url);
        // A credential in a URL that connection refuses (a query string, a gRPC address with a
        // user): nothing is sent, but "none" would hide that the URL holds one.
        let refused_in_url = !in_url && raw.as_deref().is_some_and(|u| url != u);
        let auth = if in_url {
            "basic (URL)"
        } else if refused_in_url {
            "url (refused)"
        } else if c.bearer_token.is_some() {
            "bearer"
        } else if c.basic_auth.is_some() {
            "basic"
        } else if c.exec_auth.is_some() {
            "exec"
        } else {
            "none"
        };
        let mark = if current.as_deref() == Some(n.as_str()) {
            "*"
        } else {
            ""
        };
        rows.push([mark.to_string(), n.clone(), url, auth.to_string()]);
    }
    crate::output::resources::write_contexts(ctx.out, &rows)?;
    Ok(())
}
