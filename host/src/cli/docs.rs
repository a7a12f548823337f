//! `host completions`, `host man` and `host schema`: what the command line and the run
//! config look like, printed for shells, `man` and editors.

use clap::Args;
use std::path::PathBuf;

// `host completions SHELL`.
#[derive(Args, Debug)]
pub(super) struct CompletionsArgs {
    /// The shell (bash, zsh, fish, powershell, elvish).
    shell: clap_complete::Shell,
}

// `host man [--dir DIR]`.
#[derive(Args, Debug)]
pub(super) struct ManArgs {
    /// Folder to write every command's page into, instead of printing host.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints the completion script of one shell for `cli` (the whole command line, handed
/// in by the dispatcher so this module need not import it).
pub(super) fn completions(args: CompletionsArgs, mut cli: clap::Command) -> anyhow::Result<i32> {
    clap_complete::generate(args.shell, &mut cli, "host", &mut std::io::stdout());
    Ok(0)
}

/// Prints host.1 for `cli`, or writes every command's page into `--dir`.
pub(super) fn man(args: ManArgs, cli: clap::Command) -> anyhow::Result<i32> {
    match args.dir {
        None => clap_mangen::Man::new(cli).render(&mut std::io::stdout())?,
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("cannot make {}: {e}", dir.display()))?;
            clap_mangen::generate_to(cli, &dir)
                .map_err(|e| anyhow::anyhow!("cannot write into {}: {e}", dir.display()))?;
        }
    }
    Ok(0)
}

/// Prints the run config's JSON Schema.
pub(super) fn schema() -> anyhow::Result<i32> {
    print!("{}", crate::config::schema::render());
    Ok(0)
}
